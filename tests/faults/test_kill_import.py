"""kill -9 in the middle of a UMP import and of a compact sweep: the import is all or
nothing, no daily file loses content, and a rerun ends where an uninterrupted run does."""

from __future__ import annotations

import json
import random
import shutil
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from graphmem import MemoryStore
from ingest.compact import archive_in_store, sweep
from ingest.ump import SAMPLE_PATH, import_ump
from tests.faults._checks import assert_consistent, snapshot
from tests.faults._harness import Tally, run_and_kill

SYNTHETIC = 1700
TODAY = "2026-06-20"


# -- UMP import ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ump_base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, dict[str, Any], float]:
    """The UMP file (the sample and synthetic records), its size, the state after an
    uninterrupted import, and that import's duration."""
    root = tmp_path_factory.mktemp("ump")
    records = json.loads(SAMPLE_PATH.read_text(encoding="utf-8"))
    records += [{"ump": "0.1", "id": f"urn:ump:kill{i:06d}", "kind": "episodic",
                 "body": {"text": f"synthetic memory {i} about topic {i % 40} and the "
                                  f"orchard release {i % 7}"},
                 "time": {"created": "2026-05-01T00:00:00Z"},
                 "lifecycle": {"status": "active", "confidence": 0.8}}
                for i in range(SYNTHETIC)]
    path = root / "memories.ump.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    with MemoryStore(root / "reference", embedder="hashing") as store:
        started = time.perf_counter()
        import_ump(store, path)
        seconds = time.perf_counter() - started
        return path, len(records), _ump_state(store), seconds


def _ump_state(store: MemoryStore) -> dict[str, Any]:
    data = store.export()
    return {"memories": {m["id"]: (m["text"], m["status"], m["superseded_by"])
                         for m in data["memories"] + data["tombstoned"]},
            "edges": {k: sorted((e["src"], e["dst"]) for e in v)
                      for k, v in data["edges"].items()}}


def _ump_trial(base: tuple[Path, int, dict[str, Any], float], tmp_path: Path,
               seed: int, tally: Tally) -> None:
    path, size, expected, _ = base
    db = tmp_path / f"db{seed}"
    # PROGRESS after the texts are embedded, after the memories' transaction and after
    # the derived links' (0.3-0.6 s apart): aimed after 0-2 of them plus up to 0.3 s.
    trial = run_and_kill("ump", db, rng=random.Random(seed), max_acks=2, extra=[str(path)],
                         delay=(0.0, 0.3))
    tally["ump import"].append(trial)
    committed = trial.progress.count("PROGRESS commit")
    with MemoryStore(db, embedder="hashing") as store:
        count = store.stats().memories
        assert count in (0, size), f"a half-done import: {count} of {size} memories"
        if committed or not trial.interrupted:
            assert count == size, "the acknowledged import is not all there"
        assert_consistent(store)
        import_ump(store, path)  # the rerun completes it (or changes nothing)
        assert _ump_state(store) == expected


@pytest.mark.parametrize("seed", range(3))
def test_kill_during_ump_import(ump_base: tuple[Path, int, dict[str, Any], float],
                                tmp_path: Path, seed: int, tally: Tally) -> None:
    _ump_trial(ump_base, tmp_path, seed, tally)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 23))
def test_kill_during_ump_import_full(ump_base: tuple[Path, int, dict[str, Any], float],
                                     tmp_path: Path, seed: int, tally: Tally) -> None:
    _ump_trial(ump_base, tmp_path, seed, tally)


# -- compact sweep ------------------------------------------------------------------------
def _daily(day: date, rng: random.Random) -> str:
    lines = [f"# Memory — {day.isoformat()}", ""]
    for section in ("What Happened", "Decisions", "Key Lessons", "Carry Forward",
                    "Reference"):
        lines += [f"## {section}"]
        lines += [f"- {section.lower()} note {i} of {day.isoformat()}"
                  + (" [keep]" if rng.random() < 0.15 else "")
                  + (f" → see [wiki/topic/{i % 3}]" if rng.random() < 0.2 else "")
                  for i in range(rng.randint(2, 6))]
        lines.append("")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def compact_base(tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[Path, dict[str, bytes], dict[str, bytes], dict[str, Any], float]:
    """The agent tree, its files, the files and store after an uninterrupted sweep, and
    that sweep's duration."""
    root = tmp_path_factory.mktemp("compact")
    tree = root / "agent"
    memory = tree / "workspace" / "memory"
    memory.mkdir(parents=True)
    rng = random.Random(7)
    for n in range(1, 15):
        day = date(2026, 5, n)
        (memory / f"{day.isoformat()}.md").write_text(_daily(day, rng), encoding="utf-8")
    original = _files(tree)
    shutil.copytree(tree, root / "reference")
    with MemoryStore(root / "reference-db", embedder="hashing") as store:
        started = time.perf_counter()
        _sweep(store, root / "reference")
        seconds = time.perf_counter() - started
        return tree, original, _files(root / "reference"), snapshot(store), seconds


def _sweep(store: MemoryStore, tree: Path) -> None:
    with open("/dev/null", "w") as sink:
        sweep(tree, today=date.fromisoformat(TODAY), apply=True, out=sink, err=sink,
              on_written=lambda plan: archive_in_store(store, plan, tree))


def _files(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*.md"))
            if not p.name.startswith(".")}


def _compact_trial(base: tuple[Path, dict[str, bytes], dict[str, bytes], dict[str, Any], float],
                   tmp_path: Path, seed: int, tally: Tally) -> None:
    source, original, final, expected, _ = base
    tree = tmp_path / "agent"
    shutil.copytree(source, tree)
    db = tmp_path / "db"
    # ACK after each of the 14 files, PROGRESS after each transaction of its memories
    # (about 30 steps, ~0.1 s apart): aimed after 0-24 of them plus up to 0.1 s.
    trial = run_and_kill("compact", tree, rng=random.Random(seed), max_acks=24,
                         extra=[str(db), TODAY], delay=(0.0, 0.1))
    tally["compact sweep"].append(trial)
    now = _files(tree)
    for name, data in original.items():  # no content is lost
        cold = name.replace("memory/", "memory/cold-storage/")
        assert now[name] == data or now.get(cold) == data, f"{name}: original lost"
        assert now[name] in (data, final[name]), f"{name}: half written"
        if cold in now:
            assert now[cold] == data, f"{cold} is not the original"
    done = [line.split()[1] for line in trial.acks if line != "ACK done"]
    for name in done:  # an acknowledged file is compacted
        [path] = [n for n in final if n.endswith(f"memory/{name}")]
        assert now[path] == final[path], f"{path} was acknowledged but is not compacted"
    with MemoryStore(db, embedder="hashing") as store:
        assert_consistent(store)
        _sweep(store, tree)  # the rerun completes the work
        assert _files(tree) == final
        assert snapshot(store) == expected


@pytest.mark.parametrize("seed", range(3))
def test_kill_during_compact_sweep(compact_base: Any, tmp_path: Path, seed: int,
                                   tally: Tally) -> None:
    _compact_trial(compact_base, tmp_path, seed, tally)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 23))
def test_kill_during_compact_sweep_full(compact_base: Any, tmp_path: Path, seed: int,
                                        tally: Tally) -> None:
    _compact_trial(compact_base, tmp_path, seed, tally)
