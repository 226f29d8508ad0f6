"""Hostile input at every entry point (property-based): UMP files, Markdown dailies,
conversation messages, recall queries, named-query parameters and HTTP bodies.

Only graphmem's own errors come out, each with a message; a rejected operation leaves the
store's export exactly as it was. ``GRAPHMEM_HOSTILE_EXAMPLES`` sets the examples per
entry point (``make test``: 40; ``make test-faults``: 300).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import GraphmemError, MemoryStore, RecordError
from graphmem.sidecar import Tokens
from ingest.markdown import import_markdown
from ingest.ump import import_ump
from queries.library import load_queries, run_named
from tests.conftest import SAMPLE

from ._servers import running_sidecar

EXAMPLES = int(os.environ.get("GRAPHMEM_HOSTILE_EXAMPLES", "40"))
FAST = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])

# -- hostile values --------------------------------------------------------------------
nasty_text = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(codec=None, categories=["Cc", "Cf", "Co", "Cs", "Zl", "Zp"]),
            max_size=20),  # control, format, private-use and lone surrogate characters
    st.sampled_from(["", " ", "\x00", "\x00abc", "'; MATCH (n) DETACH DELETE n; //",
                     "$id", "${x}", "\\", "\ud800", "\u202e", "a" * 200_000,
                     "CALL db.drop()", "💥" * 1000, "\r\n" * 500]),
)
nasty_number = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(),
    st.sampled_from([math.nan, math.inf, -math.inf, 10**30, -(10**30), 2**63, -1, 0, 1e308]),
)
scalar = st.one_of(st.none(), st.booleans(), nasty_number, nasty_text)
nasty_json = st.recursive(scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)


def deep(n: int) -> bytes:
    """JSON nested ``n`` levels deep (as text: building it as objects would recurse)."""
    return b'{"a": [' * n + b'"bottom"' + b"]}" * n


def _snapshot(store: MemoryStore) -> str:
    return json.dumps({**store.export(), "generated": None}, sort_keys=True, default=str)


def _rejected(store: MemoryStore, before: str, exc: GraphmemError) -> None:
    assert str(exc).strip(), "an error without a message"
    assert _snapshot(store) == before, "a rejected operation changed the store"


@pytest.fixture(scope="module")
def base_store() -> Iterator[MemoryStore]:
    """One store for the module: the sample corpus, so there is something to damage."""
    root = Path(tempfile.mkdtemp(prefix="graphmem-hostile-"))
    with MemoryStore(root / "db", embedder="hashing") as store:
        import_ump(store, SAMPLE)
        yield store
    shutil.rmtree(root, ignore_errors=True)


# -- UMP files ---------------------------------------------------------------------------
ump_field = st.sampled_from(["id", "text", "kind", "importance", "confidence", "tags",
                             "created", "subject", "status", "supersedes", "owner", "entities",
                             "provenance", "ump", "validFrom", "modified", "accessCount"])
ump_record = st.one_of(
    nasty_json,
    st.dictionaries(ump_field, nasty_json, max_size=8),
    st.fixed_dictionaries({"id": nasty_text, "text": nasty_text, "kind": scalar},
                          optional={"importance": nasty_number, "tags": nasty_json,
                                    "created": nasty_text, "supersedes": nasty_json}),
)


@FAST
@given(records=st.lists(ump_record, max_size=4), raw=st.sampled_from(
    ["json", "nan-tokens", "invalid-utf8", "deep", "truncated"]))
def test_ump_files(base_store: MemoryStore, tmp_path_factory: pytest.TempPathFactory,
                   records: list[Any], raw: str) -> None:
    path = tmp_path_factory.mktemp("ump") / "hostile.ump.json"
    text = json.dumps(records, allow_nan=True, ensure_ascii=False,
                      default=str).encode("utf-8", "surrogatepass")
    if raw == "invalid-utf8":
        text = text[:1] + b"\xff\xfe\xc3" + text[1:]
    elif raw == "deep":
        text = b"[" + deep(50_000 if len(records) % 2 else 100) + b"]"
    elif raw == "truncated":
        text = text[: max(1, len(text) // 2)]
    elif raw == "nan-tokens":
        text = text.replace(b"0", b"NaN", 1)
    path.write_bytes(text)
    before = _snapshot(base_store)
    try:
        import_ump(base_store, path)
    except GraphmemError as exc:
        _rejected(base_store, before, exc)
        if isinstance(exc, RecordError):
            assert str(path) in str(exc)  # names the file


# -- Markdown dailies ----------------------------------------------------------------------
daily_line = st.one_of(
    nasty_text.map(lambda t: f"- {t}"), nasty_text.map(lambda t: f"## {t}"),
    nasty_text.map(lambda t: f"- [[{t}]] and more"), nasty_text,
    st.sampled_from(["- <!-- compacted -->", "---", "- " + "x" * 100_000, "- [[]]", "\t- a"]),
)


@FAST
@given(lines=st.lists(daily_line, max_size=12), name=st.sampled_from(
    ["2026-07-01.md", "2026-02-30.md", "9999-12-31.md", "notes.md"]),
    garbage=st.binary(max_size=30))
def test_markdown_dailies(base_store: MemoryStore, tmp_path_factory: pytest.TempPathFactory,
                          lines: list[str], name: str, garbage: bytes) -> None:
    root = tmp_path_factory.mktemp("md")
    memory = root / "workspace-hostile" / "memory"
    memory.mkdir(parents=True)
    body = "\n".join(lines).encode("utf-8", "surrogatepass") + garbage
    (memory / name).write_bytes(body)
    before = _snapshot(base_store)
    try:
        import_markdown(base_store, root, owner="hostile")
    except GraphmemError as exc:
        _rejected(base_store, before, exc)


# -- conversation messages ----------------------------------------------------------------
message = st.one_of(
    nasty_json,
    st.fixed_dictionaries({"text": nasty_text},
                          optional={"speaker": scalar, "role": nasty_json,
                                    "timestamp": scalar, "content": nasty_json}),
)


@FAST
@given(messages=st.one_of(st.lists(message, max_size=5), nasty_json),
       session=st.one_of(nasty_text, scalar), owner=st.one_of(st.none(), nasty_text))
def test_conversation_messages(base_store: MemoryStore, messages: Any, session: Any,
                               owner: Any) -> None:
    before = _snapshot(base_store)
    try:
        base_store.add_conversation(messages, session_id=session, owner=owner)
    except GraphmemError as exc:
        _rejected(base_store, before, exc)


# -- recall --------------------------------------------------------------------------------
@FAST
@given(query=st.one_of(nasty_text, scalar), k=st.one_of(st.integers(), nasty_number, scalar),
       preset=st.one_of(st.sampled_from(["default", "fulltext", "vector", "hybrid",
                                         "graph_hybrid"]), nasty_text),
       owner=st.one_of(st.none(), nasty_text))
def test_recall_queries(base_store: MemoryStore, query: Any, k: Any, preset: Any,
                        owner: Any) -> None:
    before = _snapshot(base_store)
    try:
        hits = base_store.recall(query, k=k, preset=preset, owner=owner)
    except GraphmemError as exc:
        _rejected(base_store, before, exc)
    else:
        assert len(hits) <= k
        assert all(owner is None or h.memory.owner == owner for h in hits)


# -- named queries -------------------------------------------------------------------------
QUERIES = load_queries()


@FAST
@given(name=st.one_of(st.sampled_from(sorted(QUERIES)), nasty_text),
       values=st.dictionaries(st.one_of(st.sampled_from(
           sorted({p.name for q in QUERIES.values() for p in q.params})), nasty_text),
           st.one_of(nasty_json, nasty_text), max_size=4))
def test_named_query_parameters(base_store: MemoryStore, name: str,
                                values: dict[str, Any]) -> None:
    before = _snapshot(base_store)
    try:
        run_named(base_store, name, values)
    except GraphmemError as exc:
        assert str(exc).strip()
    assert _snapshot(base_store) == before  # named queries only read


# -- HTTP bodies ---------------------------------------------------------------------------
ALICE, BOB = "tok-hostile-alice-0123", "tok-hostile-bob-012345"


@pytest.fixture(scope="module")
def served(base_store: MemoryStore) -> Iterator[tuple[str, list[str]]]:
    tokens = Tokens.from_mapping({ALICE: {"owner": "alice", "scopes": ["read", "write",
                                                                         "admin"]},
                                  BOB: {"owner": "bob", "scopes": ["read", "write"]}})
    alices = [base_store.add(f"alice secret {i}", owner="alice").id for i in range(3)]
    with running_sidecar(base_store, tokens) as url:
        yield url, alices


ROUTES = ["POST /v1/memories", "POST /v1/conversations", "POST /v1/memories/retrieve",
          "PATCH /v1/memories/{id}", "POST /v1/memories/{id}/supersede", "POST /v1/feedback",
          "POST /v1/memories/{id}/promote", "POST /v1/memories/{id}/archive",
          "POST /v1/memories/{id}/restore", "DELETE /v1/memories/{id}", "GET /v1/memories/{id}",
          "GET /v1/memories/{id}/history", "POST /v1/lifecycle/run"]


@FAST
@given(route=st.sampled_from(ROUTES), body=st.one_of(
    nasty_json, st.dictionaries(st.sampled_from(
        ["text", "kind", "importance", "tags", "query", "k", "preset", "messages", "session_id",
         "memory_id", "useful", "reason", "new", "confirm", "apply", "owner"]),
        nasty_json, max_size=6)),
    encoding=st.sampled_from(["json", "invalid-utf8", "deep", "nan", "not-json"]),
    target=st.sampled_from(["own", "other-owner", "nasty"]), path_text=nasty_text)
def test_http_bodies(base_store: MemoryStore, served: tuple[str, list[str]], route: str,
                     body: Any, encoding: str, target: str, path_text: str) -> None:
    url, alices = served
    method, path = route.split(" ")
    # (httpx refuses to send a URL over 64 kB, so a huge id is cut to 8 kB)
    memory_id = {"own": alices[0], "other-owner": alices[1], "nasty": path_text[:8000]}[target]
    path = path.replace("{id}", quote(memory_id.encode("utf-8", "surrogatepass"), safe="")
                        or "%20")
    token = BOB if target == "other-owner" else ALICE
    raw = json.dumps(body, allow_nan=True, default=str).encode("utf-8", "surrogatepass")
    raw = {"json": raw, "invalid-utf8": b'{"text": "\xff\xfe"}',
           "deep": deep(20_000), "nan": b'{"importance": NaN, "k": Infinity}',
           "not-json": raw[: len(raw) // 2] + b"\x00{"}[encoding]
    before = _snapshot(base_store)
    with httpx.Client(base_url=url, timeout=60,
                      headers={"Authorization": f"Bearer {token}",
                               "Content-Type": "application/json"}) as client:
        response = client.request(method, path, content=raw if method != "GET" else None)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        data = response.json()
        assert data["error"] and data["detail"], data
        assert _snapshot(base_store) == before
    if target == "other-owner" and "{id}" in route:
        assert response.status_code in (400, 403, 404, 422), response.text
