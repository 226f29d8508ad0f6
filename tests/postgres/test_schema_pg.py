"""The PostgreSQL schema's versions: a migration lifts an older database in place
keeping its rows, a newer database or a schema holding other tables is refused and left
as it was, and processes creating a new store together create it once. Where the store
lives: the schema the search path names, which must exist (never ``public`` instead),
and only an open for writing creates the tables."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from click.testing import CliRunner

from graphmem import MemoryStore, SchemaVersionError, StoreError
from graphmem._postgres import _schema
from graphmem._postgres._db import Database
from graphmem.cli import cli
from tests._postgres import fresh_schema, with_schema


def _version(url: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert row is not None
        return str(row[0])


def test_a_migration_lifts_an_older_database(pg_url: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    with MemoryStore(pg_url, embedder="hashing") as store:
        kept = store.add("The greenhouse pump runs at dusk", owner="ann")
    current, target = _schema.SCHEMA_VERSION, _schema.SCHEMA_VERSION + 1
    monkeypatch.setitem(_schema.MIGRATIONS, target, [
        "ALTER TABLE memories ADD COLUMN shade text",
        "UPDATE memories SET shade = 'green'"])
    db = Database(pg_url)
    try:
        assert _schema.schema_version(db) == current
        assert _schema.ensure_schema(db, target=target) == target
        assert _schema.ensure_schema(db, target=target) == target  # once
        assert db.rows("SELECT id, shade FROM memories") == [(kept.id, "green")]
    finally:
        db.close()
    assert _version(pg_url) == str(target)


def test_a_version_1_store_is_migrated_and_keeps_its_memories(pg_url: str) -> None:
    db = Database(pg_url)
    try:
        assert _schema.ensure_schema(db, target=1) == 1
    finally:
        db.close()
    with psycopg.connect(pg_url) as conn:
        conn.execute("INSERT INTO changes (origin, ids) VALUES ('old', ARRAY['urn:x'])")
    with MemoryStore(pg_url, embedder="hashing") as store:
        memory = store.add("Nadia prefers green tea", owner="ann")
        assert store.stats().schema_version == _schema.SCHEMA_VERSION
    with MemoryStore(pg_url, embedder="hashing") as one, \
            MemoryStore(pg_url, embedder="hashing") as two:
        two.recall("tea", owner="ann", record_access=False)
        one.recall("green tea", owner="ann", record_access=True)
        one.flush()
        assert two.get(memory.id).access_count == 1
    assert _version(pg_url) == str(_schema.SCHEMA_VERSION)


def test_a_newer_database_is_refused_and_left_alone(pg_url: str) -> None:
    with MemoryStore(pg_url, embedder="hashing") as store:
        store.add("Nadia prefers green tea", owner="ann")
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="schema version 99, newer than"):
        MemoryStore(pg_url, embedder="hashing")
    assert _version(pg_url) == "99"


def test_tables_that_are_not_graphmem_s_are_refused(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        conn.execute("CREATE TABLE memories (id int PRIMARY KEY)")
    with pytest.raises(SchemaVersionError, match="no graphmem schema"):
        MemoryStore(pg_url, embedder="hashing")
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM information_schema.tables WHERE "
                            "table_schema = current_schema()").fetchone() == (1,)


def test_stores_opened_together_create_the_schema_once(pg_url: str) -> None:
    def open_and_add(n: int) -> str:
        with MemoryStore(pg_url, embedder="hashing") as store:
            return store.add(f"note {n}", owner="ann").id

    with ThreadPoolExecutor(4) as pool:
        ids = set(pool.map(open_and_add, range(4)))
    with MemoryStore(pg_url, embedder="hashing") as store:
        assert {m.id for m in store.memories()} == ids and len(ids) == 4
        # the id key too was made once, under a lock every process takes
        assert [p for p, _ in store._ctx.engine.secrets()] == ["ids"]
    assert _version(pg_url) == str(_schema.SCHEMA_VERSION)


def _graphmem_tables(server: str) -> dict[str, int]:
    """How many of graphmem's tables each schema of the server holds."""
    with psycopg.connect(server) as conn:
        rows = conn.execute("SELECT table_schema, count(*) FROM information_schema.tables "
                            "WHERE table_name = ANY(%s) GROUP BY 1",
                            (list(_schema.TABLES),)).fetchall()
    return {str(schema): int(n) for schema, n in rows}


