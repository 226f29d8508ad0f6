"""kill -9 in the middle of add_many: every acknowledged batch survives, none is half there."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from graphmem import MemoryStore
from tests.faults._checks import assert_vectors_logged
from tests.faults._harness import Tally, run_and_kill
from tests.faults.worker import BATCH


def _trial(tmp_path: Path, seed: int, tally: Tally) -> None:
    db = tmp_path / f"db{seed}"
    trial = run_and_kill("add_many", db, rng=random.Random(seed))
    tally["add_many"].append(trial)
    acked = {int(line.split()[1]) for line in trial.acks}
    assert len(acked) >= trial.aimed  # the kill came after the batches it waited for
    with MemoryStore(db) as store:
        per_batch = Counter(m.tags[0] for m in store.memories())
        assert store.stats().versions == store.stats().memories
        assert_vectors_logged(store)
    for batch in acked:
        assert per_batch[f"b{batch}"] == BATCH, f"acknowledged batch {batch} is incomplete"
    for tag, count in per_batch.items():
        assert count == BATCH, f"batch {tag} is half written ({count} rows)"


@pytest.mark.parametrize("seed", range(3))
def test_kill_during_add_many(tmp_path: Path, seed: int, tally: Tally) -> None:
    _trial(tmp_path, seed, tally)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 23))
def test_kill_during_add_many_full(tmp_path: Path, seed: int, tally: Tally) -> None:
    _trial(tmp_path, seed, tally)
