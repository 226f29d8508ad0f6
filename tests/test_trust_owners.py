"""An owner sees nothing of another owner, not even through numbers.

Two stores hold the same memories of owner ``ann``, one of them also ``bob``'s (texts that
share ``ann``'s words and names, links among them, and a link across the owners made by
the process owner). Everything ``ann`` can observe must be identical in both: recall
scores and explanations in every preset, derived link weights, centrality, archivist
evaluations, the lifecycle report and the hot set.
"""

from __future__ import annotations

import itertools
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import PRESETS, MemoryStore, Settings

EXAMPLES = max(5, int(os.environ.get("GRAPHMEM_HOSTILE_EXAMPLES", "40")) // 4)
NOW = datetime(2026, 7, 15, 12, 0, tzinfo=UTC)
WORDS = ["orchard", "postgres", "Lisbon", "Melanie", "deploy", "sensor", "greenhouse",
         "kuzu", "release", "Caroline", "budget", "v3.2", "2024", "recall"]
ANN = [
    "Melanie moved the orchard database to postgres in Lisbon",
    "The greenhouse sensor in Lisbon reports every minute",
    "Caroline owns the release budget for v3.2",
    "Deploy the orchard with kuzu after the 2024 audit",
    "Melanie and Caroline review the greenhouse budget",
    "recall uses postgres and kuzu side by side",
]
QUERIES = ["orchard postgres", "Melanie Lisbon", "greenhouse sensor budget", "v3.2 release",
           "kuzu 2024 deploy"]


class _Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def _build(path: Path, bob: list[str], cross: bool) -> MemoryStore:
    clock = _Clock()
    store = MemoryStore(path, embedder="hashing", clock=clock,
                        settings=Settings(hot_set_size=3))
    ids = [store.add(text, id=f"urn:ann:{i}", owner="ann").id for i, text in enumerate(ANN)]
    store.link(ids[0], ids[1])
    store.link(ids[2], ids[4], kind="co_occurs")
    store.recall("orchard", owner="ann", k=2)  # accesses, for ACT-R and the hot set
    bob_ids = [store.add(text, id=f"urn:bob:{i}", owner="bob").id for i, text in enumerate(bob)]
    for a, b in itertools.pairwise(bob_ids):
        store.link(a, b)
    if cross and bob_ids:
        store.link(ids[0], bob_ids[0])  # the process owner may link across owners
        store.link(bob_ids[0], ids[3], kind="co_occurs")
    for _ in range(3):
        store.recall(" ".join(bob[:2]) or "x", owner="bob", k=3)
    store.derive_links(max_df=None)
    return store


def _observed(store: MemoryStore) -> dict[str, Any]:
    """Everything owner ann can see, as plain data."""
    out: dict[str, Any] = {}
    for name in PRESETS:
        for query in QUERIES:
            hits = store.recall(query, owner="ann", k=6, preset=name, record_access=False)
            out[f"{name}:{query}"] = [(h.memory.id, h.score, h.explanation.model_dump())
                                      for h in hits]
    ids = [m.id for m in store.memories(owner="ann")]
    out["links"] = {i: sorted((x.kind, x.other, x.direction, x.weight)
                              for x in store.links(i, owner="ann")) for i in ids}
    out["centrality"] = {i: store.centrality()[i] for i in ids}
    out["evaluate"] = [store.evaluate(i, owner="ann").model_dump() for i in ids]
    report = store.run_lifecycle(owner="ann").model_dump()
    report.pop("seconds")
    out["report"] = report
    return out


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(bob=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
                    min_size=1, max_size=12),
       cross=st.booleans())
def test_another_owner_changes_nothing_ann_sees(tmp_path_factory: Any, bob: list[str],
                                                cross: bool) -> None:
    root = tmp_path_factory.mktemp("owners")
    with _build(root / "alone", [], False) as alone, _build(root / "shared", bob, cross) as shared:
        seen_alone, seen_shared = _observed(alone), _observed(shared)
        for key in seen_alone:
            assert seen_shared[key] == seen_alone[key], key


def test_hot_set_is_each_owners_own(tmp_path: Path) -> None:
    store = _build(tmp_path / "db", ["bob " + w for w in WORDS], cross=True)
    with store:
        store.run_lifecycle(apply=True)
        hot = [m for m in store.memories() if m.hot]
        by_owner = {o: sum(1 for m in hot if m.owner == o) for o in ("ann", "bob")}
        assert by_owner == {"ann": 3, "bob": 3}
