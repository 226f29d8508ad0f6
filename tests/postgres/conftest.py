"""The end-to-end suites again, on PostgreSQL: the modules here import the tests of
``tests/test_*.py`` and run them with these fixtures, whose stores live in a schema of
their own on a real PostgreSQL 18 with pgvector (``tests/_postgres.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graphmem import MemoryStore, Settings
from tests.conftest import SAMPLE, Clock


@pytest.fixture
def store(pg_url: str, clock: Clock, settings: Settings) -> Iterator[MemoryStore]:
    with MemoryStore(pg_url, embedder="hashing", clock=clock, settings=settings) as s:
        yield s


@pytest.fixture
def mem_store(store: MemoryStore) -> MemoryStore:
    return store


@pytest.fixture
def sample_store(pg_url: str, clock: Clock, settings: Settings) -> Iterator[MemoryStore]:
    from ingest.ump import import_ump

    with MemoryStore(pg_url, embedder="hashing", clock=clock, settings=settings) as s:
        import_ump(s, SAMPLE)
        yield s


#: Tests of the imported suites that are about Kuzu itself, and why they do not run here.
KUZU_ONLY = {
    "test_in_memory_store": "':memory:' is a Kuzu store",
    "test_cypher_is_read_only_and_checks_parameters": "Cypher is Kuzu's",
    "test_tombstone_then_forget": "inspects the graph through Cypher",
    "test_feedback_counts_boosts_and_pairs": "inspects the graph through Cypher",
    "test_a_cypher_write_over_http_says_the_route_only_reads": "Cypher is Kuzu's",
}


_STORES = {"store", "mem_store", "sample_store"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Imported tests that open no store through these fixtures would only run on Kuzu
    again: they are left out here; the Kuzu-only ones are skipped, saying why."""
    kept, dropped = [], []
    for item in items:
        function = getattr(item, "function", None)
        imported = "tests/postgres/" in str(item.path) and function is not None \
            and not function.__module__.startswith("tests.postgres")
        if imported and not _STORES & set(getattr(item, "fixturenames", ())):
            dropped.append(item)
            continue
        reason = KUZU_ONLY.get(getattr(item, "originalname", item.name))
        if imported and reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"Kuzu only: {reason}"))
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
