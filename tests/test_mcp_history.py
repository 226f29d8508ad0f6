"""The MCP tools that keep a memory's history (supersede, correct, update, link), and the
actor they record: the token's owner through a sidecar, the agent id on the embedded
store. Driven by the SDK's own client over stdio."""

from __future__ import annotations

from pathlib import Path

from graphmem import MemoryStore, Settings

from ._servers import running_sidecar
from .test_mcp import ALICE, TOKENS, Session, _error, _with_mcp


async def _history_script(call: Session) -> dict[str, str]:
    """The four tools on one memory; returns the ids it made."""
    made = (await call("remember", {"text": "Orchard stores data in PostgreSQL 15",
                                    "kind": "semantic", "subject": "Orchard database"}))
    first = made.structured_content["memory"]["id"]
    newer = await call("supersede", {"memory_id": first,
                                     "text": "Orchard stores data in PostgreSQL 16",
                                     "reason": "upgrade"})
    assert not newer.is_error, newer.content
    second = newer.structured_content["memory"]["id"]
    assert newer.structured_content["supersedes"] == first
    assert newer.structured_content["memory"]["subject"] == "Orchard database"  # inherited
    fixed = await call("correct", {"memory_id": second,
                                   "text": "Orchard stores data in PostgreSQL 16.2"})
    third = fixed.structured_content["memory"]["id"]
    changed = await call("update", {"memory_id": third, "importance": 0.9,
                                    "tags": ["orchard", "db"], "reason": "importance_boost"})
    assert changed.structured_content["memory"]["importance"] == 0.9
    runbook = (await call("remember", {"text": "To deploy orchard: make release",
                                       "kind": "procedural"})).structured_content["memory"]
    linked = await call("link", {"memory_id": runbook["id"], "other_id": third})
    assert linked.structured_content["kind"] == "references"
    history = (await call("history", {"memory_id": first})).structured_content["versions"]
    assert [v["change_type"] for v in history] == ["created", "conflict_update"]
    hits = (await call("recall", {"query": "which database does orchard use",
                                  "k": 5})).structured_content["hits"]
    assert first not in [h["id"] for h in hits] and second not in [h["id"] for h in hits]
    assert "nothing to change" in _error(await call("update", {"memory_id": third}))
    assert "no memory urn:graphmem:nope" in _error(await call(
        "supersede", {"memory_id": "urn:graphmem:nope", "text": "x"}))
    assert "itself" in _error(await call("link", {"memory_id": third, "other_id": third}))
    return {"first": first, "second": second, "third": third, "runbook": runbook["id"]}


def _check_history(store: MemoryStore, ids: dict[str, str], actor: str) -> None:
    first, second, third = ids["first"], ids["second"], ids["third"]
    assert store.get(first).superseded_by == (second,)
    assert store.get(second).superseded_by == (third,)
    assert [v.change_type.value for v in store.history(third)] == ["created",
                                                                   "importance_boost"]
    assert {link.other for link in store.links(ids["runbook"])} == {third}
    for memory_id in (first, second, third, ids["runbook"]):
        assert {v.actor for v in store.history(memory_id)} == {actor}, memory_id
    events = store.events(first) + store.events(second)
    assert [e.event_type.value for e in events] == ["supersede", "supersede"]
    assert {e.agent_id for e in events} == {actor}


def test_history_tools_on_the_embedded_store_record_the_agent(tmp_path: Path) -> None:
    db = tmp_path / "db"
    seen: dict[str, str] = {}

    async def script(call: Session) -> None:
        seen.update(await _history_script(call))

    _with_mcp(db, script, "--embedded", env={"GRAPHMEM_AGENT_ID": "agent-7"})
    with MemoryStore(db, read_only=True) as store:
        _check_history(store, seen, "agent-7")


def test_history_tools_through_a_sidecar_record_the_token_owner(tmp_path: Path) -> None:
    db = tmp_path / "db"
    store = MemoryStore(db, embedder="hashing", settings=Settings())
    bobs = store.add("Bob keeps the spare key in the mailbox.", owner="bob")
    seen: dict[str, str] = {}

    async def script(call: Session) -> None:
        seen.update(await _history_script(call))
        for name, arguments in [("supersede", {"memory_id": bobs.id, "text": "pwned"}),
                                ("correct", {"memory_id": bobs.id, "text": "pwned"}),
                                ("update", {"memory_id": bobs.id, "importance": 0.1}),
                                ("link", {"memory_id": seen["third"], "other_id": bobs.id})]:
            assert _error(await call(name, arguments)) == f"no memory {bobs.id}", name

    try:
        with running_sidecar(store, TOKENS) as url:
            _with_mcp(db, script, "--sidecar", url, "--token", ALICE)
        _check_history(store, seen, "alice")
        assert store.get(bobs.id).superseded_by == () and store.links(bobs.id) == []
        assert [v.change_type.value for v in store.history(bobs.id)] == ["created"]
    finally:
        store.close()
