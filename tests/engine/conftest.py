"""The engines the contract suite runs on: every engine must pass every test in this folder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graphmem._engine import Engine
from graphmem._kuzu import KuzuEngine

#: name -> how to open a fresh engine in a temporary directory
ENGINES: dict[str, Callable[[Path], Engine]] = {
    "kuzu": lambda root: KuzuEngine(str(root / "db"), buffer_pool_mb=128),
    "kuzu-memory": lambda root: KuzuEngine(":memory:", buffer_pool_mb=128),
}


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    opened = ENGINES[request.param](tmp_path)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def disk_engine(tmp_path: Path) -> Iterator[Engine]:
    """An engine that keeps its data in files under ``tmp_path`` (for byte checks)."""
    opened = ENGINES["kuzu"](tmp_path)
    try:
        yield opened
    finally:
        opened.close()
