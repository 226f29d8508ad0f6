"""``graphmem.connect``: one scenario run on an embedded store and through a real sidecar
on 127.0.0.1, compared call by call (values, types, errors); then what only a token
changes (owner, actor, scopes)."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import graphmem
from graphmem import (
    ConfirmationRequiredError,
    ConflictError,
    GraphmemError,
    InvalidInputError,
    MemoryStore,
    NotFoundError,
    Settings,
)
from graphmem.client import AccessDeniedError, Client, SidecarUnreachable
from graphmem.sidecar import Tokens

from ._servers import free_port, running_sidecar
from .conftest import SAMPLE as SAMPLE_PATH
from .conftest import Clock

_IDS = re.compile(r"urn:graphmem:[0-9a-z]+|evt-[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9a-z]+"
                  r"|ent_[0-9a-f]+|fact_[0-9a-f]+")
#: Digests keyed by each store's own secret (forget's hmac): equal only within a store.
_KEYED = re.compile(r"hmac-sha256:[0-9a-f:]+")


class Trace:
    """What a scenario saw, call by call: values as JSON with generated ids replaced by
    their order of appearance (the two stores make different random ids)."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, str, Any]] = []
        self._names: dict[str, str] = {}

    def _plain(self, value: Any, *, name_new: bool = True) -> Any:
        if hasattr(value, "model_dump"):
            value = value.model_dump(mode="json")
        elif isinstance(value, list):
            value = [self._plain(v, name_new=name_new) for v in value]
        elif hasattr(value, "__dataclass_fields__"):
            value = vars(value)
        text = _KEYED.sub("<hmac>", json.dumps(value, sort_keys=True, default=str))

        def name(match: re.Match[str]) -> str:
            if not name_new and match.group(0) not in self._names:
                return "<new>"  # first seen in a list whose order is the engine's
            return self._names.setdefault(match.group(0), f"<id{len(self._names)}>")

        return json.loads(_IDS.sub(name, text))

    def see(self, step: str, value: Any, *, unordered: bool = False) -> Any:
        """Record a value; ``unordered``: its lists are sets (the engine's scan order
        follows the random ids)."""
        kind = type(value).__name__ if not isinstance(value, list) else (
            "list[" + ",".join(sorted({type(v).__name__ for v in value})) + "]")
        plain = _undirected(self._plain(value, name_new=not unordered))
        self.steps.append((step, kind, _sorted(plain) if unordered else plain))
        return value

    def fails(self, step: str, call: Callable[[], Any]) -> GraphmemError:
        with pytest.raises(GraphmemError) as caught:
            call()
        error = caught.value
        self.steps.append((step, type(error).__name__, _IDS.sub("<id>", str(error))))
        return error


def _graph(graph: Any) -> list[Any]:
    """A networkx graph as comparable data: nodes with their attributes, then edges."""
    return [*([node, attrs] for node, attrs in graph.nodes(data=True)),
            *([src, dst, key, data] for src, dst, key, data in graph.edges(keys=True,
                                                                            data=True))]


