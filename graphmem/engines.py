"""The engines graphmem runs on, and the choice between them.

``open_engine`` picks the engine a location names: a directory or ``":memory:"`` is the
embedded Kuzu engine (one writer process per directory); a ``postgresql://`` URL is the
PostgreSQL engine (any number of processes and hosts). psycopg is imported only when a
URL asks for PostgreSQL. ``Engine`` is the port every
engine implements; ``HnswProbe`` measures Kuzu's HNSW vector index against exact search
(``python -m eval.bench_recall``). ``restore_legacy_backup`` restores the backups
graphmem wrote before their format 2 (Kuzu's export, whichever engine held the store);
``copy_store`` moves a store's rows from one engine into another through the port.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from ._engine import Engine
from ._errors import SchemaVersionError, StoreError
from ._kuzu import SCHEMA_VERSION, KuzuEngine
from ._kuzu._hnsw import HnswProbe
from ._kuzu._restore import Opener, build_store
from ._settings import Settings
from ._transfer import copy_store

#: The newest schema a legacy backup (format 1: Kuzu's export) may hold.
LEGACY_SCHEMA_VERSION = SCHEMA_VERSION

__all__ = ["LEGACY_SCHEMA_VERSION", "Engine", "HnswProbe", "KuzuEngine", "copy_store",
           "is_postgres_url", "open_engine", "restore_legacy_backup"]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a Kuzu directory."""
    return isinstance(location, str) and location.startswith(_POSTGRES_SCHEMES)


def open_engine(location: str | os.PathLike[str], *, settings: Settings,
                read_only: bool = False, create: bool = True) -> Engine:
    """The engine for ``location``: a ``postgresql://`` URL (PostgreSQL), or a store
    directory or ``":memory:"`` (Kuzu). Without ``create`` a location that holds no
    store yet is an error (``StoreError``) and stays as it was."""
    if is_postgres_url(location):
        from ._postgres import PostgresEngine

        return PostgresEngine(str(location), read_only=read_only, create=create)
    path = os.fspath(location)
    problem = KuzuEngine.foreign_directory(path)
    if problem is not None:
        raise StoreError(problem)
    if not create and path != ":memory:" and not KuzuEngine.holds_store(path):
        raise StoreError(f"no graphmem database at {path}: open it for writing once to "
                         f"create it (`graphmem --db {path} init`, or MemoryStore(path))")
    return KuzuEngine(path, buffer_pool_mb=settings.buffer_pool_mb,
                      read_only=read_only)


def restore_legacy_backup(location: str | os.PathLike[str], schema_version: int,
                          open_file: Opener, *, label: str, files_label: str,
                          settings: Settings,
                          check: Callable[[tuple[int, int, int, str | None]], None]) -> None:
    """Restore a backup of format 1 (Kuzu's export of schema ``schema_version``, its files
    opened by ``open_file``) into ``location``: an empty directory, where the store is
    built with graphmem's own schema (none of the export's Cypher runs), opened (which
    migrates an older schema) and its rows checked; or a PostgreSQL URL, into which a
    store built so in a scratch directory is copied through the port in one transaction.
    ``check`` sees the built store's (memories, versions, events, embedder fingerprint)
    first, and may refuse it by raising."""
    if schema_version > LEGACY_SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{label} holds schema v{schema_version}, newer than this graphmem's "
            f"v{LEGACY_SCHEMA_VERSION}: upgrade graphmem to restore it")
    pool_mb = settings.buffer_pool_mb
    if not is_postgres_url(location):
        check(build_store(Path(location), schema_version, open_file, label=label,
                          files_label=files_label, pool_mb=pool_mb))
        return
    with tempfile.TemporaryDirectory(prefix="graphmem-restore-") as tmp:
        scratch = Path(tmp) / "db"
        scratch.mkdir()
        check(build_store(scratch, schema_version, open_file, label=label,
                          files_label=files_label, pool_mb=pool_mb))
        built = open_engine(str(scratch), settings=settings, read_only=True)
        try:
            target = open_engine(location, settings=settings)
            try:
                copy_store(built, target, keys=False)
            finally:
                target.close()
        finally:
            built.close()
