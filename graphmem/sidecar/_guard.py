"""The sidecar's gate: a pure ASGI middleware that every request passes before FastAPI
parses a byte of it.

In order: the Host header (loopback only when there are no tokens: DNS rebinding), the
site a change comes from (without tokens a browser's request from another site is
refused: a web page must not act as the local user), the path (split on its raw slashes,
so ``%2F`` inside an id never becomes a separator), the bearer token and the route's
scope, then the body, read with a size cap and an idle timeout. A refusal is answered
here, with the same ``{"error", "detail"}`` body as every other error; nothing behind
the gate sees a refused request.

The route's scopes are read from its dependencies (``needs_of``), over every route the
app can reach (``gated_routes``: those of included routers too). A route whose
dependencies the gate cannot read is refused rather than let through.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from dataclasses import replace
from typing import Any, Protocol
from urllib.parse import quote, unquote_to_bytes

from starlette.routing import BaseRoute, Match

from .._input import lone_surrogate_at
from ._auth import LOCAL, Principal, Tokens

__all__ = ["ACTOR_HEADER", "PRINCIPAL", "PUBLIC_PATHS", "SAFE_METHODS", "Guard", "Refusal",
           "canonical_path", "gated_routes", "is_loopback_host", "needs_of", "same_origin"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Where the gate leaves the authenticated caller for the routes (``request.scope``).
PRINCIPAL = "graphmem.principal"
#: Paths served without a token: they say nothing about anyone's memories.
PUBLIC_PATHS = frozenset({"/healthz", "/openapi.json"})
#: Methods that change nothing; every other one may.
SAFE_METHODS = frozenset({"GET", "HEAD"})

_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
_HOST = re.compile(r"(?P<name>\[[^\]]*\]|[^:\[\]]*)(?::(?P<port>[0-9]{1,5}))?")
_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +([!-~]+)")
_ACTOR = re.compile(r"[!-~](?:[ -~]{0,198}[!-~])?")
#: The header in which the local user names the actor of its changes (``Principal``).
ACTOR_HEADER = "x-graphmem-actor"
_DIGITS = re.compile(r"[0-9]{1,20}")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class Routable(Protocol):
    """A route as the gate sees it: it matches a request, and may carry ``dependant``."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]: ...


class Refusal(Exception):
    """A request the gate (or a route) answers with an error: status, code, detail."""

    def __init__(self, status: int, code: str, detail: str, *, field: str | None = None,
                 headers: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.field = status, code, detail, field
        self.headers = list(headers)

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.code, "detail": self.detail}
        if self.field:
            out["field"] = self.field
        return out


class _Disconnected(Exception):
    """The client went away while sending its body: nobody to answer."""


def is_loopback_host(value: str | None) -> bool:
    """Whether a Host header names this machine: ``127.0.0.1``, ``localhost`` or
    ``[::1]``, with an optional port. Anything else (other names, other loopback
    addresses, trailing dots, user-info, several values) is refused: a page in a browser
    reaches a loopback server under a name its attacker controls (DNS rebinding), and
    that name is what arrives here."""
    if value is None:
        return False
    match = _HOST.fullmatch(value.strip(" \t").lower())
    if match is None or match.group("name") not in _LOOPBACK_NAMES:
        return False
    return match.group("port") is None or int(match.group("port")) <= 65535


def same_origin(scope: Scope, headers: list[tuple[str, str]]) -> bool:
    """Whether the request comes from this server's own pages, or from a client that is
    not a browser: ``Sec-Fetch-Site`` (when sent) is ``same-origin`` and ``Origin`` (when
    sent) is this server's, each sent once at most. Browsers send one or both with every
    cross-origin request, whatever its content type; ``same-site`` is refused too, since
    another port of the same host (any local web server) is the same site."""
    sites = [v for k, v in headers if k == "sec-fetch-site"]
    origins = [v for k, v in headers if k == "origin"]
    if len(sites) > 1 or len(origins) > 1 or sites not in ([], ["same-origin"]):
        return False
    host = _one(headers, "host")
    return not origins or (host is not None
                           and origins[0] == f"{scope.get('scheme', 'http')}://{host}")


def canonical_path(scope: Scope) -> str:
    """The request path with every segment percent-encoded again, split on the raw
    path's own slashes only: ``/v1/memories/a%2Fhistory`` stays one id (``a/history``)
    instead of becoming the history route of ``a``. Routes see ids as encoded segments
    and decode them once (``unquote``)."""
    raw = scope.get("raw_path")
    if raw is None:  # a server that does not give the raw path: only the decoded one
        raw = quote(scope["path"], safe="/").encode("ascii")
    raw = bytes(raw).split(b"?", 1)[0]
    segments = []
    for segment in raw.split(b"/"):
        try:
            text = unquote_to_bytes(segment).decode("utf-8")
        except UnicodeDecodeError:
            raise Refusal(400, "invalid_path", "the path holds percent-encoded bytes that "
                          "are not UTF-8; encode ids as UTF-8, e.g. "
                          "urllib.parse.quote(id, safe='')", field="path") from None
        segments.append(quote(text, safe=""))
    return "/".join(segments)