def _undirected(value: Any) -> Any:
    """Co-occurrence is undirected; its stored direction follows the (random) ids."""
    if isinstance(value, list):
        return [_undirected(v) for v in value]
    if isinstance(value, dict):
        if value.get("kind") == "co_occurs" and "direction" in value:
            return {**value, "direction": "both"}
        if value.get("format") and isinstance(value.get("edges"), dict):  # an export
            value["edges"]["co_occurs"] = [
                {**e, "src": min(e["src"], e["dst"]), "dst": max(e["src"], e["dst"])}
                for e in value["edges"].get("co_occurs", [])]
    return value


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_sorted(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def scenario(store: Any, clock: Clock) -> Trace:
    """Everything the sidecar serves, in the order an agent would call it."""
    t = Trace()
    pg15 = t.see("add", store.add("Orchard stores data in PostgreSQL 15", kind="semantic",
                                  subject="Orchard database", tags=["orchard"],
                                  importance=0.6))
    batch = t.see("add_many", store.add_many([
        {"text": "To deploy orchard: make release, then fly deploy", "kind": "procedural",
         "subject": "Deploy orchard"},
        "Demoed orchard to the lab on Friday",
        {"text": "Moved the standup to 11:30. Everyone agreed.", "subject": "Standup",
         "kind": "note"},
        {"text": "Might try the oat milk at the lab", "status": "candidate"}]))
    runbook, demo, standup, _ = batch
    t.see("add created", store.add("Ran the first orchard trial in the old lab",
                                   created=datetime(2019, 5, 1, 9, 30, tzinfo=UTC)))
    t.see("add_conversation", store.add_conversation([
        {"speaker": "Nadia", "text": "Hi!"},
        {"speaker": "Nadia", "text": "I moved to Ibadan in March 2026 for lab work."}],
        session_id="s1"))
    clock.advance(hours=1)
    pg16 = t.see("supersede", store.supersede(pg15.id, "Orchard stores data in PostgreSQL 16",
                                              reason="upgrade"))
    t.see("supersede existing", store.supersede(demo.id, store.add("Demoed orchard twice")))
    t.see("link", store.link(runbook.id, pg16.id))
    t.see("link co_occurs", store.link(standup.id, runbook.id, kind="co_occurs", weight=2.0))
    t.see("links", store.links(runbook.id))
    t.see("update", store.update(runbook.id, importance=0.9, reason="importance_boost"))
    t.see("update subject", store.update(standup.id, subject=None, tags=["team"]))
    t.see("correct", store.correct(standup.id, "The standup moved to 11:00."))
    t.see("get", store.get(pg15.id))
    hits = t.see("recall", store.recall("which database does orchard use", k=3))
    t.see("recall filtered", store.recall("orchard", k=5, kinds=["procedural"],
                                          preset="hybrid", record_access=False))
    t.see("feedback", store.feedback(hits[0].memory.id, useful=True,
                                     query="which database does orchard use"))
    t.see("feedback ignored", store.feedback(runbook.id, useful=False))
    t.see("update fields", store.update(runbook.id, project="orchard", visibility="team",
                                        valid_from="2026-01-01T00:00:00Z", text=None))
    t.see("update clears", store.update(runbook.id, project=None, valid_from=None))
    t.fails("update unknown field", lambda: store.update(runbook.id, colour="red"))
    t.see("keep", store.keep(runbook.id, reason="still the runbook"))
    t.see("events", store.events(runbook.id))
    t.see("events of a type", store.events(event_type="keep"))
    t.see("memories", store.memories(), unordered=True)
    t.see("entities", store.entities(), unordered=True)
    t.see("facts", store.facts(), unordered=True)
    t.see("facts about", store.facts(about="Nadia", current=True), unordered=True)
    t.see("named_query", store.named_query("kinds_by_status"), unordered=True)
    t.see("named_query params", store.named_query("most_mentioned_entities", {"limit": 3}))
    t.see("named_query owner", store.named_query("most_mentioned_entities", owner="nobody"))
    t.fails("named_query unknown", lambda: store.named_query("most_mentioned"))
    t.see("to_networkx", _graph(store.to_networkx()), unordered=True)
    t.see("to_networkx edges", _graph(store.to_networkx(edge_kinds=["co_occurs"],
                                                        statuses=["active"])), unordered=True)
    t.fails("learn", lambda: store.learn())
    t.see("history", store.history(runbook.id))
    t.see("evaluate", store.evaluate(runbook.id))
    t.see("batch_evaluate", store.batch_evaluate(), unordered=True)
    episode = store.add("Ran the greenhouse irrigation test on bed-03")
    t.see("promote", store.promote(episode.id, reason="high_access"))
    t.see("promote again", store.promote(episode.id))
    t.see("restore", store.restore(episode.id))
    t.see("archive", store.archive(episode.id, create_summary=True))
    t.see("archive again", store.archive(episode.id))
    t.see("tombstone", store.tombstone(pg15.id))
    t.see("forget", store.forget(episode.id, confirm=True))
    seeds = store.add("Counted the seeds of bed-04: 212")
    t.see("forget_many", store.forget_many([seeds.id, standup.id, seeds.id], confirm=True))
    t.fails("forget_many unknown", lambda: store.forget_many([runbook.id, "urn:graphmem:no"],
                                                             confirm=True))
    t.fails("forget_many unconfirmed", lambda: store.forget_many([runbook.id]))
    clock.advance(days=40)
    report = t.see("run_lifecycle", store.run_lifecycle(), unordered=True)
    assert report.to_markdown().startswith("# Archivist Lifecycle Report")
    t.see("run_lifecycle apply", store.run_lifecycle(apply=True), unordered=True)
    t.see("stats", store.stats())
    t.see("export", store.export(), unordered=True)
    t.fails("get unknown", lambda: store.get("urn:graphmem:nope"))
    t.fails("add empty", lambda: store.add("   "))
    t.fails("add bad kind", lambda: store.add("x", kind="dream"))
    t.fails("link itself", lambda: store.link(runbook.id, runbook.id))
    t.fails("supersede forgotten", lambda: store.supersede(episode.id, "again"))
    t.fails("forget unconfirmed", lambda: store.forget(runbook.id))
    t.fails("tombstone twice", lambda: store.tombstone(pg15.id))
    t.fails("evaluate unknown", lambda: store.evaluate("urn:graphmem:nope"))
    return t


def _settings() -> Settings:
    return Settings()


START = datetime(2026, 7, 15, 12, tzinfo=UTC)


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[tuple[MemoryStore, Clock]]:
    clock = Clock(START)
    with MemoryStore(tmp_path / "embedded", embedder="hashing", clock=clock,
                     settings=_settings()) as store:
        yield store, clock


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[MemoryStore, Clock, str]]:
    clock = Clock(START)
    with MemoryStore(tmp_path / "served", embedder="hashing", clock=clock,
                     settings=_settings()) as store, running_sidecar(store) as url:
        yield store, clock, url


