"""The store's vectors laid out for their reader: a log file beside the database.

Kuzu scans a whole column for any range of rows it is asked for, so reading a million
vectors a page at a time took ~100 s (20 scans of the 2 GB ``vec`` column), and reading
them at once does not fit the buffer pool. The ``vec`` column stays the record of each
vector; every write transaction that stores vectors also appends them, as one block, to
``graph.kuzu.vectors`` and records the log's new length in ``Meta`` in the same
transaction. Reading every vector is then one pass over a file (``VectorLog.read``).

* The file: a header (magic, the vectors' width, a random nonce), then blocks. A block:
  its head (magic, count, id bytes, width, CRC-32 of the rest), the ids (lengths, then
  UTF-8), a presence byte per id (0: the memory has no vector now), the float32
  vectors. The last block that names a memory holds its vector.
* ``Meta.vector_log`` is ``<nonce>:<length>``: the file whose header holds that nonce,
  up to that length, is what committed transactions wrote. Bytes past it are a
  transaction that did not commit (killed, rolled back): they are cut before the next
  append, and never read.
* A transaction that does not say which vectors it stored (user Cypher) empties
  ``Meta.vector_log``, and so does a vector of another width (a model switch): the log
  is then not trusted, and the next read of every vector reads the column and writes
  the log again (``Rewrite``), as for a store made before the log.
* A block whose checksum fails (a write the operating system lost) makes the log
  untrusted: ``read`` returns None and the caller reads the column.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
import struct
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa

__all__ = ["META_KEY", "Located", "Rewrite", "VectorLog"]

#: The ``Meta`` key that holds ``<nonce>:<length>`` of the committed log.
META_KEY = "vector_log"
_MAGIC = b"GMVLOG01"
#: magic, width (0: no vector yet), nonce; zeros to 64 bytes
_HEADER = struct.Struct("<8sI16s36x")
_WIDTH_AT = 8
#: block magic, count, id bytes, width, CRC-32 of what follows the head
_BLOCK = struct.Struct("<4sIIII")
_BLOCK_MAGIC = b"GMVB"
#: rows copied at a time while reading (their temporaries stay small)
_CHUNK = 65_536


def _pad4(n: int) -> int:
    return (4 - n % 4) % 4


def _block(ids: Sequence[str], matrix: np.ndarray, present: np.ndarray) -> bytes:
    """One block of ``ids`` and their vectors (``matrix`` rows; absent where not
    ``present``)."""
    raw = [i.encode("utf-8") for i in ids]
    lengths = np.array([len(r) for r in raw], dtype=np.uint32).tobytes()
    names = b"".join(raw)
    flags = np.asarray(present, dtype=np.uint8).tobytes()
    dim = matrix.shape[1] if present.any() else 0
    vectors = np.ascontiguousarray(matrix[:, :dim], dtype=np.float32).tobytes()
    body = b"".join([lengths, names, flags, b"\0" * _pad4(len(names) + len(flags)), vectors])
    return _BLOCK.pack(_BLOCK_MAGIC, len(ids), len(names), dim, zlib.crc32(body)) + body


class VectorLog:
    """The vector log of one store directory, as ``Meta.vector_log`` says it stands."""

    FILE_NAME = "graph.kuzu.vectors"

    def __init__(self, directory: str | None, committed: str | None) -> None:
        self.path = Path(directory) / self.FILE_NAME if directory is not None else None
        self.nonce, self.length = _parse(committed)

    @property
    def trusted(self) -> bool:
        """Whether the committed log holds every stored vector (as far as ``Meta``
        says: ``read`` checks the file itself)."""
        return self.path is not None and self.nonce is not None

    def _header(self, handle: BinaryIO) -> int | None:
        """The width in the file's header, or None when it is not this log."""
        handle.seek(0)
        head = handle.read(_HEADER.size)
        if len(head) < _HEADER.size:
            return None
        magic, dim, nonce = _HEADER.unpack(head)
        return dim if magic == _MAGIC and nonce.hex() == self.nonce else None

    # -- writing (inside a Kuzu write transaction) --------------------------------------
    def append(self, vectors: Mapping[str, Any], *, at: str | None = None) -> str | None:
        """Append one block of ``vectors`` (memory id -> vector or None) past the
        committed length (or past ``at``, what this transaction appended so far:
        ``append_rows``); returns the ``Meta`` value to commit with it: the new
        ``<nonce>:<length>``, or "" when the log can no longer be trusted (a width it
        does not hold, its file gone), or None when there is nothing to write."""
        if not self.trusted or not vectors:
            return None
        given = [None if v is None else np.asarray(v, dtype=np.float32).ravel()
                 for v in vectors.values()]
        widths = {len(v) for v in given if v is not None}
        if len(widths) > 1:
            return ""
        matrix = np.zeros((len(given), widths.pop() if widths else 0), dtype=np.float32)
        present = np.array([v is not None for v in given], dtype=bool)
        for row, vector in enumerate(given):
            if vector is not None:
                matrix[row] = vector
        return self.append_rows(list(vectors), matrix, present, at=at)

    def append_rows(self, ids: Sequence[str], matrix: np.ndarray, present: np.ndarray, *,
                    at: str | None = None) -> str | None:
        """``append`` of ``ids`` and their vectors (``matrix`` rows, absent where not
        ``present``); a transaction may append several blocks, each past the ``Meta``
        value the last one returned (``at``)."""
        if not self.trusted or not len(ids):
            return None
        assert self.path is not None
        if at is not None:
            nonce, end = _parse(at)
            if nonce != self.nonce:
                return ""
        try:
            with self.path.open("r+b") as handle:
                width = self._header(handle)
                given = matrix.shape[1] if present.any() else 0
                if width is None or (given and width not in (0, given)):
                    return ""
                dim = given or width
                if dim and not width:  # the first vector the log holds sets its width
                    handle.seek(_WIDTH_AT)
                    handle.write(struct.pack("<I", dim))
                if matrix.shape[1] != dim:  # no vector among them
                    matrix = np.zeros((len(ids), dim), dtype=np.float32)
                block = _block(ids, matrix, present)
                if at is None:
                    end = self.length
                    handle.truncate(end)  # what a transaction that did not commit left
                handle.seek(end)
                handle.write(block)
        except OSError:
            return ""
        return f"{self.nonce}:{end + len(block)}"

    def finished(self, value: str | None) -> None:
        """The transaction that recorded ``value`` (``append``'s, or a ``Rewrite``'s)
        committed."""
        if value is not None:
            self.nonce, self.length = _parse(value)

    def cut(self) -> None:
        """Cut what transactions that never committed appended (a writer opening)."""
        if self.trusted and self.path is not None:
            with contextlib.suppress(OSError), self.path.open("r+b") as handle:
                if self._header(handle) is not None:
                    handle.truncate(max(self.length, _HEADER.size))

    def rewrite(self) -> Rewrite:
        """A new log, written beside this one block by block (``Rewrite.add``), put in
        place by ``Rewrite.finish``."""
        assert self.path is not None
        return Rewrite(self.path)

    def compact(self) -> str | None:
        """Write the log again with each memory's last block row only (what erasures and
        re-embedding replaced leaves the file); the new ``Meta`` value to commit, or None
        when the log is not sound."""
        view, dim = self._view()
        if view is None:
            return None
        try:
            blocks = [b[:3] for b in _blocks(view, _HEADER.size, self.length, dim)]
        except ValueError:
            return None
        last: dict[str, tuple[int, int]] = {}
        for b, (ids, _, _) in enumerate(blocks):
            last.update((memory_id, (b, row)) for row, memory_id in enumerate(ids))
        rewrite = self.rewrite()
        try:
            for b, (ids, flags, vectors) in enumerate(blocks):
                keep = [row for row, memory_id in enumerate(ids) if last[memory_id] == (b, row)]
                if keep:
                    rows = np.array(keep, dtype=np.int64)
                    matrix = vectors[rows] if vectors is not None else np.zeros((len(keep), 0))
                    rewrite.add([ids[r] for r in keep], matrix, flags[rows])
            return rewrite.finish()
        except BaseException:
            rewrite.abandon()
            raise

    def _view(self) -> tuple[Any, int]:
        """The committed file, mapped, and its width; (None, 0) when it is not sound."""
        if not self.trusted:
            return None, 0
        assert self.path is not None
        try:
            with self.path.open("rb") as handle:
                dim = self._header(handle)
                if dim is None:
                    return None, 0
                # closed when the last view of it goes (closing it by hand fails while
                # an exception still holds one)
                view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None, 0
        return (view, dim) if len(view) >= self.length else (None, 0)

    # -- reading -------------------------------------------------------------------------
    def read(self, where: Mapping[str, int], n: int,
             dtype: type[np.floating[Any]] = np.float32
             ) -> tuple[np.ndarray, np.ndarray] | None:
        """The vectors of the memories ``where`` places (id -> row below ``n``) as one
        matrix of ``dtype`` and which rows hold one; None when the log is not trusted
        or not sound (a missing or short file, another nonce, a failed checksum)."""
        view, dim = self._view()
        if view is None:
            return None
        try:
            return _gather(view, self.length, dim, where, n, dtype)
        except ValueError:
            return None


    def locate(self, where: Mapping[str, int], n: int) -> Located | None:
        """Where the vectors of the memories ``where`` places (id -> row below ``n``)
        are in the log, found in one pass, for ``Located.take`` to read them a few rows
        at a time (a whole store's, page by page, without a pass over the log for each
        page); None when the log is not trusted or not sound."""
        view, dim = self._view()
        if view is None:
            return None
        at = np.full(n, -1, dtype=np.int64)  # -1: no vector
        try:
            for ids, flags, _, start in _blocks(view, _HEADER.size, self.length, dim):
                rows = np.fromiter((where.get(i, -1) for i in ids), dtype=np.int64,
                                   count=len(ids))
                known = rows >= 0
                offsets = start + 4 * dim * np.arange(len(ids), dtype=np.int64)
                at[rows[known]] = np.where(flags[known], offsets[known], -1)
        except ValueError:
            return None
        return Located(view, dim, at)


