"""The graphmem._kg package: its exported names, its independence from the store, the database
and recall, and its docstring examples (each module's examples must run)."""

from __future__ import annotations

import ast
import doctest
import importlib
from pathlib import Path

import pytest

import graphmem._kg as kg

PACKAGE = Path(kg.__file__).parent
#: graphmem modules the extraction layer may use: its own, the error tree, the Ollama client,
#: the helper that imports its names on first use.
ALLOWED = {"graphmem._errors", "graphmem._ollama", "graphmem._lazy"}
#: Modules with docstring examples, and the least number each runs.
EXAMPLED = {"_calendar": 11, "_entities": 3, "_facts": 8, "_ollama": 4, "_patterns": 5,
            "_resolve": 14, "_scan": 2, "_text": 5, "_time": 12}


def test_all_is_exactly_the_public_names() -> None:
    public = {name for name in dir(kg) if not name.startswith("_")}
    modules = {p.stem for p in PACKAGE.glob("_*.py")}
    assert set(kg.__all__) == public - modules
    assert kg.__all__ == sorted(kg.__all__, key=lambda n: (not n.isupper(), n[0].islower(), n))


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                continue  # the package's own modules
            base = "graphmem" if node.level == 2 else ""
            found.add(f"{base}{'.' if base and node.module else ''}{node.module or ''}")
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_dependency_on_the_store_the_database_or_recall(path: Path) -> None:
    imports = _imports(path)
    ours = {name for name in imports if name.startswith("graphmem")}
    assert ours <= ALLOWED, f"{path.name} imports {sorted(ours - ALLOWED)}"
    assert not {"kuzu", "torch", "sentence_transformers", "numpy"} & imports


@pytest.mark.parametrize("name", sorted(EXAMPLED))
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"graphmem._kg.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted >= EXAMPLED[name]


def test_every_module_with_examples_is_listed() -> None:
    found = set()
    for path in PACKAGE.glob("_*.py"):
        module = importlib.import_module(f"graphmem._kg.{path.stem}")
        if sum(len(t.examples) for t in doctest.DocTestFinder().find(module)):
            found.add(path.stem)
    assert found == set(EXAMPLED)


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_each_module_says_what_it_is_for_in_two_lines(path: Path) -> None:
    docstring = ast.get_docstring(ast.parse(path.read_text()), clean=False)
    assert docstring is not None and len(docstring.strip().splitlines()) == 2
    if path.name != "__init__.py":
        assert "__all__" in path.read_text()
