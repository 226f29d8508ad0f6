"""The engines graphmem runs on, and the choice between them.

``open_engine`` picks the engine a location names: a directory or ``":memory:"`` is the
embedded Kuzu engine (one writer process per directory). ``Engine`` is the port every
engine implements; ``HnswProbe`` measures Kuzu's HNSW vector index against exact search
(``python -m eval.bench_recall``).
"""

from __future__ import annotations

import os

from ._engine import Engine
from ._kuzu import KuzuEngine
from ._kuzu._hnsw import HnswProbe
from ._settings import Settings

__all__ = ["Engine", "HnswProbe", "KuzuEngine", "open_engine"]


def open_engine(location: str | os.PathLike[str], *, settings: Settings,
                read_only: bool = False) -> Engine:
    """The engine for ``location``: a store directory or ``":memory:"`` (Kuzu)."""
    return KuzuEngine(os.fspath(location), buffer_pool_mb=settings.buffer_pool_mb,
                      read_only=read_only)
