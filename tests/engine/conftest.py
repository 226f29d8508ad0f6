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


@pytest.fixture(params=[*sorted(ENGINES), "postgres"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "postgres":
        from graphmem._postgres import PostgresEngine

        url = request.getfixturevalue("pg_url")
        opened: Engine = PostgresEngine(url)
    else:
        opened = ENGINES[request.param](tmp_path)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(params=["kuzu", "postgres"])
def disk_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An engine whose files can be read (for byte checks): Kuzu under ``tmp_path``,
    PostgreSQL in its data directory."""
    if request.param == "postgres":
        from graphmem._postgres import PostgresEngine

        opened: Engine = PostgresEngine(request.getfixturevalue("pg_url"))
    else:
        opened = ENGINES["kuzu"](tmp_path)
    try:
        yield opened
    finally:
        opened.close()


def stored_files(engine: Engine, tmp_path: Path) -> list[Path]:
    """The files that hold ``engine``'s data: Kuzu's directory, or the files of the
    PostgreSQL tables of the store's schema (and their TOAST and indexes), after a
    checkpoint."""
    if engine.path.startswith("postgresql"):
        import psycopg

        url = engine.db.url  # type: ignore[attr-defined]
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")  # pages in shared buffers reach the files
            root = Path(conn.execute("SHOW data_directory").fetchone()[0])  # type: ignore[index]
            # the schema's relations and their TOAST tables and indexes (not every TOAST
            # table of the database: other stores' schemas share the server)
            rows = conn.execute(
                "WITH own AS (SELECT c.oid, c.reltoastrelid FROM pg_class c JOIN pg_namespace n"
                " ON n.oid = c.relnamespace WHERE n.nspname = current_schema()), "
                "toast AS (SELECT reltoastrelid AS oid FROM own WHERE reltoastrelid <> 0 "
                "UNION SELECT indexrelid FROM pg_index WHERE indrelid IN "
                "(SELECT reltoastrelid FROM own)) "
                "SELECT pg_relation_filepath(oid) FROM (SELECT oid FROM own UNION "
                "SELECT oid FROM toast) r WHERE pg_relation_filepath(oid) IS NOT NULL"
            ).fetchall()
        return [p for (rel,) in rows for p in root.glob(rel + "*") if p.is_file()]
    return [p for p in (tmp_path / "db").rglob("*") if p.is_file()]
