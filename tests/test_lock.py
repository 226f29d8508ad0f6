"""A second process opening a database held by another gets a clear GraphmemError."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from graphmem import ConflictError, MemoryStore, StoreError, StoreLockedError

PROBE = """
import sys

import pytest
from graphmem import MemoryStore, GraphmemError
try:
    MemoryStore(sys.argv[1], read_only=sys.argv[2] == "ro")
except GraphmemError as exc:
    print(type(exc).__name__, exc)
    sys.exit(3)
print("opened")
"""


def test_second_process_gets_store_locked_error(store: MemoryStore) -> None:
    store.add("held by this process")
    for mode in ("rw", "ro"):
        out = subprocess.run([sys.executable, "-c", PROBE, store.path, mode],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 3, out.stderr
        assert out.stdout.startswith(StoreLockedError.__name__)
        assert "in use by another process" in out.stdout
        assert "Traceback" not in out.stderr


def test_a_second_handle_in_this_process_is_refused(tmp_path: Path) -> None:
    """Kuzu lets one process open a file twice, and the two handles diverge: graphmem
    refuses the second while the first writes, by any spelling of the path."""
    path = tmp_path / "db"
    first = MemoryStore(path)
    kept = first.add("the first handle keeps working")
    alias = tmp_path / "alias"
    alias.symlink_to(path)
    for other, read_only in ((path, False), (path, True), (alias, False)):
        with pytest.raises(StoreLockedError, match="already open for writing in this process"):
            MemoryStore(other, read_only=read_only)
    first.update(kept.id, importance=0.9)
    assert first.get(kept.id).importance == 0.9
    assert [h.memory.id for h in first.recall("first handle", k=1)] == [kept.id]
    first.close()
    readers = [MemoryStore(path, read_only=True) for _ in range(2)]
    with pytest.raises(StoreLockedError, match="already open read-only in this process"):
        MemoryStore(path)
    for reader in readers:
        assert reader.get(kept.id).importance == 0.9
        reader.close()
    again = MemoryStore(path)
    assert again.get(kept.id).text == kept.text
    again.close()


def test_a_handle_lets_go_of_its_store_however_it_ends(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropped without close() (a notebook cell run again), failing while it assembles
    (Ctrl-C in a long derivation), closed by two threads at once, or opened through a
    symlink that now points elsewhere: the claim on the store goes with the handle, and
    only that claim."""
    import gc
    import threading

    from graphmem._views import Views

    path = tmp_path / "db"
    dropped = MemoryStore(path, embedder="hashing")
    kept = dropped.add("written before the handle was dropped")
    del dropped
    gc.collect()
    again = MemoryStore(path, embedder="hashing")
    assert again.get(kept.id).text == kept.text
    again.close()

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Views, "__init__", interrupted)
    with pytest.raises(KeyboardInterrupt):
        MemoryStore(path, embedder="hashing")
    monkeypatch.undo()
    MemoryStore(path, embedder="hashing").close()

    first, second = (MemoryStore(path, read_only=True) for _ in range(2))
    gate = first._ctx.engine.db._gate  # a read in progress holds both closers back
    with gate.shared():
        closers = [threading.Thread(target=first.close) for _ in range(2)]
        for closer in closers:
            closer.start()
        closers[0].join(0.5)
    for closer in closers:
        closer.join()
    with pytest.raises(StoreLockedError, match="already open read-only"):
        MemoryStore(path)  # the second reader still holds it
    second.close()

    other = tmp_path / "other"
    MemoryStore(other).close()
    link = tmp_path / "current"
    link.symlink_to(path)
    old, new = MemoryStore(link), MemoryStore(other)
    link.unlink()
    link.symlink_to(other)
    old.close()  # gives back the store it opened, not the one its path names now
    MemoryStore(path).close()
    with pytest.raises(StoreLockedError, match="already open for writing"):
        MemoryStore(other)
    new.close()


