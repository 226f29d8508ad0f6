"""graphmem's layers, read from the source (every import statement, at module level or in a
function): the units of the package (its top-level modules and subpackages) import each
other without a cycle; an algorithm package imports only base modules and the algorithm
packages; and what stands outside the package (``eval/``, ``examples/``, ``notebooks/``)
uses public names only (scripts held in strings too)."""

from __future__ import annotations

import ast
import json
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The pure algorithms: texts and arrays in, results out; no store, no context.
ALGORITHMS = {"_text", "_kg", "_extract", "_recall", "_learn", "_lifecycle"}
#: What they may stand on: value types, errors, time, settings, the engine's record types,
#: arrow helpers, a lock, the Ollama client, names imported on first use. These import
#: only each other.
BASE = {"_errors", "_models", "_time", "_settings", "_arrow", "_sync", "_engine", "_ollama",
        "_lazy"}


def _imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """The absolute names of the modules (or their members) ``tree`` imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if not node.level:
                base = node.module or ""
            else:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            yield from (f"{base}.{alias.name}" for alias in node.names)


def unit_graph(root: Path, package: str = "graphmem") -> dict[str, set[str]]:
    """Each unit of ``package`` under ``root`` (``_recall`` for ``graphmem._recall._bm25``)
    and the other units it imports."""
    graph: dict[str, set[str]] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        unit = parts[1] if len(parts) > 1 and parts[1] != "__init__" else None
        if unit is None:
            continue
        found = graph.setdefault(unit, set())
        for name in _imported(ast.parse(path.read_text()), module, is_package):
            target = name.split(".")
            if target[0] == package and len(target) > 1 and target[1] != unit:
                found.add(target[1])
    return {unit: {t for t in targets if t in graph} for unit, targets in graph.items()}


def cycles(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        for other in graph.get(unit, ()):
            if other not in index:
                visit(other)
                low[unit] = min(low[unit], low[other])
            elif other in stack:
                low[unit] = min(low[unit], index[other])
        if low[unit] == index[unit]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == unit:
                    break
            if len(component) > 1:
                found.append(component)

    for unit in sorted(graph):
        if unit not in index:
            visit(unit)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return unit_graph(ROOT)


def test_no_unit_imports_another_that_imports_it_back(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


def test_a_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "graphmem"
    (package / "_low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_low" / "__init__.py").write_text("from ._algo import f\n")
    (package / "_low" / "_algo.py").write_text("def f():\n    from .._high import g\n")
    (package / "_high.py").write_text("from ._low import f\n\ndef g(): ...\n")
    (package / "_mid.py").write_text("from . import _high\n")
    found = unit_graph(tmp_path)
    assert found == {"_low": {"_high"}, "_high": {"_low"}, "_mid": {"_high"}}
    assert cycles(found) == [{"_low", "_high"}]


def test_the_algorithms_import_nothing_above_them(graph: dict[str, set[str]]) -> None:
    assert graph.keys() >= ALGORITHMS | BASE
    above = {unit: sorted(graph[unit] - ALGORITHMS - BASE) for unit in ALGORITHMS}
    assert above == {unit: [] for unit in ALGORITHMS}
    assert {unit: sorted(graph[unit] - BASE) for unit in BASE} == {unit: [] for unit in BASE}


def test_no_store_floor_below_the_store(graph: dict[str, set[str]]) -> None:
    """The components (``_store``) and their context are imported from above only."""
    below = ALGORITHMS | BASE | {"_derive", "_context", "_embed", "_input", "_keys"}
    assert sorted(u for u in below if graph[u] & {"_store", "_facade"}) == []
    assert sorted(u for u in below - {"_context"} if "_context" in graph[u]) == []



def test_the_client_stands_beside_the_store_not_on_it(graph: dict[str, set[str]]) -> None:
    """``graphmem.connect`` speaks HTTP: it checks input and hands out the value types,
    and needs none of the components or their context."""
    assert sorted(graph["client"] & {"_store", "_context", "_facade"}) == []

def _outside() -> Iterator[tuple[str, str]]:
    """The Python code outside the package that uses it: each file's name and source
    (a notebook's code cells, IPython's ``%`` and ``!`` lines left out)."""
    for path in sorted([*ROOT.glob("eval/*.py"), *ROOT.glob("examples/*.py")]):
        yield str(path.relative_to(ROOT)), path.read_text()
    for path in sorted(ROOT.glob("notebooks/*.ipynb")):
        for n, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "code":
                lines = "".join(cell["source"]).splitlines()
                code = "\n".join(x for x in lines if not x.lstrip().startswith(("%", "!")))
                yield f"{path.relative_to(ROOT)}[{n}]", code


def _with_scripts(tree: ast.AST) -> Iterator[ast.AST]:
    """``tree`` and the Python its strings hold that names graphmem (a script a
    benchmark runs in another process), each parsed."""
    yield tree
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and "graphmem" in node.value and "import" in node.value):
            try:
                yield from _with_scripts(ast.parse(textwrap.dedent(node.value)))
            except SyntaxError:
                continue


def test_eval_examples_and_notebooks_use_public_names_only() -> None:
    private = []
    trees = [(name, tree) for name, source in _outside()
             for tree in _with_scripts(ast.parse(source))]
    for name, tree in trees:
        for imported in _imported(tree, "outside", False):
            parts = imported.split(".")
            if parts[0] == "graphmem" and any(p.startswith("_") and not p.startswith("__")
                                              for p in parts[1:]):
                private.append(f"{name}: import {imported}")
        for node in ast.walk(tree):  # store._ctx, store._recall, ...
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                    and not (isinstance(node.value, ast.Name)
                             and node.value.id in ("self", "cls"))):
                private.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert private == []


def test_a_script_in_a_string_is_read_too() -> None:
    source = 'STEP = """\nimport sys\nfrom graphmem._transfer import copy_store\n"""\n'
    found = [list(_imported(tree, "outside", False)) for tree in _with_scripts(ast.parse(source))]
    assert found == [[], ["sys", "graphmem._transfer.copy_store"]]
