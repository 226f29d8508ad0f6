"""The wheel, installed into a fresh virtual environment, works: ``import graphmem``,
``graphmem --help``, a first memory and a first recall, and the default MiniLM embedder
with torch absent (a plain install needs none).

The wheel is built from the tracked files the way ``python -m build`` builds it
(setuptools' PEP 517 backend; pip here, without build isolation, so that the test needs
no network). Its dependencies come from the environment running the tests, seen through
a ``.pth`` line: resolving them from the package registries takes minutes and gigabytes
(docs/benchmarks.md, "Install"), which is measured by hand, not on every run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.install


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
    assert out.returncode == 0, f"{command}: {out.stdout}\n{out.stderr}"
    return out


def _tracked(into: Path) -> Path:
    """A copy of the repository's tracked files (a build writes into its source tree)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=False)
    if listed.returncode:
        pytest.skip("not a git checkout: the wheel is built from the tracked files")
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; returns its bin directory."""
    base = tmp_path_factory.mktemp("install")
    source = _tracked(base / "src")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
          "--quiet", "-w", str(base / "dist"), str(source)])
    wheel = next((base / "dist").glob("graphmem-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("graphmem/minilm_reference.json", "ingest/samples/agent_memories.ump.json",
                   "queries/most_referenced.cypher", "graphmem/sidecar/ui/static/index.html"):
        assert needed in names, needed
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    bin_dir = venv / "bin"
    site = Path(_run([str(bin_dir / "python"), "-c",
                      "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "_deps.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--no-deps", "--quiet",
          str(wheel)])
    return bin_dir


def test_the_wheel_installs_and_runs(installed: Path, tmp_path: Path) -> None:
    env = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing"}
    env.pop("PYTHONPATH", None)
    where = _run([str(installed / "python"), "-c",
                  "import graphmem; print(graphmem.__file__)"], cwd=tmp_path, env=env)
    assert str(installed.parent) in where.stdout  # the wheel's copy, not the checkout
    usage = _run([str(installed / "graphmem"), "--help"], cwd=tmp_path, env=env)
    assert "Usage: graphmem" in usage.stdout and "recall" in usage.stdout
    _run([str(installed / "memory-compact-sweep"), "--help"], cwd=tmp_path, env=env)
    db = str(tmp_path / "first.db")
    added = _run([str(installed / "graphmem"), "--db", db, "add",
                  "Orchard stores data in PostgreSQL 16", "--kind", "semantic"],
                 cwd=tmp_path, env=env)
    memory_id = added.stdout.split()[-1]
    found = _run([str(installed / "graphmem"), "--db", db, "--json", "recall",
                  "which database does orchard use"], cwd=tmp_path, env=env)
    assert memory_id in found.stdout and "PostgreSQL 16" in found.stdout
    listed = _run([str(installed / "graphmem"), "--db", db, "query", "--list"],
                  cwd=tmp_path, env=env)
    assert "most_referenced" in listed.stdout


def test_the_default_embedder_needs_no_torch(installed: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    for name in ("torch", "transformers", "sentence_transformers"):
        (blocker / name).mkdir()
        (blocker / name / "__init__.py").write_text(
            f"raise ImportError('{name} is not installed')\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(blocker), "XDG_CACHE_HOME": str(tmp_path / "c")}
    env.pop("GRAPHMEM_EMBEDDER", None)
    code = ("import sys; from graphmem import MemoryStore\n"
            "with MemoryStore(':memory:') as store:\n"
            "    store.add('Orchard stores data in PostgreSQL 16')\n"
            "    hit = store.recall('which database does orchard use', k=1)[0]\n"
            "    print(store.embedder.name, hit.memory.text, 'torch' in sys.modules)\n")
    out = _run([str(installed / "python"), "-c", code], cwd=tmp_path, env=env)
    assert out.stdout.split() == ["sentence-transformers/all-MiniLM-L6-v2", "Orchard",
                                  "stores", "data", "in", "PostgreSQL", "16", "False"]
