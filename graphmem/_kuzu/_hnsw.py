"""Kuzu's HNSW vector index on a set of vectors, for the recall benchmark's comparison with
exact search (graphmem's vector channel is exact numpy search; this measures why)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ._db import Database

__all__ = ["HnswProbe"]


class HnswProbe:
    """A scratch Kuzu database in ``workdir`` holding ``vectors`` under an HNSW index."""

    def __init__(self, vectors: np.ndarray, workdir: Path) -> None:
        dim = int(vectors.shape[1])
        table = pa.table({"id": pa.array(np.arange(len(vectors))),
                          "vec": pa.FixedSizeListArray.from_arrays(
                              pa.array(vectors.astype(np.float32).ravel()), dim)})
        pq.write_table(table, workdir / "vectors.parquet")
        self._db = Database(str(workdir / "hnsw"), buffer_pool_mb=1024)
        self._db.run_auto(f"CREATE NODE TABLE Vec(id INT64 PRIMARY KEY, vec FLOAT[{dim}])")
        self._db.run_auto(f"COPY Vec FROM '{workdir / 'vectors.parquet'}'")
        start = time.perf_counter()
        self._db.run_auto("CALL CREATE_VECTOR_INDEX('Vec', 'vec_idx', 'vec', "
                          "metric := 'cosine')")
        #: seconds the index took to build
        self.build_s = time.perf_counter() - start

    def query(self, vector: np.ndarray, k: int) -> list[int]:
        """Positions of the ``k`` nearest vectors by the index."""
        rows = self._db.read("CALL QUERY_VECTOR_INDEX('Vec', 'vec_idx', $q, $k) "
                             "RETURN node.id", {"q": vector.tolist(), "k": k})
        return [int(r[0]) for r in rows]

    def close(self) -> None:
        self._db.close()