def test_a_closed_store_refuses_a_purge_and_the_command_line_says_so_at_once(
        tmp_path: Path) -> None:
    import time

    from click.testing import CliRunner

    from graphmem.cli import cli

    store = MemoryStore(tmp_path / "db", embedder="hashing")
    store.add("a note")
    started = time.perf_counter()
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "db"), "stats"])
    assert result.exit_code == 1 and "already open for writing in this process" in result.output
    assert time.perf_counter() - started < 5  # no wait for a sidecar that cannot come
    store.close()
    with pytest.raises(StoreError, match=r"^the store is closed$"):
        store.purge()
    assert not (tmp_path / "db" / ".rebuild").exists()


def test_readers_share_a_database_nobody_writes(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        store.add("shared")
    with MemoryStore(path, read_only=True):
        out = subprocess.run([sys.executable, "-c", PROBE, str(path), "ro"],
                             capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "opened", out.stdout + out.stderr


FULL_DISK = """
import resource, signal, sys
from graphmem import MemoryStore, GraphmemError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
store = MemoryStore(sys.argv[1], embedder="hashing")
store.add("written before the disk filled")
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000_000, 20_000_000))
try:
    for i in range(100):
        store.add_many([{"text": f"filler {i} {j} " + "x" * 2000} for j in range(500)])
        print("ACK", i, flush=True)
except GraphmemError as exc:
    print("ERROR", exc, flush=True)
"""


def test_a_full_disk_is_a_clear_error_and_loses_nothing(tmp_path: Path) -> None:
    db = tmp_path / "db"
    result = subprocess.run([sys.executable, "-c", FULL_DISK, str(db)], capture_output=True,
                            text=True, timeout=300, cwd=Path(__file__).resolve().parents[1])
    lines = result.stdout.splitlines()
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert lines[-1].startswith("ERROR cannot write to") and "disk is full" in lines[-1]
    acked = sum(line.startswith("ACK") for line in lines)
    with MemoryStore(db, embedder="hashing") as store:
        assert store.stats().memories == 1 + 500 * acked  # acknowledged batches, nothing else
        store.add("written after space was freed")


def test_checkpoints_wait_for_readers_instead_of_failing_commits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kuzu's automatic checkpoint timed out COMMITs under steady reads; graphmem's own
    checkpoint (here after every commit) lets running reads finish and holds new ones."""
    import threading

    from graphmem._kuzu import Database

    monkeypatch.setattr(Database, "CHECKPOINT_BYTES", 1)
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_many([{"text": f"seed {i}"} for i in range(200)])
        stop = threading.Event()
        errors: list[BaseException] = []

        def read() -> None:
            while not stop.is_set():
                try:
                    store.recall("seed", k=5, record_access=False)
                    store.cypher("MATCH (m:Memory) RETURN count(*) AS n")
                except BaseException as exc:
                    errors.append(exc)

        readers = [threading.Thread(target=read) for _ in range(4)]
        for thread in readers:
            thread.start()
        try:
            for i in range(40):
                store.add(f"written while reading {i}")
        finally:
            stop.set()
            for thread in readers:
                thread.join()
        assert errors == []
        assert store.stats().memories == 240
        wal = tmp_path / "db" / "graph.kuzu.wal"
        assert not wal.exists() or wal.stat().st_size < 100_000  # checkpointed


def _wal_after_recalls(path: Path) -> tuple[int, int]:
    """The WAL's size and the rows written since the last checkpoint after 30 recalls
    that each record the access of 10 memories (300 rows, one statement each)."""
    with MemoryStore(path, embedder="hashing") as store:
        store.add_many([{"text": f"seed note {i}"} for i in range(300)])
        store._ctx.engine.db.checkpoint()
        for i in range(30):
            store.recall(f"seed note {i}", k=10, record_access=True)
            store.flush()
        wal = path / "graph.kuzu.wal"
        return (wal.stat().st_size if wal.exists() else 0), store._ctx.engine.db.rows_written


def test_rows_written_one_by_one_are_checkpointed(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Kuzu holds every written row in memory until a checkpoint (~24 KB a recorded
    access at 1M memories), far more than the WAL says: past ``CHECKPOINT_ROWS`` rows a
    commit is followed by a checkpoint, however small the WAL."""
    from graphmem._kuzu import Database

    monkeypatch.setattr(Database, "CHECKPOINT_ROWS", 10**9)
    grown, pending = _wal_after_recalls(tmp_path / "never")
    assert pending >= 300 and grown > 0
    monkeypatch.setattr(Database, "CHECKPOINT_ROWS", 100)
    kept, pending = _wal_after_recalls(tmp_path / "bounded")
    assert pending < 100
    assert kept < grown / 2


def test_a_checkpoint_that_finds_the_buffer_pool_full_is_tried_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 100k memories loaded in bulk, the first checkpoint after ~400 text edits found
    Kuzu's 1 GB pool full, and the same CHECKPOINT again on a new connection went through:
    the edit that triggered it must not fail. Kuzu's first refusal is injected here (the
    real one takes a 100k-memory store); the second CHECKPOINT is Kuzu's own."""
    from graphmem._kuzu import Database

    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        memory = store.add("a first note")
        db = store._ctx.engine.db
        refused: list[str] = []

        class Refusing:
            def __init__(self, conn: object) -> None:
                self._conn = conn

            def execute(self, query: object, *args: object) -> object:
                if query == "CHECKPOINT" and not refused:
                    refused.append(query)
                    raise RuntimeError("Buffer manager exception: Unable to allocate memory! "
                                       "The buffer pool is full and no memory could be freed!")
                return self._conn.execute(query, *args)

            def __getattr__(self, name: str) -> object:
                return getattr(self._conn, name)

        db._write_conn = Refusing(db._write_conn)
        monkeypatch.setattr(Database, "CHECKPOINT_ROWS", 1)
        store.update(memory.id, text="a first note, edited")
        assert refused == ["CHECKPOINT"]
        assert db.rows_written == 0
        wal = path / "graph.kuzu.wal"
        assert not wal.exists() or wal.stat().st_size == 0
    with MemoryStore(path, embedder="hashing") as store:
        assert store.get(memory.id).text == "a first note, edited"


def test_a_write_whose_checkpoint_fails_returns_what_it_committed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The checkpoint after a commit fails (both tries refused): the write was committed,
    so it returns what it wrote, with a warning (a store write, a statement run alone);
    the checkpoint is tried again by a later write, and at close."""
    from graphmem._kuzu import Database

    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        memory = store.add("Caroline works at Acme Inc. in Lisbon.")
        db = store._ctx.engine.db
        refused: list[str] = []
        checkpoint = Database._checkpoint_now
        refuse = [True]

        def refusing(self: Database) -> None:
            if refuse[0]:
                refused.append("CHECKPOINT")
                raise StoreError("the database needs more memory than its buffer pool")
            checkpoint(self)

        monkeypatch.setattr(Database, "_checkpoint_now", refusing)
        monkeypatch.setattr(Database, "CHECKPOINT_ROWS", 1)
        monkeypatch.setattr(Database, "CHECKPOINT_RETRY_ROWS", 0, raising=False)
        with caplog.at_level(logging.WARNING, logger="graphmem"):
            edited = store.update(memory.id, text="Caroline moved to Porto in 2024.")
            other = store.add("Melanie paints in Porto.")
            db.run_auto("MATCH (m:Memory {id: $id}) SET m.importance = 0.25",
                        {"id": other.id})
        assert edited.text == "Caroline moved to Porto in 2024."
        assert refused == ["CHECKPOINT"] * 3
        assert caplog.text.count("the checkpoint after it failed") == 3
        assert store.get(memory.id) == edited
        assert store.get(other.id).importance == 0.25  # type: ignore[union-attr]
        refuse[0] = False
        store.tombstone(other.id, reason="done")
        assert db.rows_written == 0  # tried again, and it went through
    with MemoryStore(path, embedder="hashing") as store:
        assert store.get(memory.id).text == "Caroline moved to Porto in 2024."


def test_a_checkpoint_that_found_the_pool_full_opens_the_file_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Both tries of the checkpoint after a commit find the buffer pool full (Kuzu's own
    words): the write stands, and the file is opened again (the next checkpoint in that
    process crashed it, at 100k memories); what was written is there, later writes and
    their checkpoint go through. Another failure leaves the file open as it is."""
    from graphmem._kuzu import Database

    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        memory = store.add("Caroline works at Acme Inc. in Lisbon.")
        db = store._ctx.engine.db
        words = ["Buffer manager exception: Unable to allocate memory! The buffer pool is "
                 "full and no memory could be freed!"]

        class Refusing:
            def __init__(self, conn: object) -> None:
                self._conn = conn

            def execute(self, query: object, *args: object) -> object:
                if query == "CHECKPOINT" and words:
                    raise RuntimeError(words[0])
                return self._conn.execute(query, *args)  # type: ignore[attr-defined]

            def __getattr__(self, name: str) -> object:
                return getattr(self._conn, name)

        def refusing() -> None:
            real = kuzu_connection(db)
            monkeypatch.setattr(db, "_write_conn", Refusing(real))

        opened = db._generation
        replace = Database._replace_write_conn

        def replaced(self: Database) -> None:
            replace(self)
            if self is db:
                refusing()

        monkeypatch.setattr(Database, "_replace_write_conn", replaced)
        refusing()
        monkeypatch.setattr(Database, "CHECKPOINT_ROWS", 1)
        monkeypatch.setattr(Database, "CHECKPOINT_RETRY_ROWS", 0, raising=False)
        with caplog.at_level(logging.WARNING, logger="graphmem"):
            edited = store.update(memory.id, text="Caroline moved to Porto in 2024.")
        assert "the file is opened again" in caplog.text
        assert db._generation == opened + 1
        assert store.get(memory.id) == edited
        words[0] = "IO exception: No space left on device"
        refusing()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="graphmem"):
            store.update(memory.id, importance=0.75)
        assert "the checkpoint after it failed" in caplog.text
        assert "opened again" not in caplog.text
        assert db._generation == opened + 1
        words.clear()
        other = store.add("Melanie paints in Porto.")
        assert db.rows_written == 0  # checkpointed
    with MemoryStore(path, embedder="hashing") as store:
        assert store.get(memory.id).text == "Caroline moved to Porto in 2024."
        assert store.get(memory.id).importance == 0.75
        assert store.get(other.id) is not None


