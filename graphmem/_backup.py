"""Backups: a consistent snapshot of a store in a directory, and the way back.

A backup (format 2) is the store as graphmem's own records, one Parquet file a kind of
record (memories with their vectors, versions, events, edges, entities, mentions, facts,
store properties: ``_backup_tables``), read through the engine port in the engine's
snapshot, whichever engine holds the store, plus ``graphmem-backup.json``: the format,
the tables' schema version, the embedder fingerprint, the counts, and a SHA-256 of every
file. ``restore`` writes it through the port into a new store of either engine (a
directory: Kuzu; a ``postgresql://`` URL) and treats the backup as untrusted input: it
checks the manifest field by field, reads files only inside the backup and never through
a link, runs nothing the backup holds, checks each file's columns and every row against
graphmem's types, and the counts against the manifest, in one transaction of the new
store; a directory is built in a scratch directory beside the target and moved into
place only then. A failed restore leaves no half-made database behind, and a failed
backup leaves no half-made backup.

Format 1 (Kuzu's ``EXPORT DATABASE``, which graphmem wrote before format 2) is still
restored, as the legacy path (``graphmem.engines.restore_legacy_backup``): a Kuzu store
is built from it with graphmem's own schema (none of its Cypher runs), migrated and
checked, in the scratch directory, or in a temporary one and then copied through the
port into PostgreSQL.

A backup holds no secret key (they are not in the tables): a restored store makes new
ones when it needs them, and checks a text against a digest made before the backup
only once the original store's forget key is given back (``verify_forgotten`` says so).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ._backup_tables import TABLE_VERSION, TABLES, load_tables, write_tables
from ._discovery import process_alive
from ._errors import SchemaVersionError, StoreError
from ._models import Status
from ._settings import Settings
from ._time import utcnow
from .engines import LEGACY_SCHEMA_VERSION, is_postgres_url, open_engine, restore_legacy_backup

if TYPE_CHECKING:
    from ._context import StoreContext

__all__ = ["MANIFEST", "BackupInfo", "backup", "read_manifest", "restore", "staged_directory"]

MANIFEST = "graphmem-backup.json"
#: 2: graphmem's records through the engine port; 1: Kuzu's export (restored only).
FORMAT = 2
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
    #: of the memories, how many were forgotten (counted in the store written or
    #: restored, not kept in the manifest): a restored store recognises their texts in a
    #: chat imported again only once the original store's forget key is added back
    forgotten: int = 0

    @property
    def size(self) -> int:
        root = Path(self.path) / _DATA
        return sum((root / name).lstat().st_size for name in self.files)


def backup(ctx: StoreContext, directory: str | os.PathLike[str]) -> BackupInfo:
    """Write a consistent snapshot of the store to ``directory`` (new or empty)."""
    engine = ctx.engine
    _outside_the_store(Path(directory), engine.path)
    with staged_directory(Path(directory), what="backup directory",
                          make_parents=True) as scratch:
        # Pending writes (access counts of recent recalls) land first: inside the
        # snapshot their writer would wait for the lock it holds (30 s, then lost).
        ctx.before_read()
        with engine.snapshot():
            counts = engine.counts()
            meta = engine.meta()
            write_tables(engine, scratch / _DATA)
        info = BackupInfo(
            path=str(directory), created=utcnow().isoformat(),
            schema_version=TABLE_VERSION, embedder=ctx.embedder.name,
            embedder_fingerprint=meta.get("embedder_fingerprint"),
            memories=sum(counts.by_kind.values()), versions=counts.versions,
            events=counts.events, files=_hashes(scratch / _DATA),
            forgotten=counts.by_status.get(Status.FORGOTTEN.value, 0),
        )
        body = {k: v for k, v in asdict(info).items() if k not in _NOT_IN_MANIFEST}
        (scratch / MANIFEST).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    return info


def read_manifest(directory: str | os.PathLike[str]) -> BackupInfo:
    """The manifest of a backup, checked: its fields, format, schema version and every
    file's hash. Files are read only inside the backup, never through a link."""
    with _BackupFiles(Path(directory)) as files:
        return _read_manifest(files)


