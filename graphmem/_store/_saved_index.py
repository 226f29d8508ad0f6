"""The recall index saved beside the store, so that a store opens ready.

Where: ``recall.index`` in a Kuzu store's directory; for a PostgreSQL store, a file per
store and database in ``Settings.index_dir`` on each host (every process there reads it,
mapped, and writes it in turn). What: the whole index (``_codec``) in one file of
checksummed sections (``_file``), with the store's id, the schema, the embedding model,
the index's fields and format, and the store's change mark when it was taken.

When the store opens, the first use of the index reads the file instead of building it:

1. the file must be sound (header, manifest and every section's checksum, checked
   while it is decoded and before anything read is used) and the store's: anything
   else is built again, with a warning;
2. it must be of this format, fields, schema, model and vector precision, else it is
   built again (the file is merely outdated);
3. the store's change log says what every commit since the mark changed (this
   process's and every other's: each engine records it in the writing transaction). A
   few hundred memories are read again, as another process's commits are followed
   while the store is open; a bulk change, more than ``catch_up_limit`` memories, or a
   mark the log no longer reaches (it keeps the last 4,096 commits of a Kuzu store, 24
   hours of a PostgreSQL one) builds the index again.

It is written after every build, and when the store closes if the store changed by
enough since the file was written to make the next open slower (``SAVE_AFTER_IDS``).
Writing goes to a temporary file renamed into place: a process killed while writing
leaves the old file, whole.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from .._context import Changed, StoreContext, foreign_changes
from .._engine import ForeignChange
from .._errors import GraphmemError
from .._onnx import cache_root
from .._recall._config import resolve_preset
from .._recall._index import INDEX_FIELDS, RecallIndex
from .._recall._persist._codec import FORMAT, read_index, write_index
from .._recall._persist._file import DamagedFile, OtherFormat, SnapshotFile, SnapshotWriter
from .._recall._vectors import SignCodes
from .._sync import Gate

__all__ = ["FILE_NAME", "SavedIndex"]

FILE_NAME = "recall.index"
#: Memories read again per notification while catching up: beyond 20 ids the index's
#: refreshes reload every edge and the whole knowledge graph (``IndexSync._refresh_edges``).
_CHUNK = 20
#: Changed memories past which closing the store writes the file again: reading each
#: again when the store next opens costs ~1-3 ms (a Kuzu lookup by id).
SAVE_AFTER_IDS = 64
#: Commits past which closing writes the file again, whatever they changed: a Kuzu
#: store's log keeps the last 4,096.
SAVE_AFTER_COMMITS = 1024

log = logging.getLogger("graphmem")


def catch_up_limit(size: int) -> int:
    """The most memories read again to bring a saved index of ``size`` up to date; past
    it, building the index again is not much slower."""
    return max(256, size // 200)


class SavedIndex:
    """The recall index file of one store, read, caught up and written by ``IndexSync``."""

    def __init__(self, ctx: StoreContext, row_fields: Sequence[str]) -> None:
        self._ctx = ctx
        #: the fields of the index's row snapshot (``IndexSync``'s)
        self._row_fields = list(row_fields)
        self._path: Path | None = None
        self._located = False
        #: the change mark of what the file holds (None: no file of this process's)
        self.mark: str | None = None

    # -- where -------------------------------------------------------------------------
    def path(self) -> Path | None:
        """The file (None: this store keeps none: in memory, persistence off, or an old
        store opened read-only that has no id)."""
        if self._located:
            return self._path
        self._located = True
        ctx = self._ctx
        store_id = ctx.engine.meta().get("store_id")
        if not ctx.settings.persist_index or not store_id:
            return None
        local = ctx.engine.local_dir
        if local is not None:
            self._path = Path(local) / FILE_NAME
            return self._path
        base = Path(ctx.settings.index_dir or cache_root() / "recall")
        key = hashlib.sha256(f"{store_id}\n{ctx.engine.path}".encode()).hexdigest()[:24]
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.warning("the recall index cannot be kept in %s (%s); it is built in "
                        "memory instead", base, exc)
            return None
        self._path = base / f"{key}.{FILE_NAME}"
        return self._path

    def _identity(self) -> dict[str, Any]:
        """What a file must match to be read back for this store, as it is now."""
        ctx = self._ctx
        meta = ctx.engine.meta()
        return {"store": meta.get("store_id"), "schema": ctx.engine.schema_version,
                "fields": list(INDEX_FIELDS), "row_fields": self._row_fields,
                "embedder": [meta.get("embedder_name"), meta.get("embedder_fingerprint")],
                "sign_bits_from": ctx.settings.sign_bits_from}

    # -- opening -----------------------------------------------------------------------
    def open(self, build: Callable[[], RecallIndex],
             adopt: Callable[[RecallIndex | None], None],
             apply: Callable[[Changed], None]) -> None:
        """Read the index from the file, or ``build()`` it (and write it); ``adopt`` it
        (every commit from then on reaches it), then ``apply`` what was committed since
        its mark. Adopting and reading the log happen under the store's write lock: no
        commit of this process slips between them, and another process's commit is in
        the log or reaches the adopted index."""
        loaded = self._read()
        for _ in range(3):
            if loaded is None:
                mark = self._ctx.engine.change_mark()
                index = build()
                self._write(index, mark)
            else:
                index, mark = loaded
            with self._ctx.lock:
                adopt(index)
                pending = self._pending(mark, index.size)
                if pending is not None:
                    for change in pending:
                        apply(change)
                    return
                adopt(None)
            loaded = None  # commits that cannot be followed came meanwhile
        adopt(index)  # a store in bulk change all along: as it was built

    def _read(self) -> tuple[RecallIndex, str] | None:
        """The saved index and its mark, or None (the reason logged)."""
        path = self.path()
        if path is None or not path.exists():
            return None
        try:
            values = SnapshotFile.read_values(path, FORMAT)
            problem = self._outdated(values)
            if problem is not None:
                log.info("recall index %s is %s: building it again", path, problem)
                return None
            snapshot = SnapshotFile.open(path, FORMAT)
            try:
                index = read_index(snapshot)  # its checksums are checked meanwhile
            except Exception:
                snapshot.verified()  # a section found corrupt is what to report
                raise
            snapshot.verified()  # nothing read is used before the whole file is sound
        except OtherFormat as exc:
            log.info("recall index %s is outdated (%s): building it again", path, exc)
            return None
        except (DamagedFile, OSError) as exc:
            log.warning("recall index %s is damaged (%s): building it again", path, exc)
            return None
        index.sign_bits_from = self._ctx.settings.sign_bits_from
        if index.half != RecallIndex.uses_sign_bits_at(index.size, index.sign_bits_from):
            log.info("recall index %s keeps its vectors at another precision than the "
                     "store's size asks for now: building it again", path)
            return None
        self.mark = str(values["mark"])
        return index, self.mark

    def _outdated(self, values: dict[str, Any]) -> str | None:
        """Why a sound file cannot serve (None: it can, once caught up); a file of
        another store raises ``DamagedFile``."""
        mine = self._identity()
        if values.get("store") != mine["store"]:
            raise DamagedFile(f"it belongs to store {values.get('store')!r}, not this one")
        for key, value in mine.items():
            if values.get(key) != value:
                return f"of another {key.replace('_', ' ')}"
        mark = values.get("mark")
        changes = self._ctx.engine.changes_since(mark) if isinstance(mark, str) else None
        if changes is None:
            return "older than what the store's change log keeps"
        size = values.get("index", {}).get("size", 0)
        if _merged(changes, catch_up_limit(int(size))) is None:
            return "behind the store by more than it is worth catching up"
        return None

    def _pending(self, mark: str, size: int) -> list[Changed] | None:
        """The changes since ``mark`` as notifications of at most ``_CHUNK`` memories,
        or None when they cannot be followed."""
        changes = self._ctx.engine.changes_since(mark)
        merged = _merged(changes, catch_up_limit(size)) if changes is not None else None
        if merged is None:
            return None
        out: list[Changed] = []
        kept = [i for i in merged.ids if i not in merged.removed]
        for part in _chunks(kept):
            out += foreign_changes(ForeignChange(ids=tuple(part)))
        for part in _chunks(list(merged.removed)):
            out += foreign_changes(ForeignChange(ids=tuple(part), removed=tuple(part)))
        for part in _chunks(list(merged.edge_ends)):
            out += foreign_changes(ForeignChange(edge_ends=tuple(part)))
        for part in _chunks([i for i in merged.accessed if i not in merged.removed]):
            out += foreign_changes(ForeignChange(accessed=tuple(part)))
        return out

    # -- writing -----------------------------------------------------------------------
    def _write(self, index: RecallIndex, mark: str) -> None:
        """Write ``index`` (current as of ``mark``) into the file; a failure to write
        (a full disk) is a warning, never an error of the caller's."""
        path = self.path()
        if path is None or self._ctx.engine.read_only:
            return
        _complete(index)
        writer = None
        try:
            writer = SnapshotWriter(path, FORMAT)
            values = {**self._identity(), "mark": mark, "saved": datetime.now().isoformat()}
            values["index"] = write_index(writer, index)
            writer.finish(values)
        except OSError as exc:
            if writer is not None:
                writer.abandon()
            log.warning("the recall index could not be saved in %s (%s); the store opens "
                        "without it", path, exc)
            return
        except BaseException:
            if writer is not None:
                writer.abandon()
            raise
        self.mark = mark

    def discard(self) -> None:
        """Delete the file now (a memory was forgotten: the file may hold what it said);
        the store writes it again when it closes, or builds it on its next open."""
        path = self.path()
        self.mark = None
        if path is None or self._ctx.engine.read_only:
            return
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("recall index %s could not be deleted after a forget (%s)", path, exc)

    def close(self, index: RecallIndex, gate: Gate) -> None:
        """Write the file again when the store changed since it was written by enough to
        slow the next open down (or the change log may no longer reach its mark)."""
        ctx = self._ctx
        if self.path() is None or ctx.engine.read_only:
            return
        try:
            with ctx.lock:
                mark = ctx.engine.change_mark()
                ctx.sync()  # everything committed before the mark is in the index
                changes = ctx.engine.changes_since(self.mark) if self.mark else None
                if changes is not None and not _worth_saving(changes):
                    return
                with gate.exclusive():
                    self._write(index, mark)
        except GraphmemError as exc:
            log.warning("the recall index was not saved: %s", exc)


