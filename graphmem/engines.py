"""The engines graphmem runs on, for code that chooses or measures one.

``KuzuEngine`` is the embedded default (one directory, one writer process). ``Engine`` is
the port every engine implements; ``HnswProbe`` measures Kuzu's HNSW vector index
against exact search (``python -m eval.bench_recall``).
"""

from ._engine import Engine
from ._kuzu import KuzuEngine
from ._kuzu._hnsw import HnswProbe

__all__ = ["Engine", "HnswProbe", "KuzuEngine"]
