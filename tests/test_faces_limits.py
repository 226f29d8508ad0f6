"""The sidecar's gate on a real server, spoken to over raw sockets: the token is checked
before a byte of the body is read, bodies are capped (by Content-Length and while
streaming), stalled heads and bodies are ended, and the settings behind it parse."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem import InvalidInputError, MemoryStore, Settings
from graphmem.sidecar import Tokens

from ._servers import raw_request, read_response, running_sidecar

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
