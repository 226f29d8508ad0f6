"""Every docstring example in the packages runs (numpydoc examples cannot drift).

``EXAMPLED`` names the modules that carry examples; a module that gains or loses its
examples must be added to or removed from it, so an example cannot vanish unnoticed, and
each module's test fails unless its examples actually ran.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import eval as eval_package
import graphmem
import ingest
import queries

SKIP = {"graphmem.__main__"}

#: Modules whose docstrings hold examples, and the least number of examples each runs.
EXAMPLED = {
    "eval.kg_extraction": 10,
    "eval.learning": 3,
    "eval.metrics": 10,
    "eval.runs": 15,
    "graphmem._extract._corrections": 9,
    "graphmem._extract._rules": 23,
    "graphmem._embed": 2,
    "graphmem._errors": 1,
    "graphmem._facade": 2,
    "graphmem._kg._calendar": 11,
    "graphmem._kg._entities": 3,
    "graphmem._kg._facts": 8,
    "graphmem._kg._ollama": 4,
    "graphmem._kg._patterns": 5,
    "graphmem._kg._resolve": 14,
    "graphmem._kg._scan": 2,
    "graphmem._kg._text": 5,
    "graphmem._kg._time": 12,
    "graphmem._kuzu._bindcheck": 1,
    "graphmem._kuzu._db": 2,
    "graphmem._kuzu._guard": 1,
    "graphmem._kuzu._rows": 4,
    "graphmem._learn._linear": 4,
    "graphmem._lifecycle._centrality": 1,
    "graphmem._lifecycle._results": 8,
    "graphmem._lifecycle._rules": 7,
    "graphmem._lifecycle._summary": 9,
    "graphmem._recall._actr": 12,
    "graphmem._recall._bm25": 2,
    "graphmem._recall._config": 7,
    "graphmem._recall._entities": 13,
    "graphmem._recall._fusion": 7,
    "graphmem._recall._hits": 2,
    "graphmem._recall._index": 2,
    "graphmem._recall._query": 8,
    "graphmem._recall._vectors": 2,
    "graphmem._recall._walk": 7,
    "graphmem._records": 3,
    "graphmem._redact": 5,
    "graphmem._arrow": 1,
    "graphmem._derive": 5,
    "graphmem._engine": 2,
    "graphmem._engine_rules": 6,
    "graphmem._graph_leave": 2,
    "graphmem._keys": 1,
    "graphmem._store._conversations": 1,
    "graphmem._store._knowledge": 3,
    "graphmem._store._memories": 2,
    "graphmem._store._transitions": 2,
    "graphmem._text": 1,
    "graphmem._input": 5,
    "graphmem._time": 14,
    "graphmem._views": 2,
    "graphmem.cli._lifecycle": 4,
    "graphmem.client._client": 1,
    "graphmem.integrations.langgraph": 8,
    "graphmem.integrations.llamaindex": 17,
    "graphmem.integrations.pydantic_ai": 11,
    "graphmem.mcpserver._backends": 2,
    "graphmem.mcpserver._screen": 4,
    "ingest.locomo": 8,
    "ingest.longmemeval": 4,
    "ingest.markdown": 3,
    "ingest.ump": 1,
    "queries.analytics": 32,
    "queries.draw": 18,
}


def _modules() -> list[str]:
    names = []
    for package in (graphmem, ingest, queries, eval_package):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name not in SKIP:
                names.append(info.name)
    return sorted(names)


def _examples(name: str) -> int:
    module = importlib.import_module(name)
    return sum(len(test.examples) for test in doctest.DocTestFinder().find(module))


def test_the_modules_with_examples_are_exactly_the_listed_ones() -> None:
    found = {name for name in _modules() if _examples(name)}
    assert sorted(found - set(EXAMPLED)) == [], "new examples: add the module to EXAMPLED"
    assert sorted(set(EXAMPLED) - found) == [], "a listed module lost all its examples"


@pytest.mark.parametrize("name", sorted(EXAMPLED))
def test_docstring_examples(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                            ) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRAPHMEM_EMBEDDER", "hashing")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted >= EXAMPLED[name], (
        f"{name}: {result.attempted} examples ran, {EXAMPLED[name]} expected")
