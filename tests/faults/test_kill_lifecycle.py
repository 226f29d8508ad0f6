"""kill -9 in the middle of run_lifecycle(apply=True): the store opens, no transition is
half-applied, and a rerun ends exactly where an uninterrupted run does."""

from __future__ import annotations

import random
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graphmem import Edge, MemoryStore
from tests.faults._checks import assert_consistent, snapshot
from tests.faults._harness import Tally, run_and_kill
from tests.faults.worker import LIFECYCLE_SETTINGS

NOW = datetime(2026, 7, 15, 12, 0, tzinfo=UTC)
SIZE = 3000


def _build(path: Path) -> None:
    """Memories for every job: old and idle (decay, archive), tagged and referenced
    (promote), old candidates (expire), raw payloads (retention), recent ones (hot)."""
    rng = random.Random(5)
    records = []
    for i in range(SIZE):
        age = rng.uniform(0, 150)
        record: dict[str, Any] = {
            "id": f"urn:life:{i:05d}", "text": f"memory {i} about topic {i % 37}",
            "kind": rng.choice(["episodic"] * 6 + ["semantic", "procedural", "working"]),
            "importance": round(rng.uniform(0.05, 0.95), 3),
            "created": NOW - timedelta(days=age),
            "status": "candidate" if rng.random() < 0.08 else "active"}
        if rng.random() < 0.03:
            record["tags"] = ["critical"]
        if rng.random() < 0.1:
            record["payload"] = f"raw transcript {i}"
        records.append(record)
    edges = [Edge("references", f"urn:life:{i:05d}", f"urn:life:{(i * 7) % 60:05d}",
                  source="test") for i in range(60, 600)]
    with MemoryStore(path, embedder="hashing", settings=LIFECYCLE_SETTINGS,
                     clock=lambda: NOW - timedelta(days=151)) as store:
        store.add_many(records, batch_size=1000)
        store.link_many(edges)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], float]:
    """The prepared store, the state after one uninterrupted run, and its duration."""
    root = tmp_path_factory.mktemp("lifecycle")
    _build(root / "base")
    shutil.copytree(root / "base", root / "reference")
    with MemoryStore(root / "reference", settings=LIFECYCLE_SETTINGS,
                     clock=lambda: NOW) as store:
        started = time.perf_counter()
        report = store.run_lifecycle(apply=True)
        seconds = time.perf_counter() - started
        assert report.jobs.promoted and report.jobs.archived and report.jobs.decayed
        assert report.jobs.candidates_expired and report.jobs.hot_added
        assert report.jobs.payloads_redacted
        return root / "base", snapshot(store), seconds


def _trial(base: tuple[Path, dict[str, Any], float], tmp_path: Path, seed: int,
           tally: Tally) -> None:
    source, expected, _ = base
    db = tmp_path / f"db{seed}"
    shutil.copytree(source, db)
    # The worker says PROGRESS after the graph signals and after each job it applies
    # (about 7 steps, 40-350 ms apart): the kill is aimed after 0-6 of them plus up to
    # 30 ms, so it lands inside the next step, before the run is done.
    trial = run_and_kill("lifecycle", db, rng=random.Random(seed), max_acks=6,
                         extra=[NOW.isoformat()], delay=(0.0, 0.03))
    tally["run_lifecycle"].append(trial)
    with MemoryStore(db, settings=LIFECYCLE_SETTINGS, clock=lambda: NOW) as store:
        assert store.stats().memories == SIZE
        assert_consistent(store)
        if not trial.interrupted:
            assert snapshot(store) == expected, "the run said done but is not all there"
        store.run_lifecycle(apply=True)  # the rerun completes the work
        assert snapshot(store) == expected
        again = store.run_lifecycle(apply=True).jobs
        assert (again.decayed, again.promoted, again.archived, again.candidates_expired,
                again.hot_added, again.payloads_redacted) == (0, 0, 0, 0, 0, 0)


@pytest.mark.parametrize("seed", range(3))
def test_kill_during_run_lifecycle(base: tuple[Path, dict[str, Any], float], tmp_path: Path,
                                   seed: int, tally: Tally) -> None:
    _trial(base, tmp_path, seed, tally)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 23))
def test_kill_during_run_lifecycle_full(base: tuple[Path, dict[str, Any], float],
                                        tmp_path: Path, seed: int, tally: Tally) -> None:
    _trial(base, tmp_path, seed, tally)
