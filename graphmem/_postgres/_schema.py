"""The store's tables in PostgreSQL, their version (kept in ``meta``) and the migrations.

``SCHEMAS[v]`` is the complete DDL of version ``v``; ``MIGRATIONS[v]`` lifts a database
from ``v - 1``. Creation and migration run in one transaction under an advisory lock,
so that processes opening a new database together create it once.
"""

from __future__ import annotations

from .._errors import SchemaVersionError, StoreError
from .._records import EVENT_COLUMNS, MEMORY_COLUMNS, VERSION_COLUMNS
from ._db import Database

__all__ = ["SCHEMAS", "SCHEMA_VERSION", "TABLES", "ensure_schema", "sql_type", "store_schema"]

SCHEMA_VERSION = 4
#: graphmem's tables; a database or schema that holds any of them without ``meta`` is
#: not graphmem's.
TABLES = ("meta", "memories", "versions", "events", "edges", "entities", "mentions", "facts",
          "changes", "secrets")
#: Key of the advisory lock held while the schema is created or migrated.
_SCHEMA_LOCK = 0x6772_6D73  # "grms"

_SQL_TYPES = {"str": "text", "json": "text", "bool": "boolean", "float": "double precision",
              "int": "bigint", "time": "timestamptz", "str[]": "text[]",
              "time[]": "timestamptz[]", "vector": "vector"}
#: Ids sort byte-wise, as in Kuzu, whatever the database's collation.
_C = ' COLLATE "C"'
_ID_COLUMNS = {"id", "memory_id", "event_id"}


def sql_type(kind: str) -> str:
    return _SQL_TYPES[kind]


def _table(name: str, columns: dict[str, str], key: str) -> str:
    body = ", ".join(f'"{c}" {sql_type(t)}{_C if c in _ID_COLUMNS else ""}'
                     + (" NOT NULL" if c == key else "") for c, t in columns.items())
    return f'CREATE TABLE "{name}" ({body}, PRIMARY KEY ("{key}"))'


#: v4 adds the vectors of a memory's sentences; v1's memories have the other columns.
_MEMORY_V1 = {c: t for c, t in MEMORY_COLUMNS.items() if c != "sentences"}

