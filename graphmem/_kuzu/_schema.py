"""The store's schema, its version (kept in the ``Meta`` table) and the migrations between versions.

``SCHEMAS[v]`` is the complete DDL of version ``v`` (kept so tests can build an old
database); ``MIGRATIONS[v]`` lifts a database from ``v - 1`` to ``v``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import pyarrow as pa

from .._engine import ChangeSet
from .._errors import SchemaVersionError
from .._records import EVENT_COLUMNS, MEMORY_COLUMNS, VERSION_COLUMNS
from ._db import Database
from ._journal import NEW_ROW, ChangeJournal, ring_body

__all__ = [
    "CHANGE_TYPES",
    "CHANGE_TYPES_V9",
    "ENTITY_TYPES",
    "EVENT_TYPES",
    "FACT_TYPES",
    "FACT_TYPES_V8",
    "FTS_INDEX",
    "MEMORY_TYPES",
    "MEMORY_TYPES_V3",
    "MEMORY_TYPES_V7",
    "MENTION_TYPES",
    "SCHEMAS",
    "SCHEMA_VERSION",
    "STAGE_TYPES",
    "VERSION_TYPES",
    "count_facts",
    "ensure_schema",
    "finish_facts",
    "remake_facts",
    "schema_version",
]

SCHEMA_VERSION = 10
FTS_INDEX = "memory_fts"

#: Column -> Kuzu type of each table (DDL and casts come from here). Memories, versions
#: and events are laid out as ``graphmem._records`` says (the one layout; the vector as
#: base64 text).
_KUZU_TYPES = {"str": "STRING", "json": "STRING", "bool": "BOOLEAN", "float": "DOUBLE",
               "int": "INT64", "time": "TIMESTAMP", "str[]": "STRING[]",
               "time[]": "TIMESTAMP[]", "vector": "STRING"}
MEMORY_TYPES: dict[str, str] = {c: _KUZU_TYPES[t] for c, t in MEMORY_COLUMNS.items()}
#: v8 adds the vectors of a memory's sentences ...
MEMORY_TYPES_V7: dict[str, str] = {c: t for c, t in MEMORY_TYPES.items() if c != "sentences"}
#: ... v5 the time windows a memory's text speaks of (starts and ends, in pairs) ...
MEMORY_TYPES_V3: dict[str, str] = {c: t for c, t in MEMORY_TYPES_V7.items()
                                   if c not in ("times_from", "times_to")}
#: ... v2 the entities ingest finds in a memory (for REFERENCES between shared ones), v3
#: the context a memory is indexed with (text of its session neighbours): v1's Memory
#: columns are the rest, for the migration tests to build an old database.
_MEMORY_V1: dict[str, str] = {c: t for c, t in MEMORY_TYPES_V3.items()
                              if c not in ("entities", "context")}
assert len(_MEMORY_V1) == 39, "v1 is frozen: a column added later leaves it out above"
#: v5: entities of the knowledge graph, per owner.
ENTITY_TYPES: dict[str, str] = {
    "id": "STRING", "owner": "STRING", "name": "STRING", "type": "STRING",
    "aliases": "STRING[]", "merges": "STRING", "created": "TIMESTAMP", "gone": "BOOLEAN",
}  # fmt: skip
#: v5: a memory mentions an entity (MENTIONS: Memory -> Entity).
MENTION_TYPES: dict[str, str] = {
    "role": "STRING", "weight": "DOUBLE", "surface": "STRING", "gone": "BOOLEAN",
}  # fmt: skip
#: v5: a fact, subject -[FACT]-> object between entities (``sources`` a list until v9) ...
FACT_TYPES_V8: dict[str, str] = {
    "id": "STRING", "owner": "STRING", "predicate": "STRING", "confidence": "DOUBLE",
    "valid_from": "TIMESTAMP", "valid_to": "TIMESTAMP", "recorded": "TIMESTAMP",
    "sources": "STRING[]", "rule": "STRING", "ended_by": "STRING", "gone": "BOOLEAN",
}  # fmt: skip
#: ... v9: the memories that state a fact as the JSON text of their ids (``_rows.
#: sources_text``), last. Kuzu 0.11.3's checkpoint after one new fact rewrote a list
#: property of the FACT table at a cost that grows with the table: 75 s at 159k facts
#: (100k memories), 0.3 s with the same ids as text (``_migrate_facts``'s note).
FACT_TYPES: dict[str, str] = {
    **{c: t for c, t in FACT_TYPES_V8.items() if c != "sources"}, "sources": "STRING",
}
#: v2 adds a staging table: lifecycle jobs COPY their decisions here and apply them with
#: one hash join (an id-list match in Kuzu is a cross product: ~0.5 s per 1k ids at 100k).
STAGE_TYPES: dict[str, str] = {
    "id": "STRING", "num": "DOUBLE", "flag": "BOOLEAN", "event_id": "STRING",
    "meta": "STRING", "reason": "STRING",
}  # fmt: skip
VERSION_TYPES: dict[str, str] = {c: _KUZU_TYPES[t] for c, t in VERSION_COLUMNS.items()}
EVENT_TYPES: dict[str, str] = {c: _KUZU_TYPES[t] for c, t in EVENT_COLUMNS.items()}


def _node_table(name: str, types: dict[str, str], *, if_missing: bool = False) -> str:
    columns = ", ".join(
        f"{column} {kind}" + (" PRIMARY KEY" if i == 0 else "")
        for i, (column, kind) in enumerate(types.items())
    )
    guard = " IF NOT EXISTS" if if_missing else ""
    return f"CREATE NODE TABLE{guard} {name}({columns})"


_V1_TAIL = [
    _node_table("Version", VERSION_TYPES),
    _node_table("LifecycleEvent", EVENT_TYPES),
    "CREATE REL TABLE HAS_VERSION(FROM Memory TO Version)",
    "CREATE REL TABLE SUPERSEDES(FROM Memory TO Memory, reason STRING, at TIMESTAMP)",
    """CREATE REL TABLE REFERENCES(FROM Memory TO Memory, source STRING, weight DOUBLE,
        at TIMESTAMP)""",
    """CREATE REL TABLE CO_OCCURS(FROM Memory TO Memory, weight DOUBLE, count INT64,
        source STRING, at TIMESTAMP)""",
    f"CALL CREATE_FTS_INDEX('Memory', '{FTS_INDEX}', ['subject', 'text'])",
]

SCHEMAS: dict[int, list[str]] = {
    1: [
        "CREATE NODE TABLE Meta(key STRING PRIMARY KEY, value STRING)",
        _node_table("Memory", _MEMORY_V1),
        *_V1_TAIL,
    ],
    2: [
        "CREATE NODE TABLE Meta(key STRING PRIMARY KEY, value STRING)",
        _node_table("Memory", MEMORY_TYPES_V3),
        *_V1_TAIL,
        _node_table("Stage", STAGE_TYPES),
    ],
    # v3 has no Kuzu FTS index: in Kuzu 0.11.3, once an indexed column was SET every later
    # COPY into the table fails ("duplicated primary key"), and SET on rows inserted by
    # CREATE can crash the process. Full-text recall uses graphmem's own BM25 index.
    3: [
        "CREATE NODE TABLE Meta(key STRING PRIMARY KEY, value STRING)",
        _node_table("Memory", MEMORY_TYPES_V3),
        *_V1_TAIL[:-1],
        _node_table("Stage", STAGE_TYPES),
    ],
}
# v4: edges are never deleted, only marked ``gone``. In Kuzu 0.11.3, deleting a
# relationship from a rel table after a checkpoint corrupts the table at the next one
# (any later scan of it segfaults); marking is safe, and a purge drops the marked rows.
_GONE_TABLES = ("SUPERSEDES", "REFERENCES", "CO_OCCURS")
SCHEMAS[4] = [
    "CREATE NODE TABLE Meta(key STRING PRIMARY KEY, value STRING)",
    _node_table("Memory", MEMORY_TYPES_V3),
    _node_table("Version", VERSION_TYPES),
    _node_table("LifecycleEvent", EVENT_TYPES),
    "CREATE REL TABLE HAS_VERSION(FROM Memory TO Version)",
    "CREATE REL TABLE SUPERSEDES(FROM Memory TO Memory, reason STRING, at TIMESTAMP, "
    "gone BOOLEAN)",
    "CREATE REL TABLE REFERENCES(FROM Memory TO Memory, source STRING, weight DOUBLE, "
    "at TIMESTAMP, gone BOOLEAN)",
    "CREATE REL TABLE CO_OCCURS(FROM Memory TO Memory, weight DOUBLE, count INT64, "
    "source STRING, at TIMESTAMP, gone BOOLEAN)",
    _node_table("Stage", STAGE_TYPES),
]

def _rel_table(name: str, source: str, target: str, types: dict[str, str]) -> str:
    columns = ", ".join(f"{column} {kind}" for column, kind in types.items())
    return f"CREATE REL TABLE {name}(FROM {source} TO {target}, {columns})"


# v5: the knowledge graph. Entities per owner (their merges as JSON, so that a merge can be
# undone), memories MENTION entities, facts relate entities with a validity in time; and a
# memory keeps the time windows its text speaks of. Like edges, mentions, facts and
# entities are marked gone, never deleted.
_KG_TABLES = [
    _node_table("Entity", ENTITY_TYPES),
    _rel_table("MENTIONS", "Memory", "Entity", MENTION_TYPES),
    _rel_table("FACT", "Entity", "Entity", FACT_TYPES_V8),
]
SCHEMAS[5] = [
    SCHEMAS[4][0],
    _node_table("Memory", MEMORY_TYPES_V7),
    *SCHEMAS[4][2:],
    *_KG_TABLES,
]
# v6: the same tables. The forget key leaves ``Meta`` for the key file beside the database
# (``KuzuEngine._move_forget_key``), and the store repairs the knowledge graph once
# (``kg_repair``): validities that a forgotten fact ended, and names only forgotten
# memories gave.
SCHEMAS[6] = SCHEMAS[5]
#: v7: what each write transaction changed, in a ring of rows (``_journal``): a recall
#: index saved beside the store catches up from it when it is opened again.
CHANGE_TYPES_V9: dict[str, str] = {
    "slot": "INT64", "seq": "INT64", "tag": "STRING", "ids": "STRING[]",
    "edge_ends": "STRING[]", "removed": "STRING[]", "accessed": "STRING[]", "bulk": "BOOLEAN",
}  # fmt: skip
_CHANGE_V9 = _node_table("Change", CHANGE_TYPES_V9)
SCHEMAS[7] = [*SCHEMAS[6], _CHANGE_V9]
#: v8: a memory keeps the vectors of its sentences (made when its text is written; the
#: memories of an older store have none until ``reembed`` makes them, and are searched
#: by their own vector alone).
SCHEMAS[8] = [SCHEMAS[7][0], _node_table("Memory", MEMORY_TYPES), *SCHEMAS[7][2:]]
_FACT_V8 = _rel_table("FACT", "Entity", "Entity", FACT_TYPES_V8)
_FACT_TABLE = _rel_table("FACT", "Entity", "Entity", FACT_TYPES)
#: v9: a fact's sources as text (``FACT_TYPES``).
SCHEMAS[9] = [_FACT_TABLE if s == _FACT_V8 else s for s in SCHEMAS[8]]
#: v10: a ring row says what its transaction changed in one text (``_journal``) instead
#: of four lists: setting them cost a field write at 100k memories ~0.9 ms where one
#: text costs ~0.3 ms, and a table without lists needs no check around checkpoints.
CHANGE_TYPES: dict[str, str] = {"slot": "INT64", "seq": "INT64", "tag": "STRING",
                                "body": "STRING"}
_CHANGE = _node_table("Change", CHANGE_TYPES)
SCHEMAS[10] = [_CHANGE if s == _CHANGE_V9 else s for s in SCHEMAS[9]]


#: where a FACT table made again (v9's, ``remake_facts``) is filled before it takes the
#: old one's place
_FACT_NEW = "FACT_v9"


def count_facts(db: Database, table: str = "FACT") -> int:
    """How many facts (rows of ``table``) the store holds."""
    return int(db.read(f"MATCH ()-[f:{table}]->() RETURN count(*)")[0][0])


def _make_facts_again(db: Database,
                      convert: Callable[[pa.Table], pa.Table] | None = None) -> None:
    """Fill a new FACT table (``_FACT_NEW``) with every fact (``convert``: what is done to
    the rows read first), checkpointed, then let it take the old one's place, in two steps
    that each survive a killed process: a new table left beside the old one is dropped
    when the store opens (``finish_facts``), or made again by v9's migration; one left
    alone takes the name FACT. (Dropping the old table in the transaction that filled the
    new one lost every fact when the process was killed in the checkpoint after it: Kuzu
    recovered the new table empty.)"""
    columns = [c for c in FACT_TYPES if c != "sources"]
    with db.snapshot():  # no write slips in between the read and the swap
        rows = db.read_arrow(
            "MATCH (a:Entity)-[f:FACT]->(b:Entity) RETURN a.id AS `from`, b.id AS `to`, "
            + ", ".join(f"f.{c} AS {c}" for c in columns) + ", f.sources AS sources")
        table = convert(rows) if convert is not None else rows
        with db.write() as tx:
            tx.changes = ChangeSet()  # no fact changes: nothing for a reader to catch up on
            tx.run(_FACT_TABLE.replace("TABLE FACT(", f"TABLE {_FACT_NEW}(", 1))
            if table.num_rows:
                tx.copy(_FACT_NEW, table)
        db.checkpoint()
        db.swap_tables("FACT", _FACT_NEW)


def remake_facts(db: Database) -> None:
    """Make the FACT table again, as it is. Kuzu 0.11.3 keeps a relationship table's rows
    by the node group of their ends, and the entities facts join are few (every fact of
    bench_writes' 100k memories lies in one node group of 1,085 entities): added a few at
    a time, the rows cost every checkpoint more. After 159k facts so added, a checkpoint
    following 10 new facts took 6.0 s, 0.54 s once the table was made again (2.3 s), and
    adding 1,000 memories to that store took 9-18 s a batch against 4.5-6.0
    (``eval.bench_grow``)."""
    _make_facts_again(db)


def finish_facts(db: Database) -> None:
    """Finish, on opening, a making of the FACT table that a killed process left: a new
    table beside the old one is dropped (the old one holds every fact), a new table alone
    takes the name FACT."""
    tables = {row[0] for row in db.read("CALL show_tables() RETURN name")}
    if _FACT_NEW not in tables or db.read_only:
        return
    if "FACT" in tables:
        db.run_auto(f"DROP TABLE {_FACT_NEW}")
    else:
        db.run_auto(f"ALTER TABLE {_FACT_NEW} RENAME TO FACT")
    db.checkpoint()


def _migrate_facts(db: Database) -> None:
    """v9: the FACT table made again with ``sources`` as text (``_make_facts_again``;
    1-2 s for 159k facts, where setting a new property row by row took 72 s and Kuzu
    crashed dropping the old one). A new table that holds fewer rows than the old one (a
    fill that did not finish) is made again."""
    from ._rows import sources_text

    def as_text(rows: pa.Table) -> pa.Table:
        texts = pa.array([None if ids is None else sources_text(ids)
                          for ids in rows.column("sources").to_pylist()], pa.string())
        return rows.drop_columns(["sources"]).append_column("sources", texts)

    tables = {row[0] for row in db.read("CALL show_tables() RETURN name")}
    kinds = {row[0]: row[1] for row in db.read("CALL table_info('FACT') RETURN name, type")
             } if "FACT" in tables else {}
    if "FACT" in tables and kinds.get("sources") != "STRING":
        if _FACT_NEW in tables and count_facts(db, _FACT_NEW) == count_facts(db):
            db.swap_tables("FACT", _FACT_NEW)
            return
        if _FACT_NEW in tables:
            db.run_auto(f"DROP TABLE {_FACT_NEW}")
        _make_facts_again(db, convert=as_text)
    else:
        finish_facts(db)


def _migrate_ring(db: Database) -> None:
    """v10: the ring made again with one text per row, in one transaction (a killed
    process leaves v9's ring, and the migration runs again). Its first row is a bulk
    change numbered after v9's last: a recall index saved at an older number rebuilds
    what it derived (the ring no longer holds what came after it)."""
    kinds = {row[0]: row[1] for row in db.read("CALL table_info('Change') RETURN name, type")}
    if kinds.get("body") == "STRING":
        return
    last = db.read("MATCH (c:Change) RETURN max(c.seq)")
    seq = int(last[0][0] or 0) + 1 if last else 1
    with db.write() as tx:  # no journal is open yet: this writes no ring row of its own
        tx.run("DROP TABLE Change")
        tx.run(_CHANGE)
        tx.run(NEW_ROW, {"slot": seq % ChangeJournal.SLOTS, "seq": seq,
                         "tag": secrets.token_hex(8), "body": ring_body(ChangeSet(bulk=True))})


#: version -> statements that lift a database from ``version - 1``.
MIGRATIONS: dict[int, list[str | Callable[[Database], None]]] = {
    2: [
        "ALTER TABLE Memory ADD entities STRING[]",
        "ALTER TABLE Memory ADD context STRING",
        _node_table("Stage", STAGE_TYPES),
    ],
    3: [f"CALL DROP_FTS_INDEX('Memory', '{FTS_INDEX}')"],
    4: [f"ALTER TABLE {table} ADD gone BOOLEAN" for table in _GONE_TABLES],
    # the entities and facts of stored memories are derived by the store after opening
    # (``kg_pending`` in Meta): extraction is Python, not Cypher
    5: ["ALTER TABLE Memory ADD times_from TIMESTAMP[]",
        "ALTER TABLE Memory ADD times_to TIMESTAMP[]",
        *_KG_TABLES,
        "MERGE (m:Meta {key: 'kg_pending'}) SET m.value = '1'"],
    6: ["MERGE (m:Meta {key: 'kg_repair'}) SET m.value = '1'"],
    # a process killed between the table and the version number finishes on reopening
    7: [_node_table("Change", CHANGE_TYPES, if_missing=True)],
    8: ["ALTER TABLE Memory ADD IF NOT EXISTS sentences STRING"],
    9: [_migrate_facts],
    10: [_migrate_ring],
}


def schema_version(db: Database) -> int | None:
    """The version recorded in the database, or None for an empty one."""
    tables = {row[0] for row in db.read("CALL show_tables() RETURN name")}
    if "Meta" not in tables:
        if tables:
            raise SchemaVersionError(
                f"database {db.path} holds tables but no graphmem schema; "
                "it was not created by graphmem"
            )
        return None
    rows = db.read("MATCH (m:Meta {key: 'schema_version'}) RETURN m.value")
    return int(rows[0][0]) if rows else None


def ensure_schema(db: Database, *, target: int = SCHEMA_VERSION) -> int:
    """Create the schema in an empty database or migrate an older one; return its version."""
    current = schema_version(db)
    if current is None:
        if db.read_only:
            raise SchemaVersionError(f"database {db.path} is empty and was opened read-only")
        # one transaction with the version row: a process killed while creating the
        # schema (statement by statement, a SIGTERM at the first write) left tables that
        # no later open got past ("Meta already exists in catalog"); one made so by an
        # older graphmem (tables, no version row, no memory) is finished here
        statements = SCHEMAS[target]
        if any(statement.startswith("CALL") for statement in statements):
            # an old version's schema (tests build them to migrate): Kuzu makes an index
            # in auto-commit mode alone
            for statement in statements:
                db.run_auto(statement)
            _set_version(db, target)
            return target
        with db.write() as tx:
            for statement in statements:
                tx.run(_if_missing(statement))
            tx.run(_SET_VERSION, {"v": str(target)})
        return target
    if current > target:
        raise SchemaVersionError(
            f"database {db.path} has schema version {current}, newer than this graphmem "
            f"understands ({target}); upgrade graphmem"
        )
    if current < target and db.read_only:
        raise SchemaVersionError(
            f"database {db.path} has schema version {current} and needs a migration to "
            f"{target}; open it once read-write"
        )
    for version in range(current + 1, target + 1):
        for step in MIGRATIONS[version]:
            if callable(step):
                step(db)
            else:
                db.run_auto(step)
        _set_version(db, version)
    return target


_SET_VERSION = "MERGE (m:Meta {key: 'schema_version'}) SET m.value = $v"


def _if_missing(statement: str) -> str:
    """A CREATE TABLE statement that leaves a table already there as it is."""
    for kind in ("NODE", "REL"):
        head = f"CREATE {kind} TABLE "
        if statement.startswith(head) and not statement.startswith(head + "IF NOT EXISTS"):
            return f"CREATE {kind} TABLE IF NOT EXISTS " + statement[len(head):]
    return statement


def _set_version(db: Database, version: int) -> None:
    db.run_auto(_SET_VERSION, {"v": str(version)})
