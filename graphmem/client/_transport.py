"""HTTP to a sidecar, and its error bodies back into graphmem's errors.

The sidecar answers every failure with ``{"error": code, "detail": ..., "field"?}``;
``raise_for`` turns the code into the exception the embedded store raises for the same
cause, so code written against ``MemoryStore`` catches the same classes over HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx

from .._errors import CODES, BackendUnavailableError, GraphmemError, InvalidInputError

__all__ = ["AccessDeniedError", "SidecarError", "SidecarUnreachable", "Transport",
           "path_segment"]


class AccessDeniedError(GraphmemError, PermissionError):
    """The sidecar refused the caller: no token, an unknown one, or one without the
    scope the operation needs (``code`` is ``unauthorized`` or ``forbidden``)."""

    def __init__(self, message: str, *, code: str = "forbidden") -> None:
        super().__init__(message)
        self.code = code


class SidecarError(GraphmemError):
    """The sidecar answered with an error graphmem has no closer class for (a body too
    large, a stalled request, an internal error): its HTTP ``status`` and ``code``."""

    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


class SidecarUnreachable(BackendUnavailableError):
    """The sidecar did not answer. ``maybe_applied``: the request may have reached it (a
    timeout after sending), so a change it carried may have been made there."""

    def __init__(self, message: str, *, maybe_applied: bool, reason: str = "") -> None:
        super().__init__(message)
        self.maybe_applied = maybe_applied
        self.reason = reason or message


#: The class of each code the sidecar answers with (``CODES`` read backwards); a generic
#: store_error stays a SidecarError, with its status.
_CLASSES: dict[str, type[GraphmemError]] = {code: kind for kind, code in CODES
                                            if kind is not GraphmemError}


def error_from(status: int, body: Any) -> GraphmemError:
    """The graphmem error a sidecar's error answer stands for."""
    if not isinstance(body, dict) or not isinstance(body.get("error"), str):
        return SidecarError(f"the sidecar answered {status} without an error body",
                            status=status, code="http_error")
    code, detail = body["error"], str(body.get("detail") or body["error"])
    if code == "invalid_input":
        field = body.get("field")
        return InvalidInputError(detail, field=field if isinstance(field, str) else None)
    if code in ("unauthorized", "forbidden"):
        return AccessDeniedError(detail, code=code)
    if code in _CLASSES and code != "invalid_input":
        return _CLASSES[code](detail)
    return SidecarError(f"{code}: {detail}", status=status, code=code)


def _named(error: GraphmemError, url: str) -> GraphmemError:
    """A refusal for want of a token, saying which sidecar wants one and how to give it."""
    if not isinstance(error, AccessDeniedError) or error.code != "unauthorized":
        return error
    return AccessDeniedError(
        f"the graphmem sidecar at {url} needs a token from its tokens file ({error}): pass "
        "--token TOKEN or set GRAPHMEM_SIDECAR_TOKEN (in Python: graphmem.connect(url, "
        "token=...))", code="unauthorized")


def path_segment(memory_id: str) -> str:
    """``memory_id`` as one URL path segment: every reserved character percent-encoded
    (``/``, ``#``, ``?`` and ``%`` too), and the dot segments that HTTP clients collapse
    (``.``, ``..``) spelled out, so the request reaches this memory and no other."""
    if not isinstance(memory_id, str) or not memory_id:
        raise InvalidInputError("memory_id must be a non-empty id", field="memory_id")
    segment = quote(memory_id, safe="")
    return {".": "%2E", "..": "%2E%2E"}.get(segment, segment)


class Transport:
    """One HTTP connection pool to the sidecar at ``url``, with a bearer ``token``."""

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 10.0,
                 actor: str | None = None) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidInputError(f"a sidecar URL starts with http:// or https://, got "
                                    f"{url!r}", field="url")
        self.url, self.timeout_s = url.rstrip("/"), timeout_s
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if actor:  # the local user's agent, recorded as the actor of its changes
            headers["X-Graphmem-Actor"] = actor
        self._client = httpx.Client(
            base_url=self.url, headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(2.0, timeout_s)))

    def close(self) -> None:
        self._client.close()

    def call(self, method: str, path: str, *, results_of: frozenset[int] | set[int] = frozenset(),
             **kwargs: Any) -> Any:
        """The JSON answer of one request; an error answer raised as a graphmem error,
        except for a status in ``results_of``, whose body's ``result`` is the answer."""
        with self.stream(method, path, results_of=results_of, **kwargs) as response:
            response.read()
            body = response.json()
            return body["result"] if response.status_code in results_of else body

    @contextmanager
    def stream(self, method: str, path: str, *,
               results_of: frozenset[int] | set[int] = frozenset(),
               **kwargs: Any) -> Iterator[httpx.Response]:
        """A successful response, its body not yet read (for large downloads)."""
        try:
            with self._client.stream(method, path, **kwargs) as response:
                if response.status_code >= 400 and response.status_code not in results_of:
                    response.read()
                    try:
                        body = response.json()
                    except ValueError:
                        body = None
                    raise _named(error_from(response.status_code, body), self.url)
                yield response
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise self._unreachable(f"cannot connect ({_why(exc)})", False) from exc
        except httpx.TimeoutException as exc:
            raise self._unreachable(f"no answer within {self.timeout_s:g} s "
                                    f"({type(exc).__name__})", True) from exc
        except httpx.TransportError as exc:
            raise self._unreachable(f"the connection failed ({_why(exc)})", True) from exc

    def _unreachable(self, reason: str, maybe_applied: bool) -> SidecarUnreachable:
        return SidecarUnreachable(f"the graphmem sidecar at {self.url} did not answer: "
                                  f"{reason}", maybe_applied=maybe_applied, reason=reason)


def _why(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
