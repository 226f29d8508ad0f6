"""Read-only SQL over the store's tables (``Engine.sql``): the named queries' SQL texts
and ``MemoryStore.sql``, for analysts on PostgreSQL."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._engine import CypherResult
from ._db import Database

__all__ = ["PostgresSql"]


class PostgresSql:
    """One reading statement in a read-only transaction (``Database.read_statement``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def run(self, query: str, params: Mapping[str, Any], *, timeout_s: float
            ) -> CypherResult:
        columns, rows = self._db.read_statement(query, params, timeout_s=timeout_s)
        return CypherResult(columns=columns, rows=rows)