SCHEMAS: dict[int, list[str]] = {
    1: [
        "CREATE TABLE meta (key text PRIMARY KEY, value text)",
        _table("memories", _MEMORY_V1, "id"),
        "CREATE INDEX memories_owner ON memories (owner)",
        "CREATE INDEX memories_status ON memories (status)",
        _table("versions", VERSION_COLUMNS, "id"),
        "ALTER TABLE versions ADD FOREIGN KEY (memory_id) REFERENCES memories (id)",
        "CREATE INDEX versions_memory ON versions (memory_id, seq)",
        _table("events", EVENT_COLUMNS, "event_id"),
        "CREATE INDEX events_memory ON events (memory_id)",
        'CREATE INDEX events_time ON events ("timestamp", event_id)',
        # One table for every edge between memories, keyed by kind and ends; ``owner``
        # is the source's (co-occurrences are stored once, smaller id first).
        f"""CREATE TABLE edges (
            kind text NOT NULL CHECK (kind IN ('references', 'co_occurs', 'supersedes')),
            src text{_C} NOT NULL REFERENCES memories (id),
            dst text{_C} NOT NULL REFERENCES memories (id),
            owner text, weight double precision NOT NULL DEFAULT 1,
            count bigint NOT NULL DEFAULT 1, source text, reason text, at timestamptz,
            PRIMARY KEY (kind, src, dst))""",
        "CREATE INDEX edges_dst ON edges (dst, kind)",
        "CREATE INDEX edges_owner ON edges (owner, kind)",
        f"""CREATE TABLE entities (
            id text{_C} PRIMARY KEY, owner text, name text NOT NULL, type text NOT NULL,
            aliases text[] NOT NULL DEFAULT '{{}}', merges text, created timestamptz)""",
        "CREATE INDEX entities_owner ON entities (owner)",
        f"""CREATE TABLE mentions (
            n bigint GENERATED ALWAYS AS IDENTITY,
            memory_id text{_C} NOT NULL REFERENCES memories (id),
            entity_id text{_C} NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            role text, weight double precision, surface text,
            PRIMARY KEY (memory_id, entity_id))""",
        "CREATE INDEX mentions_entity ON mentions (entity_id)",
        f"""CREATE TABLE facts (
            id text{_C} PRIMARY KEY, owner text, subject text{_C} NOT NULL,
            predicate text NOT NULL, object text{_C} NOT NULL,
            confidence double precision, valid_from timestamptz, valid_to timestamptz,
            recorded timestamptz, sources text[] NOT NULL DEFAULT '{{}}', rule text,
            ended_by text)""",
        "CREATE INDEX facts_owner ON facts (owner)",
        "CREATE INDEX facts_subject ON facts (subject)",
        "CREATE INDEX facts_object ON facts (object)",
        "CREATE INDEX facts_sources ON facts USING gin (sources)",
        # What every commit changed, for the other processes (``_changes``).
        """CREATE TABLE changes (
            seq bigserial PRIMARY KEY, txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
            origin text NOT NULL, ids text[], edge_ends text[], removed text[],
            bulk boolean NOT NULL DEFAULT false, at timestamptz NOT NULL DEFAULT now())""",
        "CREATE INDEX changes_txid ON changes (txid)",
    ],
}
#: version -> statements that lift a database from ``version - 1``.
MIGRATIONS: dict[int, list[str]] = {
    # v2: a recall's access counters travel apart from other changes (``accessed``)
    2: ["ALTER TABLE changes ADD COLUMN accessed text[]"],
}
SCHEMAS[2] = [*SCHEMAS[1], *MIGRATIONS[2]]
# v3: the store's secret keys (the forget key, the id key) get a table of their own, which
# no graphmem read, export or backup selects from: one place for every process and host
# that shares the database. The forget key leaves ``meta`` (where the views and every
# backup found it beside the digests), and the store repairs its knowledge graph once
# (``kg_repair``).
_SECRETS = ("CREATE TABLE secrets (n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            "purpose text NOT NULL, value text NOT NULL, UNIQUE (purpose, value))")
MIGRATIONS[3] = [
    _SECRETS,
    "INSERT INTO secrets (purpose, value) SELECT 'forget', value FROM meta "
    "WHERE key = 'forget_key'",
    "DELETE FROM meta WHERE key = 'forget_key'",
    "INSERT INTO meta (key, value) VALUES ('kg_repair', '1') ON CONFLICT (key) DO UPDATE "
    "SET value = excluded.value",
]
SCHEMAS[3] = [*SCHEMAS[2], _SECRETS]
# v4: a memory keeps the vectors of its sentences (made when its text is written; the
# memories of an older store have none until ``reembed`` makes them, and are searched by
# their own vector alone).
MIGRATIONS[4] = ["ALTER TABLE memories ADD COLUMN IF NOT EXISTS sentences text"]
SCHEMAS[4] = [*SCHEMAS[3], *MIGRATIONS[4]]


def search_path_entries(setting: str) -> list[str]:
    """The entries of a ``search_path`` setting as written (quotes kept), in order: a
    comma inside a quoted name does not end it."""
    entries, current, quoted = [], "", False
    for char in setting:
        if char == '"':
            quoted = not quoted  # a doubled quote inside a name toggles twice
        if char == "," and not quoted:
            entries.append(current.strip())
            current = ""
        else:
            current += char
    entries.append(current.strip())
    return [e for e in entries if e]


