"""The sidecar's gate on a real server, spoken to over raw sockets: the token is checked
before a byte of the body is read, bodies are capped (by Content-Length and while
streaming), stalled heads and bodies are ended, and the settings behind it parse."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from graphmem import InvalidInputError, MemoryStore, Settings
from graphmem.sidecar import Tokens, create_app
from graphmem.sidecar._auth import SCOPES
from graphmem.sidecar._deps import _Need
from graphmem.sidecar._guard import needs_of

from ._servers import every_route, raw_request, read_response, running_sidecar

WRITER, READER = "tok-limits-writer-0123", "tok-limits-reader-0123"
TOKENS = {WRITER: {"owner": "alice", "scopes": ["read", "write"]},
          READER: {"owner": "alice", "scopes": ["read"]}}
CAP = 64 * 1024
LIMITS = Settings(max_body_bytes=CAP, header_timeout_s=1.0, idle_timeout_s=1.0)


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with MemoryStore(tmp_path / "db", embedder="hashing", settings=LIMITS) as store, \
            running_sidecar(store, Tokens.from_mapping(TOKENS)) as served:
        yield served


def head(method: str, path: str, *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers, "", ""]
    return "\r\n".join(lines).encode("latin-1")


def bearer(token: str) -> str:
    return f"Authorization: Bearer {token}"


def test_the_token_is_checked_before_the_body_is_read(url: str) -> None:
    """A body is announced and never sent: the answer comes at once, so the body was
    not awaited (reading it first would stall until the idle timeout's 408)."""
    for headers, status in [((), 401), ((bearer("tok-not-a-token-at-all"),), 401),
                            ((bearer(READER),), 403)]:
        started = time.monotonic()
        answer = raw_request(url, head("POST", "/v1/memories", *headers,
                                       "Content-Type: application/json",
                                       "Content-Length: 5000"), timeout=0.8)
        assert answer.status == status, answer
        assert set(answer.json()) == {"error", "detail"}
        assert answer.closed  # the unread body is not read after the answer either
        assert time.monotonic() - started < 0.8
    # the same, with a body that is not even JSON: refused for the token, not the body
    bad = raw_request(url, head("POST", "/v1/memories", "Content-Length: 9"), [b"{not json"])
    assert bad.status == 401 and bad.headers["www-authenticate"] == "Bearer"


#: Routes that declare no scope, and why.
_NO_SCOPE = {
    "GET /healthz": "public: says nothing about anyone's memories",
    "GET /openapi.json": "public: the API's description",
    "POST /ui/api/logout": "ends the caller's own session",
    "DELETE /v1/memories/{memory_id}": "no body; the route needs write, or admin with "
                                       "hard=true",
}
#: One token per scope, holding every scope but that one.
_LACKING = {scope: f"tok-lacks-{scope}-0123456789" for scope in SCOPES}


def test_every_route_checks_its_scopes_before_the_body(tmp_path: Path) -> None:
    """Every route of the app, those of included routers (the dashboard's) too: a token
    without a scope the route declares is refused (403, naming the scope) at once, for a
    body announced and never sent; reading the body first would stall until the idle
    timeout. A route that declares no scope must be one of ``_NO_SCOPE``."""
    tokens = Tokens.from_mapping({token: {"owner": "alice", "scopes": sorted(set(SCOPES) - {s})}
                                  for s, token in _LACKING.items()})
    with MemoryStore(tmp_path / "db", embedder="hashing", settings=LIMITS) as store:
        routes = list(every_route(create_app(store, tokens=tokens).routes))
        checked = set()
        with running_sidecar(store, tokens) as served:
            host = served.removeprefix("http://")
            sessions = {scope: _login(served, token) for scope, token in _LACKING.items()
                        if scope != "read"}  # a session needs read to exist
            for route in routes:
                methods = sorted(getattr(route, "methods", None) or {"?"})
                for method in (m for m in methods if m != "HEAD"):
                    name = f"{method} {getattr(route, 'path', route)}"
                    assert isinstance(route, APIRoute) or name in _NO_SCOPE, \
                        f"{name}: the gate cannot read its scopes"
                    needs = needs_of(route) if isinstance(route, APIRoute) else set()
                    assert needs or name in _NO_SCOPE, f"{name} declares no scope"
                    path = re.sub(r"\{[^}]+\}", "m1", route.path)  # type: ignore[attr-defined]
                    for need in sorted(needs):
                        if path.startswith("/ui/api/") and path != "/ui/api/login":
                            if need not in sessions:
                                continue
                            who = [f"Cookie: {sessions[need][0]}",
                                   f"X-CSRF-Token: {sessions[need][1]}"]
                        else:
                            who = [bearer(_LACKING[need])]
                        started = time.monotonic()
                        answer = raw_request(served, "\r\n".join([
                            f"{method} {path} HTTP/1.1", f"Host: {host}",
                            f"Origin: http://{host}", "Sec-Fetch-Site: same-origin", *who,
                            "Content-Type: application/json", "Content-Length: 5000", "", ""
                        ]).encode(), timeout=0.8)
                        assert answer.status == 403, (name, need, answer)
                        assert answer.json()["detail"] == f"this token lacks the {need} scope"
                        assert answer.closed and time.monotonic() - started < 0.8
                        checked.add((name, need))
    assert {("POST /ui/api/review/decide", "admin"), ("POST /ui/api/feedback", "write"),
            ("POST /ui/api/login", "read"), ("POST /v1/cypher", "all_owners"),
            ("POST /v1/memories", "write")} <= checked


def test_a_route_added_later_is_gated_or_refused(tmp_path: Path) -> None:
    """A router included with a scope of its own is checked before the body like any
    route; a route whose scopes the gate cannot read (no FastAPI dependencies) is refused
    for everyone, and never runs."""
    ran: list[str] = []

    async def plain(request: Request) -> JSONResponse:
        ran.append("plain")
        return JSONResponse({})

    extra = APIRouter(prefix="/v1/extra")

    @extra.post("/thing")
    def thing(body: dict[str, int]) -> dict[str, int]:
        ran.append("thing")
        return body

    tokens = Tokens.from_mapping({WRITER: TOKENS[WRITER],
                                  "tok-limits-admin-01234": {"owner": "alice",
                                                             "scopes": ["admin"]}})
    with MemoryStore(tmp_path / "db", embedder="hashing", settings=LIMITS) as store:
        app = create_app(store, tokens=tokens)
        app.include_router(extra, dependencies=[Depends(_Need("admin"))])
        app.add_route("/v1/plain", plain, methods=["POST"])
        with running_sidecar(store, app=app) as served:
            started = time.monotonic()
            lacking = raw_request(served, head("POST", "/v1/extra/thing", bearer(WRITER),
                                               "Content-Length: 5000"), timeout=0.8)
            assert lacking.status == 403 and time.monotonic() - started < 0.8
            assert lacking.json()["detail"] == "this token lacks the admin scope"
            allowed = httpx.post(served + "/v1/extra/thing", json={"n": 1},
                                 headers={"Authorization": "Bearer tok-limits-admin-01234"})
            assert allowed.status_code == 200 and allowed.json() == {"n": 1}
            for token in (WRITER, "tok-limits-admin-01234"):
                refused = httpx.post(served + "/v1/plain", json={},
                                     headers={"Authorization": f"Bearer {token}"})
                assert refused.status_code == 500 and refused.json()["error"] == "internal"
    assert ran == ["thing"]


def _login(url: str, token: str) -> tuple[str, str]:
    """A dashboard session of ``token``: its cookie (``name=value``) and CSRF token."""
    with httpx.Client(base_url=url, headers={"Origin": url}) as client:
        answer = client.post("/ui/api/login", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
        [(name, value)] = client.cookies.items()
        return f"{name}={value}", answer.json()["csrf"]


def test_an_announced_body_over_the_cap_is_refused_unread(url: str) -> None:
    answer = raw_request(url, head("POST", "/v1/memories", bearer(WRITER),
                                   "Content-Type: application/json",
                                   "Content-Length: 300000000"), timeout=0.8)
    assert answer.status == 413 and answer.closed
    assert answer.json() == {
        "error": "too_large", "field": "body",
        "detail": f"the request body is larger than {CAP} bytes (GRAPHMEM_MAX_BODY_BYTES); "
                  "send fewer memories per request"}
    at_cap = b'{"text": "' + b"x" * (CAP - 12) + b'"}'
    assert len(at_cap) == CAP
    fits = raw_request(url, head("POST", "/v1/memories", bearer(WRITER),
                                 "Content-Type: application/json",
                                 f"Content-Length: {CAP}"), [at_cap])
    assert fits.status == 201, fits.body[:300]


def test_a_chunked_body_is_cut_at_the_cap(url: str) -> None:
    """No length announced: the gate counts while reading and answers 413 as soon as the
    cap is passed, before the body ends (its last chunk is never sent)."""
    piece = b"x" * 8192
    chunks = [b"%x\r\n%s\r\n" % (len(piece), piece)] * (CAP // len(piece) + 1)
    answer = raw_request(url, head("POST", "/v1/memories", bearer(WRITER),
                                   "Content-Type: application/json",
                                   "Transfer-Encoding: chunked"), chunks, timeout=5)
    assert answer.status == 413 and answer.json()["error"] == "too_large"
    small = b'{"text": "chunked and small"}'
    fine = raw_request(url, head("POST", "/v1/memories", bearer(WRITER),
                                 "Content-Type: application/json",
                                 "Transfer-Encoding: chunked"),
                       [b"%x\r\n%s\r\n" % (len(small), small), b"0\r\n\r\n"])
    assert fine.status == 201 and json.loads(fine.body)["owner"] == "alice"


def test_a_stalled_body_gets_408(url: str) -> None:
    started = time.monotonic()
    answer = raw_request(url, head("POST", "/v1/memories", bearer(WRITER),
                                   "Content-Length: 100"), [b'{"text": '], timeout=5)
    assert answer.status == 408 and answer.json()["error"] == "timeout"
    assert "GRAPHMEM_IDLE_TIMEOUT_S" in answer.json()["detail"]
    assert 0.9 < time.monotonic() - started < 4


def _closed_after(url: str, first: bytes, trickle: bytes, every: float) -> float:
    """Seconds until the server closes a connection that sent ``first`` and then one
    byte of ``trickle`` every ``every`` seconds (never a whole request head)."""
    host, _, port = url.removeprefix("http://").partition(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(first)
        for byte in trickle:
            sock.settimeout(every)
            try:
                if sock.recv(1024) == b"":
                    return time.monotonic() - started
            except TimeoutError:
                pass
            except OSError:
                return time.monotonic() - started
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return time.monotonic() - started
    raise AssertionError("the server kept a slow request head open")


def test_a_slow_request_head_is_cut_off(url: str) -> None:
    """Slowloris: a byte every 0.2 s keeps uvicorn's own timers quiet; the head deadline
    (GRAPHMEM_HEADER_TIMEOUT_S, 1 s here) closes the connection anyway."""
    slow = _closed_after(url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                         b"X-Padding: " + b"a" * 100, every=0.2)
    assert 0.9 < slow < 3
    silent = _closed_after(url, b"", b"G" * 1, every=3)  # opens and says nothing
    assert 0.9 < silent < 3.5


def test_a_kept_alive_connection_serves_then_idles_out(url: str) -> None:
    host, _, port = url.removeprefix("http://").partition(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for _ in range(2):  # two requests on one connection, well within the deadline
            sock.sendall(head("GET", "/healthz"))
            answer = read_response(sock, time.monotonic() + 5)
            assert answer.status == 200 and not answer.closed
        started = time.monotonic()
        assert sock.recv(4096) == b""
        assert time.monotonic() - started < 3


@pytest.mark.parametrize(("name", "raw", "message"), [
    ("GRAPHMEM_MAX_BODY_BYTES", "lots", "expected an integer"),
    ("GRAPHMEM_MAX_BODY_BYTES", "100", "must be >= 1024"),
    ("GRAPHMEM_HEADER_TIMEOUT_S", "0", "must be >= 0.1"),
    ("GRAPHMEM_IDLE_TIMEOUT_S", "nan", "expected a finite number"),
    ("GRAPHMEM_SIDECAR_TIMEOUT_S", "-1", "must be >= 0.1"),
    ("GRAPHMEM_CYPHER_TIMEOUT_S", "0", "must be >= 0.001"),
    ("GRAPHMEM_CYPHER_TIMEOUT_S", "soon", "expected a number"),
])
def test_limit_settings_are_checked(name: str, raw: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message) as caught:
        Settings.from_env({name: raw})
    assert caught.value.field == name
    assert Settings.from_env({"GRAPHMEM_MAX_BODY_BYTES": "2048", "GRAPHMEM_IDLE_TIMEOUT_S":
                              "2.5"}).max_body_bytes == 2048
    assert Settings().max_body_bytes == 16 * 2**20


def test_the_head_deadline_does_not_cut_a_slow_answer(tmp_path: Path) -> None:
    """The deadline is for the request head: a request whose head came in time is
    answered however long the store takes (here 2 s, twice the deadline)."""
    with MemoryStore(tmp_path / "db", embedder="hashing", settings=LIMITS) as store:
        recall = store.recall

        def slow(*args: object, **kwargs: object) -> object:
            time.sleep(2)
            return recall(*args, **kwargs)  # type: ignore[arg-type]

        store.recall = slow  # type: ignore[method-assign]
        with running_sidecar(store, Tokens.from_mapping(TOKENS)) as served:
            body = b'{"query": "anything"}'
            answer = raw_request(served, head("POST", "/v1/memories/retrieve",
                                              bearer(WRITER), "Content-Type: application/json",
                                              f"Content-Length: {len(body)}"),
                                 [body], timeout=10)
    assert answer.status == 200 and answer.json()["count"] == 0
