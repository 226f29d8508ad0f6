"""The Kuzu adapter: the only package that talks to the database (``_db`` alone imports kuzu)."""

from ._db import Database, query_parameters
from ._graph import EDGE_KINDS, MEMORY_COLUMNS, Change, KuzuGraph, memory_from_row
from ._schema import FTS_INDEX, SCHEMA_VERSION, SCHEMAS

__all__ = [
    "EDGE_KINDS",
    "FTS_INDEX",
    "MEMORY_COLUMNS",
    "SCHEMAS",
    "SCHEMA_VERSION",
    "Change",
    "Database",
    "KuzuGraph",
    "memory_from_row",
    "query_parameters",
]
