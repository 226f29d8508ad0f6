"""Many processes on one PostgreSQL store: each sees what the others commit, concurrent
writers lose and duplicate nothing, owners stay apart, and two lifecycle runs started
together apply each change once. The writers are real processes (spawned)."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from graphmem import MemoryStore, NotFoundError

NOW = datetime(2026, 7, 15, 12, 0, tzinfo=UTC)


def _open(url: str) -> MemoryStore:
    return MemoryStore(url, embedder="hashing", clock=lambda: NOW)


def _in_processes(target: Callable[..., Any], args: list[tuple[Any, ...]]) -> list[Any]:
    """Run ``target(start, results, *a)`` in one spawned process per ``a``; each opens
    its store, then waits at ``start`` (a barrier) until all are ready; returns what
    each put in ``results``."""
    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(len(args))
    results = spawn.Queue()
    workers = [spawn.Process(target=target, args=(start, results, *a)) for a in args]
    for worker in workers:
        worker.start()
    out = [results.get(timeout=180) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    return out


def _writer(start: Any, results: Any, url: str, name: str, n: int, pair: tuple[str, str]
            ) -> None:
    with _open(url) as store:
        start.wait()
        acknowledged = []
        for i in range(n):
            memory = store.add(f"{name} note {i} about the harbour, tag {name}x{i}",
                               owner="ann", session=name)
            acknowledged.append(memory.id)
            store.link(*pair, kind="co_occurs", weight=1.0)  # the same pair in every process
            if i % 5 == 0:
                store.update(acknowledged[0], importance=0.51 + i / 100)
        results.put((name, acknowledged))


def test_concurrent_writers_lose_and_duplicate_nothing(pg_url: str) -> None:
    with _open(pg_url) as store:
        a, b = store.add("pier", owner="ann"), store.add("crane", owner="ann")
        pair = tuple(sorted((a.id, b.id)))
        store.recall("pier", owner="ann")  # this process's index, built before the writes
        n = 20
        done = _in_processes(_writer, [(pg_url, f"w{k}", n, pair) for k in range(3)])
        acknowledged = [i for _, ids in done for i in ids]
        assert len(set(acknowledged)) == 3 * n
        assert {m.id for m in store.get_many(acknowledged)} == set(acknowledged)
        assert store.stats().memories == 3 * n + 2
        # each process's edits of its first memory: one version each, numbered 1..k
        for _, ids in done:
            seqs = [v.seq for v in store.history(ids[0])]
            assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) == 1 + n // 5
        co = store.links(pair[0])
        assert [(x.other, x.weight) for x in co if x.kind == "co_occurs"] == [
            (pair[1], 3.0 * n)]
        # every acknowledged write is in the other processes' recall too
        for name, ids in done:
            for i, memory_id in enumerate(ids):
                hits = store.recall(f"{name}x{i}", k=1, owner="ann", preset="fulltext",
                                    record_access=False)
                assert [h.memory.id for h in hits] == [memory_id]


def test_every_process_sees_every_commit(pg_url: str) -> None:
    with _open(pg_url) as one, _open(pg_url) as two:
        first = one.add("The kestrel nests on the old water tower", owner="ann")
        assert [h.memory.id for h in two.recall("kestrel tower", owner="ann")] == [first.id]
        two.update(first.id, text="The kestrel moved to the church spire", owner="ann")
        assert one.get(first.id).text == "The kestrel moved to the church spire"
        assert one.recall("church spire kestrel", owner="ann")[0].memory.id == first.id
        second = two.add("Kestrels hunt voles along the canal", owner="ann")
        one.link(first.id, second.id, kind="references")
        assert [x.other for x in two.links(second.id)] == [first.id]
        assert {e.name for e in one.entities(owner="ann")} >= {e.name for e in two.entities(
            owner="ann")}
        two.forget(first.id, confirm=True, purge=False)
        assert [h.memory.id for h in one.recall("kestrel", owner="ann")] == [second.id]
        assert one.links(second.id) == []


def _owner_writer(start: Any, results: Any, url: str, owner: str, secret: str) -> None:
    with _open(url) as store:
        start.wait()
        ids = [store.add(f"{secret} {i} lives in Lisbon with Ada", owner=owner).id
               for i in range(5)]
        store.link(ids[0], ids[1], kind="references", owner=owner)
        results.put((owner, ids))


def test_owners_are_kept_apart_across_processes(pg_url: str) -> None:
    done = dict(_in_processes(_owner_writer, [(pg_url, "ann", "amber"),
                                              (pg_url, "bob", "basalt")]))
    with _open(pg_url) as store:
        # one edge across owners (an administrator's bulk link): no owner sees it
        store.link_many([_edge(done["ann"][2], done["bob"][2])])
        for owner, other in (("ann", "bob"), ("bob", "ann")):
            theirs = set(done[other])
            mine = set(done[owner])
            assert {m.id for m in store.memories(owner=owner)} == mine
            hits = store.recall("lives in Lisbon with Ada amber basalt", k=50, owner=owner)
            assert {h.memory.id for h in hits} == mine
            dump = store.export(owner)
            assert {m["id"] for m in dump["memories"]} == mine
            assert not {e["src"] for e in dump["edges"]["references"]} & theirs
            assert not {e["dst"] for e in dump["edges"]["references"]} & theirs
            assert {e.memory_id for e in store.events(owner=owner)} <= mine
            entities = store.entities(owner=owner)
            assert entities and all(e.owner == owner for e in entities)
            assert all(f.owner == owner for f in store.facts(owner=owner))
            for memory_id in theirs:
                try:
                    store.get(memory_id, owner=owner)
                except NotFoundError:
                    continue
                raise AssertionError(f"{owner} read {other}'s memory {memory_id}")


def _edge(src: str, dst: str) -> Any:
    from graphmem import Edge

    return Edge(kind="references", src=src, dst=dst)


def _lifecycle(start: Any, results: Any, url: str) -> None:
    with _open(url) as store:
        store.recall("warm up the index", owner="ann", record_access=False)
        start.wait()
        report = store.run_lifecycle(apply=True)
        results.put((report.jobs.decayed, report.jobs.hot_added))


def test_two_lifecycle_runs_started_together_apply_once(pg_url: str) -> None:
    old = NOW - timedelta(days=400)
    with _open(pg_url) as store:
        ids = [m.id for m in store.add_many(
            [{"text": f"an old note {i}", "owner": "ann", "created": old,
              "importance": 0.8} for i in range(300)])]
    reports = _in_processes(_lifecycle, [(pg_url,), (pg_url,)])
    with _open(pg_url) as store:
        decays = Counter(v.memory_id for m in ids for v in store.history(m)
                         if v.change_type.value == "importance_decay")
        assert set(decays) == set(ids) and set(decays.values()) == {1}
        hot = Counter(e.memory_id for e in store.events(event_type="hot"))
        assert hot and set(hot.values()) == {1}
    # one run did the work, the other found nothing left
    assert sorted(r[0] for r in reports) == [0, 300]


def test_the_knowledge_graph_channels_see_other_processes(pg_url: str) -> None:
    """Facts, entities and times another process extracted reach this process's recall
    (its index was built before they were written)."""
    june = datetime(2023, 6, 20, tzinfo=UTC)
    with MemoryStore(pg_url, embedder="hashing", clock=lambda: june) as one, \
            MemoryStore(pg_url, embedder="hashing", clock=lambda: june) as two:
        two.recall("warm up the index", owner="ann", record_access=False)
        works = one.add("Tobias works at Umbrella Corp", owner="ann")
        may = one.add("Went hiking with friends", owner="ann",
                      created=datetime(2023, 5, 6, tzinfo=UTC))
        one.add("Went hiking alone", owner="ann", created=datetime(2023, 6, 10, tzinfo=UTC))
        assert [(f.predicate, f.sources) for f in two.facts(owner="ann")] == [
            ("works_at", (works.id,))]
        hits = two.recall("Where does Tobias work?", owner="ann", k=1, record_access=False)
        assert hits[0].memory.id == works.id and "facts" in hits[0].explanation.channels
        hits = two.recall("what did I do in May 2023?", owner="ann", k=1,
                          record_access=False)
        assert hits[0].memory.id == may.id and "time" in hits[0].explanation.channels


def test_a_recall_in_one_process_counts_in_the_others(pg_url: str) -> None:
    """Access counters another process's recall wrote reach this process's ranking (its
    ACT-R frequency) without a refresh of anything else."""
    with _open(pg_url) as one, _open(pg_url) as two:
        tea = one.add("Nadia prefers green tea in the afternoon", owner="ann")
        one.add("The orchard deploy runs make release first", owner="ann")

        def frequency() -> int:
            [hit] = two.recall("green tea", owner="ann", k=1, record_access=False)
            assert hit.memory.id == tea.id and hit.explanation.activation is not None
            return hit.explanation.activation.frequency

        before = frequency()
        one.recall("green tea", owner="ann", k=1, record_access=True)
        one.flush()
        assert frequency() == before + 1
        assert two.get(tea.id).access_count == 1


def test_recalls_at_one_instant_each_count_and_merge(pg_url: str) -> None:
    """Three recalls at one instant are three accesses in the stored times too (they
    were merged as a set: the count said 3, the times held one); a second handle's
    accesses at that instant add to them, and what both hold counts once."""
    with _open(pg_url) as one, _open(pg_url) as two:
        tea = one.add("Nadia prefers green tea in the afternoon", owner="ann")
        for _ in range(3):
            one.recall("green tea", owner="ann", k=1, record_access=True)
        one.flush()
        got = one.get(tea.id)
        [hit] = one.recall("green tea", owner="ann", k=1, record_access=False)
        assert (got.access_count, len(got.access_times)) == (3, 3)
        assert (hit.memory.access_count, len(hit.memory.access_times)) == (3, 3)
        two.recall("green tea", owner="ann", k=1, record_access=True)
        two.flush()
        again = two.get(tea.id)
        assert (again.access_count, len(again.access_times)) == (4, 4)
        one.recall("green tea", owner="ann", k=1, record_access=True)  # knows 3, adds 1
        one.flush()
        assert one.get(tea.id).access_count == 5
