"""Every docstring example in the packages runs (numpydoc examples cannot drift)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import eval as eval_package
import graphmem
import ingest
import queries

SKIP = {"graphmem.__main__"}


def _modules() -> list[str]:
    names = []
    for package in (graphmem, ingest, queries, eval_package):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name not in SKIP:
                names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
