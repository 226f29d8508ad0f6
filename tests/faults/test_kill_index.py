"""kill -9 while the recall index is read, caught up, changed or written, then more commits
from a process without it: the next open catches the stale (or half-written) file every
time, and answers as an index built from the store does."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from graphmem import PRESETS, MemoryStore, Settings
from graphmem._recall._persist._codec import FORMAT
from graphmem._recall._persist._file import DamagedFile, SnapshotFile
from graphmem._store._saved_index import FILE_NAME
from graphmem._time import parse_iso
from tests.faults._checks import assert_vectors_logged
from tests.faults._harness import Tally, run_and_kill
from tests.faults.worker import INDEX_NOW, INDEX_WORDS, index_write

NOW = parse_iso(INDEX_NOW)


def _open(db: Path, **settings: Any) -> MemoryStore:
    return MemoryStore(db, embedder="hashing", clock=lambda: NOW, settings=Settings(**settings))


def _answers(store: MemoryStore, queries: list[str]) -> list[Any]:
    return [[(h.memory.id, round(h.score, 9)) for h in store.recall(
        q, k=5, preset=preset, owner=owner, record_access=False)]
        for q in queries for preset in sorted(PRESETS) for owner in (None, "ana")]


def _saved_mark(db: Path) -> str | None:
    """The mark of the index file (None: there is none, or it cannot be read)."""
    try:
        return str(SnapshotFile.read_values(db / FILE_NAME, FORMAT)["mark"])
    except (OSError, DamagedFile):
        return None


def _trials(tmp_path: Path, seeds: range, tally: Tally) -> None:
    db = tmp_path / "db"
    caught = 0
    for seed in seeds:
        rng = random.Random(seed)
        trial = run_and_kill("index", db, rng=rng, max_acks=8, extra=[str(seed)],
                             delay=(0.0, 0.05))
        tally["recall index"].append(trial)
        with _open(db, persist_index=False) as store:  # another process writes
            if store.stats().memories:
                index_write(store, rng)
            mark = store._ctx.engine.change_mark()
        assert _saved_mark(db) != mark, "the file cannot be current: it is stale"
        queries = [" ".join(rng.sample(INDEX_WORDS, 3)) for _ in range(2)]
        with _open(db) as store:
            answers = _answers(store, queries)
            assert_vectors_logged(store)
        with _open(db, persist_index=False) as store:
            assert answers == _answers(store, queries), f"trial {seed}: {trial.describe()}"
        caught += 1
    assert caught == len(seeds)


def test_a_stale_index_is_caught_after_kills(tmp_path: Path, tally: Tally) -> None:
    _trials(tmp_path, range(6), tally)


@pytest.mark.slow
def test_a_stale_index_is_caught_after_100_kills(tmp_path: Path, tally: Tally) -> None:
    _trials(tmp_path, range(100, 200), tally)
