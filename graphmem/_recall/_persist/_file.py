"""One file of named sections, each checked by a CRC-32, read back memory-mapped.

The layout: a 64-byte header (magic, format, where the manifest lies, its length and
CRC-32), the sections (each at a 4 KiB boundary, so that numpy and Arrow read them in
place), then the manifest: JSON naming each section (offset, length, CRC-32, and for an
array its dtype and shape) beside the writer's own values. A writer writes a temporary
file and renames it over the old one, so a reader sees the old file or the new one,
whole; a process killed while writing leaves only a temporary file, removed by the next
writer. ``SnapshotFile.open`` checks the header and the manifest (and that every section
lies inside the file), then every section's checksum: an Arrow table's when it is first
read (before Arrow parses it), the arrays' in a thread that runs while the reader decodes
what it needs (zlib releases the GIL). ``SnapshotFile.verified`` waits for them all: a
reader calls it before it uses anything it read, so a truncated, corrupt or foreign file
raises ``DamagedFile`` and is never used, whole or half.

Arrays are mapped copy-on-write: pages nobody writes stay the file's, shared by every
process that maps it and paged by the operating system; a page the index changes
becomes the process's own, and the file is never changed.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import struct
import threading
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa

__all__ = ["DamagedFile", "OtherFormat", "SnapshotFile", "SnapshotWriter"]

_MAGIC = b"GMRECALL"
_HEADER = struct.Struct("<8sIQQI32x")
_ALIGN = 4096
#: bytes checksummed at a time (zlib releases the GIL for each)
_CRC_STEP = 64 << 20


class DamagedFile(Exception):
    """The file is not a sound snapshot (the message says why)."""


class OtherFormat(DamagedFile):
    """A sound snapshot of another format (written by another version of graphmem)."""


def _bytes(data: Any) -> memoryview:
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data).reshape(-1).view(np.uint8) if data.size else b""
    return memoryview(data).cast("B")


def _crc(data: Any, crc: int = 0) -> int:
    view = _bytes(data)
    for start in range(0, len(view), _CRC_STEP):
        crc = zlib.crc32(view[start:start + _CRC_STEP], crc)
    return crc


class SnapshotWriter:
    """Sections written one after the other into a temporary file beside ``path``;
    ``finish`` writes the manifest and renames the file into place."""

    def __init__(self, path: Path, form: int) -> None:
        self._path = path
        self._form = form
        for stale in path.parent.glob(path.name + ".tmp-*"):  # killed writers' leftovers
            with contextlib.suppress(OSError):
                stale.unlink()
        self._temp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        self._handle: BinaryIO = self._temp.open("wb")
        self._handle.write(b"\0" * _HEADER.size)
        self._sections: dict[str, dict[str, Any]] = {}

    def _section(self, name: str, parts: list[Any], **described: Any) -> None:
        if name in self._sections:
            raise ValueError(f"section {name} written twice")
        at = self._handle.tell()
        self._handle.write(b"\0" * (-at % _ALIGN))
        offset = self._handle.tell()
        crc = length = 0
        for part in parts:
            view = _bytes(part)
            self._handle.write(view)
            crc = _crc(view, crc)
            length += len(view)
        self._sections[name] = {"offset": offset, "length": length, "crc": crc,
                                **described}

    def array(self, name: str, values: np.ndarray, *, rows: int | None = None,
              fill: Any = 0) -> None:
        """``values``, followed up to ``rows`` rows by rows of ``fill`` (room to grow
        that the reader's arrays then have without a copy)."""
        values = np.ascontiguousarray(values)
        total = max(rows or 0, len(values)) if values.ndim else 0
        extra = total - len(values) if values.ndim else 0
        tail = np.full((min(extra, 4096), *values.shape[1:]), fill, dtype=values.dtype)
        parts = [values] + [tail[:min(len(tail), extra - done)]
                            for done in range(0, extra, max(1, len(tail)))]
        self._section(name, parts, dtype=values.dtype.str,
                      shape=[total, *values.shape[1:]] if values.ndim else [])

    def table(self, name: str, table: pa.Table) -> None:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        self._section(name, [sink.getvalue()], kind="arrow")

    def finish(self, values: dict[str, Any]) -> None:
        """Write the manifest (``values`` beside the sections) and put the file in place."""
        manifest = json.dumps({"values": values, "sections": self._sections},
                              separators=(",", ":")).encode("utf-8")
        at = self._handle.tell()
        self._handle.write(manifest)
        self._handle.seek(0)
        self._handle.write(_HEADER.pack(_MAGIC, self._form, at, len(manifest),
                                        zlib.crc32(manifest)))
        self._handle.close()
        os.replace(self._temp, self._path)

    def abandon(self) -> None:
        with contextlib.suppress(OSError):
            self._handle.close()
        with contextlib.suppress(OSError):
            self._temp.unlink()


class SnapshotFile:
    """A snapshot, mapped copy-on-write; its sections' checksums are checked as it is read
    (``open``), all of them by the time ``verified`` returns."""

    def __init__(self, view: mmap.mmap, values: dict[str, Any],
                 sections: dict[str, dict[str, Any]]) -> None:
        self._view = view
        #: what the writer stored beside the sections
        self.values = values
        self._sections = sections
        #: the sections whose checksum was found right, and the first one found wrong
        self._sound: set[str] = set()
        self._failed: str | None = None
        self._checker: threading.Thread | None = None

    @classmethod
    def read_values(cls, path: Path, form: int) -> dict[str, Any]:
        """The writer's values alone (the manifest, checked): a cheap look before the
        sections are read. Raises ``DamagedFile``, or ``OSError`` when it cannot be read."""
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(_HEADER.size)
            at, length, crc, found = _check_header(head, size, form)
            handle.seek(at)
            return _manifest(handle.read(length), crc, found, form)["values"]

    @classmethod
    def open(cls, path: Path, form: int) -> SnapshotFile:
        """Map the file, check its header and manifest, and start checking the arrays'
        checksums in a thread (``verified`` waits for it). Raises ``DamagedFile``, or
        ``OSError`` when it cannot be read."""
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < _HEADER.size:
                raise DamagedFile(f"{size} bytes, shorter than its header")
            view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
        at, length, crc, found = _check_header(view[:_HEADER.size], size, form)
        manifest = _manifest(view[at:at + length], crc, found, form)
        sections = manifest["sections"]
        if not isinstance(sections, dict):
            raise DamagedFile("its manifest lists no sections")
        for name, section in sections.items():
            try:
                offset, length = int(section["offset"]), int(section["length"])
                int(section["crc"])
            except (KeyError, TypeError, ValueError):
                raise DamagedFile(f"section {name} is described wrongly") from None
            if offset < _HEADER.size or offset + length > at:
                raise DamagedFile(f"section {name} lies outside the file")
        snapshot = cls(view, manifest["values"], sections)
        arrays = [name for name, section in sections.items() if section.get("kind") != "arrow"]
        snapshot._checker = threading.Thread(target=snapshot._check_all, args=(arrays,),
                                             name="graphmem-index-check", daemon=True)
        snapshot._checker.start()
        return snapshot

    def verified(self) -> None:
        """Return once every section's checksum is found right (those the thread has
        not reached are checked here); raises ``DamagedFile`` naming the first found
        wrong."""
        if self._checker is not None:
            self._checker.join()
        for name in self._sections:
            self._check(name)

    def _check_all(self, names: list[str]) -> None:
        for name in names:
            try:
                self._check(name)
            except DamagedFile:
                return

    def _check(self, name: str) -> None:
        """Check the checksum of section ``name`` once; raises ``DamagedFile`` when it, or
        a section checked before, is wrong."""
        if self._failed is not None:
            raise DamagedFile(f"section {self._failed} fails its checksum")
        if name in self._sound:
            return
        section = self._described(name)
        offset, length = int(section["offset"]), int(section["length"])
        if _crc(memoryview(self._view)[offset:offset + length]) != int(section["crc"]):
            self._failed = self._failed or name
            raise DamagedFile(f"section {name} fails its checksum")
        self._sound.add(name)

    def array(self, name: str) -> np.ndarray:
        """The array ``name``, a writable copy-on-write view of the file."""
        section = self._described(name)
        try:
            dtype, shape = np.dtype(section["dtype"]), tuple(int(d) for d in section["shape"])
        except (KeyError, TypeError, ValueError):
            raise DamagedFile(f"section {name} is not an array") from None
        count = int(np.prod(shape, dtype=np.int64))
        if count * dtype.itemsize != section["length"]:
            raise DamagedFile(f"section {name} does not hold its shape")
        if count == 0:
            return np.zeros(shape, dtype=dtype)
        return np.frombuffer(self._view, dtype=dtype, count=count,
                             offset=section["offset"]).reshape(shape)

    def table(self, name: str) -> pa.Table:
        """The Arrow table ``name``, read in place."""
        self._check(name)  # before Arrow parses it: never parse a corrupt table
        section = self._described(name)
        data = pa.py_buffer(memoryview(self._view)[section["offset"]:
                                                   section["offset"] + section["length"]])
        try:
            return pa.ipc.open_file(data).read_all()
        except (pa.ArrowException, ValueError) as exc:
            raise DamagedFile(f"section {name} is not an Arrow table: {exc}") from None

    def _described(self, name: str) -> dict[str, Any]:
        section = self._sections.get(name)
        if section is None:
            raise DamagedFile(f"it has no section {name}")
        return section


def _check_header(head: bytes, size: int, form: int) -> tuple[int, int, int, int]:
    """Where the manifest lies, its length and checksum, and the file's format (the
    header is the same in every format)."""
    if len(head) < _HEADER.size:
        raise DamagedFile(f"{size} bytes, shorter than its header")
    magic, found, at, length, crc = _HEADER.unpack(head)
    if magic != _MAGIC:
        raise DamagedFile("it is not a recall index file")
    if at < _HEADER.size or at + length != size:
        raise DamagedFile(f"its manifest ({at} + {length}) does not end the file "
                          f"({size} bytes): truncated, or written over")
    return at, length, crc, found


def _manifest(data: bytes, crc: int, found: int, form: int) -> dict[str, Any]:
    if zlib.crc32(data) != crc:
        raise DamagedFile("its manifest fails its checksum")
    if found != form:  # a sound file, of another version of graphmem
        raise OtherFormat(f"it is of format {found}, not {form}")
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise DamagedFile("its manifest is not JSON") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("values"), dict):
        raise DamagedFile("its manifest holds no values")
    return manifest
