"""The MCP server, driven by the SDK's own client over stdio: every tool, errors, and the
sidecar path with its fallback to the embedded store when the sidecar is stopped."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from graphmem import MemoryStore, Settings

from ._servers import free_port, running_sidecar

Session = Callable[[str, dict[str, Any]], Awaitable[Any]]


def _with_mcp(db: Path, script: Callable[[Session], Awaitable[None]], *extra: str) -> None:
    env = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing"}
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "graphmem.cli", "--db", str(db), "mcp", *extra],
                                   env=env)

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def call(name: str, arguments: dict[str, Any]) -> Any:
                return await session.call_tool(name, arguments)

            tools = await session.list_tools()
            assert {t.name for t in tools.tools} == {"remember", "recall", "feedback", "forget",
                                                     "history", "lifecycle_report"}
            await script(call)

    asyncio.run(asyncio.wait_for(main(), timeout=180))


def test_every_tool_on_the_embedded_store(tmp_path: Path) -> None:
    async def script(call: Session) -> None:
        made = await call("remember", {"text": "Nadia prefers green tea in the afternoon.",
                                       "kind": "semantic", "tags": ["tea"]})
        assert not made.is_error
        memory = made.structured_content["memory"]
        assert made.structured_content["answered_by"] == "embedded"
        await call("remember", {"text": "The orchard deploy runs make release first.",
                                "kind": "procedural", "subject": "Deploy orchard"})
        found = (await call("recall", {"query": "what tea does Nadia like", "k": 2}))
        hits = found.structured_content["hits"]
        assert hits[0]["id"] == memory["id"] and hits[0]["why"][0].startswith("preset default")
        terse = await call("recall", {"query": "tea", "explain": False, "preset": "fulltext"})
        assert "why" not in terse.structured_content["hits"][0]
        useful = await call("feedback", {"memory_id": memory["id"], "useful": True,
                                         "query": "what tea does Nadia like"})
        assert useful.structured_content["useful_count"] == 1
        history = await call("history", {"memory_id": memory["id"]})
        assert [v["change_type"] for v in history.structured_content["versions"]] == [
            "created", "importance_boost"]
        report = await call("lifecycle_report", {})
        assert report.structured_content["report"].startswith("# Archivist Lifecycle Report")
        soft = await call("forget", {"memory_id": memory["id"]})
        assert soft.structured_content["status"] == "tombstoned"
        hard = await call("forget", {"memory_id": memory["id"], "hard": True})
        assert hard.structured_content["status"] == "forgotten"
        missing = await call("history", {"memory_id": "urn:graphmem:nope"})
        assert missing.is_error and "no memory urn:graphmem:nope" in missing.content[0].text
        empty = await call("remember", {"text": "   "})
        assert empty.is_error and "text" in empty.content[0].text

    _with_mcp(tmp_path / "db", script)
    with MemoryStore(tmp_path / "db", read_only=True) as store:
        assert store.stats().by_status == {"active": 1, "forgotten": 1}


def test_sidecar_first_then_the_embedded_fallback(tmp_path: Path) -> None:
    db = tmp_path / "db"
    store = MemoryStore(db, embedder="hashing", settings=Settings())
    server = running_sidecar(store)
    url = server.__enter__()

    async def script(call: Session) -> None:
        made = await call("remember", {"text": "Amara works as a nurse in Lagos."})
        assert made.structured_content["answered_by"] == "sidecar"
        hits = await call("recall", {"query": "where does Amara work"})
        assert hits.structured_content["answered_by"] == "sidecar"
        assert hits.structured_content["hits"][0]["text"].startswith("Amara")
        # the sidecar goes away (and releases the database): the embedded store answers
        server.__exit__(None, None, None)
        store.close()
        again = await call("recall", {"query": "where does Amara work"})
        assert again.structured_content["answered_by"] == "embedded"
        assert "sidecar unreachable" in again.structured_content["sidecar_error"]
        assert again.structured_content["hits"][0]["text"].startswith("Amara")

    try:
        _with_mcp(db, script, "--sidecar", url)
    finally:
        server.__exit__(None, None, None)
        store.close()


def test_unreachable_sidecar_from_the_start(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there

    async def script(call: Session) -> None:
        made = await call("remember", {"text": "Remembered while the sidecar was down."})
        assert made.structured_content["answered_by"] == "embedded"

    _with_mcp(tmp_path / "db", script, "--sidecar", url)