def test_one_scenario_embedded_and_served_agree(embedded: tuple[MemoryStore, Clock],
                                                served: tuple[MemoryStore, Clock, str]
                                                ) -> None:
    store, clock = embedded
    expected = scenario(store, clock)
    _, served_clock, url = served
    with graphmem.connect(url) as client:
        got = scenario(client, served_clock)
    assert len(got.steps) == len(expected.steps)
    for (step, kind, value), (_, want_kind, want) in zip(got.steps, expected.steps,
                                                         strict=True):
        if step.startswith("run_lifecycle"):
            value.pop("seconds"), want.pop("seconds")
        assert (step, kind) == (step, want_kind)
        assert value == want, step


TOKENS = {"tok-alice-0123456789": {"owner": "alice", "scopes": ["read", "write"]},
          "tok-bob-0123456789abc": {"owner": "bob", "scopes": ["read", "write"]},
          "tok-reader-alice-01234": {"owner": "alice", "scopes": ["read"]}}


def test_a_token_is_the_owner_and_the_actor(tmp_path: Path, clock: Clock) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock) as store, \
            running_sidecar(store, Tokens.from_mapping(TOKENS)) as url, \
            graphmem.connect(url, token="tok-alice-0123456789") as alice, \
            graphmem.connect(url, token="tok-bob-0123456789abc") as bob, \
            graphmem.connect(url, token="tok-reader-alice-01234") as reader:
        note = alice.add("Alice keeps the spare key under the blue pot.")
        assert note.owner == "alice"
        newer = alice.supersede(note.id, "Alice moved the spare key to the mailbox.")
        alice.update(newer.id, importance=0.8)
        alice.feedback(newer.id, useful=True)
        alice.tombstone(note.id)
        assert {v.actor for v in store.history(newer.id)} == {"alice"}
        assert {v.actor for v in store.history(note.id)} == {"alice"}
        assert {e.agent_id for e in store.events(note.id)} == {"alice"}
        # another owner: the memory does not exist for them, whatever the call
        for call in (lambda: bob.get(note.id), lambda: bob.history(note.id),
                     lambda: bob.update(note.id, text="pwned"),
                     lambda: bob.link(note.id, newer.id), lambda: bob.evaluate(note.id)):
            with pytest.raises(NotFoundError, match=f"no memory {re.escape(note.id)}"):
                call()
        assert bob.recall("spare key") == []
        with pytest.raises(InvalidInputError, match="owner"):
            bob.recall("spare key", owner="alice")
        with pytest.raises(InvalidInputError, match="owner"):
            bob.add("mine now", owner="alice")
        # a read token reads, and changes nothing, even when it asks to record access
        used = store.get(newer.id).access_count  # 1: alice's useful feedback
        assert [h.memory.id for h in reader.recall("spare key mailbox",
                                                   record_access=True)] == [newer.id]
        with pytest.raises(AccessDeniedError, match="write"):
            reader.add("a new memory")
        assert store.get(newer.id).access_count == used == 1
        with pytest.raises(AccessDeniedError) as unknown:
            graphmem.connect(url, token="tok-nobody-000000000").stats()
        assert unknown.value.code == "unauthorized"
        with pytest.raises(InvalidInputError, match="actor"):
            alice.add("x", actor="mallory")