def _gm(url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--db", url, "--embedder", "hashing", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("path", ["{missing}", '"$user",{missing}', '"{missing}",public'])
def test_a_missing_schema_is_an_error_that_names_it(pg_server: str, path: str) -> None:
    missing = "gm_missing_" + uuid.uuid4().hex[:8]
    url = with_schema(pg_server, path.format(missing=missing))
    before = _graphmem_tables(pg_server)
    for opening in ({}, {"read_only": True}, {"create": False}):
        with pytest.raises(StoreError, match=rf"schema \"?{missing}\"? does not exist in "
                                             rf"database .*CREATE SCHEMA \"?{missing}"):
            MemoryStore(url, embedder="hashing", **opening)
    code, output = _gm(url, "init")
    assert code == 1 and f"schema {missing} does not exist" in output.replace('"', "")
    code, output = _gm(url, "add", "Team A's pump runs at dusk")
    assert code == 1 and "CREATE SCHEMA" in output
    assert _graphmem_tables(pg_server) == before  # nothing went to public, nor anywhere


def test_search_path_entries_keep_quoted_names_whole() -> None:
    assert _schema.search_path_entries('"$user", team_a,"Team, B" ,') == [
        '"$user"', "team_a", '"Team, B"']


def test_the_store_lives_in_the_named_schema_only(pg_server: str) -> None:
    mixed = "Gm_Team_" + uuid.uuid4().hex[:6]
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{mixed}"')
    try:
        before = _graphmem_tables(pg_server)
        with MemoryStore(with_schema(pg_server, f'"$user","{mixed}"'),
                         embedder="hashing") as store:
            store.add("Team B waters the north bed", owner="b")
        after = _graphmem_tables(pg_server)
        assert after.pop(mixed) == len(_schema.TABLES)
        assert after == before
        # the unquoted name is another (lower-case) schema, which does not exist
        with pytest.raises(StoreError, match=f"schema {mixed} does not exist"):
            MemoryStore(with_schema(pg_server, mixed), embedder="hashing")
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{mixed}" CASCADE')


#: Commands that only read, each on a schema that holds no store.
READING = [("show", "urn:graphmem:x"), ("history", "urn:graphmem:x"), ("stats",),
           ("recall", "pump"), ("export",), ("lifecycle", "report"),
           ("lifecycle", "evaluate"), ("query", "MATCH (m:Memory) RETURN m.id"),
           ("learn", "--status")]


def test_reading_an_empty_schema_creates_nothing(pg_server: str) -> None:
    with fresh_schema(pg_server) as url:
        schema = url.rsplit("%3D", 1)[1]
        for opening in ({"read_only": True}, {"create": False}):
            with pytest.raises(StoreError, match=f"no graphmem store in schema {schema} "
                                                 ".*reading creates none"):
                MemoryStore(url, embedder="hashing", **opening)
        for command in READING:
            code, output = _gm(url, *command)
            assert code == 1, (command, output)
            assert f"no graphmem store in schema {schema}" in output, (command, output)
        assert schema not in _graphmem_tables(pg_server)
        code, output = _gm(url, "init")  # opening for writing creates it
        assert code == 0, output
        assert _graphmem_tables(pg_server)[schema] == len(_schema.TABLES)
        assert _gm(url, "--json", "stats")[0] == 0


def test_a_version_2_store_moves_its_forget_key_out_of_meta(pg_url: str) -> None:
    """v2 kept the forget key in ``meta`` beside the digests; v3 moves it to its own
    table, which no read, export or backup selects from."""
    from graphmem._redact import keyed_digest

    legacy = "cd" * 32
    with MemoryStore(pg_url, embedder="hashing") as store:
        gone = store.add("PIN 4071", owner="ann")
        store.forget(gone.id, confirm=True)
    with psycopg.connect(pg_url) as conn:  # as v2 left it
        conn.execute("DROP TABLE secrets")
        conn.execute("INSERT INTO meta VALUES ('forget_key', %s)", (legacy,))
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        conn.execute("UPDATE memories SET text_sha256 = %s WHERE id = %s",
                     (keyed_digest(legacy, "PIN 4071"), gone.id))
    with MemoryStore(pg_url, embedder="hashing") as store:
        assert store.stats().schema_version == _schema.SCHEMA_VERSION == 4
        assert "forget_key" not in store._ctx.engine.meta()
        assert store._ctx.engine.meta()["kg_repair"] == "0"
        assert [v for p, v in store._ctx.engine.secrets() if p == "forget"] == [legacy]
        assert store.verify_forgotten(gone.id, "PIN 4071")
        assert legacy not in repr(store.export())
    assert _version(pg_url) == "4"


def test_a_v3_store_gets_sentence_vectors_by_reembed(pg_url: str) -> None:
    """A v3 store (no ``sentences`` column) is migrated; its memories are searched by their
    own vectors until ``reembed`` makes their sentence vectors; new ones get them."""
    turn = "Caroline: I went to the LGBTQ support group. It was powerful."
    with MemoryStore(pg_url, embedder="hashing") as store:
        old = store.add(turn)
    with psycopg.connect(pg_url) as conn:  # as v3 left it
        conn.execute("ALTER TABLE memories DROP COLUMN sentences")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    with MemoryStore(pg_url, embedder="hashing") as store:
        assert store.stats().schema_version == 4

        def sentences() -> dict[str, str | None]:
            table = store._ctx.engine.scan(["id", "sentences"]).table
            return dict(zip(table.column("id").to_pylist(),
                            table.column("sentences").to_pylist(), strict=True))

        assert sentences() == {old.id: None}
        assert store.recall("support group", k=1)[0].memory.id == old.id
        new = store.add(turn + " Twice.")
        assert sentences()[new.id] is not None
        store.reembed("hashing")
        assert sentences()[old.id] is not None


def test_a_mistyped_database_fails_at_once_with_the_cause(pg_server: str) -> None:
    """Not after the pool's 15 s of retries with raw driver lines, and not without the
    server's reason."""
    import subprocess
    import sys
    import time
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(pg_server)
    wrong = urlunsplit(parts._replace(path="/graphmme_typo"))
    started = time.monotonic()
    with pytest.raises(StoreError, match='database "graphmme_typo" does not exist'):
        MemoryStore(wrong, embedder="hashing")
    assert time.monotonic() - started < 5
    out = subprocess.run([sys.executable, "-m", "graphmem", "--db", wrong, "stats"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and len(out.stderr.splitlines()) == 1, out.stderr
    assert 'database "graphmme_typo" does not exist' in out.stderr