class Located:
    """Vectors found in a log (``VectorLog.locate``): each row's offset, or -1."""

    def __init__(self, view: Any, dim: int, at: np.ndarray) -> None:
        self._values = np.frombuffer(view, dtype=np.uint8)
        self.dim, self.at = dim, at

    def take(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``start`` to ``stop`` as a float32 matrix and which of them hold one."""
        at = self.at[start:stop]
        present = at >= 0
        matrix = np.zeros((len(at), self.dim), dtype=np.float32)
        size = 4 * self.dim
        for row in np.flatnonzero(present):
            offset = int(at[row])
            matrix[row] = self._values[offset:offset + size].view(np.float32)
        return matrix, present


class Rewrite:
    """A new vector log written beside the old one (``add`` blocks in any order of
    memories, each memory once), put in place by ``finish``."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._temp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        self._nonce = secrets.token_bytes(16)
        self._handle: BinaryIO | None = self._temp.open("wb")
        self._handle.write(_HEADER.pack(_MAGIC, 0, self._nonce))
        self._length = _HEADER.size
        self._dim = 0

    def add(self, ids: Sequence[str], matrix: np.ndarray, present: np.ndarray) -> None:
        assert self._handle is not None
        if present.any():
            if self._dim and matrix.shape[1] != self._dim:
                raise ValueError("vectors of two widths")
            self._dim = matrix.shape[1]
        block = _block(ids, matrix, present)
        self._handle.write(block)
        self._length += len(block)

    def finish(self) -> str:
        """Put the new log in place; its ``Meta`` value, for the caller to commit (the
        old value names another nonce: until then the log is not trusted)."""
        assert self._handle is not None
        self._handle.seek(_WIDTH_AT)
        self._handle.write(struct.pack("<I", self._dim))
        self._handle.close()
        self._handle = None
        os.replace(self._temp, self._path)
        return f"{self._nonce.hex()}:{self._length}"

    def abandon(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        with contextlib.suppress(OSError):
            self._temp.unlink()


def _gather(view: Any, end: int, dim: int, where: Mapping[str, int], n: int,
            dtype: type[np.floating[Any]]) -> tuple[np.ndarray, np.ndarray]:
    matrix = np.zeros((n, dim), dtype=dtype)
    present = np.zeros(n, dtype=bool)
    for ids, flags, vectors, _ in _blocks(view, _HEADER.size, end, dim):
        rows = np.fromiter((where.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        known = rows >= 0
        present[rows[known]] = flags[known]
        if vectors is None:
            continue
        for start in range(0, len(ids), _CHUNK):
            part = slice(start, start + _CHUNK)
            keep = known[part] & flags[part]
            matrix[rows[part][keep]] = vectors[part][keep]
    matrix[~present] = 0
    return matrix, present


def _blocks(view: Any, start: int, end: int, dim: int
            ) -> Iterator[tuple[list[str], np.ndarray, np.ndarray | None, int]]:
    """The blocks of ``view`` between ``start`` and ``end``: ids, presence, vectors (a
    view of the file; None for a block without any), and where the vectors start in
    the file. Raises ValueError at a block that is not sound."""
    at = start
    while at < end:
        if at + _BLOCK.size > end:
            raise ValueError("a torn block head")
        magic, count, names, width, crc = _BLOCK.unpack_from(view, at)
        body = at + _BLOCK.size
        flags_at = body + 4 * count + names
        vectors_at = flags_at + count + _pad4(names + count)
        stop = vectors_at + 4 * count * width
        if magic != _BLOCK_MAGIC or stop > end or width not in (0, dim):
            raise ValueError("not a block of this log")
        if zlib.crc32(memoryview(view)[body:stop]) != crc:
            raise ValueError("a block whose checksum fails")
        offsets = np.zeros(count + 1, dtype=np.int32)
        np.cumsum(np.frombuffer(view, dtype=np.uint32, count=count, offset=body),
                  out=offsets[1:])
        ids = pa.Array.from_buffers(pa.string(), count, [
            None, pa.py_buffer(offsets), pa.py_buffer(view[body + 4 * count:flags_at])
        ]).to_pylist()
        flags = np.frombuffer(view, dtype=np.uint8, count=count, offset=flags_at) \
            .astype(bool)
        vectors = np.frombuffer(view, dtype=np.float32, count=count * width,
                                offset=vectors_at).reshape(count, width) if width else None
        yield ids, flags, vectors, vectors_at
        at = stop


def _parse(value: str | None) -> tuple[str | None, int]:
    """(nonce, length) of a ``Meta.vector_log`` value; (None, 0) for none."""
    if not value:
        return None, 0
    nonce, _, length = value.partition(":")
    try:
        return nonce, int(length)
    except ValueError:
        return None, 0