def check_query(scope: Scope) -> None:
    """Refuse a query string whose names or values are percent-encoded bytes that are not
    UTF-8 (``?owner=%ED%A0%80``): the server decodes them to U+FFFD, so the request
    asked about another owner than the one meant and was answered with nothing. A
    ``+`` stands for a space, as in any form-encoded query."""
    for pair in bytes(scope.get("query_string") or b"").split(b"&"):
        name, _, value = pair.partition(b"=")
        for part in (name, value):
            try:
                unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError:
                named = unquote_to_bytes(name).decode("utf-8", "replace")
                # named as pydantic's 422s name a query parameter
                field = f"query.{named}" if part is value and named else "query"
                raise Refusal(422, "invalid_input", f"{field}: the query string holds "
                              "percent-encoded bytes that are not UTF-8; encode values "
                              "as UTF-8, e.g. urllib.parse.urlencode", field=field) from None


def gated_routes(routes: Sequence[BaseRoute]) -> list[Routable]:
    """Every route a request can reach, in the order the app tries them. FastAPI (from
    0.165) keeps an included router as one entry that matches for its routes but holds
    none of their dependencies; its routes (each with the dependencies of its inclusion)
    stand here in its place. Listed again for each request (80 µs for the sidecar's 41
    routes, measured), so that a route added after the app started is gated too."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # an older FastAPI copies an included router's routes
        return list(routes)
    return list(iter_route_contexts(routes))  # each delegates to its effective route


def needs_of(route: object) -> set[str]:
    """The scopes a route's dependencies require (each scope dependency carries
    ``needs``, see ``_app._Need``)."""
    found: set[str] = set()
    stack = list(getattr(getattr(route, "dependant", None), "dependencies", []))
    while stack:
        dependant = stack.pop()
        need = getattr(dependant.call, "needs", None)
        if need:
            found.add(need)
        stack.extend(dependant.dependencies)
    return found


class Guard:
    """Host, path, token and scope, then a capped body; see the module docstring."""

    def __init__(self, app: ASGIApp, *, tokens: Tokens | None, routes: list[BaseRoute],
                 max_body_bytes: int, idle_timeout_s: float) -> None:
        self.app, self.tokens, self.routes = app, tokens, routes
        self.max_body_bytes, self.idle_timeout_s = max_body_bytes, idle_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        try:
            if self.tokens is None and not is_loopback_host(_one(headers, "host")):
                raise Refusal(400, "invalid_host", "without tokens this sidecar serves only "
                              "requests addressed to 127.0.0.1, localhost or [::1] (a web "
                              "page could otherwise reach it through a DNS name it "
                              "controls); serve with --tokens FILE to accept other names",
                              field="host")
            if self.tokens is None and scope["method"] not in SAFE_METHODS \
                    and not same_origin(scope, headers):
                raise Refusal(403, "cross_site", "without tokens this sidecar takes changes "
                              "only from its own pages or from clients that are not "
                              "browsers: this request came from another site's page "
                              "(Origin, Sec-Fetch-Site)")
            scope = {**scope, "path": canonical_path(scope)}
            if scope["path"] not in PUBLIC_PATHS:
                principal = self._authenticate(headers)
                self._authorize(scope, principal)
                scope[PRINCIPAL] = principal
            check_query(scope)  # after the token, as every check of what was sent
            body = await self._read_body(headers, receive)
            problem = _lone_surrogate(body)
            if problem:
                field, message = problem
                raise Refusal(422, "invalid_input", f"{field}: {message}", field=field)
        except Refusal as refusal:
            await _answer(send, refusal, close=_has_body(headers))
            return
        except _Disconnected:
            return
        await self.app(scope, _replay(body, receive), send)

    def _authenticate(self, headers: list[tuple[str, str]]) -> Principal:
        principal = self._bearer(headers)
        named = [v for k, v in headers if k == ACTOR_HEADER]
        if not named:
            return principal
        if principal.owner is not None:
            raise Refusal(400, "invalid_input", "a token's changes record its owner as the "
                          f"actor: leave the {ACTOR_HEADER} header out", field="actor")
        actor = named[0].strip(" \t")
        if len(named) != 1 or not _ACTOR.fullmatch(actor):
            raise Refusal(400, "invalid_input", f"{ACTOR_HEADER}: one name of 1 to 200 "
                          "visible characters", field="actor")
        return replace(principal, actor=actor)

    def _bearer(self, headers: list[tuple[str, str]]) -> Principal:
        if self.tokens is None:
            return LOCAL
        challenge = [("www-authenticate", "Bearer")]
        values = [v for k, v in headers if k == "authorization"]
        if len(values) != 1:
            raise Refusal(401, "unauthorized", "send one 'Authorization: Bearer <token>' "
                          "header", headers=challenge)
        match = _BEARER.fullmatch(values[0].strip(" \t"))
        if match is None:
            raise Refusal(401, "unauthorized", "send 'Authorization: Bearer <token>'",
                          headers=challenge)
        principal = self.tokens.lookup(match.group(1))
        if principal is None:
            raise Refusal(401, "unauthorized", "unknown token", headers=challenge)
        return principal

    def _authorize(self, scope: Scope, principal: Principal) -> None:
        """Refuse a route the token has no scope for before its body is read (the
        route's own dependency checks again, after parsing)."""
        for route in gated_routes(self.routes):
            match, _ = route.matches(scope)
            if match is Match.FULL:
                if getattr(route, "dependant", None) is None:
                    raise Refusal(500, "internal", "the sidecar cannot tell which scopes "
                                  "this route needs, so it serves it to nobody")
                for need in sorted(needs_of(route)):
                    if not principal.allows(need):
                        raise Refusal(403, "forbidden", f"this token lacks the {need} scope")
                return

    async def _read_body(self, headers: list[tuple[str, str]], receive: Receive) -> bytes:
        cap = self.max_body_bytes
        too_large = Refusal(413, "too_large", f"the request body is larger than {cap} bytes "
                            "(GRAPHMEM_MAX_BODY_BYTES); send fewer memories per request",
                            field="body")
        lengths = {v.strip() for k, v in headers if k == "content-length"}
        if lengths and any(k == "transfer-encoding" for k, _ in headers):
            raise Refusal(400, "invalid_header", "send Content-Length or Transfer-Encoding, "
                          "not both", field="content-length")
        if lengths:
            if len(lengths) != 1 or not _DIGITS.fullmatch(next(iter(lengths))):
                raise Refusal(400, "invalid_header", "Content-Length must be one decimal "
                              "number", field="content-length")
            if int(next(iter(lengths))) > cap:
                raise too_large
        chunks, size = [], 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), self.idle_timeout_s)
            except TimeoutError:
                raise Refusal(408, "timeout", f"the request body stalled for more than "
                              f"{self.idle_timeout_s:g} s (GRAPHMEM_IDLE_TIMEOUT_S)",
                              field="body") from None
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > cap:
                raise too_large
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _headers(scope: Scope) -> list[tuple[str, str]]:
    return [(k.decode("latin-1").lower(), v.decode("latin-1"))
            for k, v in scope.get("headers", [])]