def _complete(index: RecallIndex) -> None:
    """Build now what the first recall would otherwise build, so that the file holds it
    (the postings sorted by token, the sign bits where they serve, the adjacency of the
    default preset's walk), and drop what no current memory holds (old rows, dead terms)."""
    n = index.size
    index.blank_stale_rows()
    bm25 = index.bm25
    bm25.drop_dead_terms()
    bm25._flush()
    if bm25._token.size > bm25._sorted:
        bm25._sort()
    if index._signs is None and index.uses_sign_bits(n):
        index._signs = SignCodes.from_vectors(index.vectors[:n])
    graph = resolve_preset("default").graph
    index.adjacency(graph.references, graph.co_occurs)


class _Merged:
    def __init__(self) -> None:
        self.ids: dict[str, None] = {}
        self.edge_ends: dict[str, None] = {}
        self.removed: dict[str, None] = {}
        self.accessed: dict[str, None] = {}


def _merged(changes: Sequence[ForeignChange], limit: int) -> _Merged | None:
    """What ``changes`` changed together, or None: a bulk change, or more than
    ``limit`` memories (reading each again then costs about what a build does)."""
    merged = _Merged()
    for change in changes:
        if change.bulk:
            return None
        merged.ids.update(dict.fromkeys(change.ids))
        merged.edge_ends.update(dict.fromkeys(change.edge_ends))
        merged.removed.update(dict.fromkeys(change.removed))
        merged.accessed.update(dict.fromkeys(change.accessed))
        if len(merged.ids) + len(merged.edge_ends) + len(merged.accessed) > limit:
            return None
    return merged


def _worth_saving(changes: Sequence[ForeignChange]) -> bool:
    if len(changes) >= SAVE_AFTER_COMMITS or any(c.bulk for c in changes):
        return True
    merged = _merged(changes, SAVE_AFTER_IDS - 1)
    return merged is None


def _chunks(ids: Sequence[str]) -> list[Sequence[str]]:
    return [ids[start:start + _CHUNK] for start in range(0, len(ids), _CHUNK)]