def test_a_token_reads_its_owners_graph_and_events_only(tmp_path: Path, clock: Clock) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock) as store, \
            running_sidecar(store, Tokens.from_mapping(TOKENS)) as url, \
            graphmem.connect(url, token="tok-alice-0123456789") as alice, \
            graphmem.connect(url, token="tok-bob-0123456789abc") as bob, \
            graphmem.connect(url, token="tok-reader-alice-01234") as reader:
        store.add_conversation([{"speaker": "Nadia", "text": "I moved to Ibadan in March "
                                 "2026 for lab work."}], session_id="s1", owner="alice")
        store.add_conversation([{"speaker": "Tunde", "text": "I moved to Lagos in May "
                                 "2026 for a new job."}], session_id="s2", owner="bob")
        mine = store.memories(owner="alice")
        assert [m.id for m in alice.memories()] == [m.id for m in mine] != []
        assert alice.entities() == store.entities(owner="alice") != []
        assert alice.facts() == store.facts(owner="alice") != []
        assert alice.events() == store.events(owner="alice")
        assert set(alice.to_networkx()) == {m.id for m in mine}
        assert alice.named_query("most_mentioned_entities") == \
            store.named_query("most_mentioned_entities", owner="alice") != []
        assert {e.name for e in bob.entities()} & {e.name for e in alice.entities()} == set()
        for call in (lambda: bob.entities(owner="alice"), lambda: bob.memories(owner="alice"),
                     lambda: bob.named_query("most_mentioned_entities", owner="alice")):
            with pytest.raises(InvalidInputError, match="owner"):
                call()
        for call in (lambda: bob.events(mine[0].id), lambda: bob.keep(mine[0].id)):
            with pytest.raises(NotFoundError):
                call()
        with pytest.raises(AccessDeniedError, match="write"):
            reader.keep(mine[0].id)
        with pytest.raises(AccessDeniedError, match="admin"):
            alice.learn()
        kept = alice.keep(mine[0].id, reason="still true")
        assert (kept.agent_id, kept.reason) == ("alice", "still true")
        assert store.events(mine[0].id)[-1] == kept


def test_the_patch_body_is_the_update_fields() -> None:
    from graphmem._input import UpdateFields
    from graphmem.sidecar._schemas import PatchIn

    assert set(PatchIn.model_fields) == \
        set(UpdateFields.__annotations__) - {"provenance"} | {"reason"}


def test_an_unreachable_sidecar_says_so(tmp_path: Path) -> None:
    client = Client(f"http://127.0.0.1:{free_port()}", timeout_s=2)
    with pytest.raises(SidecarUnreachable, match="cannot connect") as caught:
        client.stats()
    assert caught.value.maybe_applied is False
    with pytest.raises(InvalidInputError, match="http://"):
        graphmem.connect("127.0.0.1:4380")


def test_an_owner_that_is_no_string_is_refused_without_a_request() -> None:
    client = Client(f"http://127.0.0.1:{free_port()}", timeout_s=2)  # nothing listens
    calls: dict[str, Callable[[Any], object]] = {
        "get": lambda o: client.get("m", owner=o),
        "links": lambda o: client.links("m", owner=o),
        "history": lambda o: client.history("m", owner=o),
        "memories": lambda o: client.memories(owner=o),
        "memory_count": lambda o: client.memory_count(owner=o),
        "events": lambda o: client.events(owner=o),
        "recall": lambda o: client.recall("tea", owner=o),
        "evaluate": lambda o: client.evaluate("m", owner=o),
        "batch_evaluate": lambda o: client.batch_evaluate(owner=o),
        "run_lifecycle": lambda o: client.run_lifecycle(owner=o),
        "entities": lambda o: client.entities(owner=o),
        "facts": lambda o: client.facts(owner=o),
        "export": lambda o: client.export(o),
        "named_query": lambda o: client.named_query("most_mentioned_entities", owner=o),
        "to_networkx": lambda o: client.to_networkx(owner=o),
        "update": lambda o: client.update("m", importance=0.9, owner=o),
        "supersede": lambda o: client.supersede("m", "tea", owner=o),
        "correct": lambda o: client.correct("m", "tea", owner=o),
        "link": lambda o: client.link("m", "n", owner=o),
        "tombstone": lambda o: client.tombstone("m", owner=o),
        "keep": lambda o: client.keep("m", owner=o),
        "forget": lambda o: client.forget("m", confirm=True, owner=o),
        "forget_many": lambda o: client.forget_many(["m"], confirm=True, owner=o),
        "feedback": lambda o: client.feedback("m", useful=True, owner=o),
        "promote": lambda o: client.promote("m", owner=o),
        "archive": lambda o: client.archive("m", owner=o),
        "restore": lambda o: client.restore("m", owner=o),
        "add_conversation": lambda o: client.add_conversation(["hi"], session_id="s",
                                                              owner=o),
    }
    assert set(calls) == {
        name for name, method in inspect.getmembers(Client, inspect.isfunction)
        if not name.startswith("_") and "owner" in inspect.signature(method).parameters}
    for name, call in calls.items():
        for owner in (5, [1], b"x", True):
            with pytest.raises(InvalidInputError, match="owner must be a string") as caught:
                call(owner)  # not SidecarUnreachable: no request was made
            assert caught.value.field == "owner", (name, owner)


