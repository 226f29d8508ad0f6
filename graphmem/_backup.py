"""Backups: a consistent snapshot of a store in a directory, and the way back.

A backup is Kuzu's ``EXPORT DATABASE`` (schema, then every table as Parquet) taken
under the store's write lock, plus ``graphmem-backup.json``: the schema version, the
embedder fingerprint, the counts, and a SHA-256 of every file. ``restore`` checks all
of it, imports into a scratch directory beside the target, opens the result (which
migrates an older schema) and only then moves it into place: a failed restore leaves
no half-made database behind, and a failed backup leaves no half-made backup.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._errors import SchemaVersionError, StoreError
from ._kuzu import SCHEMA_VERSION, Database, KuzuGraph
from ._time import utcnow

if TYPE_CHECKING:
    from ._settings import Settings
    from ._store import StoreCore

__all__ = ["MANIFEST", "BackupInfo", "backup", "read_manifest", "restore"]

MANIFEST = "graphmem-backup.json"
FORMAT = 1
_DATA = "data"


@dataclass
class BackupInfo:
    """What a backup holds (the manifest)."""

    path: str
    created: str
    schema_version: int
    embedder: str | None
    embedder_fingerprint: str | None
    memories: int
    versions: int
    events: int
    files: dict[str, str] = field(default_factory=dict)
    format: int = FORMAT

    @property
    def size(self) -> int:
        root = Path(self.path) / _DATA
        return sum((root / name).stat().st_size for name in self.files)


def backup(store: StoreCore, directory: str | os.PathLike[str]) -> BackupInfo:
    """Write a consistent snapshot of ``store`` to ``directory`` (new or empty)."""
    if store.path == ":memory:":
        raise StoreError("an in-memory store has no files to back up; export it instead")
    with _staged(Path(directory), what="backup directory") as scratch:
        graph = store._graph
        with graph.db.snapshot():
            stats = store.stats()
            meta = graph.meta()
            graph.db.export_unlocked(scratch / _DATA)
        info = BackupInfo(
            path=str(directory), created=utcnow().isoformat(),
            schema_version=stats.schema_version, embedder=stats.embedder,
            embedder_fingerprint=meta.get("embedder_fingerprint"),
            memories=stats.memories, versions=stats.versions, events=stats.events,
            files=_hashes(scratch / _DATA),
        )
        body = {k: v for k, v in asdict(info).items() if k != "path"}
        (scratch / MANIFEST).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    return info


def read_manifest(directory: str | os.PathLike[str]) -> BackupInfo:
    """The manifest of a backup, checked: format, schema version and every file's hash."""
    root = Path(directory)
    path = root / MANIFEST
    if not root.is_dir():
        raise StoreError(f"backup {root} does not exist or is not a directory")
    if not path.is_file():
        raise StoreError(f"{root} is not a graphmem backup: it has no {MANIFEST}")
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        info = BackupInfo(path=str(root), **body)
    except (ValueError, TypeError) as exc:
        raise StoreError(f"{path} is not a valid backup manifest: {exc}") from None
    if info.format > FORMAT:
        raise StoreError(f"backup {root} has format {info.format}; this graphmem reads "
                         f"format {FORMAT} and older: upgrade graphmem to restore it")
    if info.schema_version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"backup {root} holds schema v{info.schema_version}, newer than this graphmem's "
            f"v{SCHEMA_VERSION}: upgrade graphmem to restore it"
        )
    data = root / _DATA
    found = _hashes(data) if data.is_dir() else {}
    for name, digest in sorted(info.files.items()):
        if name not in found:
            raise StoreError(f"backup {root} is incomplete: {_DATA}/{name} is missing")
        if found[name] != digest:
            raise StoreError(f"backup {root} is damaged: {_DATA}/{name} does not match "
                             "its checksum in the manifest")
    return info


def restore(directory: str | os.PathLike[str], target: str | os.PathLike[str], *,
            settings: Settings | None = None) -> BackupInfo:
    """Create the database ``target`` (new or empty) from the backup in ``directory``."""
    info = read_manifest(directory)
    with _staged(Path(target), what="database directory") as scratch:
        pool = (settings.buffer_pool_mb if settings else 256) * 1024 * 1024
        Database.import_into(scratch / Database.FILE_NAME, Path(directory) / _DATA,
                             buffer_pool=pool)
        # Opening migrates an older schema; the counts prove the import is whole.
        graph = KuzuGraph(str(scratch), buffer_pool_mb=pool >> 20)
        try:
            counts = graph.counts()
            fingerprint = graph.meta().get("embedder_fingerprint")
        finally:
            graph.close()
        got = (sum(counts["by_kind"].values()), counts["versions"], counts["events"],
               fingerprint)
        want = (info.memories, info.versions, info.events, info.embedder_fingerprint)
        if got != want:
            raise StoreError(f"restoring {directory} gave (memories, versions, events, "
                             f"fingerprint) {got}, the manifest says {want}")
    return info


@contextlib.contextmanager
def _staged(target: Path, *, what: str) -> Iterator[Path]:
    """A scratch directory beside ``target`` (new or empty) that becomes ``target`` when
    the block succeeds and is removed when it fails."""
    _check_new(target, what=what)
    scratch = target.parent / f".{target.name}.partial-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        yield scratch
        with contextlib.suppress(FileNotFoundError):
            target.rmdir()  # an empty directory the user made for it
        os.replace(scratch, target)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _check_new(path: Path, *, what: str) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise StoreError(f"{what} {path} already exists and is not empty; "
                         "choose a new path or move it away")
    if not path.parent.is_dir():
        raise StoreError(f"directory {path.parent} does not exist; create it first")
    if not os.access(path.parent, os.W_OK):
        raise StoreError(f"cannot write in {path.parent}: it is not writable")


def _hashes(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        digest = hashlib.sha256()
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        out[file.relative_to(root).as_posix()] = digest.hexdigest()
    return out


def manifest_json(info: BackupInfo) -> dict[str, Any]:
    """The manifest as printed by ``graphmem backup --json``."""
    return {**asdict(info), "bytes": info.size,
            "created": datetime.fromisoformat(info.created).isoformat()}
