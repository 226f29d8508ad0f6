"""Ids with ``/``, ``#``, ``?``, ``%``, spaces, dots and non-ASCII reach their own memory,
and no other, through every face: the CLI, the HTTP sidecar, and the MCP tools on both
backends. Beside each such id lives a decoy that a truncated or mis-split id would hit
(``urn:x`` beside ``urn:x#1``; ``a`` beside ``a/history``)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from graphmem import MemoryStore, Settings
from graphmem.cli import cli

from ._servers import running_sidecar

NASTY = ["urn:x#1", "urn:x?y=1&z=2", "urn:wiki:wiki/notes/standup", "a/history", "a/b",
         "a%2Fb", "50%", "100%25", "with space", "ünïcødé:東京", "emoji🙂", ".", "..",
         "/", "#", "?", "%", "/leading", "trailing/", "x/../y", "tab\there"]
#: One id per kind of trouble, for what costs a second each (a hard delete rewrites the
#: database file).
SOME = ["urn:x#1", "urn:x?y=1&z=2", "a/history", "100%25", "with space", "ünïcødé:東京", ".."]
DECOYS = ["urn:x", "a", "urn:wiki:wiki", "50", "100", "with", "x", "y", "history",
          "notes", "b", "tab", "emoji", "urn:x?y=1"]


def every_byte(memory_id: str) -> str:
    """The id with every byte percent-encoded, unreserved ones too: what a server must
    decode exactly once."""
    return "".join(f"%{b:02X}" for b in memory_id.encode("utf-8"))


def one_segment(memory_id: str) -> str:
    """The id as clients usually encode it (``quote(id, safe='')``), dot segments spelled
    out so that the client does not collapse them."""
    segment = quote(memory_id, safe="")
    return {".": "%2E", "..": "%2E%2E"}.get(segment, segment)


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    """A store holding every nasty id and every decoy, each with its own text."""
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing", settings=Settings()) as store:
        for n, memory_id in enumerate(NASTY + DECOYS):
            store.add(f"memory number {n} is {memory_id!r}", id=memory_id, kind="episodic")
    return db


def _untouched(store: MemoryStore, ids: list[str]) -> None:
    """Each of ``ids`` is as it was added: active, version 1, never accessed."""
    for memory_id in ids:
        memory = store.get(memory_id)
        assert (memory.status.value, memory.version, memory.useful_count) == (
            "active", 1, 0), memory_id


# -- the CLI ------------------------------------------------------------------------------
def test_cli(seeded: Path) -> None:
    runner = CliRunner()

    def gm(*args: str) -> Any:
        result = runner.invoke(cli, ["--db", str(seeded), "--json", *args],
                               catch_exceptions=False)
        assert result.exit_code == 0, (args, result.output)
        return json.loads(result.output) if result.output.startswith(("{", "[")) \
            else result.output

    for n, memory_id in enumerate(NASTY):
        shown = gm("show", memory_id)
        assert shown["id"] == memory_id
        assert shown["text"] == f"memory number {n} is {memory_id!r}"
        assert [v["memory_id"] for v in gm("history", memory_id)] == [memory_id]
        gm("feedback", memory_id, "--useful")
        gm("tombstone", memory_id)
        assert gm("show", memory_id)["status"] == "tombstoned"
    for memory_id in SOME:
        gm("forget", memory_id, "--yes")
        assert gm("show", memory_id)["status"] == "forgotten"
    with MemoryStore(seeded, read_only=True) as store:
        _untouched(store, DECOYS)


def test_cli_restore_of_an_id_that_names_a_directory(seeded: Path) -> None:
    runner = CliRunner()
    with MemoryStore(seeded) as store:
        store.tombstone(".")
    result = runner.invoke(cli, ["--db", str(seeded), "restore", "."])
    assert result.exit_code == 0, result.output
    with MemoryStore(seeded, read_only=True) as store:
        assert store.get(".").status.value == "active"


# -- the sidecar --------------------------------------------------------------------------
@pytest.fixture
def sidecar(seeded: Path) -> Iterator[tuple[MemoryStore, httpx.Client]]:
    with MemoryStore(seeded, embedder="hashing", settings=Settings()) as store, \
            running_sidecar(store) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield store, client


@pytest.mark.parametrize("encode", [one_segment, every_byte])
def test_sidecar(sidecar: tuple[MemoryStore, httpx.Client],
                 encode: Callable[[str], str]) -> None:
    store, client = sidecar
    for n, memory_id in enumerate(NASTY):
        path = f"/v1/memories/{encode(memory_id)}"
        got = client.get(path)
        assert got.status_code == 200 and got.json()["id"] == memory_id, (path, got.text)
        assert got.json()["text"] == f"memory number {n} is {memory_id!r}"
        history = client.get(f"{path}/history").json()
        assert history["memory_id"] == memory_id
        assert [v["memory_id"] for v in history["versions"]] == [memory_id]
        assert client.patch(path, json={"importance": 0.9}).json()["id"] == memory_id
        assert client.post(f"{path}/promote").json()["memory_id"] == memory_id
        assert client.post(f"{path}/restore").json()["memory_id"] == memory_id
        assert client.post(f"{path}/archive").json()["memory_id"] == memory_id
        assert client.post(f"{path}/restore").json()["memory_id"] == memory_id
        feedback = client.post("/v1/feedback", json={"memory_id": memory_id, "useful": True})
        assert feedback.json()["memory_id"] == memory_id
        newer = client.post(f"{path}/supersede", json={"text": f"newer {n}"}).json()
        assert list(store.get(memory_id).superseded_by) == [newer["id"]]
        deleted = client.delete(path).json()
        assert (deleted["memory_id"], deleted["status"]) == (memory_id, "tombstoned")
        assert store.get(memory_id).status.value == "tombstoned"
        _untouched(store, DECOYS + NASTY[n + 1:])


def test_sidecar_hard_delete(sidecar: tuple[MemoryStore, httpx.Client]) -> None:
    """``DELETE ?hard=true`` forgets the id named, whole: the bug of issue 22 erased
    ``urn:x`` for ``urn:x#1``. (Apart from supersede: forgetting a second memory after
    supersedes crashes Kuzu's EXPORT DATABASE in the store's rebuild, see the report.)"""
    store, client = sidecar
    for n, memory_id in enumerate(SOME):
        path = f"/v1/memories/{one_segment(memory_id)}"
        assert client.delete(path, params={"hard": "true"}).json() == {
            "memory_id": memory_id, "status": "forgotten"}
        assert store.get(memory_id).status.value == "forgotten"
        _untouched(store, DECOYS + SOME[n + 1:])


def test_sidecar_splits_paths_on_raw_slashes_only(
        sidecar: tuple[MemoryStore, httpx.Client]) -> None:
    """An unencoded ``/`` separates segments; ``%2F`` never does."""
    _, client = sidecar
    assert client.get("/v1/memories/a%2Fhistory").json()["id"] == "a/history"
    assert client.get("/v1/memories/a/history").json()["memory_id"] == "a"
    assert client.get("/v1/memories/a%2Fb").json()["id"] == "a/b"
    assert client.get("/v1/memories/a%252Fb").json()["id"] == "a%2Fb"
    for raw in ("/v1/memories/a/b", "/v1/memories/urn:wiki:wiki/notes/standup"):
        missing = client.get(raw)
        assert missing.status_code == 404 and missing.json()["error"] == "not_found", raw
    bad = client.get("/v1/memories/%C3%28")  # not UTF-8
    assert bad.status_code == 400 and bad.json() == {
        "error": "invalid_path", "field": "path",
        "detail": "the path holds percent-encoded bytes that are not UTF-8; encode ids as "
                  "UTF-8, e.g. urllib.parse.quote(id, safe='')"}


# -- MCP, both backends ------------------------------------------------------------------
Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


def _mcp(db: Path, script: Callable[[Call], Awaitable[None]], *extra: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "graphmem.cli", "--db", str(db), "mcp", *extra],
        env={**os.environ, "GRAPHMEM_EMBEDDER": "hashing"})

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await script(session.call_tool)

    asyncio.run(asyncio.wait_for(main(), timeout=300))


def _tools_script(path: str) -> Callable[[Call], Awaitable[None]]:
    async def script(call: Call) -> None:
        for memory_id in NASTY:
            history = await call("history", {"memory_id": memory_id})
            assert history.structured_content["answered_by"] == path
            assert history.structured_content["memory_id"] == memory_id
            assert [v["memory_id"] for v in history.structured_content["versions"]] == [
                memory_id]
            useful = await call("feedback", {"memory_id": memory_id, "useful": True})
            assert useful.structured_content["memory_id"] == memory_id
            assert useful.structured_content["useful_count"] == 1
            soft = await call("forget", {"memory_id": memory_id})
            assert soft.structured_content == {"memory_id": memory_id,
                                               "status": "tombstoned", "answered_by": path}
        for memory_id in SOME:
            hard = await call("forget", {"memory_id": memory_id, "hard": True})
            assert hard.structured_content == {"memory_id": memory_id,
                                               "status": "forgotten", "answered_by": path}
        empty = await call("history", {"memory_id": ""})
        assert empty.is_error

    return script


def _after_the_tools(store: MemoryStore) -> None:
    for memory_id in NASTY:
        memory = store.get(memory_id)
        assert memory.useful_count == 1, memory_id
        assert memory.status.value == ("forgotten" if memory_id in SOME else "tombstoned")
    _untouched(store, DECOYS)


def test_mcp_embedded(seeded: Path) -> None:
    _mcp(seeded, _tools_script("embedded"), "--embedded")
    with MemoryStore(seeded, read_only=True) as store:
        _after_the_tools(store)


def test_mcp_through_the_sidecar(seeded: Path) -> None:
    with MemoryStore(seeded, embedder="hashing", settings=Settings()) as store, \
            running_sidecar(store) as url:
        _mcp(seeded, _tools_script("sidecar"), "--sidecar", url)
        _after_the_tools(store)