def test_a_file_that_cannot_be_opened_again_closes_the_store_saying_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file, closed after a checkpoint that found the pool full, cannot be opened
    again (another process opened it meanwhile): the write that committed returns what it
    wrote, the store is closed and says why to what uses it next, ``close`` goes through,
    and the store opens again in the same process with the write in it."""
    from graphmem._kuzu import Database, _db

    path = tmp_path / "db"
    store = MemoryStore(path, embedder="hashing")
    memory = store.add("Caroline works at Acme Inc. in Lisbon.")
    db = store._ctx.engine.db

    class Refusing:
        def __init__(self, conn: object) -> None:
            self._conn = conn

        def execute(self, query: object, *args: object) -> object:
            if query == "CHECKPOINT":
                raise RuntimeError("Buffer manager exception: Unable to allocate memory! "
                                   "The buffer pool is full and no memory could be freed!")
            return self._conn.execute(query, *args)  # type: ignore[attr-defined]

        def __getattr__(self, name: str) -> object:
            return getattr(self._conn, name)

    replace = Database._replace_write_conn

    def replaced(self: Database) -> None:
        replace(self)
        self._write_conn = Refusing(kuzu_connection(self))

    def taken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("IO exception: Could not set lock on file : " + str(path))

    monkeypatch.setattr(Database, "_replace_write_conn", replaced)
    db._write_conn = Refusing(db._write_conn)
    monkeypatch.setattr(Database, "CHECKPOINT_ROWS", 1)
    real = _db.kuzu.Database
    monkeypatch.setattr(_db.kuzu, "Database", taken)
    edited = store.update(memory.id, text="Caroline moved to Porto in 2024.")
    assert edited.text == "Caroline moved to Porto in 2024."
    with pytest.raises(StoreError, match="open the store again"):
        store.get(memory.id)
    with pytest.raises(StoreError, match="open the store again"):
        store.add("Melanie paints in Porto.")
    monkeypatch.setattr(_db.kuzu, "Database", real)
    store.close()
    with MemoryStore(path, embedder="hashing") as again:
        assert again.get(memory.id).text == "Caroline moved to Porto in 2024."
        assert again.memory_count() == 1


def kuzu_connection(db: object) -> object:
    """The database's write connection, unwrapped."""
    conn = db._write_conn  # type: ignore[attr-defined]
    return getattr(conn, "_conn", conn)