def _read_manifest(files: _BackupFiles) -> BackupInfo:
    info = _manifest(files.manifest(), where=str(files.root / MANIFEST), root=files.root)
    for name, digest in sorted(info.files.items()):
        if files.sha256(name) != digest:
            raise StoreError(f"backup {files.root} is damaged: {_DATA}/{name} does not "
                             "match its checksum in the manifest")
    return info


def restore(directory: str | os.PathLike[str], target: str | os.PathLike[str], *,
            settings: Settings | None = None) -> BackupInfo:
    """Create the store ``target`` (a new or empty directory, or an empty PostgreSQL
    store's URL) from the backup in ``directory``.

    Nothing the backup holds runs: each file is read as the table graphmem names, its
    columns and rows checked, and written through the engine port in one transaction
    (a legacy backup: see ``engines.restore_legacy_backup``); the counts must be those
    of the manifest.
    """
    settings = settings or Settings()
    with _BackupFiles(Path(directory)) as files:
        info = _read_manifest(files)
        label = f"backup {files.root}"

        def open_listed(name: str) -> IO[bytes]:
            if name not in info.files:
                raise StoreError(f"{label} is incomplete: {_DATA}/{name} is not listed in "
                                 "its manifest")
            return files.open(name)

        def check(got: tuple[int, int, int, str | None]) -> None:
            want = (info.memories, info.versions, info.events, info.embedder_fingerprint)
            if tuple(got) != want:
                raise StoreError(f"restoring {files.root} gave (memories, versions, events, "
                                 f"fingerprint) {tuple(got)}, the manifest says {want}")

        with _new_location(target) as location:
            if info.format == 1:
                restore_legacy_backup(location, info.schema_version, open_listed,
                                      label=label, files_label=f"{label}: {_DATA}",
                                      settings=settings, check=check)
            engine = open_engine(location, settings=settings)
            try:
                if info.format > 1:
                    load_tables(open_listed, engine, label=f"{label}: {_DATA}", check=check,
                                version=info.schema_version)
                forgotten = engine.counts().by_status.get(Status.FORGOTTEN.value, 0)
            finally:
                engine.close()
    return replace(info, forgotten=forgotten)


@contextlib.contextmanager
def _new_location(target: str | os.PathLike[str]) -> Iterator[str]:
    """Where the new store is made: a scratch directory beside ``target`` (new or
    empty), moved into place when the block succeeds; or ``target``'s URL, whose store
    the block writes in one transaction."""
    if is_postgres_url(target):
        yield str(target)
        return
    if os.fspath(target) == ":memory:":
        raise StoreError("a backup is restored into a directory or a PostgreSQL URL; an "
                         "in-memory store would be gone when it closes")
    with staged_directory(Path(target), what="database directory") as scratch:
        yield str(scratch)


