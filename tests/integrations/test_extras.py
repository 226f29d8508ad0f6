"""The adapters load only when asked for, and a missing framework is an ImportError that
says which extra installs it."""

from __future__ import annotations

import ast
import importlib
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


def test_importing_graphmem_imports_no_adapter() -> None:
    """``import graphmem`` and ``import graphmem.integrations`` import no adapter module
    (which would import its framework)."""
    for path in (ROOT / "graphmem" / "__init__.py",
                 ROOT / "graphmem" / "integrations" / "__init__.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = [node for node in ast.walk(tree)
                    if isinstance(node, ast.Import | ast.ImportFrom)]
        names = {getattr(node, "module", None) or "" for node in imported} | {
            alias.name for node in imported for alias in node.names}
        assert not {n for n in names if "integrations" in n or n.split(".")[0] in
                    {"langgraph", "llama_index", "pydantic_ai"}}, path
