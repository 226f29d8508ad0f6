"""recall() on real stores: channels against oracles, filters, redirection, access, feedback."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from graphmem import (
    EmbedderMismatchError,
    InvalidInputError,
    MemoryStore,
    Settings,
)
from graphmem._recall import PRESETS, RecallConfig
from graphmem._text import tokenize

TEXTS = [
    ("Orchard stores data in PostgreSQL 16 with pgvector", "semantic"),
    ("To deploy orchard run make release then fly deploy", "procedural"),
    ("Nadia prefers TypeScript over JavaScript", "identity"),
    ("The greenhouse sensors publish moisture readings over MQTT", "semantic"),
    ("Deployed orchard v2.1.0 to production without errors", "episodic"),
    ("Rolled back orchard after the migration locked the users table", "episodic"),
    ("Biscuit the cat sleeps on the keyboard during slow builds", "note"),
    ("Thesis chapter 3 describes the physics-informed model", "semantic"),
    ("Greenhouse bed 7 dropped to 14 percent moisture", "episodic"),
    ("Release notes group changes by feat and fix", "procedural"),
]


@pytest.fixture
def small(store: MemoryStore) -> MemoryStore:
    store.add_many([{"text": t, "kind": k} for t, k in TEXTS])
    return store


def _bm25_oracle(docs: list[str], query: str, k1: float = 1.2, b: float = 0.75
                 ) -> list[float]:
    """BM25 written the slow, obvious way over the same tokens."""
    tokens = [tokenize(d) for d in docs]
    n = len(docs)
    avgdl = sum(len(t) for t in tokens) / n
    scores = []
    for doc in tokens:
        score = 0.0
        for term in set(tokenize(query)):
            df = sum(1 for d in tokens if term in d)
            if df == 0:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = doc.count(term)
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(score)
    return scores


@pytest.mark.parametrize("query", ["orchard deploy", "greenhouse moisture readings",
                                   "v2.1.0", "cat keyboard builds"])
def test_fulltext_channel_matches_a_bm25_oracle(small: MemoryStore, query: str) -> None:
    hits = small.recall(query, k=10, preset="fulltext", record_access=False)
    docs = [m.text for m in small.memories()]
    ids = [m.id for m in small.memories()]
    oracle = _bm25_oracle(docs, query)
    expected = sorted((s, i) for s, i in zip(oracle, ids, strict=True) if s > 0)
    assert [h.memory.id for h in hits] == [i for _, i in sorted(expected, key=lambda x: (-x[0],
                                                                                    x[1]))]
    for h in hits:
        assert h.explanation.channels["fulltext"].score == pytest.approx(
            oracle[ids.index(h.memory.id)], rel=1e-5)


def test_digits_are_searchable(small: MemoryStore) -> None:
    [hit] = small.recall("v2.1.0", k=1, preset="fulltext", record_access=False)
    assert "v2.1.0" in hit.memory.text
    assert small.recall("14 percent", k=1, preset="fulltext")[0].memory.text.startswith(
        "Greenhouse bed 7")


def test_vector_channel_matches_brute_force(small: MemoryStore) -> None:
    query = "how do I ship the web app"
    hits = small.recall(query, k=10, preset="vector", record_access=False)
    memories = small.memories()
    matrix = small.embedder.embed([m.text for m in memories])
    q = small.embedder.embed([query])[0]
    cosine = matrix @ q
    # ties by id: BLAS's @ may give -1.5e-9 where the exact product (and recall's) is 0
    order = [memories[i].id
             for i in np.lexsort(([m.id for m in memories], -np.round(cosine, 6)))]
    assert [h.memory.id for h in hits] == order
    assert hits[0].explanation.channels["vector"].score == pytest.approx(float(cosine.max()),
                                                                         rel=1e-5)


def test_graph_channel_walks_edges(small: MemoryStore) -> None:
    by_text = {m.text: m.id for m in small.memories()}
    deploy = by_text["To deploy orchard run make release then fly deploy"]
    cat = by_text["Biscuit the cat sleeps on the keyboard during slow builds"]
    small.link(deploy, cat, weight=5.0)
    config = PRESETS["graph_hybrid"].with_(graph={"seeds": 1, "include_seeds": False})
    hits = small.recall("make release fly deploy", k=10, preset=config, record_access=False)
    graph_ranked = [h for h in hits if "graph" in h.explanation.channels]
    assert graph_ranked[0].memory.id == cat
    assert graph_ranked[0].explanation.channels["graph"].rank == 1


def test_presets_and_explanations(small: MemoryStore) -> None:
    for name in PRESETS:
        hits = small.recall("orchard deploy", k=3, preset=name, record_access=False)
        assert hits and all(h.explanation.preset == name for h in hits)
        assert [h.rank for h in hits] == [1, 2, 3]
        assert all(hits[i].score >= hits[i + 1].score for i in range(len(hits) - 1))
    [top] = small.recall("orchard deploy", k=1, record_access=False)
    e = top.explanation
    assert set(e.channels) <= {"fulltext", "vector", "graph", "time", "facts"}
    assert e.activation is not None
    k = PRESETS["default"].rrf_k
    expected_fused = sum(PRESETS["default"].weights[c] / (k + r.rank)
                         for c, r in e.channels.items())
    assert e.fused == pytest.approx(expected_fused)
    assert e.final == pytest.approx(e.fused + e.activation.contribution)
    weight = PRESETS["default"].actr.weight  # type: ignore[union-attr]
    assert e.activation.contribution == pytest.approx(weight / (k + e.activation.rank))
    assert any("fused" in line for line in e.lines())


def test_empty_store_and_empty_query(store: MemoryStore) -> None:
    assert store.recall("anything") == []
    store.add("something")
    assert store.recall("") == []
    assert store.recall("   ") == []
    with pytest.raises(InvalidInputError, match="query"):
        store.recall(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="k must"):
        store.recall("x", k=0)
    with pytest.raises(InvalidInputError, match="preset"):
        store.recall("x", preset="magic")
    with pytest.raises(InvalidInputError, match="kind"):
        store.recall("x", kinds=["dream"])


def test_only_active_memories_come_back(store: MemoryStore) -> None:
    text = "the zebracorn migration plan"
    ids = {status: store.add(f"{text} ({status})", status=status).id
           for status in ("active", "candidate", "archived", "tombstoned")}
    forgotten = store.add(f"{text} (forgotten)")
    store.forget(forgotten.id, confirm=True)
    got = {h.memory.id for h in store.recall("zebracorn migration", k=10)}
    assert got == {ids["active"]}
    with_archived = {h.memory.id for h in store.recall("zebracorn migration", k=10,
                                                       include_archived=True)}
    assert with_archived == {ids["active"], ids["archived"]}


def test_owner_and_kind_filters(store: MemoryStore) -> None:
    a = store.add("quarterly budget review", owner="alice", kind="episodic")
    b = store.add("quarterly budget review", owner="bob", kind="episodic")
    c = store.add("quarterly budget review rules", owner="alice", kind="procedural")
    assert {h.memory.id for h in store.recall("budget review", owner="alice")} == {a.id, c.id}
    assert {h.memory.id for h in store.recall("budget review", owner="bob")} == {b.id}
    assert store.recall("budget review", owner="carol") == []
    assert {h.memory.id for h in store.recall("budget review", owner="alice",
                                              kinds=["procedural"])} == {c.id}


def test_supersede_redirects_to_the_current_version(store: MemoryStore, clock) -> None:
    old = store.add("Orchard stores data in PostgreSQL 14")
    clock.advance(days=10)
    mid = store.supersede(old.id, "Orchard moved its data to PostgreSQL 15")
    clock.advance(days=10)
    new = store.supersede(mid.id, "Orchard database is now PostgreSQL 16 with pgvector")
    hits = store.recall("PostgreSQL 14", k=5, record_access=False)
    assert [h.memory.id for h in hits] == [new.id]
    assert set(hits[0].explanation.redirected_from) == {old.id, mid.id}
    # as_of: what was current then.
    then = store.recall("PostgreSQL 14", k=5, as_of=clock.now - timedelta(days=5),
                        record_access=False)
    assert [h.memory.id for h in then] == [mid.id]
    before = store.recall("PostgreSQL", k=5, as_of=clock.now - timedelta(days=19),
                          record_access=False)
    assert [h.memory.id for h in before] == [old.id]


def test_candidate_does_not_hide_the_active_memory(store: MemoryStore) -> None:
    old = store.add("Standup is at 10:00 WAT")
    candidate = store.add("Standup moved to 11:30 WAT", status="candidate")
    store.supersede(old.id, candidate.id)
    assert [h.memory.id for h in store.recall("standup", record_access=False)] == [old.id]


def test_valid_at_as_of(store: MemoryStore, clock) -> None:
    start = clock.now
    store.add("Office is in Ikeja", valid_from=start, valid_to=start + timedelta(days=30))
    store.add("Office is in Yaba", valid_from=start + timedelta(days=30))
    clock.advance(days=40)
    assert [h.memory.text for h in store.recall("office", k=5, record_access=False)] == [
        "Office is in Yaba"]
    then = store.recall("office", k=5, as_of=start + timedelta(days=5), record_access=False)
    assert [h.memory.text for h in then] == ["Office is in Ikeja"]


def test_access_is_recorded_in_one_batched_write(small: MemoryStore, clock,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = small._ctx.engine.record_access
    monkeypatch.setattr(small._ctx.engine, "record_access",
                        lambda rows: (calls.append(len(rows)), original(rows))[1])
    hits = small.recall("orchard", k=3, record_access=True)
    small.flush()
    assert calls == [3]
    for hit in hits:
        stored = small.get(hit.memory.id)
        assert stored.access_count == 1
        assert stored.last_accessed == clock.now
        assert stored.access_times == (clock.now,)
    clock.advance(hours=1)
    again = small.recall("orchard", k=3, record_access=True)
    assert [h.memory.id for h in again] == [h.memory.id for h in hits]
    assert [h.memory.access_count for h in again] == [2, 2, 2]
    assert again[0].memory.access_times == (clock.now - timedelta(hours=1), clock.now)
    small.recall("orchard", k=3, record_access=False)
    small.flush()
    assert sum(m.access_count for m in small.memories()) == 6


def test_access_history_is_bounded(tmp_path: Path, clock) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock,
                     settings=Settings(access_history=3)) as store:
        memory = store.add("bounded history")
        for _ in range(5):
            clock.advance(minutes=1)
            store.recall("bounded history", k=1, record_access=True)
        stored = store.get(memory.id)
        assert stored.access_count == 5 and len(stored.access_times) == 3
        [hit] = store.recall("bounded history", k=1, record_access=False)
        assert hit.explanation.activation is not None
        assert hit.explanation.activation.formula == "approx"


def test_actr_breaks_ties_towards_used_memories(store: MemoryStore, clock) -> None:
    # The same text: every channel ties, and without ACT-R the id decides (a before b).
    a = store.add("weekly sync notes", id="urn:test:a", kind="episodic")
    b = store.add("weekly sync notes", id="urn:test:b", kind="note")
    for _ in range(6):
        clock.advance(minutes=5)
        store.get(a.id)  # reading a memory is not a use of it ...
        # ... recalling b is
        [used] = store.recall("weekly sync", k=2, kinds=["note"], record_access=True)
        assert used.memory.id == b.id
    assert (store.get(a.id).access_count, store.get(b.id).access_count) == (0, 6)
    clock.advance(minutes=5)
    plain = store.recall("weekly sync notes", k=2, preset="graph_hybrid", record_access=False)
    assert [h.memory.id for h in plain] == [a.id, b.id]
    assert plain[0].explanation.fused == plain[1].explanation.fused
    hits = store.recall("weekly sync notes", k=2, record_access=False)
    assert [h.memory.id for h in hits] == [b.id, a.id]  # ACT-R breaks the tie
    for hit in hits:  # tied scores share a rank in every channel
        assert {c: r.rank for c, r in hit.explanation.channels.items()} == {
            "fulltext": 1, "vector": 1, "graph": 1}
    by_id = {h.memory.id: h.explanation.activation for h in hits}
    assert by_id[b.id] is not None and by_id[a.id] is not None
    assert (by_id[b.id].frequency, by_id[a.id].frequency) == (6, 0)
    assert by_id[b.id].value > by_id[a.id].value
    assert (by_id[b.id].rank, by_id[a.id].rank) == (1, 2)
    k = PRESETS["default"].rrf_k
    assert by_id[b.id].contribution == pytest.approx(0.3 / (k + 1))
    assert by_id[a.id].contribution == pytest.approx(0.3 / (k + 2))
    # With the ACT-R weight at 0 the order falls back to the ids.
    off = PRESETS["default"].with_(actr={"weight": 0.0})
    assert [h.memory.id for h in store.recall("weekly sync notes", k=2, preset=off,
                                              record_access=False)] == [a.id, b.id]


def test_without_by_age_only_use_reorders(store: MemoryStore, clock) -> None:
    # The same text a month apart: every channel ties; the id puts the older one first.
    old = store.add("standup moved to the small room", id="urn:test:a", kind="episodic")
    clock.advance(days=30)
    new = store.add("standup moved to the small room", id="urn:test:b", kind="note")
    by_age = PRESETS["default"].with_(actr={"by_age": True})
    by_use = PRESETS["default"].with_(actr={"by_age": False})

    def order(preset: RecallConfig) -> list[str]:
        return [h.memory.id for h in store.recall("standup room", k=2, preset=preset,
                                                  record_access=False)]

    assert order(by_age) == [new.id, old.id]  # the newer is the more active
    assert order(by_use) == [old.id, new.id]  # age alone re-orders nothing
    flat = store.recall("standup room", k=2, preset=by_use, record_access=False)
    assert {h.explanation.activation.rank for h in flat} == {1}
    clock.advance(minutes=5)
    store.recall("standup room", k=1, kinds=["note"], preset=by_use, record_access=True)
    assert order(by_use) == [new.id, old.id]  # use does


def test_actr_weight_decides_how_much_use_counts(store: MemoryStore, clock) -> None:
    a = store.add("quarterly planning notes alpha")
    b = store.add("quarterly planning notes beta")
    for _ in range(8):
        clock.advance(minutes=5)
        store.recall("planning notes beta", k=1, preset="hybrid", record_access=True)
    strong = PRESETS["default"].with_(actr={"weight": 3.0})
    hits = store.recall("quarterly planning notes", k=2, preset=strong, record_access=False)
    by_id = {h.memory.id: h for h in hits}
    assert by_id[b.id].explanation.activation.value > by_id[a.id].explanation.activation.value
    assert hits[0].memory.id == b.id
    assert by_id[b.id].explanation.activation.frequency == 8


def test_feedback_counts_boosts_and_pairs(small: MemoryStore) -> None:
    hits = small.recall("orchard deploy release", k=3)
    first, second, third = (h.memory for h in hits)
    updated = small.feedback(first.id, useful=True, query="orchard deploy release")
    assert updated.useful_count == 1
    assert updated.importance == pytest.approx(first.importance + 0.05)
    assert small.history(first.id)[-1].change_type.value == "importance_boost"
    small.feedback(second.id, useful=True)
    small.feedback(third.id, useful=False)
    assert small.get(third.id).ignored_count == 1
    links = [x for x in small.links(first.id) if x.kind == "co_occurs"]
    assert [(x.other, x.weight) for x in links] == [(second.id, 1.0)]
    assert [x for x in small.links(third.id) if x.kind == "co_occurs"] == []  # not useful
    # The edge records where it came from (Link has no source: read the edge itself).
    assert _co_occurs(small) == [(*sorted((first.id, second.id)), "feedback", 1.0, 1)]
    # The same pair useful again in a later recall: the edge grows, no second edge.
    small.recall("orchard deploy release", k=3)
    small.feedback(second.id, useful=True)
    small.feedback(first.id, useful=True)
    assert _co_occurs(small) == [(*sorted((first.id, second.id)), "feedback", 2.0, 2)]
    with pytest.raises(InvalidInputError):
        small.feedback(first.id, useful="yes")  # type: ignore[arg-type]


def _co_occurs(store: MemoryStore) -> list[tuple[str, str, str, float, int]]:
    rows = store.cypher("MATCH (a:Memory)-[e:CO_OCCURS]->(b:Memory) RETURN a.id AS a, "
                        "b.id AS b, e.source AS source, e.weight AS weight, e.count AS n")
    return [(r["a"], r["b"], r["source"], r["weight"], r["n"]) for r in rows]


def test_reembed_switches_the_model(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        store.add_many([{"text": t} for t, _ in TEXTS])
        assert store.recall("cat keyboard", k=1)[0].memory.text.startswith("Biscuit")
        assert store.reembed("hashing:128") == len(TEXTS)
        assert store.embedder.name == "hashing-128"
        assert store.recall("cat keyboard", k=1)[0].memory.text.startswith("Biscuit")
    with pytest.raises(EmbedderMismatchError):
        MemoryStore(path, embedder="hashing")
    with MemoryStore(path) as store:
        assert store.embedder.name == "hashing-128"


def test_configs_are_validated() -> None:
    with pytest.raises(InvalidInputError, match="unknown channel"):
        RecallConfig(weights={"magic": 1.0})
    with pytest.raises(InvalidInputError, match="fulltext or the vector"):
        RecallConfig(weights={"graph": 1.0})
    with pytest.raises(InvalidInputError, match="unknown graph"):
        PRESETS["default"].with_(graph={"depthh": 3})


@pytest.mark.model
def test_real_model_recalls_the_sample_corpus(tmp_path: Path, clock) -> None:
    from ingest.ump import import_ump
    from tests.conftest import SAMPLE

    with MemoryStore(tmp_path / "db", embedder="minilm", clock=clock) as store:
        import_ump(store, SAMPLE)
        top = store.recall("how do I deploy orchard?", k=3)
        assert any(h.memory.subject in {"Deploy orchard", "Deploy command"} for h in top)
        paraphrase = store.recall("how do I ship the web app to production?", k=3,
                                  preset="vector", record_access=False)
        assert any(h.memory.subject in {"Deploy orchard", "Deploy command"} for h in paraphrase)
        hits = store.recall("which database does orchard use", k=2)
        # PostgreSQL 16 is only a candidate in the sample: 15 is the newest shown version.
        [hit] = [h for h in hits if "PostgreSQL" in h.memory.text]
        assert "PostgreSQL 15" in hit.memory.text
        assert hit.explanation.redirected_from  # the PostgreSQL 14 memory led here
        vector_only = store.recall("my cat", k=3, preset="vector", record_access=False)
        assert any("Biscuit" in h.memory.text for h in vector_only)


def test_graph_channel_sees_edges_added_after_the_index(small: MemoryStore) -> None:
    by_text = {m.text: m.id for m in small.memories()}
    deploy = by_text["To deploy orchard run make release then fly deploy"]
    thesis = by_text["Thesis chapter 3 describes the physics-informed model"]
    config = PRESETS["graph_hybrid"].with_(graph={"seeds": 1, "include_seeds": False})
    before = small.recall("make release fly deploy", k=10, preset=config, record_access=False)
    assert all("graph" not in h.explanation.channels or h.memory.id != thesis for h in before)
    small.link(deploy, thesis, weight=4.0)  # after the index and its adjacency exist
    after = small.recall("make release fly deploy", k=10, preset=config, record_access=False)
    graph_first = min((h for h in after if "graph" in h.explanation.channels),
                      key=lambda h: h.explanation.channels["graph"].rank)
    assert graph_first.memory.id == thesis


def test_a_memory_that_only_asks_yields_to_one_that_answers(tmp_path: Path) -> None:
    """A question holds no answer: with ``asking`` below 1 (``default``: 0.8) a memory
    that only asks counts that much of its fused score, says so in its explanation, and
    keeps the mark when the store is opened again (the saved index) and loses it when its
    text stops asking."""
    asking = PRESETS["default"].with_(asking=0.2)
    query = "which painting hung in the lake exhibit?"
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        asked = store.add("Caroline: Wow! Which painting hung in the lake exhibit?")
        store.add("Melanie: My sunset painting hung there in spring.")
        plain = store.recall(query, preset=PRESETS["default"].with_(asking=1.0),
                             record_access=False)
        assert plain[0].memory.id == asked.id and plain[0].explanation.asks is None
        hits = store.recall(query, preset=asking, record_access=False)
        assert hits[0].memory.id != asked.id
        demoted = next(h for h in hits if h.memory.id == asked.id)
        assert demoted.explanation.asks == 0.2
        assert "  only asks: fused x 0.2" in demoted.explanation.lines()
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        hits = store.recall(query, preset=asking, record_access=False)
        assert hits[0].memory.id != asked.id
        store.update(asked.id, text="Caroline: The lake painting hung in the exhibit.")
        hits = store.recall(query, preset=asking, record_access=False)
        assert all(h.explanation.asks is None for h in hits)
