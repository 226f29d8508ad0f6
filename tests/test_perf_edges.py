"""The compact edge tables of the recall index against the dict of dicts they replaced
(the oracle): bulk loads with repeated pairs, self-loops and unknown ids, then edits
of single memories, and the combined adjacency the walks read (strongest ``limit``
neighbours, ties to the earlier)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

import numpy as np
import pytest

from graphmem._recall._index import Adjacency, RecallIndex

Table = dict[int, dict[int, float]]


def oracle_load(pos: dict[str, int], edges: Iterable[tuple[str, str, float]]) -> Table:
    table: Table = {}
    oracle_add(table, pos, edges)
    return table


def oracle_add(table: Table, pos: dict[str, int],
               edges: Iterable[tuple[str, str, float]]) -> None:
    for src, dst, weight in edges:
        a, b = pos.get(src, -1), pos.get(dst, -1)
        if a < 0 or b < 0 or a == b:
            continue
        table.setdefault(a, {})[b] = table.get(a, {}).get(b, 0.0) + float(weight)
        table.setdefault(b, {})[a] = table.get(b, {}).get(a, 0.0) + float(weight)


def oracle_replace(table: Table, pos: dict[str, int], memory_id: str,
                   edges: Iterable[tuple[str, float]]) -> None:
    a = pos[memory_id]
    for b in table.pop(a, {}):
        table.get(b, {}).pop(a, None)
    for other, weight in edges:
        b = pos.get(other, -1)
        if b < 0 or b == a:
            continue
        table.setdefault(a, {})[b] = table.get(a, {}).get(b, 0.0) + weight
        table.setdefault(b, {})[a] = table.get(b, {}).get(a, 0.0) + weight


def oracle_merged(refs: Table, cooc: Table, pos: int, r: float, c: float,
                  limit: int, ids: list[str]) -> dict[int, float]:
    out: dict[int, float] = {}
    for weight, table in ((r, refs), (c, cooc)):
        if weight <= 0:
            continue
        for other, w in table.get(pos, {}).items():
            out[other] = out.get(other, 0.0) + weight * w
    if len(out) > limit:  # the strongest; ties: the later id
        out = dict(sorted(out.items(), key=lambda kv: (-kv[1], _Desc(ids[kv[0]])))[:limit])
    return out


class _Desc(str):
    """A string that sorts after the ones it precedes."""

    __slots__ = ()

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)


def make_index(n: int) -> RecallIndex:
    index = RecallIndex(dim=4)
    index.upsert([{"id": f"m{i}", "status": "active", "kind": "episodic",
                   "created": None} for i in range(n)])
    return index


def random_edges(rng: random.Random, n: int, m: int) -> list[tuple[str, str, float]]:
    # ids beyond n are unknown to the index; weights from a small set make ties
    return [(f"m{rng.randrange(n + 2)}", f"m{rng.randrange(n + 2)}",
             rng.choice([0.5, 1.0, 1.0, 2.0])) for _ in range(m)]


def same(got: tuple[np.ndarray, np.ndarray], want: dict[int, float]) -> None:
    assert got[0].tolist() == list(want)
    assert got[1].tolist() == pytest.approx(list(want.values()), rel=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_edge_tables_and_adjacency_agree_with_dicts(seed: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    # the adjacency is merged a block of rows at a time: blocks smaller than the graph too
    monkeypatch.setattr(Adjacency, "BLOCK", [1, 3, 7, 65_536][seed % 4])  # EdgeTable too
    index = make_index(n)
    refs_edges, cooc_edges = random_edges(rng, n, rng.randint(0, 200)), \
        random_edges(rng, n, rng.randint(0, 200))
    for kind, edges in (("references", refs_edges), ("co_occurs", cooc_edges)):
        index.set_edges(kind, [e[0] for e in edges], [e[1] for e in edges],
                        np.array([e[2] for e in edges]))
    refs, cooc = oracle_load(index.pos, refs_edges), oracle_load(index.pos, cooc_edges)
    weights = (rng.choice([0.0, 0.5, 1.0]), rng.choice([0.0, 0.3, 1.0]), rng.randint(1, 6))
    index.adjacency(*weights)  # built before the edits: refreshed by them
    for step in range(rng.randint(0, 6)):
        kind = rng.choice(["references", "co_occurs"])
        if rng.random() < 0.5:  # one memory's edges as the store holds them
            memory = f"m{rng.randrange(n)}"
            new = [(f"m{rng.randrange(n + 1)}", rng.choice([1.0, 2.0]))
                   for _ in range(rng.randint(0, 5))]
            index.replace_edges_of(kind, memory, new)
            oracle_replace(refs if kind == "references" else cooc, index.pos, memory, new)
        else:  # the edges a commit created, handed over
            created = random_edges(rng, n, rng.randint(0, 6))
            index.add_edges([(kind, *edge) for edge in created])
            oracle_add(refs if kind == "references" else cooc, index.pos, created)
        if step == 2:
            index.adjacency(weights[0] + 0.25, weights[1], weights[2])  # built mid-way
    for pos in range(n):
        same(index.references.row(pos), refs.get(pos, {}))
        same(index.co_occurs.row(pos), cooc.get(pos, {}))
        for r, c, limit in (weights, (weights[0] + 0.25, weights[1], weights[2])):
            if (r, c, limit) in index._adjacency:
                same(index.adjacency(r, c, limit).row(pos),
                     oracle_merged(refs, cooc, pos, r, c, limit, index.ids))
    fresh = index.adjacency(1.0, 0.5, 3)  # built after the edits, from the overlay too
    for pos in range(n):
        same(fresh.row(pos), oracle_merged(refs, cooc, pos, 1.0, 0.5, 3, index.ids))


def test_an_empty_edge_table_answers_no_neighbours() -> None:
    index = make_index(3)
    index.set_edges("references", [], [], np.zeros(0))
    assert [a.size for a in index.references.row(1)] == [0, 0]
    assert [a.size for a in index.adjacency(1.0, 1.0).row(2)] == [0, 0]


def test_edge_ids_are_read_in_blocks_and_shared() -> None:
    """The Kuzu engine reads an edge table's ids a block at a time, one Python string
    per distinct id across both ends: the same lists ``to_pylist`` gives."""
    import pyarrow as pa

    from graphmem._kuzu._engine import _shared_ids

    src = pa.chunked_array([["m1", "m2", "m1"], ["m3", "m1"]])
    dst = pa.chunked_array([["m2", "m3", "m3", "m1", "m2"]])
    a, b = _shared_ids(src, dst, block=2)
    assert a == src.to_pylist() and b == dst.to_pylist()
    assert a[0] is a[2] is b[3] and a[1] is b[0] is b[4]


def test_a_hub_keeps_the_same_tied_neighbours_live_and_rebuilt(tmp_path: Any) -> None:
    """A memory with more neighbours than the walk keeps (50), all of one weight, linked
    in shuffled batches: the live index (handed each batch's edges) keeps the neighbours
    a fresh build from the store keeps, and the row made again for it agrees."""
    from graphmem import Edge, MemoryStore

    rng = random.Random(3)
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        hub = store.add("the hub memory about Ana and project Atlas")
        others = [m.id for m in store.add_many([f"note {i} on Atlas" for i in range(90)])]
        store.recall("Atlas", k=1)  # the live index exists, and takes the edges as made
        rng.shuffle(others)
        while others:
            cut = rng.randint(1, 25)
            chunk, others = others[:cut], others[cut:]
            store.link_many([Edge("co_occurs", hub.id, o) if rng.random() < 0.5
                             else Edge("co_occurs", o, hub.id) for o in chunk])
        live, fresh = store._recall_index.current, store._recall_index._build()
        assert live is not None

        def kept(index: RecallIndex, rebuilt_row: bool = False) -> list[str]:
            adjacency = index.adjacency(1.0, 1.0)
            if rebuilt_row:
                adjacency.refresh([index.pos[hub.id]])
            return sorted(index.ids[p] for p in adjacency.row(index.pos[hub.id])[0].tolist())

        expected = kept(fresh)
        assert len(expected) == 50
        assert kept(live) == expected
        assert kept(live, rebuilt_row=True) == expected
