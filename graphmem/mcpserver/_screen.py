"""Answer the lines the SDK cannot read. The SDK's parser refuses a line that is not JSON,
or a JSON string escaping a lone surrogate (``"\\ud800"``, which is not Unicode), or a
request of the wrong shape, and drops it: the client waited for an answer that never
came. Here such a line gets the JSON-RPC error it is owed: "parse error" (id null) for a
line that is not JSON; "invalid params" naming the field (``params.arguments.text``, as
the sidecar's 422 names it) for a request holding a lone surrogate, the line read again
with Python's parser, which keeps the surrogate; "invalid request" for a request whose id
an answer can carry (of the wrong shape, or nested deeper than the SDK's parser goes), and
with id null for a message that is no JSON object (a batch, a number). Notifications and
responses are never answered, whatever objects they hold."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable
from types import TracebackType
from typing import Any

from .._input import lone_surrogate_at

__all__ = ["Screened", "serve_stdio"]

#: JSON-RPC's error codes
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def _usable_id(request: dict[str, Any]) -> bool:
    ident = request.get("id")
    return not isinstance(ident, bool) and isinstance(ident, int | str) \
        and lone_surrogate_at(ident) is None


def _error(ident: int | str | None, code: int, message: str) -> Any:
    from mcp.shared.message import SessionMessage
    from mcp.types import ErrorData, JSONRPCError

    try:
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(
            code=code, message=message)))
    except ValueError:  # an id the SDK's types refuse: the line is dropped, as the SDK does
        return None


def refusal(exc: Exception) -> Any:
    """The JSON-RPC error answering the line ``exc`` failed to parse, or None when the
    line is no request an answer could reach (a notification, a response, an id that is
    not an integer or a string, a blank line).

    >>> import pydantic
    >>> class Probe(pydantic.BaseModel):
    ...     jsonrpc: str
    ...     id: int
    ...     method: str
    >>> def failed(line):
    ...     try:
    ...         Probe.model_validate_json(line)
    ...     except pydantic.ValidationError as exc:
    ...         return exc
    >>> refusal(failed('{"id": 7, "method": "m", "params": {"a": "\\ud800"}}')).message.id
    7
    >>> print(refusal(failed('{"id": 7, "method"')).message.error.code)
    -32700
    >>> [refusal(failed(line)) for line in ('{"id": true, "method": "m", "p": "\\ud800"}',
    ...                                     '{"id": 8, "result": {"x": "\\ud800"}}', "  ")]
    [None, None, None]
    """
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        found = list(errors())
    except (TypeError, ValueError):
        return None
    if not found:
        return None
    if found[0].get("type") not in ("json_invalid", "string_unicode"):
        return _invalid(found)  # JSON, but no message of JSON-RPC's shapes
    line = found[0].get("input")
    if not isinstance(line, str) or not line.strip():
        return None
    try:
        request = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, "parse error: the line is not JSON")
    if not isinstance(request, dict):
        return _error(None, INVALID_REQUEST, _NOT_AN_OBJECT)
    if "method" not in request or not _usable_id(request):
        return None  # a response or a notification is never answered
    problem = lone_surrogate_at(request, top="message")
    if problem is not None:
        field, what = problem
        return _error(request["id"], INVALID_PARAMS, f"{field}: {what}")
    # JSON that Python reads and the SDK's parser does not (nested deeper than it goes)
    return _error(request["id"], INVALID_REQUEST,
                  f"invalid request: {found[0].get('msg', 'unreadable JSON')}")


_NOT_AN_OBJECT = ("invalid request: a message is one JSON object (a batch, an array of "
                  "messages, is not taken)")


def _invalid(errors: list[Any]) -> Any:
    """"Invalid request" for a message of the wrong shape: with its id when it is a
    request whose id an answer can carry, with none when it is no JSON object at all.
    Only the message itself counts, never an object inside it (a response holding
    ``{"method": ..., "id": 7}`` is still a response)."""
    for error in errors:
        loc, message = error.get("loc", ()), error.get("input")
        if len(loc) == 1 and not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, _NOT_AN_OBJECT)
        top = len(loc) == 1 or (len(loc) == 2 and error.get("type") == "missing")
        if top and isinstance(message, dict):
            if "method" in message and _usable_id(message):
                return _error(message["id"], INVALID_REQUEST, "invalid request: not a "
                              'JSON-RPC 2.0 request (jsonrpc "2.0", a method name, params '
                              "an object)")
            return None  # a response or a notification is never answered
    return None


class Screened:
    """The SDK's read stream, with the lines it could not parse answered on ``write``
    when they are requests holding a lone surrogate (``refusal``)."""

    def __init__(self, read: Any, write: Any) -> None:
        self._read, self._write = read, write

    def __getattr__(self, name: str) -> Any:  # last_context and the like
        return getattr(self._read, name)

    async def receive(self) -> Any:
        while True:
            item = await self._read.receive()
            answer = refusal(item) if isinstance(item, Exception) else None
            if answer is None:
                return item
            await self._write.send(answer)

    async def aclose(self) -> None:
        await self._read.aclose()

    def __aiter__(self) -> Screened:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Screened:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()


def serve_stdio(server: Any) -> None:
    """``server.run("stdio")``, its read stream ``Screened`` (with an SDK whose server
    keeps its low-level server elsewhere, as it is)."""
    import anyio
    from mcp.server.stdio import stdio_server

    low = getattr(server, "_lowlevel_server", None)
    if low is None:
        server.run("stdio")
        return

    stdin, restore = _stdin()

    async def run() -> None:
        async with stdio_server(stdin=anyio.wrap_file(stdin)) as (read, write):
            await low.run(Screened(read, write), write, low.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        restore()


def _stdin() -> tuple[io.TextIOWrapper, Callable[[], None]]:
    """The process's standard input as the server reads its lines, and how to give fd 0
    back. The SDK's own reader replaced bytes that are not UTF-8 by U+FFFD (a text stored
    changed, unasked) and split lines at a lone CR as well (one message became two lines,
    neither JSON); this one ends lines at LF alone (a CR before it is JSON's whitespace) and
    keeps a byte that is not UTF-8 as a lone surrogate, which ``refusal`` answers naming
    the field. Meanwhile fd 0 reads the null device, as the SDK does with its own: what the
    tools run never reads the client's messages."""
    fd = os.dup(0)
    stream = io.TextIOWrapper(os.fdopen(fd, "rb"), encoding="utf-8", errors="surrogateescape",
                              newline="\n")
    saved = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    def restore() -> None:
        os.dup2(saved, 0)
        os.close(saved)
        with contextlib.suppress(OSError, ValueError):
            stream.close()

    return stream, restore