def test_recall_and_conflicts_keep_their_types(served: tuple[MemoryStore, Clock, str]) -> None:
    store, _, url = served
    with graphmem.connect(url) as client:
        memory = client.add("Nadia prefers green tea", kind="semantic")
        [hit] = client.recall("green tea", k=1)
        assert isinstance(hit, graphmem.Hit) and hit.memory == store.get(memory.id)
        assert hit.explanation.lines()[0].startswith("preset default")
        failed = client.promote(memory.id)
        assert isinstance(failed, graphmem.PromoteResult) and not failed.success
        assert "only active episodic memories" in (failed.error or "")
        with pytest.raises(ConflictError, match="supersede itself"):
            client.supersede(memory.id, memory)
        with pytest.raises(ConfirmationRequiredError):
            client.forget(memory.id)
        # one string is no list of ids (it was sent as one id per character)
        with pytest.raises(InvalidInputError, match="memory_ids"):
            client.forget_many(memory.id, confirm=True)
        assert client.forget_many([], confirm=True) == 0
        for reason in (None, 5, "caf\udce9"):
            with pytest.raises(InvalidInputError, match="reason"):
                client.forget(memory.id, confirm=True, reason=reason)  # type: ignore[arg-type]
        assert client.forget_many((i for i in [memory.id]), confirm=True) == 1
        assert store.get(memory.id).status is graphmem.Status.FORGOTTEN


def test_a_bad_record_of_a_batch_is_named(served: tuple[MemoryStore, Clock, str]) -> None:
    import httpx

    store, _, url = served
    before = len(store.memories())
    answer = httpx.post(f"{url}/v1/memories", json={"memories": [
        {"text": "Nadia prefers green tea"}, {"text": "fine"}, {"text": "   "}]})
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["detail"] == "memories.2: text: text is empty"
    assert body["field"] == "memories.2.text"  # as pydantic's 422s name fields
    assert len(store.memories()) == before  # all or nothing


def test_export_as_ump_over_http(served: tuple[MemoryStore, Clock, str]) -> None:
    from ingest.ump import import_ump, record_to_input, ump_records

    store, _, url = served
    import_ump(store, SAMPLE_PATH)
    with graphmem.connect(url) as client:
        records = client.export(format="ump")
        assert records == ump_records(store) and len(records) == 301
        assert [record_to_input(r).id for r in records[:3]] == [r["id"] for r in records[:3]]
        gdpr = client.export()
        assert gdpr["format"] == "graphmem-gdpr-export/1"


def test_the_memory_list_comes_in_pages(served: tuple[MemoryStore, Clock, str]) -> None:
    import httpx

    store, _, url = served
    store.add_many([{"text": f"note number {i}"} for i in range(7)])
    everything = [m.id for m in store.memories()]
    first = httpx.get(f"{url}/v1/memories", params={"limit": 3}).json()
    assert (first["count"], first["offset"], first["next_offset"]) == (7, 0, 3)
    assert [m["id"] for m in first["memories"]] == everything[:3]
    last = httpx.get(f"{url}/v1/memories", params={"limit": 3, "offset": 6}).json()
    assert [m["id"] for m in last["memories"]] == everything[6:]
    assert last["next_offset"] is None
    whole = httpx.get(f"{url}/v1/memories").json()  # no limit: all, as before
    assert len(whole["memories"]) == 7 and whole["next_offset"] is None
    refused = httpx.get(f"{url}/v1/memories", params={"limit": 0})
    assert refused.status_code == 422 and refused.json()["field"] == "query.limit"
    with graphmem.connect(url) as client:
        assert [m.id for m in client.memories()] == everything
        assert [m.id for m in client.memories(offset=2, limit=2)] == everything[2:4]
        assert client.memory_count() == store.memory_count() == 7
        # the same answers as the store's, whatever the sidecar's page size
        for offset, limit in ((0, 0), (1, 20_000), (7, 3), (2**63, 1)):
            assert ([m.id for m in client.memories(offset=offset, limit=limit)]
                    == [m.id for m in store.memories(offset=offset, limit=limit)])
        with pytest.raises(InvalidInputError, match="limit must be a whole number"):
            client.memories(limit=True)  # type: ignore[arg-type]
    assert [m.id for m in store.memories(offset=5)] == everything[5:]
    with pytest.raises(InvalidInputError, match="offset must be a whole number"):
        store.memories(offset=-1)
