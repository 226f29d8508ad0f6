"""Search inside PostgreSQL (``PostgresEngine.search``) against the store's own recall:
pgvector (exact and HNSW) against a brute-force oracle, full text finds the words."""

from __future__ import annotations

import numpy as np

from graphmem import MemoryStore


def test_sql_search_agrees_with_brute_force(pg_url: str) -> None:
    texts = [f"note {i} about {w}" for i, w in enumerate(
        ["kestrels", "harbour cranes", "tea and biscuits", "the church spire", "voles"] * 8)]
    with MemoryStore(pg_url, embedder="hashing") as store:
        memories = store.add_many([{"text": t, "owner": "ann" if i % 2 else "bob"}
                                   for i, t in enumerate(texts)])
        search = store._ctx.engine.search  # type: ignore[attr-defined]
        ids, matrix = store.vectors(owner="ann")
        query = store.embed(["harbour cranes"])[0]
        scores = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
        oracle = [ids[i] for i in np.argsort(-scores, kind="stable")[:5]]
        exact = search.nearest(query, 5, owner="ann")
        assert set(exact) == set(oracle)
        search.ensure_hnsw(len(query))
        assert set(search.nearest(query, 5, owner="ann", hnsw=True)) == set(oracle)
        found = search.text("cranes in the harbour", 10, owner="bob")
        bob = {m.id for m in memories if m.owner == "bob" and "harbour" in m.text}
        assert set(found) == bob
