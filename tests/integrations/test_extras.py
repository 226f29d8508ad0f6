"""The adapters load only when asked for, and a missing framework is an ImportError that
says which extra installs it."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from tests.conftest import ROOT

ADAPTERS = [("langgraph", "langgraph", "langgraph"),
            ("llamaindex", "llamaindex", "llama_index"),
            ("pydantic_ai", "pydantic-ai", "pydantic_ai")]


@pytest.mark.parametrize(("module", "extra", "package"), ADAPTERS)
def test_a_missing_framework_names_its_extra(monkeypatch: pytest.MonkeyPatch, module: str,
                                             extra: str, package: str) -> None:
    name = f"graphmem.integrations.{module}"
    for loaded in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.setitem(sys.modules, loaded, None)  # None: "not installed"
    monkeypatch.setitem(sys.modules, package, None)
    monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ImportError, match=rf"pip install 'graphmem\[{extra}\]'"):
        importlib.import_module(name)


def test_importing_graphmem_imports_no_framework() -> None:
    code = ("import sys, graphmem, graphmem.integrations; print(sorted({m.split('.')[0] "
            "for m in sys.modules} & {'langgraph', 'llama_index', 'pydantic_ai'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "[]"