class _CommitFails:
    """The write connection, whose first COMMIT raises Kuzu's "buffer pool is full": after
    committing (``commits``: what a COMMIT after COPY does when the checkpoint it runs
    finds the pool full, a second bulk add of 1,000 memories to a 100k-memory store), or
    instead of committing."""

    def __init__(self, conn: object, *, commits: bool) -> None:
        self._conn, self._commits, self.raised = conn, commits, 0

    def execute(self, query: object, *args: object) -> object:
        if query == "COMMIT" and not self.raised:
            self.raised += 1
            if self._commits:
                self._conn.execute(query, *args)  # type: ignore[attr-defined]
            raise RuntimeError("Buffer manager exception: Unable to allocate memory! "
                               "The buffer pool is full and no memory could be freed!")
        return self._conn.execute(query, *args)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def _bulk(prefix: str) -> list[dict[str, str]]:
    return [{"id": f"urn:{prefix}:{i}", "text": f"Note {i}: Ana met Bruno in Porto."}
            for i in range(80)]  # beyond a small write: COPY, whose COMMIT checkpoints


@pytest.mark.parametrize("commits", [True, False])
def test_a_bulk_write_whose_commit_raises_says_whether_it_was_stored(
        tmp_path: Path, commits: bool) -> None:
    """A COMMIT that raised after committing said "raise the buffer pool and retry", and
    the journal's number stayed behind. The error says whether the write was stored:
    when it was, adding the records again is a conflict and they are there after
    reopening; when it was not, nothing of it is, and the journal and the connection
    write on either way."""
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        store.add_many(_bulk("a"))
        db = store._ctx.engine.db
        failing = _CommitFails(db._write_conn, commits=commits)
        db._write_conn = failing
        with pytest.raises(StoreError, match="buffer pool") as raised:
            store.add_many(_bulk("b"))
        assert failing.raised == 1
        assert ("the write was committed" in str(raised.value)) is commits
        if commits:
            with pytest.raises(ConflictError):
                store.add_many(_bulk("b"))
        else:
            store.add_many(_bulk("b"))
        store.add_many(_bulk("c"))  # the journal and the connection write on
    with MemoryStore(path, embedder="hashing") as store:
        assert len(store.get_many([f"urn:{p}:{i}" for p in "abc" for i in range(80)])) == 240
        changes = store._ctx.engine.db.read("MATCH (c:Change) RETURN c.seq ORDER BY c.seq")
        seqs = [int(r[0]) for r in changes]
        assert seqs == sorted(set(seqs))  # one ring row a transaction, none written twice


def test_a_closed_store_says_so_on_both_engines(store_location: str) -> None:
    store = MemoryStore(store_location, embedder="hashing")
    kept = store.add("a note about tea")
    store.close()
    calls = [lambda: store.get(kept.id), lambda: store.add("x"), lambda: store.recall("tea"),
             lambda: store.update(kept.id, importance=0.3), lambda: store.memories(),
             lambda: store.named_query("recent_memories")]
    for call in calls:
        with pytest.raises(StoreError, match=r"^the store is closed$"):
            call()
