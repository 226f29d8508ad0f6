"""The engines graphmem runs on, and the choice between them.

``open_engine`` picks the engine a location names: a directory or ``":memory:"`` is the
embedded Kuzu engine (one writer process per directory); a ``postgresql://`` URL is the
PostgreSQL engine (any number of processes and hosts). psycopg is imported only when a
URL asks for PostgreSQL. ``Engine`` is the port every
engine implements; ``HnswProbe`` measures Kuzu's HNSW vector index against exact search
(``python -m eval.bench_recall``).
"""

from __future__ import annotations

import os

from ._engine import Engine
from ._errors import StoreError
from ._kuzu import KuzuEngine
from ._kuzu._hnsw import HnswProbe
from ._settings import Settings

__all__ = ["Engine", "HnswProbe", "KuzuEngine", "is_postgres_url", "open_engine"]

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
    if not create and path != ":memory:" and not os.path.exists(path):
        raise StoreError(f"no graphmem database at {path}: open it for writing once to "
                         f"create it (`graphmem --db {path} init`, or MemoryStore(path))")
    return KuzuEngine(path, buffer_pool_mb=settings.buffer_pool_mb,
                      read_only=read_only)