# -- the manifest ----------------------------------------------------------------------
#: What ``BackupInfo`` says beside its manifest: where the backup is, and what was counted
_NOT_IN_MANIFEST = frozenset({"path", "forgotten"})
#: Larger manifests are refused before parsing (a real one is ~1.5 KB).
MANIFEST_LIMIT = 1 << 20
_MAX_FILES = 1000
_MAX_INT = 2**63 - 1
_FILE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}\.(?:parquet|cypher)$")
_TABLE_FILES = frozenset(t.file for t in TABLES)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _manifest(raw: bytes, *, where: str, root: Path) -> BackupInfo:
    """A manifest's bytes checked field by field (types, ranges, file names)."""
    def bad(message: str) -> StoreError:
        return StoreError(f"{where} is not a valid backup manifest: {message}")

    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise bad(str(exc)[:200]) from None
    if not isinstance(body, dict):
        raise bad(f"a JSON object was expected, not {type(body).__name__}")
    expected = {f.name for f in fields(BackupInfo)} - _NOT_IN_MANIFEST
    missing, unknown = sorted(expected - set(body)), sorted(set(body) - expected)
    if missing:
        raise bad(f"missing field(s) {', '.join(missing)}")
    if unknown:
        raise bad(f"unknown field(s) {', '.join(repr(k)[:40] for k in unknown[:5])}")

    def number(key: str, low: int) -> int:
        value = body[key]
        if type(value) is not int or not low <= value <= _MAX_INT:
            raise bad(f"field {key!r} must be a whole number from {low} to 2^63-1, "
                      f"not {_short(value)}")
        return value

    def text(key: str, *, optional: bool) -> str | None:
        value = body[key]
        if (value is None and optional) or (isinstance(value, str) and len(value) <= 1000):
            return value
        raise bad(f"field {key!r} must be {'a string or null' if optional else 'a string'} "
                  f"(at most 1000 characters), not {_short(value)}")

    created = text("created", optional=False)
    try:
        datetime.fromisoformat(created or "")
    except ValueError:
        raise bad(f"field 'created' must be an ISO date and time, not {_short(created)}"
                  ) from None
    listed = body["files"]
    if not isinstance(listed, dict) or len(listed) > _MAX_FILES:
        raise bad(f"field 'files' must be an object of at most {_MAX_FILES} file names, "
                  f"not {_short(listed)}")
    for name, digest in listed.items():
        if not _FILE.match(name):
            raise bad(f"file name {_short(name)} in 'files' is not the name of a backup "
                      "file (NAME.parquet or NAME.cypher, inside the backup)")
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise bad(f"the checksum of {name} must be 64 hex digits, not {_short(digest)}")
    info = BackupInfo(
        path=str(root), created=created or "", schema_version=number("schema_version", 1),
        embedder=text("embedder", optional=True),
        embedder_fingerprint=text("embedder_fingerprint", optional=True),
        memories=number("memories", 0), versions=number("versions", 0),
        events=number("events", 0), files=dict(listed), format=number("format", 1),
    )
    if info.format > FORMAT:
        raise StoreError(f"backup {root} has format {info.format}; this graphmem reads "
                         f"format {FORMAT} and older: upgrade graphmem to restore it")
    newest = TABLE_VERSION if info.format >= 2 else LEGACY_SCHEMA_VERSION
    if info.schema_version > newest:
        raise SchemaVersionError(
            f"backup {root} holds schema v{info.schema_version}, newer than this graphmem's "
            f"v{newest}: upgrade graphmem to restore it"
        )
    foreign = sorted(set(info.files) - _TABLE_FILES) if info.format >= 2 else []
    if foreign:
        raise bad(f"file {_short(foreign[0])} in 'files' is not a table of a format "
                  f"{info.format} backup ({', '.join(sorted(_TABLE_FILES))})")
    return info


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- files inside a backup -------------------------------------------------------------
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


