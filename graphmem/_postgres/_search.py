"""Search inside PostgreSQL, beside the store's own recall: nearest vectors by pgvector
(exact, or through an HNSW index) and full text by ``tsvector`` ranking. The store
recalls through its in-process index (kept current by the change log); these answer the
same channels in SQL, for measuring one against the other (``python -m eval.pg_locomo``)
and for deployments that would rather search in the database."""

from __future__ import annotations

import re

import numpy as np

from ._db import Database

__all__ = ["SqlSearch"]

_WORD = re.compile(r"[A-Za-z0-9]+")
_DOCUMENT = ("to_tsvector('english', coalesce(subject, '') || ' ' || coalesce(text, '') "
             "|| ' ' || coalesce(context, ''))")


class SqlSearch:
    """Ranked memory ids for a query vector or a query text, owner-scoped."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def ensure_hnsw(self, dim: int) -> None:
        """An HNSW index (cosine) over the vectors of width ``dim``."""
        self._db.run(f"CREATE INDEX IF NOT EXISTS memories_vec_hnsw_{int(dim)} ON memories "
                     f"USING hnsw ((vec::vector({int(dim)})) vector_cosine_ops) "
                     f"WHERE vector_dims(vec) = {int(dim)}")

    def nearest(self, vector: np.ndarray, k: int, *, owner: str | None = None,
                hnsw: bool = False, statuses: tuple[str, ...] = ("active",)) -> list[str]:
        """The ``k`` memories whose vectors are nearest ``vector`` by cosine distance:
        exact (a scan), or through the HNSW index (``ensure_hnsw`` first)."""
        dim = len(vector)
        column = f"vec::vector({dim})" if hnsw else "vec"
        guard = f"vector_dims(vec) = {dim}" if hnsw else "vec IS NOT NULL"
        owned = "AND owner = %(owner)s " if owner is not None else ""
        rows = self._db.rows(
            f"SELECT id FROM memories WHERE {guard} AND status = ANY(%(statuses)s) {owned}"
            f"ORDER BY {column} <=> %(q)s LIMIT %(k)s",
            {"q": np.asarray(vector, dtype=np.float32), "k": k, "owner": owner,
             "statuses": list(statuses)})
        return [str(r[0]) for r in rows]

    def text(self, query: str, k: int, *, owner: str | None = None,
             statuses: tuple[str, ...] = ("active",)) -> list[str]:
        """The ``k`` best full-text matches (any word of the query, ``ts_rank_cd``)."""
        words = _WORD.findall(query)
        if not words:
            return []
        owned = "AND owner = %(owner)s " if owner is not None else ""
        rows = self._db.rows(
            f"WITH q AS (SELECT to_tsquery('english', %(terms)s) AS q) "
            f"SELECT id FROM memories, q WHERE {_DOCUMENT} @@ q.q AND status = "
            f"ANY(%(statuses)s) {owned}ORDER BY ts_rank_cd({_DOCUMENT}, q.q) DESC, id "
            "LIMIT %(k)s", {"terms": " | ".join(words), "k": k, "owner": owner,
                            "statuses": list(statuses)})
        return [str(r[0]) for r in rows]
