"""Ad-hoc Cypher is bounded in time. A legal statement that would run for minutes or hours
is stopped at ``GRAPHMEM_CYPHER_TIMEOUT_S`` with a clean error and changes nothing,
through the Python API, the command line and a real sidecar; a running read holds no
store lock, so the sidecar answers other clients (recall, remember) meanwhile.

The heavy statements, run without a limit on the store below (200 memories, 1,000
references): a four-way cross product takes 10.4-11.7 s, so the five-way one below
~35 min; a walk of up to 7 hops counts 19.5M paths in 7.5-9.3 s, each further hop
multiplying them by 5, and the 12-hop walk below runs until it fills the buffer pool
(~10 s at 1 GB). Each runs in a child process (the Python API, the command line, the
sidecar), so that a limit that fails to stop it fails the test instead of holding it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphmem import Edge, MemoryInput, MemoryStore

from ._servers import serve_process

CROSS = ("MATCH (a:Memory), (b:Memory), (c:Memory), (d:Memory), (e:Memory) WHERE "
         "a.importance + b.importance + c.importance + d.importance + e.importance < 0 "
         "RETURN count(*) AS n")
WALK = "MATCH p = (a:Memory)-[:REFERENCES*1..12]->(b:Memory) RETURN count(*) AS n"
#: a data write over the same cross product (unbounded, it ends on a full buffer pool)
CROSS_WRITE = ("MATCH (a:Memory), (b:Memory), (c:Memory), (d:Memory), (e:Memory) WHERE "
               "a.importance + b.importance + c.importance + d.importance + e.importance "
               ">= 0 SET a.importance = 0.123")
LIMIT_S = 1.0
#: how far past the limit a stopped statement may end (measured: 0.01-0.08 s on these
#: statements; the rest is a busy shared machine's slack)
SLACK_S = 2.5
ANALYST, WRITER = "tok-analyst-0123456789", "tok-writer-01234567890"
TOKENS = {ANALYST: {"owner": "ops", "scopes": ["read", "all_owners"]},
          WRITER: {"owner": "ann", "scopes": ["read", "write"]}}


@pytest.fixture
def heavy_db(tmp_path: Path) -> Path:
    """200 memories, each referencing 5 others."""
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        made = store.add_many([MemoryInput.parse({"text": f"note {i} on the orchard pump",
                                                  "owner": "ann"}) for i in range(200)])
        ids = [m.id for m in made]
        store.link_many([Edge("references", ids[i], ids[(i + step) % len(ids)])
                         for i in range(len(ids)) for step in (1, 2, 3, 5, 8)])
    return db


def _env(limit_s: float) -> dict[str, str]:
    return {**os.environ, "GRAPHMEM_EMBEDDER": "hashing",
            "GRAPHMEM_CYPHER_TIMEOUT_S": f"{limit_s:g}"}


#: The child that runs one statement through the Python API (the limit read from the
#: environment), reporting the error, how long it ran, and the store before and after.
_CHILD = """
import json, sys, time
from graphmem import GraphmemError, MemoryStore
from tests.test_trust_cypher import _state
db, query, write = sys.argv[1], sys.argv[2], sys.argv[3] == "write"
with MemoryStore(db) as store:
    before = _state(store)
    started = time.perf_counter()
    try:
        store.cypher(query, write=write)
        error = None
    except GraphmemError as exc:
        error = {"type": type(exc).__name__, "field": getattr(exc, "field", None),
                 "message": str(exc)}
    seconds = time.perf_counter() - started
    unchanged = _state(store) == before
    store.add("written after the stopped statement", owner="ann")
    print(json.dumps({"error": error, "seconds": seconds, "unchanged": unchanged,
                      "limit": store.settings.cypher_timeout_s}))
