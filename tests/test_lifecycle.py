"""The archivist and the lifecycle manager: seed rules, transitions, manager jobs, report."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from graphmem import (
    ChangeType,
    ConfirmationRequiredError,
    ConflictError,
    EventType,
    InvalidInputError,
    Kind,
    Memory,
    MemoryStore,
    NotFoundError,
    Settings,
    Status,
    TriggeredBy,
    evaluate_memory_lifecycle,
)
from graphmem._lifecycle._rules import evaluate_arrays


# -- the archivist policy's own unit tests, through the pure function ------------------
def test_seed_unit_tests() -> None:
    assert evaluate_memory_lifecycle(memory_id="test-1", importance=0.7, age_in_days=5,
                                     access_count=15, type="episodic"
                                     ).recommended_action == "promote"
    assert evaluate_memory_lifecycle(memory_id="test-2", importance=0.2, age_in_days=45,
                                     access_count=0, type="episodic"
                                     ).recommended_action == "archive"
    assert evaluate_memory_lifecycle(memory_id="test-3", importance=0.5, age_in_days=10,
                                     access_count=3, type="episodic"
                                     ).recommended_action == "maintain"


def test_seed_batch_example() -> None:
    memories = [
        {"memory_id": "mem-001", "type": "episodic", "importance": 0.9, "age_in_days": 3,
         "access_count": 20, "tags": ["critical"]},
        {"memory_id": "mem-002", "type": "episodic", "importance": 0.2, "age_in_days": 45,
         "access_count": 0, "tags": []},
    ]
    actions = [evaluate_memory_lifecycle(**m).recommended_action for m in memories]
    assert actions == ["promote", "archive"]
    result = evaluate_memory_lifecycle(**memories[0]).model_dump(by_alias=True)
    assert set(result) == {"memoryId", "currentState", "recommendedAction", "confidence",
                           "reasons", "metrics"}
    assert set(result["metrics"]) == {"importance", "ageInDays", "accessCount",
                                      "decayedScore", "crossReferenceCount", "centrality"}


@pytest.mark.parametrize(("kwargs", "action", "reason"), [
    ({"access_count": 10}, "promote", "high_access"),
    ({"importance": 0.8}, "promote", "high_importance"),
    ({"tags": ["critical"]}, "promote", "critical_tag"),
    ({"tags": ["permanent"]}, "promote", "critical_tag"),
    ({"cross_reference_count": 3}, "promote", "cross_references"),
    ({"age_in_days": 30, "importance": 0.29, "access_count": 0}, "archive", "age"),
    ({"tags": ["deprecated"]}, "archive", "deprecated"),
    ({"access_count": 8, "importance": 0.75, "age_in_days": 2}, "review",
     "borderline promotion"),
    ({"cross_reference_count": 2}, "review", "borderline promotion: cross_references"),
    ({"age_in_days": 40, "importance": 0.35, "access_count": 0}, "review", "borderline archive"),
    ({"tags": ["critical", "deprecated"]}, "review", "conflict"),
    ({"age_in_days": 30, "importance": 0.29, "access_count": 1}, "maintain", "no promotion"),
])
def test_every_rule(kwargs: dict, action: str, reason: str) -> None:
    base = {"memory_id": "m", "importance": 0.5, "age_in_days": 10, "access_count": 0,
            "type": "episodic"}
    result = evaluate_memory_lifecycle(**{**base, **kwargs})
    assert result.recommended_action == action
    assert any(r.startswith(reason) for r in result.reasons), result.reasons


def test_promotion_is_for_episodic_memories_only() -> None:
    semantic = evaluate_memory_lifecycle(memory_id="s", importance=0.9, age_in_days=1,
                                         access_count=50, type="semantic")
    assert semantic.recommended_action == "maintain"


def test_thresholds_come_from_settings() -> None:
    strict = Settings(promotion_access_threshold=100, archive_age_days=400)
    assert evaluate_memory_lifecycle(memory_id="m", importance=0.5, age_in_days=5,
                                     access_count=15, type="episodic", settings=strict
                                     ).recommended_action == "maintain"


def test_vectorised_rules_agree_with_the_scalar_function() -> None:
    rng = np.random.default_rng(7)
    settings = Settings()
    n = 4000
    data = {
        "importance": rng.choice([0.05, 0.2, 0.29, 0.3, 0.35, 0.5, 0.7, 0.75, 0.8, 0.95], n),
        "age_in_days": rng.choice([0, 5, 29.9, 30, 45, 200], n).astype(float),
        "access_count": rng.choice([0, 1, 3, 6, 7, 9, 10, 40], n),
        "episodic": rng.random(n) < 0.7,
        "promote_tag": rng.random(n) < 0.1,
        "archive_tag": rng.random(n) < 0.1,
        "cross_reference_count": rng.choice([0, 1, 2, 3, 5], n),
    }
    masks = evaluate_arrays(**data, settings=settings)
    for i in range(n):
        tags = (["critical"] if data["promote_tag"][i] else []) + \
            (["deprecated"] if data["archive_tag"][i] else [])
        scalar = evaluate_memory_lifecycle(
            memory_id=str(i), importance=float(data["importance"][i]),
            age_in_days=float(data["age_in_days"][i]),
            access_count=int(data["access_count"][i]),
            type="episodic" if data["episodic"][i] else "semantic", tags=tags,
            cross_reference_count=int(data["cross_reference_count"][i]), settings=settings)
        vector = next(a for a in ("promote", "archive", "review", "maintain") if masks[a][i])
        assert vector == scalar.recommended_action, (i, scalar.reasons)
        if vector in ("promote", "archive"):
            assert masks["reason"][i] == scalar.reasons[0].split(":")[0]


# -- the archivist on a real store ---------------------------------------------------------
def test_cross_references_from_graph_edges_promote(store: MemoryStore) -> None:
    target = store.add("The release checklist lives in the wiki")
    referrers = [store.add(f"Followed the release checklist, step {i}") for i in range(3)]
    assert store.evaluate(target.id).recommended_action == "maintain"
    for i, other in enumerate(referrers):
        store.link(other.id, target.id)
        if i == 0:
            store.link(other.id, target.id)  # the same memory twice counts once
    result = store.evaluate(target.id)
    assert result.metrics.cross_reference_count == 3
    assert result.recommended_action == "promote"
    assert result.reasons == ["cross_references: referenced by 3 memories >= 3"]
    assert result.metrics.centrality is not None and result.metrics.centrality > 0


def test_promote_writes_version_and_event(store: MemoryStore) -> None:
    memory = store.add("Nadia demoed orchard to the lab", kind="episodic")
    result = store.promote(memory.id, reason="high_access")
    assert result.success and (result.old_type, result.new_type) == ("episodic", "semantic")
    assert store.get(memory.id).kind is Kind.SEMANTIC
    version = store.history(memory.id)[-1]
    assert (version.change_type, version.kind) == (ChangeType.PROMOTED, Kind.SEMANTIC)
    [event] = store.events(memory.id)
    assert (event.event_type, event.from_state, event.to_state, event.reason,
            event.triggered_by) == (EventType.PROMOTE, "episodic", "semantic", "high_access",
                                    TriggeredBy.MANUAL)
    assert set(event.metadata) == {"accessCount", "importance", "ageInDays"}
    again = store.promote(memory.id)
    assert not again.success and "semantic" in (again.error or "")
    with pytest.raises(InvalidInputError):
        store.promote(memory.id, reason="because")


def test_archive_with_extractive_summary(store: MemoryStore) -> None:
    memory = store.add("Moved the standup to 11:30 WAT. Everyone agreed.", subject="Standup")
    other = store.add("Standup notes template")
    store.link(memory.id, other.id)
    result = store.archive(memory.id, reason="age", create_summary=True)
    assert result.success and result.new_type == "archival"
    assert result.summary == "Standup: Moved the standup to 11:30 WAT. Related: Standup notes " \
                             "template."
    archived = store.get(memory.id)
    assert archived.status is Status.ARCHIVED
    assert store.history(memory.id)[-1].change_type is ChangeType.ARCHIVED
    event = store.events(memory.id)[-1]
    assert (event.event_type, event.from_state, event.to_state) == (EventType.ARCHIVE,
                                                                    "active", "archived")
    assert event.metadata["summary"] == result.summary
    assert event.metadata["summarySource"] == "extractive"
    assert store.recall("standup 11:30") and all(
        h.memory.id != memory.id for h in store.recall("standup 11:30"))


def test_archive_summary_falls_back_when_ollama_is_down(tmp_path: Path, clock) -> None:
    settings = Settings(ollama_host="http://127.0.0.1:9", ollama_timeout_s=1.0)
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock,
                     settings=settings) as store:
        memory = store.add("The greenhouse valve sticks in cold weather.")
        result = store.archive(memory.id, create_summary=True)
        assert result.success
        assert store.events(memory.id)[-1].metadata["summarySource"] == "extractive"


def test_restore_within_and_outside_the_window(store: MemoryStore, clock) -> None:
    memory = store.add("Orchard beta feedback call")
    store.archive(memory.id)
    clock.advance(days=3)
    restored = store.restore(memory.id)
    assert restored.success and (restored.undone, restored.to_state) == ("archive", "active")
    assert store.get(memory.id).status is Status.ACTIVE
    assert store.history(memory.id)[-1].change_type is ChangeType.RESTORED
    assert store.events(memory.id)[-1].event_type is EventType.RESTORE
    assert not store.restore(memory.id).success  # nothing left to undo
    store.promote(memory.id)
    clock.advance(days=8)
    late = store.restore(memory.id)
    assert not late.success and "outside the restore window (7 days)" in (late.error or "")
    assert store.get(memory.id).kind is Kind.SEMANTIC
    assert store.restore(memory.id, window_days=30).success
    assert store.get(memory.id).kind is Kind.EPISODIC
    store.tombstone(memory.id)
    assert store.restore(memory.id).success
    assert store.get(memory.id).status is Status.ACTIVE


def test_forget_refuses_without_confirm(store: MemoryStore) -> None:
    memory = store.add("keep me")
    with pytest.raises(ConfirmationRequiredError, match="confirm=True"):
        store.forget(memory.id)
    with pytest.raises(ConfirmationRequiredError):
        store.forget(memory.id, confirm="yes")  # type: ignore[arg-type]
    assert store.get(memory.id).text == "keep me"


# -- the lifecycle manager ---------------------------------------------------------------------
def _populate(store: MemoryStore, clock) -> dict[str, str]:
    """Memories that each trigger one job, most created 60 days before 'now'."""
    start = clock.now
    clock.now = start - timedelta(days=20)
    stale = store.add("Sketched a logo idea", importance=0.5).id  # decays to 0.31
    clock.now = start - timedelta(days=60)
    ids = {
        "old_unused": store.add("Ran the weekly backup check", importance=0.2).id,
        "stale": stale,
        "used": store.add("Nadia's deploy checklist", importance=0.5).id,
        "critical": store.add("Orchard incident runbook", tags=["critical"]).id,
        "candidate": store.add("Maybe Nadia likes tea", status="candidate").id,
        "payload": store.add("Extracted fact with payload", kind="semantic",
                             payload='{"raw": "the original message"}').id,
        "identity": store.add("Nadia's surname is Okafor", kind="identity").id,
    }
    clock.now = start
    for _ in range(12):
        store.recall("deploy checklist", k=1, preset="fulltext", record_access=True)
    store.flush()
    return ids


def test_dry_run_changes_nothing(store: MemoryStore, clock) -> None:
    _populate(store, clock)
    before = store.export()
    report = store.run_lifecycle()
    assert not report.applied
    after = store.export()
    before.pop("generated"), after.pop("generated")
    assert after == before
    # what the run plans, exactly: used and critical promote, old_unused archives (for
    # review: auto-archive is off), stale, old_unused and payload decay, the candidate
    # expires, the six active memories are all hot (the hot set holds 50)
    assert report.counts == {"promote": 2, "archive": 1, "maintain": 3, "review": 0}
    assert report.evaluated == 6
    j = report.jobs
    assert (j.decayed, j.recomputed, j.promoted, j.archived, j.archive_for_review,
            j.hot_added, j.hot_removed, j.candidates_expired, j.payloads_redacted) == (
        3, 0, 2, 0, 1, 6, 0, 1, 0)


def test_apply_runs_every_job_and_is_idempotent(tmp_path: Path, clock) -> None:
    settings = Settings(auto_archive_enabled=True, hot_set_size=2,
                        payload_retention_days=30, candidate_expiry_days=30)
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock,
                     settings=settings) as store:
        ids = _populate(store, clock)
        report = store.run_lifecycle(apply=True)
        got = {k: store.get(v) for k, v in ids.items()}
        assert got["used"].kind is Kind.SEMANTIC          # 12 accesses: promoted
        assert got["critical"].kind is Kind.SEMANTIC      # critical tag: promoted
        assert got["old_unused"].status is Status.ARCHIVED  # 60 days, 0.2, unused
        assert got["stale"].importance == pytest.approx(0.5 * 0.5 ** (20 / 30))  # decayed
        assert got["stale"].original_importance == 0.5
        assert got["candidate"].status is Status.TOMBSTONED  # expired weak candidate
        assert got["payload"].payload is None and got["payload"].payload_hash
        # identity's half-life is 10 years: 60 idle days take 0.0057, under the 0.05 a
        # decay must reach to be written, so nothing is (test_decay_per_kind: more days)
        assert got["identity"].importance == 0.5
        assert [v.change_type for v in store.history(ids["identity"])] == [ChangeType.CREATED]
        assert got["payload"].importance == pytest.approx(0.5 * 0.5 ** (60 / 365))
        assert got["old_unused"].importance == pytest.approx(0.2 * 0.5 ** (60 / 30))
        assert sum(m.hot for m in store.memories()) == 2
        assert got["used"].hot
        for name, change in (("used", ChangeType.PROMOTED), ("old_unused", ChangeType.ARCHIVED),
                             ("stale", ChangeType.IMPORTANCE_DECAY),
                             ("candidate", ChangeType.TOMBSTONED)):
            assert store.history(ids[name])[-1].change_type is change
        events = {(e.memory_id, e.event_type) for e in store.events()}
        assert (ids["used"], EventType.PROMOTE) in events
        assert (ids["old_unused"], EventType.ARCHIVE) in events
        assert (ids["candidate"], EventType.EXPIRE) in events
        assert all(e.triggered_by is TriggeredBy.AUTO for e in store.events()
                   if e.event_type in (EventType.PROMOTE, EventType.ARCHIVE))
        assert report.jobs.promoted == 2 and report.jobs.archived == 1
        # A second run on the same day changes nothing.
        before = store.export()
        again = store.run_lifecycle(apply=True)
        after = store.export()
        before.pop("generated"), after.pop("generated")
        assert after == before
        j = again.jobs
        assert (j.decayed, j.promoted, j.archived, j.hot_added, j.candidates_expired,
                j.payloads_redacted) == (0, 0, 0, 0, 0, 0)


def test_decay_does_not_undo_feedback_or_edits(store: MemoryStore, clock) -> None:
    memory = store.add("Orchard deploy checklist")
    for _ in range(4):
        store.recall("orchard deploy checklist", k=1, record_access=True)
        store.feedback(memory.id, useful=True)
    boosted = store.get(memory.id)
    assert boosted.importance == pytest.approx(0.7)
    assert boosted.original_importance == pytest.approx(0.7)
    edited = store.add("Orchard runbook")
    store.update(edited.id, importance=0.9)
    store.run_lifecycle(apply=True)  # nothing is idle yet: nothing decays
    assert store.get(memory.id).importance == pytest.approx(0.7)
    assert store.get(edited.id).importance == pytest.approx(0.9)
    clock.advance(days=30)           # one episodic half-life of idleness
    store.run_lifecycle(apply=True)
    assert store.get(memory.id).importance == pytest.approx(0.35)
    assert store.get(memory.id).original_importance == pytest.approx(0.7)


def test_auto_archive_off_lists_for_review(store: MemoryStore, clock) -> None:
    ids = _populate(store, clock)
    report = store.run_lifecycle(apply=True)
    assert store.get(ids["old_unused"]).status is Status.ACTIVE
    assert report.jobs.archived == 0 and report.jobs.archive_for_review == 1
    assert [e.memory_id for e in report.evaluations if e.recommended_action == "archive"] == [
        ids["old_unused"]]
    assert EventType.ARCHIVE not in {e.event_type for e in store.events()}


def test_archivist_disabled_applies_no_transition(tmp_path: Path, clock) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock,
                     settings=Settings(archivist_enabled=False)) as store:
        ids = _populate(store, clock)
        store.run_lifecycle(apply=True)
        assert store.get(ids["used"]).kind is Kind.EPISODIC


def test_markdown_report_structure(store: MemoryStore, clock) -> None:
    _populate(store, clock)
    report = store.run_lifecycle()
    text = report.to_markdown()
    lines = text.splitlines()
    assert lines[0] == "# Archivist Lifecycle Report"
    assert lines[2].startswith("**Generated:** 2026-07-15T12:00:00Z")
    assert lines[3] == f"**Memories Evaluated:** {report.evaluated}"
    table = lines[lines.index("## Summary") + 2: lines.index("## Summary") + 8]
    assert table[:2] == ["| Action | Count | Percentage |", "|--------|-------|------------|"]
    assert [row.split("|")[1].strip() for row in table[2:]] == [
        "Promote to Semantic", "Archive", "Maintain", "Manual Review"]
    assert sum(int(row.split("|")[2]) for row in table[2:]) == report.evaluated
    assert any(line.startswith("## Promotions (") for line in lines)
    assert "   - Access Count: 12" in lines
    assert lines[-1] == "*Archivist lifecycle evaluation complete.*"
    data = json.loads(report.to_json())
    assert data["evaluated"] == report.evaluated and "recommended_action" in data["evaluations"][0]


def _pagerank_oracle(ids: list[str], links: set[tuple[str, str, str]]) -> dict[str, float]:
    """networkx's PageRank over the links as the test made them: a REFERENCES b is one
    edge a -> b; a CO_OCCURS b (undirected) is an edge each way; a pair joined by both
    kinds has both edges (a MultiDiGraph)."""
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(ids)
    for kind, a, b in links:
        graph.add_edge(a, b)
        if kind == "co_occurs":
            graph.add_edge(b, a)
    return nx.pagerank(graph, alpha=0.85, tol=1e-12, max_iter=2000)


def _random_links(store: MemoryStore, kinds: tuple[str, ...]) -> tuple[list[str],
                                                                       set[tuple[str, str, str]]]:
    rng = random.Random(3)
    ids = [store.add(f"node {i}", id=f"urn:pr:{i:02d}").id for i in range(30)]
    links: set[tuple[str, str, str]] = set()
    for _ in range(60):
        a, b = rng.sample(ids, 2)
        kind = rng.choice(kinds)
        store.link(a, b, kind=kind)
        links.add((kind, a, b) if kind == "references" else (kind, *sorted((a, b))))
    return ids, links


def test_centrality_follows_references_as_linked(store: MemoryStore) -> None:
    ids, links = _random_links(store, ("references",))
    oracle = _pagerank_oracle(ids, links)  # from the links made, not from the stored edges
    ours = store.centrality()
    for memory_id in ids:
        assert ours[memory_id] == pytest.approx(oracle[memory_id], abs=1e-6)
    store.run_lifecycle(apply=True)
    stored = {m.id: m.centrality for m in store.memories()}
    assert stored == pytest.approx(ours)



def test_recall_hits_show_the_signals_the_last_run_stored(store: MemoryStore) -> None:
    """A hit's centrality and cross-reference count are the ones ``get`` reads, after a
    run that stored only new graph signals (the rows recall had read stay cached; an
    index built from the store: ``test_persist_index``); a memory no run has seen has
    no centrality yet."""
    for text in ("Ana lives in Porto", "Ana works at Acme in Porto", "Porto is rainy",
                 "I like tea"):
        store.add(text)
    store.derive_links()
    store.run_lifecycle(apply=True)

    def fields(m: Memory) -> tuple[Any, ...]:
        return m.centrality, m.xref_count, m.hot, m.importance, m.status, m.version

    def shown(query: str) -> dict[str, tuple[Any, ...]]:
        return {h.memory.id: fields(h.memory)
                for h in store.recall(query, k=10, record_access=False)}

    def stored(ids: Iterable[str]) -> dict[str, tuple[Any, ...]]:
        return {i: fields(store.get(i)) for i in ids}

    before = shown("Ana Porto")
    store.add("Ana and Acme again, in Porto")
    store.derive_links()
    store.run_lifecycle(apply=True)
    after = shown("Ana Porto")
    assert after == stored(after) and after != before
    assert {i: after[i] for i in before} != before  # the run moved the old ones' signals
    fresh = store.add("I like coffee").id
    assert shown("coffee")[fresh][:2] == (None, 0)

def test_co_occurrence_counts_both_ways_in_centrality(store: MemoryStore) -> None:
    first = store.add("first of a pair", id="urn:pair:a").id
    second = store.add("second of a pair", id="urn:pair:b").id
    store.link(second, first, kind="co_occurs")
    ranks = store.centrality()
    assert ranks[first] == pytest.approx(ranks[second])
    ids, links = _random_links(store, ("references", "co_occurs"))
    oracle = _pagerank_oracle([first, second, *ids], links | {("co_occurs", first, second)})
    ours = store.centrality()
    for memory_id in oracle:
        assert ours[memory_id] == pytest.approx(oracle[memory_id], abs=1e-6)


def test_decay_follows_each_kinds_half_life(store: MemoryStore, clock) -> None:
    start = clock.now
    ids = {kind: store.add(f"an idle {kind} memory", kind=kind, importance=0.8).id
           for kind in ("working", "episodic", "note", "procedural", "semantic", "identity")}
    exempt = store.add("an idle critical memory", kind="semantic", importance=0.8,
                       tags=["critical"]).id
    clock.now = start + timedelta(days=730)  # two idle years
    report = store.run_lifecycle(apply=True)
    half_lives = Settings().decay_half_life_days
    for kind, memory_id in ids.items():
        memory = store.get(memory_id)
        assert memory.importance == pytest.approx(0.8 * 0.5 ** (730 / half_lives[kind]),
                                                  rel=1e-9), kind
        assert memory.original_importance == 0.8
        assert store.history(memory_id)[-1].change_type is ChangeType.IMPORTANCE_DECAY
    assert store.get(ids["identity"]).importance == pytest.approx(0.6964, abs=1e-4)
    assert store.get(exempt).importance == 0.8
    assert report.jobs.decayed == 6


def test_the_hot_set_turns_over(tmp_path: Path, clock) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock,
                     settings=Settings(hot_set_size=2)) as store:
        ids = {name: store.add(f"{name} planning notes", id=f"urn:hot:{name}").id
               for name in ("a", "b", "c", "d")}

        def use(*names: str) -> None:
            for _ in range(5):
                clock.advance(minutes=10)
                for name in names:
                    store.recall(f"{name} planning", k=1, preset="fulltext",
                                 record_access=True)
            store.flush()

        def hot() -> set[str]:
            return {name for name, memory_id in ids.items() if store.get(memory_id).hot}

        use("a", "b")
        first = store.run_lifecycle(apply=True).jobs
        assert (first.hot_added, first.hot_removed) == (2, 0)
        assert hot() == {"a", "b"}
        clock.advance(days=10)
        use("c", "d")
        second = store.run_lifecycle(apply=True).jobs
        assert (second.hot_added, second.hot_removed) == (2, 2)
        assert hot() == {"c", "d"}
        cooled = [e for e in store.events(event_type="cool")]
        assert sorted(e.memory_id for e in cooled) == [ids["a"], ids["b"]]
        assert {(e.from_state, e.to_state, e.reason, e.triggered_by) for e in cooled} == {
            ("hot", "active", "left the hot set", TriggeredBy.AUTO)}
        assert sorted(e.memory_id for e in store.events(event_type="hot")) == sorted(ids.values())
        third = store.run_lifecycle(apply=True).jobs
        assert (third.hot_added, third.hot_removed) == (0, 0)
        store.archive(ids["c"])  # an archived memory leaves the hot set at once
        assert hot() == {"d"}
        fourth = store.run_lifecycle(apply=True).jobs
        assert (fourth.hot_added, fourth.hot_removed) == (1, 0)
        assert len(hot()) == 2 and "c" not in hot()


def test_expiry_and_retention_boundaries(tmp_path: Path, clock) -> None:
    """A weak candidate expires, and a raw payload is redacted, only once strictly more
    than the window has passed since it was created."""
    settings = Settings(candidate_expiry_days=30, payload_retention_days=90)
    start = clock.now
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock,
                     settings=settings) as store:
        weak = store.add("Maybe Nadia likes tea", status="candidate").id
        raw = store.add("Extracted fact", kind="semantic", payload='{"raw": "the message"}')
        digest = raw.payload_hash
        assert digest

        def at(**delta: float) -> tuple[int, int]:
            clock.now = start + timedelta(**delta)
            jobs = store.run_lifecycle(apply=True).jobs
            return jobs.candidates_expired, jobs.payloads_redacted

        assert at(days=30) == (0, 0)
        assert store.get(weak).status is Status.CANDIDATE
        assert at(days=30, seconds=1) == (1, 0)
        assert store.get(weak).status is Status.TOMBSTONED
        [expired] = store.events(weak)
        assert (expired.event_type, expired.from_state, expired.to_state, expired.reason) == (
            EventType.EXPIRE, "candidate", "tombstoned", "weak candidate never reinforced")
        assert store.history(weak)[-1].change_type is ChangeType.TOMBSTONED
        assert at(days=90) == (0, 0)
        assert store.get(raw.id).payload == '{"raw": "the message"}'
        assert at(days=90, seconds=1) == (0, 1)
        kept = store.get(raw.id)
        assert (kept.payload, kept.payload_hash, kept.text) == (None, digest, "Extracted fact")
        assert at(days=200) == (0, 0)  # done once


def test_batch_evaluate_agrees_with_evaluate_and_filters(store: MemoryStore, clock) -> None:
    start = clock.now
    clock.now = start - timedelta(days=45)
    old = store.add("Ran the weekly backup check", importance=0.2, owner="nadia").id
    fact = store.add("Orchard uses PostgreSQL 16", kind="semantic", owner="nadia").id
    weak = store.add("Maybe Nadia likes tea", status="candidate", owner="nadia").id
    theirs = store.add("Tomas fixed the build", owner="tomas").id
    clock.now = start
    used = store.add("Nadia's deploy checklist", owner="nadia").id
    for _ in range(10):
        store.recall("deploy checklist", k=1, preset="fulltext", record_access=True)
    store.flush()
    results = {r.memory_id: r for r in store.batch_evaluate()}
    assert set(results) == {old, fact, theirs, used}  # active memories, every owner
    # theirs: 45 idle days halve an episodic memory's 0.5 to 0.18 (< 0.3), as the
    # lifecycle run would decay it before judging it
    assert {i: r.recommended_action for i, r in results.items()} == {
        old: "archive", fact: "maintain", theirs: "archive", used: "promote"}
    assert results[theirs].metrics.importance == pytest.approx(0.5 * 0.5 ** (45 / 30))
    assert store.run_lifecycle().count("archive") == 2  # the same answer as the report
    for memory_id, result in results.items():  # the same answer as one at a time
        single = store.evaluate(memory_id)
        assert (result.recommended_action, result.reasons, result.metrics) == (
            single.recommended_action, single.reasons, single.metrics)
        assert result.subject == single.subject
    assert results[used].metrics.access_count == 10
    assert {r.memory_id for r in store.batch_evaluate(owner="tomas")} == {theirs}
    assert {r.memory_id for r in store.batch_evaluate(kinds=["semantic"])} == {fact}
    assert {r.memory_id for r in store.batch_evaluate(statuses=["candidate"])} == {weak}
    assert {r.memory_id for r in store.batch_evaluate([weak, theirs])} == {weak, theirs}
    assert store.batch_evaluate(owner="carol") == []


def test_batch_evaluate_names_a_bad_filter(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="kind"):
        store.batch_evaluate(kinds=["dream"])
    with pytest.raises(InvalidInputError, match="status"):
        store.batch_evaluate(statuses=["gone"])


def test_forget_redacts_archive_summaries_built_from_it(store: MemoryStore) -> None:
    """An archive summary lists the memories it was built from (``summaryFrom``); forget
    redacts it even where it does not quote the forgotten text (here it names only the
    short subject "Vault")."""
    vault = store.add("The vault code is quokka-lantern-1971", subject="Vault",
                      id="urn:t:vault")
    visit = store.add("Visited the bank about the vault. Took notes.", subject="Bank visit",
                      id="urn:t:visit")
    water = store.add("Watered the tomatoes at dawn. All fine.", subject="Watering",
                      id="urn:t:water")
    tomatoes = store.add("Tomato bed 3 needs stakes", id="urn:t:tomatoes")
    store.link(visit.id, vault.id)
    store.link(water.id, tomatoes.id)
    built = store.archive(visit.id, create_summary=True)
    other = store.archive(water.id, create_summary=True)
    assert built.summary == "Bank visit: Visited the bank about the vault. Related: Vault."
    [visit_event] = store.events(visit.id)
    assert visit_event.metadata["summaryFrom"] == [vault.id]
    water_before = store.events(water.id)[0].metadata
    assert water_before["summary"] == other.summary and water_before["summaryFrom"] == [
        tomatoes.id]

    store.forget(vault.id, confirm=True, purge=False)

    [after] = store.events(visit.id)
    assert after.metadata["summary"] is None and after.metadata["summaryRedacted"] is True
    assert {k: v for k, v in after.metadata.items() if k not in ("summary", "summaryRedacted")
            } == {k: v for k, v in visit_event.metadata.items() if k != "summary"}
    assert store.events(water.id)[0].metadata == water_before  # not built from it
    assert "quokka" not in json.dumps(store.export())


def test_keep_records_the_decision_and_changes_nothing(store: MemoryStore) -> None:
    memory = store.add("a memory a reviewer wants left alone", owner="ann")
    event = store.keep(memory.id, owner="ann", actor="reviewer:ann", reason="still useful")
    assert store.get(memory.id) == memory
    assert [(e.event_type.value, e.agent_id, e.reason, e.from_state, e.to_state)
            for e in store.events(memory.id)] == [
        ("keep", "reviewer:ann", "still useful", "active", "active")]
    assert event.event_id == store.events(memory.id)[0].event_id
    with pytest.raises(NotFoundError):
        store.keep(memory.id, owner="bob")
    store.tombstone(memory.id)
    with pytest.raises(ConflictError, match="nothing to keep"):
        store.keep(memory.id)
    assert store.restore(memory.id).success  # keep is not a transition restore undoes
    assert store.get(memory.id).status.value == "active"


def test_an_applied_report_says_which_archives_await_review_and_names_ids(
        store: MemoryStore, clock) -> None:
    ids = _populate(store, clock)
    dry = store.run_lifecycle().to_markdown()
    assert "await review" not in dry
    text = store.run_lifecycle(apply=True).to_markdown()
    assert "1 archive(s) await review, as auto-archive is off" in text
    # an item with a subject names its memory, to act on it
    assert f"(`{ids['old_unused']}`)" in text or ids["old_unused"] in text