def _one(headers: list[tuple[str, str]], name: str) -> str | None:
    values = [v for k, v in headers if k == name]
    return values[0] if len(values) == 1 else None


def _has_body(headers: list[tuple[str, str]]) -> bool:
    return any(k == "transfer-encoding" or (k == "content-length" and v.strip() != "0")
               for k, v in headers)


async def _answer(send: Send, refusal: Refusal, *, close: bool) -> None:
    """Answer with the JSON error body; ``close`` when the body was left unread, so the
    server drops the connection instead of reading the rest."""
    payload = json.dumps(refusal.body()).encode("utf-8")
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(payload)).encode("ascii"))]
    headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in refusal.headers]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body already read, then waits for the disconnect."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def again() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return again


def _lone_surrogate(body: bytes) -> tuple[str, str] | None:
    """Where and what is wrong when a JSON body holds a string with a lone surrogate
    (JSON may escape one, ``"\\ud800"``; such text is not Unicode and cannot be stored):
    ``lone_surrogate_at`` of the parsed body; else None."""
    if not _SURROGATE_ESCAPE.search(body):
        return None
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return None  # the request's own validation reports it
    return lone_surrogate_at(parsed, top="body")
    try:
        stack: list[tuple[str, Any]] = [("", json.loads(body))]
    except (ValueError, RecursionError):
        return None  # the request's own validation reports it
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((path or "body", key) for key in value)
            stack.extend((f"{path}.{key}" if path else str(key), item)
                         for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}.{i}" if path else str(i), item)
                         for i, item in enumerate(value))
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                return (path or "body", f"text holds a lone surrogate "
                        f"(U+{ord(value[exc.start]):04X}): not valid Unicode")
    return None
