"""RRF, ACT-R and the graph walks against hand-computed values and slow oracles."""

from __future__ import annotations

import math
import random
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import networkx as nx
import numpy as np
import pytest

from graphmem._recall import (
    activation,
    approx_activation,
    base_level,
    reciprocal_rank_fusion,
)
from graphmem._recall._walk import FlatRows, hop_expansion, local_ppr, neighbour_arrays, rows_of


def test_rrf_by_hand() -> None:
    scores = reciprocal_rank_fusion({"fulltext": ["a", "b", "c"], "vector": ["b", "d"]},
                                    k=60)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63)
    assert scores["d"] == pytest.approx(1 / 62)
    weighted = reciprocal_rank_fusion({"fulltext": ["a"], "vector": ["a"], "graph": ["a"]},
                                      weights={"fulltext": 1.0, "vector": 2.0, "graph": 0.0},
                                      k=10)
    assert weighted["a"] == pytest.approx(1 / 11 + 2 / 11)
    assert reciprocal_rank_fusion({}) == {}
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"x": ["a"]}, k=-1)


def test_rrf_does_not_mutate_inputs() -> None:
    rankings = {"a": ["x", "y"], "b": ["y"]}
    snapshot = {k: list(v) for k, v in rankings.items()}
    reciprocal_rank_fusion(rankings)
    assert rankings == snapshot


def test_base_level_by_hand() -> None:
    # Presented 1 h, 1 day and 10 days ago, d = 0.5.
    ages = [3600.0, 86400.0, 864000.0]
    expected = math.log(3600 ** -0.5 + 86400 ** -0.5 + 864000 ** -0.5)
    assert base_level(ages, d=0.5) == pytest.approx(expected)
    assert base_level([0.0], d=0.5) == pytest.approx(0.0)  # ages floor at one second
    with pytest.raises(ValueError):
        base_level([])


def test_approx_activation_by_hand() -> None:
    value = approx_activation(86400.0, 4, 0.8, d=0.5, beta=1.0, epsilon=0.5)
    assert value == pytest.approx(-0.5 * math.log(86400) + math.log(5) + 0.4)


def test_activation_switches_formula_when_history_is_truncated() -> None:
    now = datetime(2026, 7, 15, tzinfo=UTC)
    created = now - timedelta(days=10)
    times = (now - timedelta(days=2), now - timedelta(hours=1))
    exact = activation(created=created, access_times=times, access_count=2, confidence=1.0,
                       now=now, d=0.5, epsilon=0.5)
    assert exact.formula == "exact"
    assert exact.value == pytest.approx(
        math.log(864000 ** -0.5 + 172800 ** -0.5 + 3600 ** -0.5) + 0.5)
    truncated = activation(created=created, access_times=times, access_count=40,
                           confidence=1.0, now=now, d=0.5, beta=1.0, epsilon=0.5)
    assert truncated.formula == "approx"
    assert truncated.value == pytest.approx(approx_activation(864000, 40, 1.0))
    # More use, more activation; recent use beats old use.
    fresh = activation(created=created, access_times=(now - timedelta(minutes=5),),
                       access_count=1, confidence=1.0, now=now)
    stale = activation(created=created, access_times=(now - timedelta(days=9),),
                       access_count=1, confidence=1.0, now=now)
    assert fresh.value > stale.value


def _random_graph(seed: int) -> dict[int, dict[int, float]]:
    rng = random.Random(seed)
    graph: dict[int, dict[int, float]] = {n: {} for n in range(40)}
    for _ in range(90):
        a, b = rng.randrange(40), rng.randrange(40)
        if a != b:
            w = rng.uniform(0.5, 3.0)
            graph[a][b] = graph[a].get(b, 0.0) + w
            graph[b][a] = graph[b].get(a, 0.0) + w
    return graph


@pytest.mark.parametrize("seed", range(5))
def test_local_ppr_matches_networkx_on_the_neighbourhood(seed: int) -> None:
    graph = _random_graph(seed)
    seeds = {0: 2.0, 1: 1.0, 2: 0.5}
    ours = local_ppr(seeds, rows_of(graph), depth=2, damping=0.7, iterations=200)
    # Oracle: networkx PageRank on the same 2-hop neighbourhood.
    nodes = set(seeds)
    frontier = set(seeds)
    for _ in range(2):
        frontier = {m for n in frontier for m in graph[n]} - nodes
        nodes |= frontier
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    for a in nodes:
        for b, w in graph[a].items():
            if b in nodes:
                g.add_edge(a, b, weight=w)
    total = sum(seeds.values())
    oracle = nx.pagerank(g, alpha=0.7, personalization={n: w / total for n, w in seeds.items()},
                         weight="weight", tol=1e-12, max_iter=1000,
                         dangling={n: w / total for n, w in seeds.items()})
    for node in nodes:
        assert ours.get(node, 0.0) == pytest.approx(oracle[node], abs=1e-9)


def test_flat_rows_gather_what_the_row_function_makes() -> None:
    graph = _random_graph(7)
    made: list[int] = []

    def row(node: int) -> tuple[np.ndarray, np.ndarray]:
        made.append(node)
        return neighbour_arrays(graph.get(node, {}))

    rows = FlatRows(row, limit=12)  # small: the rows are dropped and made again
    rng = random.Random(3)
    for _ in range(50):
        nodes = np.array([*rng.sample(sorted(graph), rng.randint(1, 10)), 999],
                         dtype=np.int64)
        lengths, others, weights = rows.gather(nodes)
        assert lengths.tolist() == [len(graph.get(n, {})) for n in nodes.tolist()]
        assert others.tolist() == [o for n in nodes.tolist() for o in graph.get(n, {})]
        assert weights.tolist() == [w for n in nodes.tolist() for w in graph.get(n, {}).values()]
        one = rng.choice(sorted(graph))
        assert rows(one)[0].tolist() == list(graph[one])
    # kept between gathers: far fewer rows made than asked for, yet some made again
    assert len(set(made)) < len(made) < 50 * 12


def test_local_ppr_is_the_same_over_many_threads() -> None:
    graph = _random_graph(11)
    rows = rows_of(graph)
    alone = local_ppr({0: 1.0, 5: 0.5}, rows_of(graph))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: local_ppr({0: 1.0, 5: 0.5}, rows), range(40)))
    assert all(r == alone for r in results)


def test_hop_expansion_by_hand() -> None:
    line = {0: {1: 1.0}, 1: {0: 1.0, 2: 2.0}, 2: {1: 2.0}}
    scores = hop_expansion({0: 1.0}, rows_of(line), depth=2, decay=0.5)
    # 0 -> 1: 1.0 * 0.5 * (1/1); 1 -> 2: 0.5 * 0.5 * (2/2)
    assert scores == {0: 1.0, 1: 0.5, 2: 0.25}
