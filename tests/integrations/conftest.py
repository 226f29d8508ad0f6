"""The store every adapter test starts from: an empty Kuzu store with the hashing
embedder (in memory; the sidecar tests serve one on disk)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graphmem import MemoryStore, Settings


@pytest.fixture
def memories() -> Iterator[MemoryStore]:
    with MemoryStore(":memory:", embedder="hashing", settings=Settings()) as store:
        yield store
