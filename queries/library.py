"""The analyst's library of named queries: the ``*.cypher`` files of this directory and
beside each its SQL text (``NAME.sql``) for the PostgreSQL engine. The format, the
parameter types and how a store runs them are ``graphmem.named``'s; this package
registers the directory under the ``graphmem.named_queries`` entry point, so
``MemoryStore.named_query``, ``graphmem query NAME`` and the sidecar find it. The tests
hold the two texts of each query to each other: the same parameters and constants in
both, and the same rows on both engines for every query, and for every owner-scoped
query that it sees nothing of another owner (in a graph crossed across owners by hand).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from graphmem.named import NamedQuery, Param, cypher_name, find_query, load_queries

__all__ = ["QUERY_DIR", "NamedQuery", "Param", "cypher_name", "find_query", "load_queries",
           "run_named"]

QUERY_DIR = Path(__file__).resolve().parent


def run_named(store: Any, name: str, values: Mapping[str, Any] | None = None, *,
              as_dataframe: bool = False, owner: str | None = None) -> Any:
    """Run a named query with its parameters bound (read-only) on a ``MemoryStore``, or
    on a sidecar through ``graphmem.connect`` (which runs it within its token's owner):
    ``store.named_query(name, values, ...)``."""
    return store.named_query(name, values, as_dataframe=as_dataframe, owner=owner)
