"""The HTTP sidecar: one process owns the store and serves agents over JSON.

Routes are thin: authenticate, one store call scoped to the caller's owner, serialise.
Every graphmem error maps to one status and a ``{"error", "detail"}`` body in one place;
anything unexpected is logged here and reaches the client as a bare 500.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
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
)
from .._facade import MemoryStore
from .._input import MemoryInput
from ._auth import LOCAL, Principal, Tokens
from ._schemas import (
    ArchiveIn,
    ConversationIn,
    FeedbackIn,
    LifecycleRunIn,
    MemoriesIn,
    MemoryIn,
    PatchIn,
    PromoteIn,
    RetrieveIn,
    SupersedeIn,
)

__all__ = ["create_app", "error_status"]

log = logging.getLogger("graphmem.sidecar")

#: graphmem's errors, most specific first: HTTP status and the ``error`` code.
_STATUS: list[tuple[type[GraphmemError], int, str]] = [
    (NotFoundError, 404, "not_found"),
    (InvalidInputError, 422, "invalid_input"),
    (ConfirmationRequiredError, 400, "confirmation_required"),
    (ConflictError, 409, "conflict"),
    (EmbedderMismatchError, 409, "embedder_mismatch"),
    (ReadOnlyStoreError, 405, "read_only"),
    (StoreLockedError, 503, "store_locked"),
    (BackendUnavailableError, 503, "backend_unavailable"),
    (GraphmemError, 500, "store_error"),
]


def error_status(exc: GraphmemError) -> tuple[int, str]:
    """The HTTP status and error code of a graphmem error."""
    for kind, status, code in _STATUS:
        if isinstance(exc, kind):
            return status, code
    return 500, "store_error"


class _Refused(Exception):
    """401 / 403 from the authentication dependency."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


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


def _body(error: str, detail: str, **more: Any) -> dict[str, Any]:
    return {"error": error, "detail": detail, **more}


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json")


def _require(scope: str) -> Callable[[Request], Principal]:
    """A dependency: the caller, who must hold ``scope`` (tokens live in app.state)."""

    def authenticate(request: Request) -> Principal:
        tokens: Tokens | None = request.app.state.tokens
        if tokens is None:
            return LOCAL
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _Refused(401, "unauthorized", "send 'Authorization: Bearer <token>'")
        principal = tokens.lookup(token.strip())
        if principal is None:
            raise _Refused(401, "unauthorized", "unknown token")
        if not principal.allows(scope):
            raise _Refused(403, "forbidden", f"this token lacks the {scope} scope")
        return principal

    return authenticate


# Module level: FastAPI resolves these annotations by name in this module.
Reader = Annotated[Principal, Depends(_require("read"))]
Writer = Annotated[Principal, Depends(_require("write"))]
Admin = Annotated[Principal, Depends(_require("admin"))]


