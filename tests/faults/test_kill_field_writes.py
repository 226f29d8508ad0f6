"""kill -9 during field writes (update, feedback, tombstone), each one transaction with its
version row, event and change-ring row: every acknowledged write survives, and none is
half there (fields without their version row or event, or a write the change ring does
not name)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from graphmem import MemoryStore
from tests.faults._checks import assert_consistent
from tests.faults._harness import Tally, run_and_kill


def _trial(tmp_path: Path, seed: int, tally: Tally) -> None:
    db = tmp_path / f"db{seed}"
    trial = run_and_kill("fields", db, rng=random.Random(seed), max_acks=40,
                         extra=[str(seed)], delay=(0.0, 0.02))
    tally["field writes"].append(trial)
    mark = next(line.split()[1] for line in trial.lines if line.startswith("MARK"))
    acked: dict[str, int] = {}
    for line in trial.acks:
        if line != "ACK done":
            _, memory_id, version = line.split()
            acked[memory_id] = max(acked.get(memory_id, 0), int(version))
    with MemoryStore(db, embedder="hashing") as store:
        memories = {m.id: m for m in store.memories()}
        for memory_id, version in acked.items():
            assert memories[memory_id].version >= version, \
                f"acknowledged write {memory_id} v{version} lost ({trial.describe()})"
        assert_consistent(store)
        data = store.export()
        boosts = Counter(v["memory_id"] for v in data["versions"]
                         if v["change_type"] == "importance_boost")
        feedback = Counter(e["memory_id"] for e in data["events"]
                           if e["event_type"] == "feedback")
        assert boosts == feedback, "a feedback without its version row, or the other way"
        # every write since the worker was ready is one change of the ring, naming its
        # memory: as many as the versions it added
        changes = store._ctx.engine.changes_since(mark)
        assert changes is not None, "the change ring lost its history"
        named = Counter(i for change in changes for i in change.ids)
        assert all(len(change.ids) == 1 for change in changes)
        assert named == Counter({m.id: m.version - 1 for m in memories.values()
                                 if m.version > 1}), trial.describe()


@pytest.mark.parametrize("seed", range(3))
def test_kill_during_field_writes(tmp_path: Path, seed: int, tally: Tally) -> None:
    _trial(tmp_path, seed, tally)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 23))
def test_kill_during_field_writes_full(tmp_path: Path, seed: int, tally: Tally) -> None:
    _trial(tmp_path, seed, tally)
