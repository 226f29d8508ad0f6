"""Answer requests the SDK cannot read: a JSON string may escape a lone surrogate
(``"\\ud800"``), which is not Unicode; the SDK's parser refuses such a line and drops it,
so the client waited for an answer that never came. Here the line is read again with
Python's parser, which keeps the surrogate, and the request gets a JSON-RPC error naming
the field (``params.arguments.text``), as the sidecar's 422 names it."""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

__all__ = ["Screened", "serve_stdio"]

#: JSON-RPC's "invalid params"
INVALID_PARAMS = -32602


def surrogate_at(value: Any, path: str = "") -> str | None:
    """The path of the first string of ``value`` (keys too) holding a lone surrogate.

    >>> surrogate_at({"params": {"arguments": {"text": "x \\ud800"}}})
    'params.arguments.text'
    >>> surrogate_at({"ok": ["fine"]}) is None
    True
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "message"
        return None
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    else:
        return None
    for key, item in items:
        if isinstance(key, str) and surrogate_at(key) is not None:
            return path or "message"  # a key: its object is named
        found = surrogate_at(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def refusal(exc: Exception) -> Any:
    """The JSON-RPC error answering the line ``exc`` failed to parse, when it is a request
    (a method and an integer or string id) holding a lone surrogate; else None.

    >>> import pydantic
    >>> class Probe(pydantic.BaseModel):
    ...     x: int
    >>> def failed(line):
    ...     try:
    ...         Probe.model_validate_json(line)
    ...     except pydantic.ValidationError as exc:
    ...         return exc
    >>> refusal(failed('{"id": 7, "method": "m", "params": {"a": "\\ud800"}}')).message.id
    7
    >>> [refusal(failed(line)) for line in ('{"id": true, "method": "m", "p": "\\ud800"}',
    ...                                     '{"id": 8, "result": {"x": "\\ud800"}}')]
    [None, None]
    """
    from mcp.shared.message import SessionMessage
    from mcp.types import ErrorData, JSONRPCError

    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        line = errors()[0].get("input")
        request = json.loads(line) if isinstance(line, str) else None
    except (ValueError, IndexError, TypeError, RecursionError):
        return None
    if not isinstance(request, dict) or "method" not in request:
        return None  # a response or a notification is never answered
    ident = request.get("id")
    if isinstance(ident, bool) or not isinstance(ident, int | str) \
            or (isinstance(ident, str) and surrogate_at(ident)):
        return None  # no id the answer could carry
    field = surrogate_at(request)
    if field is None:
        return None
    message = f"{field}: text holds a lone surrogate: not valid Unicode"
    try:
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(
            code=INVALID_PARAMS, message=message)))
    except ValueError:  # an id the SDK's types refuse: the line is dropped, as the SDK does
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

    async def run() -> None:
        async with stdio_server() as (read, write):
            await low.run(Screened(read, write), write, low.create_initialization_options())

    anyio.run(run)