"""


def _through_the_api(db: Path, query: str, *, write: bool) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(db), query,
                           "write" if write else "read"],
                          env=_env(LIMIT_S), capture_output=True, text=True, timeout=90,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _assert_stopped(message: str, seconds: float, limit_s: float) -> None:
    assert "GRAPHMEM_CYPHER_TIMEOUT_S" in message and f"{limit_s:g} s" in message, message
    assert "nothing was changed" in message
    assert limit_s <= seconds < limit_s + SLACK_S, seconds


@pytest.mark.parametrize("query", [CROSS, WALK], ids=["cross-product", "long-walk"])
def test_a_long_read_is_stopped_at_the_limit(heavy_db: Path, query: str) -> None:
    outcome = _through_the_api(heavy_db, query, write=False)
    assert outcome["limit"] == LIMIT_S  # read from GRAPHMEM_CYPHER_TIMEOUT_S
    assert outcome["error"] is not None, "the statement ran to its end"
    assert outcome["error"]["type"] == "InvalidInputError"
    assert outcome["error"]["field"] == "query"
    _assert_stopped(outcome["error"]["message"], outcome["seconds"], LIMIT_S)
    assert outcome["unchanged"]


def test_a_long_write_is_stopped_and_changes_nothing(heavy_db: Path) -> None:
    """The stopped write is rolled back with its audit event; the store takes the next
    write (the write connection was replaced)."""
    outcome = _through_the_api(heavy_db, CROSS_WRITE, write=True)
    assert outcome["error"] is not None and outcome["error"]["type"] == "InvalidInputError"
    assert outcome["error"]["field"] == "query"
    _assert_stopped(outcome["error"]["message"], outcome["seconds"], LIMIT_S)
    assert outcome["unchanged"]
    with MemoryStore(heavy_db, embedder="hashing") as store:
        assert store.cypher("MATCH (m:Memory) WHERE m.importance = 0.123 "
                            "RETURN count(*) AS n") == [{"n": 0}]
        assert not [e for e in store.export()["events"] if e["event_type"] == "cypher_write"]
        assert [m.text for m in store.memories() if "stopped" in m.text] == [
            "written after the stopped statement"]


def test_the_command_line_names_the_limit(heavy_db: Path) -> None:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "graphmem", "--db", str(heavy_db), "query",
                           CROSS], env=_env(LIMIT_S), capture_output=True, text=True,
                          timeout=90)
    seconds = time.perf_counter() - started
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "GRAPHMEM_CYPHER_TIMEOUT_S" in done.stderr and done.stdout == ""
    assert seconds < 30  # opening the store and importing take the rest


# -- a real sidecar ----------------------------------------------------------------------
SIDECAR_LIMIT_S = 4.0


@pytest.fixture
def sidecar(heavy_db: Path, tmp_path: Path) -> Iterator[str]:
    """``graphmem serve`` with tokens in its own process (a statement the limit failed to
    stop would end with it, not hold the tests)."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS), encoding="utf-8")
    with serve_process(heavy_db, "--tokens", str(tokens), env=_env(SIDECAR_LIMIT_S)) \
            as (url, _):
        yield url


def _client(url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=60,
                        headers={"Authorization": f"Bearer {token}"})


def test_a_sidecar_stops_a_heavy_query_and_answers_others_meanwhile(sidecar: str) -> None:
    with _client(sidecar, WRITER) as writer, _client(sidecar, ANALYST) as analyst:
        warm = writer.post("/v1/memories/retrieve", json={"query": "orchard pump", "k": 3})
        assert warm.status_code == 200, warm.text
        before = writer.get("/v1/export").json()
        heavy: dict[str, Any] = {}

        def run_heavy() -> None:
            started = time.perf_counter()
            heavy["answer"] = analyst.post("/v1/cypher", json={"query": CROSS})
            heavy["seconds"] = time.perf_counter() - started
            heavy["ended"] = time.perf_counter()

        thread = threading.Thread(target=run_heavy)
        thread.start()
        time.sleep(0.5)  # the statement is running
        answered: dict[str, tuple[float, bool]] = {}
        for name, call in [
                ("recall", lambda: writer.post("/v1/memories/retrieve",
                                               json={"query": "orchard pump", "k": 3})),
                ("remember", lambda: writer.post("/v1/memories",
                                                 json={"text": "The pump moved north."})),
                ("health", lambda: writer.get("/healthz"))]:
            started = time.perf_counter()
            answer = call()
            assert answer.status_code < 300, (name, answer.text)
            answered[name] = (time.perf_counter() - started, "ended" not in heavy)
        thread.join(timeout=60)
        assert not thread.is_alive()
        for name, (seconds, while_running) in answered.items():
            assert while_running, f"{name} waited for the heavy query ({seconds:.2f} s)"
            assert seconds < 2.0, (name, seconds)
        answer = heavy["answer"]
        assert answer.status_code == 422, answer.text
        body = answer.json()
        assert set(body) == {"error", "detail", "field"}
        assert body["error"] == "invalid_input" and body["field"] == "query"
        _assert_stopped(body["detail"], heavy["seconds"], SIDECAR_LIMIT_S)
        after = writer.get("/v1/export").json()
        assert {m["id"] for m in after["memories"]} - {m["id"] for m in before["memories"]} \
            == {m["id"] for m in after["memories"] if m["text"] == "The pump moved north."}
        assert not [e for e in after["events"] if e["event_type"] == "cypher_write"]
        assert analyst.post("/v1/cypher", json={
            "query": "MATCH (m:Memory) RETURN count(*) AS n"}).json()["rows"] == [{"n": 201}]