def create_app(store: MemoryStore, *, tokens: Tokens | None = None) -> FastAPI:
    """The sidecar's ASGI app over an open store. With ``tokens`` every request needs a
    bearer token and sees only its owner's memories; without, every caller is the local
    user (bind such a server to loopback only)."""
    app = FastAPI(title="graphmem sidecar", version=__version__,
                  description="An agent's memory over HTTP: remember, recall (explained), "
                              "feedback, lifecycle, GDPR export.",
                  docs_url=None, redoc_url=None)  # the docs pages fetch scripts from a CDN
    app.state.tokens = tokens

    @app.middleware("http")
    async def refuse_invalid_unicode(request: Request, call_next: Any) -> Any:
        """JSON may escape a lone surrogate (``"\\ud800"``): such text is not Unicode,
        cannot be stored or answered, and is refused before it reaches the store."""
        if request.method in ("POST", "PATCH", "PUT"):
            problem = _lone_surrogate(await request.body())
            if problem:
                return JSONResponse(_body("invalid_input", f"body: {problem}"),
                                    status_code=422)
        return await call_next(request)

    @app.exception_handler(_Refused)
    async def refused(_: Request, exc: _Refused) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse(_body(exc.code, exc.detail), status_code=exc.status,
                            headers=headers)

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

    def owned(principal: Principal, owner: str | None) -> str | None:
        """The owner a new memory gets: the token's (a different one is refused)."""
        if principal.owner is None:
            return owner
        if owner is not None and owner != principal.owner:
            raise InvalidInputError("owner must be left out (or be the token's own)",
                                    field="owner")
        return principal.owner

    def new_input(principal: Principal, item: MemoryIn) -> MemoryInput:
        fields = item.model_dump(exclude_none=True)
        fields["owner"] = owned(principal, item.owner)
        return MemoryInput.parse(fields)

    # -- memories -------------------------------------------------------------------------
    @app.post("/v1/memories", status_code=201, tags=["memories"])
    def add_memories(body: MemoryIn | MemoriesIn, who: Writer) -> dict[str, Any]:
        """Add one memory, or several (``{"memories": [...]}``) in bulk."""
        items = body.memories if isinstance(body, MemoriesIn) else [body]
        created = store.add_many([new_input(who, item) for item in items])
        if isinstance(body, MemoriesIn):
            return {"memories": [_dump(m) for m in created], "count": len(created)}
        out: dict[str, Any] = _dump(created[0])
        return out

    @app.post("/v1/conversations", status_code=201, tags=["memories"])
    def add_conversation(body: ConversationIn, who: Writer) -> dict[str, Any]:
        """Remember what a conversation says (quality gate, extraction, candidates)."""
        result = store.add_conversation(body.messages, session_id=body.session_id,
                                        owner=owned(who, None), timestamp=body.timestamp,
                                        cooccur_window=body.cooccur_window)
        out: dict[str, Any] = _dump(result)
        return out

    @app.post("/v1/memories/retrieve", tags=["recall"])
    def retrieve(body: RetrieveIn, who: Reader) -> dict[str, Any]:
        """Recall: full text, vectors and graph walks fused by RRF, re-ranked by ACT-R."""
        hits = store.recall(body.query, k=body.k, preset=body.preset, owner=who.owner,
                            kinds=body.kinds, as_of=body.as_of,
                            include_archived=body.include_archived,
                            record_access=body.record_access)
        out = []
        for hit in hits:
            item = {"memory": _dump(hit.memory), "score": hit.score, "rank": hit.rank}
            if body.explain:
                item["explanation"] = _dump(hit.explanation)
                item["why"] = hit.explanation.lines()
            out.append(item)
        return {"query": body.query, "preset": body.preset, "count": len(out), "hits": out}

    @app.get("/v1/memories/{memory_id}", tags=["memories"])
    def get_memory(memory_id: str, who: Reader) -> dict[str, Any]:
        out: dict[str, Any] = _dump(store.get(memory_id, owner=who.owner))
        return out

    @app.get("/v1/memories/{memory_id}/history", tags=["memories"])
    def history(memory_id: str, who: Reader) -> dict[str, Any]:
        versions = store.history(memory_id, owner=who.owner)
        return {"memory_id": memory_id, "versions": [_dump(v) for v in versions]}

    @app.patch("/v1/memories/{memory_id}", tags=["memories"])
    def patch_memory(memory_id: str, body: PatchIn, who: Writer) -> dict[str, Any]:
        """Change fields; one version row with change type ``reason``."""
        fields = body.model_dump(exclude_unset=True)
        reason = fields.pop("reason", "manual_edit")
        if not fields:
            raise InvalidInputError("nothing to change: give at least one field", field="body")
        memory = store.update(memory_id, **fields, reason=reason, owner=who.owner)
        out: dict[str, Any] = _dump(memory)
        return out

    @app.post("/v1/memories/{memory_id}/supersede", status_code=201, tags=["memories"])
    def supersede(memory_id: str, body: SupersedeIn, who: Writer) -> dict[str, Any]:
        """Replace a memory by a newer one; both are kept, linked by SUPERSEDES."""
        if (body.text is None) == (body.new_id is None):
            raise InvalidInputError("give exactly one of text (a new memory) or new_id",
                                    field="text")
        fields = body.model_dump(exclude_none=True, exclude={"text", "new_id", "reason"})
        if body.new_id is not None:
            new = store.supersede(memory_id, store.get(body.new_id, owner=who.owner),
                                  reason=body.reason, owner=who.owner)
        else:
            new = store.supersede(memory_id, str(body.text), reason=body.reason,
                                  owner=who.owner, **fields)
        out: dict[str, Any] = _dump(new)
        return out

    @app.post("/v1/feedback", tags=["recall"])
    def feedback(body: FeedbackIn, who: Writer) -> dict[str, Any]:
        """Whether a recalled memory helped: counts, importance, co-occurrence."""
        memory = store.feedback(body.memory_id, useful=body.useful, query=body.query,
                                owner=who.owner)
        return {"memory_id": memory.id, "useful_count": memory.useful_count,
                "ignored_count": memory.ignored_count, "importance": memory.importance}

    def _result(result: Any) -> Any:
        if not result.success:
            raise ConflictError(result.error or "the transition did not apply")
        return result.model_dump(mode="json", by_alias=True)

    @app.post("/v1/memories/{memory_id}/promote", tags=["lifecycle"])
    def promote(memory_id: str, who: Writer, body: PromoteIn | None = None) -> Any:
        body = body or PromoteIn()
        return _result(store.promote(memory_id, reason=body.reason, owner=who.owner))

    @app.post("/v1/memories/{memory_id}/archive", tags=["lifecycle"])
    def archive(memory_id: str, who: Writer, body: ArchiveIn | None = None) -> Any:
        body = body or ArchiveIn()
        return _result(store.archive(memory_id, reason=body.reason,
                                     create_summary=body.create_summary, owner=who.owner))

    @app.post("/v1/memories/{memory_id}/restore", tags=["lifecycle"])
    def restore(memory_id: str, who: Writer) -> Any:
        return _result(store.restore(memory_id, owner=who.owner))

    @app.delete("/v1/memories/{memory_id}", tags=["memories"])
    def delete(memory_id: str, request: Request,
               hard: Annotated[bool, Query(description="forget: erase the text "
                                                       "everywhere (admin scope)")] = False,
               reason: str = "manual") -> dict[str, Any]:
        """Tombstone a memory (write scope), or with ``hard=true`` forget it (admin)."""
        who = _require("admin" if hard else "write")(request)
        if hard:
            store.forget(memory_id, confirm=True, reason=reason, owner=who.owner)
            return {"memory_id": memory_id, "status": "forgotten"}
        memory = store.tombstone(memory_id, reason=reason, owner=who.owner)
        return {"memory_id": memory.id, "status": memory.status.value}

    @app.get("/v1/export", tags=["memories"])
    def export(who: Reader) -> dict[str, Any]:
        """The GDPR export: every memory of the caller's owner, versions and events."""
        return store.export(owner=who.owner)

    # -- lifecycle ------------------------------------------------------------------------
    @app.post("/v1/lifecycle/run", tags=["lifecycle"])
    def lifecycle_run(who: Admin, body: LifecycleRunIn | None = None) -> Any:
        """The lifecycle manager over the caller's memories (a dry run unless apply)."""
        body = body or LifecycleRunIn()
        report = store.run_lifecycle(apply=body.apply, owner=who.owner)
        return report.model_dump(mode="json", by_alias=True)

    @app.get("/v1/lifecycle/report", tags=["lifecycle"])
    def lifecycle_report(who: Reader, format: str = "json") -> Any:
        """The Archivist Lifecycle Report of a dry run: JSON, or Markdown."""
        if format not in ("json", "markdown"):
            raise InvalidInputError("format must be json or markdown", field="format")
        report = store.run_lifecycle(apply=False, owner=who.owner)
        if format == "markdown":
            return {"markdown": report.to_markdown()}
        return report.model_dump(mode="json", by_alias=True)

    @app.get("/healthz", tags=["service"])
    def healthz() -> dict[str, Any]:
        """Liveness: no token needed, says nothing about anyone's memories."""
        return {"status": "ok", "version": __version__,
                "auth": "tokens" if tokens is not None else "local"}

    return app


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _lone_surrogate(body: bytes) -> str | None:
    """What is wrong when a JSON body holds a string with a lone surrogate, else None."""
    if not _SURROGATE_ESCAPE.search(body):
        return None
    try:
        stack = [json.loads(body)]
    except (ValueError, RecursionError):
        return None  # the request's own validation reports it
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                return (f"text holds a lone surrogate (U+{ord(value[exc.start]):04X}): "
                        "not valid Unicode")
    return None

