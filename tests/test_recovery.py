"""Torn write-ahead logs, made on purpose: what ``kill -9`` in the middle of a commit leaves.

The crash image is the database directory copied while its writer is still open (what a
killed process leaves on disk: Kuzu writes the WAL at each commit, checkpoints only at
close), with the WAL mark set back to the last commit acknowledged before the transaction
that was being written, and that transaction's first record torn (overwritten with bytes
that make Kuzu 0.11.3's replay crash the opening process, checked in a child first).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from graphmem import MemoryStore, StoreError
from graphmem._kuzu._recovery import WalMark, _probe

ACKNOWLEDGED = "the acknowledged memory"
#: The bytes written over the start of the unacknowledged transaction, and where.
TORN, AT = bytes(range(64)), 8


@pytest.fixture(scope="module")
def crash_image(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, bytes]:
    """A database directory as a writer killed inside its second commit leaves it, the
    WAL length at its last acknowledged commit, and the torn WAL's bytes."""
    root = tmp_path_factory.mktemp("torn")
    live = root / "live"
    with MemoryStore(live, embedder="hashing") as store:
        store.add(ACKNOWLEDGED, id="urn:torn:ack")
        mark = WalMark(str(live / "graph.kuzu")).read()
        assert mark is not None and mark > 0
        store.add_many([{"text": f"never acknowledged {i}"} for i in range(50)])
        image = root / "image"
        shutil.copytree(live, image)  # the files as they are while the writer runs
    wal = image / "graph.kuzu.wal"
    assert wal.stat().st_size > mark + AT + len(TORN)  # the second transaction is there
    (image / "graph.kuzu.walmark").write_bytes(mark.to_bytes(8, "little"))
    with wal.open("r+b") as handle:
        handle.seek(mark + AT)
        handle.write(TORN)
    # the premise: opening this database crashes the process that tries (a signal)
    assert _probe(str(image / "graph.kuzu")) < 0
    return image, mark, wal.read_bytes()


def _copy(image: Path, target: Path) -> Path:
    shutil.copytree(image, target)
    return target


def test_a_torn_wal_tail_is_cut_back_to_the_last_commit(
        crash_image: tuple[Path, int, bytes], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    image, mark, torn = crash_image
    db = _copy(image, tmp_path / "db")
    with caplog.at_level(logging.WARNING, logger="graphmem"), MemoryStore(db) as store:
        # every acknowledged commit is there, and nothing of the torn transaction
        assert [m.text for m in store.memories()] == [ACKNOWLEDGED]
        assert store.stats().versions == 1
        store.add("written after the recovery")
    [kept] = db.glob("graph.kuzu.wal.torn-*")
    assert kept.read_bytes() == torn  # the original log is kept beside the database
    [note] = [r.getMessage() for r in caplog.records if "recovered" in r.getMessage()]
    assert f"cut {len(torn) - mark} bytes of an uncommitted transaction" in note
    assert kept.name in note
    with MemoryStore(db) as store:  # a clean reopen: no second recovery
        assert sorted(m.text for m in store.memories()) == [ACKNOWLEDGED,
                                                            "written after the recovery"]
    assert len(list(db.glob("graph.kuzu.wal.torn-*"))) == 1


def test_a_read_only_open_refuses_and_changes_nothing(
        crash_image: tuple[Path, int, bytes], tmp_path: Path) -> None:
    image, _, torn = crash_image
    db = _copy(image, tmp_path / "db")
    with pytest.raises(StoreError, match="torn record; open it once read-write"):
        MemoryStore(db, read_only=True)
    assert (db / "graph.kuzu.wal").read_bytes() == torn
    assert not list(db.glob("graph.kuzu.wal.torn-*"))


def test_a_mark_past_the_end_of_the_log_is_not_guessed_at(
        crash_image: tuple[Path, int, bytes], tmp_path: Path) -> None:
    image, _, torn = crash_image
    db = _copy(image, tmp_path / "db")
    (db / "graph.kuzu.walmark").write_bytes((len(torn) + 1).to_bytes(8, "little"))
    with pytest.raises(StoreError, match="cannot be replayed; restore it from a backup"):
        MemoryStore(db)
    assert (db / "graph.kuzu.wal").read_bytes() == torn  # nothing was cut
    (db / "graph.kuzu.walmark").unlink()  # no mark at all: the same refusal
    with pytest.raises(StoreError, match="restore it from a backup"):
        MemoryStore(db)
