"""Hostile input at the faces' new entry points (property-based): the Host header and
the site a change comes from (Origin, Sec-Fetch-Site) at a sidecar without tokens, the
Authorization header, odd Content-Length values, chunked
bodies around the cap, and the MCP tools with a token (or none) and a dead sidecar.

Each property compares the answer with an oracle written independently of the code, and
checks that nothing was read, written or opened that should not be. Examples per test:
``GRAPHMEM_HOSTILE_EXAMPLES`` (as in ``test_hostile.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from graphmem import MemoryStore, Settings
from graphmem.mcpserver import build_server
from graphmem.sidecar import Tokens

from ._servers import free_port, raw_request, running_sidecar

EXAMPLES = int(os.environ.get("GRAPHMEM_HOSTILE_EXAMPLES", "40"))
FAST = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

TOKEN = "tok-hostile-faces-0123"
TOKENS = {TOKEN: {"owner": "alice", "scopes": ["read", "write"]}}
CAP = 4096
LIMITS = Settings(max_body_bytes=CAP, header_timeout_s=2.0, idle_timeout_s=0.5)
SECRET = "The vault code is 4471."


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="graphmem-faces-hostile-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def store(root: Path) -> Iterator[MemoryStore]:
    with MemoryStore(root / "db", embedder="hashing", settings=LIMITS) as opened:
        opened.add(SECRET, owner="alice")
        yield opened


@pytest.fixture(scope="module")
def local_url(store: MemoryStore) -> Iterator[str]:
    """A sidecar without tokens (loopback Host headers only)."""
    with running_sidecar(store) as url:
        yield url


@pytest.fixture(scope="module")
def token_url(store: MemoryStore) -> Iterator[str]:
    with running_sidecar(store, Tokens.from_mapping(TOKENS)) as url:
        yield url


def _state(store: MemoryStore) -> str:
    return json.dumps({**store.export(), "generated": None}, sort_keys=True)


def _head(method: str, path: str, headers: list[bytes]) -> bytes:
    return b"\r\n".join([f"{method} {path} HTTP/1.1".encode(), *headers, b"", b""])


def _alive(url: str) -> None:
    assert httpx.get(f"{url}/healthz", headers={"Host": "127.0.0.1"}).status_code == 200


# -- Host (a sidecar without tokens) -------------------------------------------------------
def loopback_oracle(values: list[bytes]) -> bool:
    """One Host header naming 127.0.0.1, localhost or [::1], any case, with an optional
    port of one to five digits up to 65535."""
    if len(values) != 1:
        return False
    value = values[0].strip(b" \t").lower()
    for name in (b"127.0.0.1", b"localhost", b"[::1]"):
        if value == name:
            return True
        port = value[len(name) + 1:]
        if value.startswith(name + b":") and port.isdigit() and len(port) <= 5:
            return int(port) <= 65535
    return False


host_text = st.text(st.sampled_from("abcdefghiklmnopqrstuvwxyz0123456789.:[]@-_ %"),
                    max_size=24).map(str.encode)
host_value = st.one_of(
    st.sampled_from([b"127.0.0.1", b"localhost", b"[::1]", b"LocalHost:8080", b"[::1]:1",
                     b"127.0.0.1:65535", b"127.0.0.1:65536", b"127.0.0.1:", b"localhost.",
                     b"127.0.0.2", b"127.1", b"0x7f000001", b"2130706433", b"[::ffff:127.0.0.1]",
                     b"[0:0:0:0:0:0:0:1]", b"::1", b"localhost:80:80", b"user@localhost",
                     b"evil.example", b"localhost.evil.example", b"127.0.0.1.nip.io",
                     b"localhost\xa0", b"l\xf6calhost", b"", b" localhost ", b"localhost/x",
                     b"localhost:0x50", b"localhost:+80", b"localhost:\xb2"]),
    host_text,
    st.binary(max_size=16).filter(lambda b: not set(b) & {0, 10, 13}),
    st.tuples(st.sampled_from([b"127.0.0.1", b"localhost", b"[::1]"]),
              st.integers(0, 99999)).map(lambda t: t[0] + b":" + str(t[1]).encode()),
)


@FAST
@given(values=st.lists(host_value, min_size=0, max_size=2),
       route=st.sampled_from([("GET", "/v1/export"), ("GET", "/healthz"),
                              ("POST", "/v1/memories"), ("GET", "/v1/store")]))
def test_host_header(store: MemoryStore, local_url: str, values: list[bytes],
                     route: tuple[str, str]) -> None:
    method, path = route
    body = b'{"text": "planted by a web page"}' if method == "POST" else b""
    headers = [b"Host: " + v for v in values] + [b"Content-Type: application/json",
                                                 b"Content-Length: %d" % len(body)]
    before = _state(store)
    answer = raw_request(local_url, _head(method, path, headers), [body] if body else [])
    allowed = loopback_oracle(values)
    assert answer.status is not None
    if allowed:
        assert answer.status in (200, 201), (values, answer)
        if path == "/v1/export":
            assert SECRET in answer.body.decode()
        if method == "POST":  # the local user may write: undo it for the next example
            store.forget(answer.json()["id"], confirm=True)
    else:
        assert answer.status == 400, (values, answer)
        assert SECRET.encode() not in answer.body
        if answer.headers.get("content-type") == "application/json":  # else: h11's own 400
            assert answer.json()["error"] == "invalid_host"
        assert _state(store) == before
    _alive(local_url)


# -- Origin and Sec-Fetch-Site (a sidecar without tokens) -----------------------------------
def site_oracle(origins: list[bytes], sites: list[bytes], own: bytes) -> bool:
    """A change is taken unless a browser says it comes from elsewhere: at most one
    Sec-Fetch-Site, exactly same-origin; at most one Origin, exactly the sidecar's own
    (scheme and Host header). Surrounding spaces and tabs are not part of a value."""
    sites = [v.strip(b" \t") for v in sites]
    origins = [v.strip(b" \t") for v in origins]
    if len(sites) > 1 or len(origins) > 1 or (sites and sites[0] != b"same-origin"):
        return False
    return not origins or origins[0] == own


def _origin_values(port: int) -> st.SearchStrategy[bytes]:
    own = b"http://127.0.0.1:%d" % port
    return st.one_of(
        st.sampled_from([own, own + b"/", own + b" ", own.upper(), b"https" + own[4:],
                         b"http://127.0.0.1", b"http://localhost:%d" % port,
                         b"http://127.0.0.1:%d" % (port + 1), own + b".evil.example",
                         b"http://evil.example", b"null", b"", b"http://[::1]:%d" % port]),
        st.binary(max_size=24).filter(lambda b: not set(b) & {0, 10, 13}))


fetch_site = st.one_of(
    st.sampled_from([b"same-origin", b"cross-site", b"same-site", b"none", b"Same-Origin",
                     b" same-origin", b"same-origin,cross-site", b""]),
    st.binary(max_size=16).filter(lambda b: not set(b) & {0, 10, 13}))


@FAST
@given(data=st.data(), sites=st.lists(fetch_site, max_size=2),
       content_type=st.sampled_from([b"application/json", b"text/plain",
                                     b"application/x-www-form-urlencoded"]))
def test_origin_of_a_change(store: MemoryStore, local_url: str, data: st.DataObject,
                            sites: list[bytes], content_type: bytes) -> None:
    port = int(local_url.rsplit(":", 1)[1])
    origins = data.draw(st.lists(_origin_values(port), max_size=2))
    body = b'{"text": "planted by a web page"}'
    headers = ([b"Host: 127.0.0.1:%d" % port] + [b"Origin: " + v for v in origins]
               + [b"Sec-Fetch-Site: " + v for v in sites]
               + [b"Content-Type: " + content_type, b"Content-Length: %d" % len(body)])
    before = _state(store)
    answer = raw_request(local_url, _head("POST", "/v1/memories", headers), [body])
    assert answer.status is not None
    if site_oracle(origins, sites, b"http://127.0.0.1:%d" % port):
        if content_type == b"application/json":
            assert answer.status == 201, (origins, sites, answer)
            store.forget(answer.json()["id"], confirm=True, purge=False)
        else:  # FastAPI reads a JSON body only when it says it is JSON
            assert answer.status == 422, (origins, sites, answer)
    else:
        assert answer.status in (400, 403), (origins, sites, answer)  # 400: h11's own
        if answer.status == 403:
            assert answer.json()["error"] == "cross_site"
        assert _state(store) == before
    _alive(local_url)


# -- Authorization -------------------------------------------------------------------------
def bearer_oracle(values: list[bytes]) -> bool:
    """One header: "Bearer" in any case, spaces, then exactly a known token."""
    if len(values) != 1:
        return False
    scheme, _, rest = values[0].strip(b" \t").partition(b" ")
    return scheme.lower() == b"bearer" and rest.lstrip(b" ") == TOKEN.encode()


token = TOKEN.encode()
authorization = st.one_of(
    st.sampled_from([b"Bearer " + token, b"bearer " + token, b"BEARER   " + token,
                     b"Bearer " + token + b" ", b"  Bearer " + token, b"Bearer\t" + token,
                     b"Bearer " + token + b"\t", b"Bearer " + token + b" x",
                     b"Bearer " + token[:-1], b"Bearer " + token + b"4", b"Bearer " + token.upper(),
                     b"Bearer " + token + b"\xa0", b"Bearer \xa0" + token, b"Basic " + token,
                     b"Bearer", b"Bearer ", token, b"Token " + token, b"Bearer: " + token,
                     b"B\xe9arer " + token, b"Bearer %s" % token.hex().encode(),
                     b"Bearer " + token + b"," + token]),
    st.binary(max_size=40).filter(lambda b: not set(b) & {0, 10, 13}),
    st.tuples(st.sampled_from([b"Bearer ", b"bearer  ", b"Bearer\t", b""]),
              st.binary(max_size=30).filter(lambda b: not set(b) & {0, 10, 13}))
    .map(lambda t: t[0] + t[1]),
)


@FAST
@given(values=st.lists(authorization, max_size=3))
def test_authorization_header(store: MemoryStore, token_url: str,
                              values: list[bytes]) -> None:
    """The body is not JSON: a request that passes the token check is refused for its
    body (422), one that does not is refused for the token (401) before the body."""
    body = b'{"text": broken'
    headers = [b"Host: 127.0.0.1", *[b"Authorization: " + v for v in values],
               b"Content-Type: application/json", b"Content-Length: %d" % len(body)]
    before = _state(store)
    answer = raw_request(token_url, _head("POST", "/v1/memories", headers), [body])
    if bearer_oracle(values):
        assert answer.status == 422, (values, answer)
        assert answer.json()["detail"] == "body: not valid JSON"
    elif answer.headers.get("content-type") == "application/json":
        assert answer.status == 401, (values, answer)
        assert answer.headers["www-authenticate"] == "Bearer"
        assert answer.json()["error"] == "unauthorized"
    else:  # a value h11 itself refuses
        assert answer.status == 400, (values, answer)
    assert _state(store) == before
    _alive(token_url)


# -- Content-Length and chunked bodies -----------------------------------------------------
content_length = st.one_of(
    st.integers(0, 3 * CAP).map(lambda n: str(n).encode()),
    st.sampled_from([b"", b"-1", b"+5", b"1e3", b"0x10", b" 7", b"7 ", b"\xb2", b"99" * 20,
                     b"18446744073709551616", b"007", b"5,5", b"5, 6", b"NaN"]),
)


@FAST
@given(lengths=st.lists(content_length, min_size=1, max_size=2),
       sent=st.one_of(st.none(), st.integers(0, 3 * CAP)), chunked=st.booleans())
def test_content_length(store: MemoryStore, token_url: str, lengths: list[bytes],
                        sent: int | None, chunked: bool) -> None:
    """Any Content-Length, with any body: refused when malformed or beside
    Transfer-Encoding (400), over the cap (413, unread), short of what it announced (408),
    else parsed; never a 5xx, and the server goes on serving."""
    # RFC 9112 (and h11) accept a list of equal values, "5, 5", as one
    declared = {part.strip() for value in lengths for part in value.split(b",")}
    number = next(iter(declared)) if len(declared) == 1 else b""
    if len(number) > 20:  # h11 (and the gate) take at most 20 digits
        number = b""
    if sent is None:  # as announced, when that is a number
        sent = int(number) if number.isdigit() and int(number) <= 3 * CAP else 10
    text = b"x" * max(0, sent - 12)
    body = (b'{"text": "' + text + b'"}')[:sent]
    headers = [b"Host: 127.0.0.1", f"Authorization: Bearer {TOKEN}".encode(),
               b"Content-Type: application/json",
               *[b"Content-Length: " + value for value in lengths]]
    if chunked:
        headers.append(b"Transfer-Encoding: chunked")
    before = _state(store)
    answer = raw_request(token_url, _head("POST", "/v1/memories", headers), [body],
                         timeout=10)
    assert answer.status is not None and answer.status < 500, (lengths, answer)
    if chunked or not number.isdigit():
        assert answer.status == 400, (lengths, chunked, answer)
    elif int(number) > CAP:
        assert answer.status == 413 and answer.json()["error"] == "too_large"
    elif int(number) > sent:
        assert answer.status == 408 and answer.json()["error"] == "timeout"
    else:
        assert answer.status in (201, 422), (lengths, answer)
    if answer.status == 201:
        store.forget(answer.json()["id"], confirm=True)
    else:
        assert _state(store) == before
    _alive(token_url)


@FAST
@given(sizes=st.lists(st.integers(0, 2 * CAP), min_size=1, max_size=6),
       finish=st.booleans())
def test_chunked_bodies(store: MemoryStore, token_url: str, sizes: list[int],
                        finish: bool) -> None:
    """Chunks of any sizes: past the cap the answer is a 413 that comes without waiting
    for the rest; within it the body is parsed (a 422: it is not JSON); a body that never
    ends times out (408)."""
    chunks = [b"%x\r\n%s\r\n" % (n, b"y" * n) for n in sizes if n]
    if finish:
        chunks.append(b"0\r\n\r\n")
    headers = [b"Host: 127.0.0.1", f"Authorization: Bearer {TOKEN}".encode(),
               b"Content-Type: application/json", b"Transfer-Encoding: chunked"]
    before = _state(store)
    answer = raw_request(token_url, _head("POST", "/v1/memories", headers), chunks,
                         timeout=10)
    total = sum(sizes)
    if total > CAP:
        assert answer.status == 413 and answer.json()["error"] == "too_large", answer
    elif finish:
        assert answer.status == 422 and answer.json()["field"] == "body", answer
    else:
        assert answer.status == 408, answer
    assert _state(store) == before
    _alive(token_url)


# -- MCP with a token, or none, and a dead sidecar -----------------------------------------
nasty_text = st.one_of(st.text(max_size=30), st.sampled_from(
    ["", "urn:x#1", "a/history", "..", "%2F", "\x00", "💥" * 50, "'; MATCH (n) DELETE n"]))
tool_call = st.one_of(
    st.tuples(st.just("remember"), st.fixed_dictionaries(
        {"text": nasty_text}, optional={"kind": nasty_text, "importance": st.floats(),
                                        "tags": st.lists(nasty_text, max_size=3)})),
    st.tuples(st.just("recall"), st.fixed_dictionaries(
        {"query": nasty_text}, optional={"k": st.integers(-5, 2000), "preset": nasty_text,
                                         "explain": st.booleans()})),
    st.tuples(st.just("feedback"), st.fixed_dictionaries(
        {"memory_id": nasty_text, "useful": st.booleans()},
        optional={"query": nasty_text})),
    st.tuples(st.just("forget"), st.fixed_dictionaries(
        {"memory_id": nasty_text}, optional={"hard": st.booleans()})),
    st.tuples(st.just("history"), st.fixed_dictionaries({"memory_id": nasty_text})),
    st.tuples(st.just("lifecycle_report"), st.just({})),
    st.tuples(st.sampled_from(["remember", "forget", "nope"]),
              st.dictionaries(st.text(max_size=8), st.one_of(nasty_text, st.integers()),
                              max_size=3)),
)


@pytest.fixture(scope="module")
def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens there


@FAST
@given(calls=st.lists(tool_call, min_size=1, max_size=4), with_token=st.booleans())
def test_mcp_with_a_dead_sidecar(store: MemoryStore, root: Path, dead_url: str,
                                 calls: list[tuple[str, dict[str, Any]]],
                                 with_token: bool) -> None:
    """Whatever the tools are asked, with a dead sidecar they fail: with a token nothing
    answers in the sidecar's place; without one, a sidecar never reached names no store.
    The store at --db (a real one, with memories) is never opened, let alone written."""
    db = Path(store.path)
    server = build_server(db, sidecar_url=dead_url, token=TOKEN if with_token else None,
                          settings=Settings(), embedder="hashing")
    before = _state(store)

    async def run() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    try:
        results = asyncio.run(asyncio.wait_for(run(), timeout=60))
    finally:
        server.graphmem_sidecar.close()
    for (name, arguments), result in zip(calls, results, strict=True):
        assert result.is_error, (name, arguments, result.structured_content)
        text = result.content[0].text
        if f"the graphmem sidecar at {dead_url} did not answer" in text:
            assert ("started with a token" in text) == with_token, text
            assert ("has not said which store it serves" in text) != with_token, text
        else:  # refused before any call: the SDK's validation, an empty id, or a record
            # the client checks as the store would (graphmem.connect)
            assert "validation error" in text or "Unknown tool" in text or \
                "memory_id must be a non-empty id" in text or (text.startswith(
                    "Error executing tool remember: ") and "record 0" not in text), text
    assert server.graphmem_embedded._store is None  # never opened
    assert _state(store) == before
