"""``tests/test_mcp.py`` on PostgreSQL (see ``conftest``), and ``graphmem mcp`` over stdio
on a ``postgresql://`` store."""

from graphmem import MemoryStore
from tests.test_mcp import *  # noqa: F403
from tests.test_mcp import Session, _with_mcp


def test_the_mcp_server_on_postgresql(pg_url: str) -> None:
    async def script(call: Session) -> None:
        made = await call("remember", {"text": "Nadia prefers green tea in the afternoon."})
        memory = made.structured_content["memory"]
        assert made.structured_content["answered_by"] == "embedded"
        found = await call("recall", {"query": "what tea does Nadia like", "k": 1})
        assert found.structured_content["hits"][0]["id"] == memory["id"]
        forgotten = await call("forget", {"memory_id": memory["id"], "hard": True})
        assert forgotten.structured_content["status"] == "forgotten"

    _with_mcp(pg_url, script)
    with MemoryStore(pg_url, read_only=True) as store:
        assert store.stats().by_status == {"forgotten": 1}