class _BackupFiles:
    """The files of a backup directory, opened relative to it and never through a link:
    ``graphmem-backup.json`` and ``data/NAME`` only (``data`` must be a real directory,
    each file a regular one). The directory itself is the caller's choice and may be a
    link."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fd: int | None = None
        self._data: int | None = None

    def __enter__(self) -> _BackupFiles:
        if not self.root.is_dir():
            raise StoreError(f"backup {self.root} does not exist or is not a directory")
        try:
            self._fd = os.open(self.root, _DIR_FLAGS)
        except OSError as exc:
            raise StoreError(f"cannot read backup {self.root}: {exc.strerror}") from None
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in (self._data, self._fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._data = None

    def manifest(self) -> bytes:
        try:
            handle = self._open(MANIFEST, self._root_fd(), shown=MANIFEST)
        except FileNotFoundError:
            raise StoreError(f"{self.root} is not a graphmem backup: it has no {MANIFEST}"
                             ) from None
        with handle:
            raw = handle.read(MANIFEST_LIMIT + 1)
        if len(raw) > MANIFEST_LIMIT:
            raise StoreError(f"{self.root / MANIFEST} is not a valid backup manifest: it is "
                             f"larger than {MANIFEST_LIMIT} bytes")
        return raw

    def open(self, name: str) -> IO[bytes]:
        """``data/NAME`` for reading (a checked file name: no separators, no dots)."""
        if not _FILE.match(name):
            raise StoreError(f"backup {self.root}: {name!r} is not a backup file name")
        try:
            return self._open(name, self._data_fd(), shown=f"{_DATA}/{name}")
        except FileNotFoundError:
            raise StoreError(f"backup {self.root} is incomplete: {_DATA}/{name} is missing"
                             ) from None

    def sha256(self, name: str) -> str:
        digest = hashlib.sha256()
        with self.open(name) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()

    def _root_fd(self) -> int:
        if self._fd is None:
            raise StoreError("backup files used outside their block")
        return self._fd

    def _data_fd(self) -> int:
        if self._data is None:
            try:
                self._data = os.open(_DATA, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=self._root_fd())
            except FileNotFoundError:
                raise StoreError(f"backup {self.root} is incomplete: it has no {_DATA} "
                                 "directory") from None
            except OSError as exc:
                raise self._refusal(_DATA, self._root_fd(), _DATA, exc) from None
        return self._data

    def _open(self, name: str, dir_fd: int, *, shown: str) -> IO[bytes]:
        # O_NONBLOCK: opening a FIFO planted under the name must not hang.
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=dir_fd)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise self._refusal(name, dir_fd, shown, exc) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise StoreError(f"backup {self.root}: {shown} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")

    def _refusal(self, name: str, dir_fd: int, shown: str, exc: OSError) -> StoreError:
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode):
                return StoreError(f"backup {self.root}: {shown} is a symbolic link; a backup "
                                  "is read only from its own files (copy the backup with "
                                  "its files, not links)")
        return StoreError(f"backup {self.root}: cannot read {shown}: {exc.strerror or exc}")


@contextlib.contextmanager
def staged_directory(target: Path, *, what: str, make_parents: bool = False
                     ) -> Iterator[Path]:
    """A scratch directory beside ``target`` (new or empty) that becomes ``target`` when
    the block succeeds and is removed when it fails, whatever fails (a Kuzu error, an
    interrupt). Scratch directories left by a process that died (kill -9, a crash inside
    Kuzu) are removed first. ``make_parents``: make the directories it goes in (as
    `export --out` and `draw` do), else refuse."""
    _check_new(target, what=what, make_parents=make_parents)
    prefix = f".{target.name}.partial-"
    _remove_stale(target.parent, prefix)
    scratch = target.parent / f"{prefix}{os.getpid()}"
    _remove(scratch)
    try:
        scratch.mkdir()
    except OSError as exc:
        raise StoreError(f"cannot create {scratch}: {exc.strerror or exc}") from None
    try:
        yield scratch
        with contextlib.suppress(FileNotFoundError):
            target.rmdir()  # an empty directory the user made for it
        os.replace(scratch, target)
    except BaseException:
        _remove(scratch)
        raise


def _remove(path: Path) -> None:
    """Remove a file, link or directory tree (a link is removed, never followed)."""
    with contextlib.suppress(FileNotFoundError):
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            shutil.rmtree(path, ignore_errors=True)


def _remove_stale(parent: Path, prefix: str) -> None:
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            pid = entry.name.removeprefix(prefix)
            if entry.name.startswith(prefix) and pid.isdigit() and not process_alive(int(pid)):
                _remove(entry)




def _outside_the_store(target: Path, store: str) -> None:
    """Refuse a backup written inside the store's own directory: a copy there goes with
    the store's files, and a forget cannot reach into it."""
    if store == ":memory:" or "://" in store:
        return
    home = Path(store).resolve()
    if target.resolve() == home or home in target.resolve().parents:
        raise StoreError(f"backup directory {target} is inside the store at {store}; "
                         "write the backup outside it")


def _check_new(path: Path, *, what: str, make_parents: bool = False) -> None:
    try:
        if path.is_symlink():
            raise StoreError(f"{what} {path} is a symbolic link; give the directory it "
                             "points to, or a new path")
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise StoreError(f"{what} {path} already exists and is not empty; "
                             "choose a new path or move it away")
    except OSError as exc:
        raise StoreError(f"cannot use {what} {path}: {exc.strerror or exc}") from None
    if not path.parent.is_dir():
        if not make_parents:
            raise StoreError(f"directory {path.parent} does not exist; create it first")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot make directory {path.parent}: "
                             f"{exc.strerror or exc}") from None
    if not os.access(path.parent, os.W_OK):
        raise StoreError(f"cannot write in {path.parent}: it is not writable")


def _hashes(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for file in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
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
