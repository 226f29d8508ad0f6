"""The recall index of a PostgreSQL store: every process on the database reads the file
the first one wrote (one file per store on the host), follows the others' commits, and
catches up on what was committed while none was open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphmem import Edge, MemoryStore, Settings
from graphmem._store._saved_index import FILE_NAME
from tests.test_persist_index import _answers, _clock, _fill


def _open(url: str, index_dir: str, **settings: Any) -> MemoryStore:
    return MemoryStore(url, embedder="hashing", clock=_clock,
                       settings=Settings(index_dir=index_dir, **settings))


def test_processes_on_one_database_share_the_index(pg_url: str, tmp_path: Path,
                                                   no_build: list[int]) -> None:
    index_dir = str(tmp_path / "recall")
    with _open(pg_url, index_dir) as first:
        _fill(first)  # builds the index and writes it; its forget deletes the file
        assert no_build == [1] and not list(Path(index_dir).glob(f"*.{FILE_NAME}"))
        first._recall_index._saved._write(first._recall_index.ensure_index(),
                                    first._ctx.engine.change_mark())  # as closing would
        [saved] = Path(index_dir).glob(f"*.{FILE_NAME}")
        with _open(pg_url, index_dir) as second:  # a sidecar started beside the first
            assert _answers(second) == _answers(first)
            assert no_build == [1], "the second process built its index"
            new = first.add("Nadia moved the Orchard deploys to Hetzner in 2025",
                            owner="ana")
            first.link_many([Edge("references", new.id, first.memories()[0].id)])
            assert _answers(second) == _answers(first)  # it follows the first's commits
    with _open(pg_url, index_dir, persist_index=False) as writer:  # no index
        # ids after every other (a build puts memories in id order, the catching up
        # after them: equal scores rank by that place, and the answers are compared)
        writer.add_many([{"id": f"urn:later:{i:03d}", "text": f"Porto office note {i}",
                          "owner": "ana"} for i in range(30)])
        writer.forget(writer.memories()[2].id, confirm=True)
    built = len(no_build)
    with _open(pg_url, index_dir) as third:
        answers = _answers(third)
        assert len(no_build) == built, "the third process built its index"
        assert third._recall_index._saved.path() == saved
    with _open(pg_url, index_dir, persist_index=False) as fresh:
        assert answers == _answers(fresh)
