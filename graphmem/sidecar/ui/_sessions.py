"""Browser sessions for the dashboard, in front of the sidecar's gate.

A page load cannot carry the API's bearer header, and a token must never travel in a
URL. So the dashboard logs in once: its script sends the token typed into the login form
as ``Authorization: Bearer`` to ``POST /ui/api/login`` (the gate checks it like any API
call) and gets back a session cookie (HttpOnly, SameSite=Strict, path ``/ui``) and a CSRF
token. ``SessionGate`` runs before the gate: on ``/ui/api`` requests it replaces the
cookie by the session's bearer token, so the gate authenticates and checks scopes exactly
as for the API; a request that changes something must also carry the CSRF token
(``X-CSRF-Token``) and come from the page's own origin. It serves the page's static
files itself: they hold no data.
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any

from .._auth import Tokens
from .._guard import SAFE_METHODS, ASGIApp, Receive, Scope, Send, is_loopback_host, same_origin

__all__ = ["API", "LOGIN", "PAGE_HEADERS", "SESSION", "Session", "SessionGate", "Sessions",
           "cookie_name", "session_cookie"]

#: Where the gate leaves the caller's dashboard session for the routes (``request.scope``).
SESSION = "graphmem.ui.session"
#: The dashboard's data routes; everything else under /ui is static.
API = "/ui/api/"
LOGIN = "/ui/api/login"


@dataclass
class Session:
    """One logged-in browser: the token it logged in with (None for a sidecar without
    tokens), its CSRF token, who it is, and when it was made and last used."""

    sid: str
    token: str | None
    csrf: str
    owner: str | None
    scopes: frozenset[str]
    created: float = field(default_factory=time.monotonic)
    seen: float = field(default_factory=time.monotonic)


class Sessions:
    """Sessions in memory (a restart logs everyone out), each ending after ``idle_s``
    without use or ``max_age_s`` in all. Each token keeps at most ``per_token`` (its
    least recently used go first): logins with one token, however many, never end a
    session opened with another, such as an administrator's. Tokens come from the
    tokens file, so memory stays bounded (without tokens, the local user is one key)."""

    def __init__(self, *, idle_s: float = 2 * 3600, max_age_s: float = 12 * 3600,
                 per_token: int = 64) -> None:
        self.idle_s, self.max_age_s, self.per_token = idle_s, max_age_s, per_token
        self._by_id: dict[str, Session] = {}
        self._by_token: dict[str | None, dict[str, Session]] = {}
        self._lock = threading.Lock()

    def create(self, *, token: str | None, owner: str | None,
               scopes: frozenset[str]) -> Session:
        session = Session(sid=secrets.token_urlsafe(32), token=token,
                          csrf=secrets.token_urlsafe(32), owner=owner, scopes=scopes)
        now = time.monotonic()
        with self._lock:
            mine = self._by_token.setdefault(token, {})
            for old in [s for s in mine.values() if self._ended(s, now)]:
                self._remove(old)
            while len(mine) >= self.per_token:
                self._remove(min(mine.values(), key=lambda s: s.seen))
            mine[session.sid] = self._by_id[session.sid] = session
        return session

    def get(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        now = time.monotonic()
        with self._lock:
            session = self._by_id.get(sid)
            if session is None:
                return None
            if self._ended(session, now):
                self._remove(session)
                return None
            session.seen = now
            return session

    def drop(self, sid: str) -> None:
        with self._lock:
            session = self._by_id.get(sid)
            if session is not None:
                self._remove(session)

    def __len__(self) -> int:
        return len(self._by_id)

    def _ended(self, session: Session, now: float) -> bool:
        return now - session.seen > self.idle_s or now - session.created > self.max_age_s

    def _remove(self, session: Session) -> None:
        del self._by_id[session.sid]
        del self._by_token[session.token][session.sid]


def cookie_name(scope: Scope) -> str:
    """The session cookie's name: one per port, since browsers share cookies between
    the ports of a host (two sidecars would log each other out)."""
    server = scope.get("server") or ("", 0)
    return f"graphmem_ui_{server[1] or 0}"


#: Security headers of every dashboard response; the page runs no inline script.
PAGE_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; frame-src 'self'; "
                               "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
}


class SessionGate:
    """Serves the dashboard's static files and turns its session cookie into the bearer
    token the gate checks; see the module docstring. Other paths pass untouched."""

    def __init__(self, app: ASGIApp, *, tokens: Tokens | None, sessions: Sessions,
                 assets: Mapping[str, tuple[bytes, str]]) -> None:
        self.app, self.tokens, self.sessions, self.assets = app, tokens, sessions, assets

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == "/ui" or path.startswith("/ui/")):
            await self.app(scope, receive, send)
            return
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1"))
                   for k, v in scope.get("headers", [])]
        if self.tokens is None and not is_loopback_host(_one(headers, "host")):
            await self.app(scope, receive, send)  # the gate refuses it, as for the API
            return
        if not path.startswith(API):
            await self._static(scope, send, path)
            return
        cookies = SimpleCookie()
        try:
            cookies.load(_one(headers, "cookie") or "")
        except Exception:  # a malformed Cookie header: as if there were none
            cookies = SimpleCookie()
        morsel = cookies.get(cookie_name(scope))
        session = self.sessions.get(morsel.value if morsel else None)
        if path == LOGIN:
            if scope["method"] != "POST" or not same_origin(scope, headers):
                await _json(send, 403, "forbidden", "log in from the dashboard's own page")
                return
            await self.app(scope, receive, send)
            return
        if session is None:
            await _json(send, 401, "unauthorized", "log in first (the session ended or "
                                                   "there is none)")
            return
        if scope["method"] not in SAFE_METHODS:
            sent = _one(headers, "x-csrf-token") or ""
            if not (same_origin(scope, headers)
                    and hmac.compare_digest(sent.encode(), session.csrf.encode())):
                await _json(send, 403, "csrf", "a change must come from the dashboard's "
                                               "page, with its X-CSRF-Token")
                return
        kept = [(k, v) for k, v in scope.get("headers", [])
                if k.lower() not in (b"authorization", b"cookie")]
        if session.token is not None:
            kept.append((b"authorization", f"Bearer {session.token}".encode("latin-1")))
        scope = {**scope, "headers": kept, SESSION: session}
        await self.app(scope, receive, send)

    async def _static(self, scope: Scope, send: Send, path: str) -> None:
        if scope["method"] not in SAFE_METHODS:
            await _json(send, 405, "method_not_allowed", "the dashboard's files are read only")
            return
        if path == "/ui":
            await _send(send, 308, b"", "text/plain", {"location": "/ui/"})
            return
        name = "index.html" if path == "/ui/" else path.removeprefix("/ui/static/")
        asset = self.assets.get(name) if path == "/ui/" or path.startswith("/ui/static/") \
            else None
        if asset is None:
            await _json(send, 404, "not_found", f"no dashboard file {path}")
            return
        body, content_type = asset
        await _send(send, 200, b"" if scope["method"] == "HEAD" else body, content_type,
                    PAGE_HEADERS, length=len(body))


def _one(headers: list[tuple[str, str]], name: str) -> str | None:
    values = [v for k, v in headers if k == name]
    return values[0] if len(values) == 1 else None


async def _send(send: Send, status: int, body: bytes, content_type: str,
                headers: Mapping[str, str], *, length: int | None = None) -> None:
    raw: list[tuple[bytes, bytes]] = [
        (b"content-type", content_type.encode("latin-1")),
        (b"content-length", str(len(body) if length is None else length).encode())]
    raw += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, code: str, detail: str) -> None:
    body = json.dumps({"error": code, "detail": detail}).encode()
    await _send(send, status, body, "application/json",
                {"cache-control": "no-store", "x-content-type-options": "nosniff"})


def session_cookie(scope: MutableMapping[str, Any], value: str, *,
                   max_age: int | None = None) -> str:
    """The ``Set-Cookie`` value of a session (empty ``value`` and ``max_age=0`` clear it)."""
    parts = [f"{cookie_name(scope)}={value}", "Path=/ui", "HttpOnly", "SameSite=Strict"]
    if scope.get("scheme") == "https":
        parts.append("Secure")
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    return "; ".join(parts)