def store_schema(db: Database) -> str:
    """The schema that holds the store: the first one the search path names, which must
    exist. PostgreSQL itself skips a missing schema and creates tables in the next one
    (``public``, where pgvector lives), so a mistyped or not yet created schema would
    quietly put one group's memories into another's store; here it is an error.
    ``$user`` is skipped when the role has no schema of its name, as PostgreSQL does
    (the default search path is ``"$user", public``)."""
    setting = str(db.rows("SELECT current_setting('search_path')")[0][0])
    for entry in search_path_entries(setting):
        if entry in ("$user", '"$user"'):
            own = db.rows("SELECT to_regnamespace(quote_ident(current_user))::text")[0][0]
            if own is not None:
                return str(own)
            continue
        found = db.rows("SELECT to_regnamespace(%s)::text", (entry,))[0][0]
        if found is None:
            raise StoreError(
                f"schema {entry} does not exist in database {db.where}: it is the first on "
                "the search path (options=-c search_path=... in the URL, or the role's "
                "setting), and graphmem keeps a store only in that schema. Create it "
                f"(CREATE SCHEMA {entry}; a user with CREATE on the database can) or fix "
                "the search path")
        return str(found)
    raise StoreError(f"database {db.where} has no schema on its search path to keep a "
                     "store in; name one with options=-c search_path=NAME in the URL")


def _present(db: Database) -> set[str]:
    rows = db.rows("SELECT table_name FROM information_schema.tables "
                   "WHERE table_schema = current_schema() AND table_name = ANY(%s)",
                   (list(TABLES),))
    return {str(r[0]) for r in rows}


def schema_version(db: Database) -> int | None:
    """The version recorded in the database, or None for one without graphmem's tables."""
    present = _present(db)
    if "meta" not in present:
        if present:
            raise SchemaVersionError(
                f"database {db.where} holds tables named like graphmem's "
                f"({', '.join(sorted(present))}) but no graphmem schema; point graphmem at "
                "its own database or schema (options=-c search_path=NAME in the URL)")
        return None
    rows = db.rows("SELECT value FROM meta WHERE key = 'schema_version'")
    return int(rows[0][0]) if rows else None


def ensure_schema(db: Database, *, target: int = SCHEMA_VERSION, create: bool = True) -> int:
    """Create the tables in an empty schema (only with ``create``, never read-only) or
    migrate an older store; return its version. The schema itself must exist
    (``store_schema``)."""
    schema = store_schema(db)
    current = schema_version(db)
    if current == target:
        return target
    if current is not None and current > target:
        raise SchemaVersionError(
            f"database {db.where} has schema version {current}, newer than this graphmem "
            f"understands ({target}); upgrade graphmem")
    if current is None and (db.read_only or not create):
        raise StoreError(
            f"there is no graphmem store in schema {schema} of database {db.where} (no "
            "graphmem tables): reading creates none; open it for writing once to create "
            "it (`graphmem --db URL init`, or MemoryStore(URL))")
    if db.read_only:
        raise SchemaVersionError(
            f"database {db.where} has no graphmem schema at version {target} and was "
            "opened read-only; open it once read-write")
    with db.transaction() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        cur.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        if cur.fetchone() is None:
            try:
                cur.execute("CREATE EXTENSION vector SCHEMA public")
            except Exception as exc:
                raise StoreError(
                    f"database {db.where} lacks the pgvector extension and this user "
                    f"cannot create it ({exc}); have an administrator run "
                    "CREATE EXTENSION vector") from exc
            cur.execute("SELECT set_config('search_path', "
                        "current_setting('search_path') || ', public', true)")
        cur.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = "
                    "current_schema() AND table_name = 'meta'")
        if cur.fetchone() is None:
            cur.execute("SELECT quote_ident(current_schema())")
            found = cur.fetchone()
            if found is None or found[0] != schema:  # dropped since store_schema looked
                raise StoreError(f"schema {schema} of database {db.where} is gone; create "
                                 f"it again (CREATE SCHEMA {schema})")
            statements = SCHEMAS[target]
            start = target
        else:
            cur.execute("SELECT value FROM meta WHERE key = 'schema_version'")
            row = cur.fetchone()
            start = int(row[0]) if row else 0
            statements = [s for v in range(start + 1, target + 1) for s in MIGRATIONS[v]]
        if start != target or statements:
            for statement in statements:
                cur.execute(statement)
            cur.execute("INSERT INTO meta (key, value) VALUES ('schema_version', %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        (str(target),))
    db.reconfigure()
    return target
