"""Errors over HTTP in one place: graphmem's errors mapped to statuses, the handlers that
turn every failure into a ``{"error", "detail", "field"?}`` body, and the OpenAPI
declaration of the error statuses each route can answer.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .._errors import (
    BackendUnavailableError,
    ConfirmationRequiredError,
    ConflictError,
    EmbedderMismatchError,
    GraphmemError,
    InvalidInputError,
    NotFoundError,
    ReadOnlyStoreError,
    StoreLockedError,
    UnsupportedError,
    error_code,
)
from ._guard import Refusal
from ._schemas import ErrorOut

__all__ = ["BODY", "GATE", "ID", "error_status", "errors", "install_handlers"]

log = logging.getLogger("graphmem.sidecar")

#: graphmem's errors, most specific first, and their HTTP status (their ``error`` code is
#: ``error_code``'s, the command line's too).
_STATUS: list[tuple[type[GraphmemError], int]] = [
    (NotFoundError, 404),
    (InvalidInputError, 422),
    (ConfirmationRequiredError, 400),
    (ConflictError, 409),
    (EmbedderMismatchError, 409),
    (ReadOnlyStoreError, 405),
    (StoreLockedError, 503),
    (BackendUnavailableError, 503),
    (UnsupportedError, 501),
    (GraphmemError, 500),
]

_MEANING = {
    400: "The Host header is not loopback (a sidecar without tokens), or the path or a "
         "header is malformed.",
    401: "No bearer token, or an unknown one (the sidecar has a tokens file).",
    403: "The token lacks the scope this route needs; or, without tokens, a change came "
         "from another site's page (Origin, Sec-Fetch-Site).",
    404: "No such memory for this caller (another owner's memory looks the same).",
    408: "The request body stalled for longer than GRAPHMEM_IDLE_TIMEOUT_S.",
    409: "The change conflicts with the memory's state, or the embedding model differs.",
    413: "The request body is larger than GRAPHMEM_MAX_BODY_BYTES.",
    422: "Invalid input; `field` names it.",
    500: "An unexpected failure; the server log has the details.",
    501: "The store's engine does not offer this (Cypher and the named queries need Kuzu).",
    503: "The store is locked or its embedder is unavailable; retry later.",
}

#: Every route behind the gate can answer these.
GATE = (400, 401, 403, 500, 503)
#: Routes that take a body (or are refused one that is too large or too slow).
BODY = (408, 413, 422)
#: Routes addressed by a memory id.
ID = (404, 422)


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route: each status with its meaning and the error body."""
    return {status: {"model": ErrorOut, "description": _MEANING[status]}
            for status in sorted(set(statuses))}


def error_status(exc: GraphmemError) -> tuple[int, str]:
    """The HTTP status and error code of a graphmem error."""
    status = next((status for kind, status in _STATUS if isinstance(exc, kind)), 500)
    return status, error_code(exc)


def _body(error: str, detail: str, **more: Any) -> dict[str, Any]:
    return {"error": error, "detail": detail, **more}


def _first_error(errors: list[Any]) -> tuple[str, str]:
    """The field and message of the most telling validation error. For a body that may
    be one of several models, the error deepest inside the body is the one that says
    which branch the client meant; the models' own names are left out of the path."""
    if not errors:
        return "body", "invalid value"
    if any(e.get("type") == "json_invalid" for e in errors):
        return "body", "not valid JSON"
    best = max(errors, key=lambda e: len(e.get("loc", ())))
    parts = [str(p) for p in best.get("loc", ())
             if p != "body" and not (isinstance(p, str) and p[:1].isupper())]
    return ".".join(parts) or "body", str(best.get("msg", "invalid value"))


def install_handlers(app: FastAPI) -> None:
    """Every failure becomes an error body; anything unexpected is logged and reaches the
    client as a bare 500, never a traceback."""

    @app.exception_handler(Refusal)
    async def refused(_: Request, exc: Refusal) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=dict(exc.headers))

    @app.exception_handler(GraphmemError)
    async def graphmem_error(_: Request, exc: GraphmemError) -> JSONResponse:
        status, code = error_status(exc)
        field = getattr(exc, "field", None)
        extra = {"field": field} if field else {}
        if status >= 500:
            log.error("store error: %s", exc, exc_info=exc)
        return JSONResponse(_body(code, str(exc), **extra), status_code=status)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        field, message = _first_error(list(exc.errors()))
        return JSONResponse(_body("invalid_input", f"{field}: {message}", field=field),
                            status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(_body(code, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error", exc_info=exc)
        return JSONResponse(_body("internal", "internal error; the server log has the "
                                              "details"), status_code=500)
