"""Lists survive Kuzu 0.11.3's checkpoint (``graphmem/_kuzu/_db.py``'s notes): a checkpoint
that folds in both a list set on an older row and a new row with a list can give the new
row another row's list. The adapter reads such rows before and after each checkpoint and
sets again what changed; these tests write that mix through every path that checkpoints."""

from __future__ import annotations

import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graphmem import MemoryStore, Settings
from graphmem._kuzu._db import Database

TABLES = {"M": ("id", {"tf": "INT64[]", "tg": "STRING[]"})}


def _database(path: Path) -> Database:
    db = Database(str(path))
    if not db.read("CALL show_tables() WHERE name = 'M' RETURN name"):
        db.run_auto("CREATE NODE TABLE M(id INT64, tf INT64[], tg STRING[], PRIMARY KEY(id))")
    db.watch_lists(TABLES)
    return db


def _create(db: Database, key: int, tf: list[int]) -> None:
    with db.write() as tx:
        tx.created("M", [key])
        tx.run("CREATE (:M {id: $k, tf: CAST($tf AS INT64[]), tg: CAST($tg AS STRING[])})",
               {"k": key, "tf": tf, "tg": [str(x) for x in tf]})


def _set(db: Database, key: int, tf: list[int]) -> None:
    with db.write() as tx:
        tx.set_lists("M")
        tx.run("MATCH (m:M {id: $k}) SET m.tf = CAST($tf AS INT64[]), "
               "m.tg = CAST($tg AS STRING[])", {"k": key, "tf": tf, "tg": [str(x) for x in tf]})


def _rows(db: Database) -> dict[int, tuple[list[int], list[str]]]:
    return {r[0]: (r[1], r[2]) for r in db.read("MATCH (m:M) RETURN m.id, m.tf, m.tg")}


def _expected(values: dict[int, list[int]]) -> dict[int, tuple[list[int], list[str]]]:
    return {k: (v, [str(x) for x in v]) for k, v in values.items()}


def _holds(db: Database, path: Path, values: dict[int, list[int]]) -> None:
    """``db`` holds ``values``, and so does the file once closed (checkpointed) and opened."""
    assert _rows(db) == _expected(values)
    db.close()
    db = _database(path)
    assert _rows(db) == _expected(values)
    db.close()


def _base(path: Path) -> dict[int, list[int]]:
    """20 rows, checkpointed (closed)."""
    values = {i: [2000 + i] for i in range(20)}
    db = _database(path)
    for key, tf in values.items():
        _create(db, key, tf)
    db.close()
    return values


def _mixed(path: Path) -> tuple[Database, dict[int, list[int]]]:
    """``_base``'s rows, opened again: row 3's lists emptied, row 100 created with
    [2030] (the smallest mix found: unchecked, row 100 reads [2000], row 0's)."""
    values = _base(path)
    db = _database(path)
    _set(db, 3, [])
    _create(db, 100, [2030])
    return db, {**values, 3: [], 100: [2030]}


def test_a_new_row_keeps_its_list_beside_a_list_set_on_an_older_row(tmp_path: Path) -> None:
    path = tmp_path / "db"
    db, values = _mixed(path)
    db.checkpoint()
    assert db.lists_repaired >= 1  # the check ran and had something to set again
    _holds(db, path, values)


def test_many_new_rows_are_read_in_one_join(tmp_path: Path) -> None:
    path = tmp_path / "db"
    db, values = _mixed(path)
    for key in range(200, 280):  # past _KEYED_READS rows read one lookup each
        _create(db, key, [2000 + key % 30])
        values[key] = [2000 + key % 30]
    _holds(db, path, values)


@pytest.mark.parametrize("seed", range(12))
def test_random_mixes_of_new_rows_and_set_lists_survive_checkpoints(tmp_path: Path,
                                                                    seed: int) -> None:
    rnd = random.Random(seed)
    path = tmp_path / "db"
    values = _base(path)
    db = _database(path)
    new = 1000
    for step in range(24):
        tf = [2000 + rnd.randrange(40) for _ in range(rnd.choice([0, 1, 1, 2, 3]))]
        if rnd.random() < 0.5:
            key = rnd.choice(list(values))
            _set(db, key, tf)
        else:
            key, new = new, new + 1
            _create(db, key, tf)
        values[key] = tf
        if step % 8 == 7:
            db.checkpoint()
    db.close()  # Kuzu's checkpoint at close, checked too
    db = _database(path)
    assert _rows(db) == _expected(values)
    db.close()


_CRASH = """
import os, sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from tests.test_kuzu_lists import _create, _database, _set
db = _database(Path(sys.argv[1]))
_set(db, 3, [])
_create(db, 100, [2030])
os._exit(0)  # killed before any checkpoint: the WAL holds both writes
"""


def test_lists_replayed_from_a_crashed_writers_log_survive_the_next_checkpoint(
        tmp_path: Path) -> None:
    path = tmp_path / "db"
    values = _base(path)
    subprocess.run([sys.executable, "-c", _CRASH, str(path), str(Path(__file__).parents[1])],
                   check=True, timeout=120)
    values.update({3: [], 100: [2030]})
    db = _database(path)  # the log replays; the next checkpoint compares whole tables
    db.close()
    db = _database(path)
    assert _rows(db) == _expected(values)
    db.close()


def _user(db: Database, query: str) -> None:
    from graphmem._kuzu._guard import check_user_query

    checked = check_user_query(query, write=True)
    with db.write() as tx:
        tx.run_user(checked.text, {}, checked.plan)


@pytest.mark.parametrize("user_creates", [True, False])
def test_user_cypher_writes_are_checked_too(tmp_path: Path, user_creates: bool) -> None:
    """A user statement's rows are not known by key: a table where it created rows is
    compared whole; one where it only set lists has its known new rows read."""
    path = tmp_path / "db"
    values = _base(path)
    db = _database(path)
    if user_creates:
        _set(db, 3, [])
        _user(db, "CREATE (:M {id: 100, tf: [2030], tg: ['2030']})")
        assert db._lists.wholly == {"M"}
    else:
        _user(db, "MATCH (m:M {id: 3}) SET m.tf = [], m.tg = []")
        assert not db._lists.wholly  # nothing created: no table read whole
        _create(db, 100, [2030])
    db.checkpoint()
    assert db.lists_repaired >= 1
    _holds(db, path, {**values, 3: [], 100: [2030]})


def test_a_copy_after_a_list_set_keeps_the_copied_lists(tmp_path: Path) -> None:
    import pyarrow as pa

    path = tmp_path / "db"
    values = _base(path)
    db = _database(path)
    _set(db, 3, [])
    rows = {100 + i: [2020 + i % 20] for i in range(30)}
    with db.write() as tx:  # a COPY commits with a checkpoint of its own
        tx.copy("M", pa.table({"id": pa.array(list(rows), pa.int64()),
                               "tf": pa.array(list(rows.values()), pa.list_(pa.int64())),
                               "tg": pa.array([[str(x) for x in v] for v in rows.values()],
                                              pa.list_(pa.string()))}))
    values.update({3: [], **rows})
    _holds(db, path, values)


def test_lists_survive_the_reopen_after_a_rolled_back_write(tmp_path: Path) -> None:
    path = tmp_path / "db"
    db, values = _mixed(path)
    with pytest.raises(Exception, match="already exists"), db.write() as tx:
        tx.run("MATCH (m:M {id: 5}) SET m.tf = [1]")
        tx.run("CREATE (:M {id: 100})")  # fails: the file is opened again, which checkpoints
    _holds(db, path, values)


# -- through the store ---------------------------------------------------------------------
_NOW = datetime(2026, 3, 1, tzinfo=UTC)


def _store(path: Path) -> MemoryStore:
    return MemoryStore(path, embedder="hashing", clock=lambda: _NOW,
                       settings=Settings(persist_index=False))


def _lists(store: MemoryStore) -> dict[str, tuple[object, ...]]:
    return {m.id: (m.tags, m.entities, m.times_from, m.times_to, m.superseded_by)
            for m in store.memories()}


@pytest.mark.parametrize("seed", range(6))
def test_an_agents_mixed_writes_keep_every_memorys_lists_across_reopening(
        tmp_path: Path, seed: int) -> None:
    # found from outside: 4 of 6 such runs reopened with 3-6 memories holding another's
    # tags, entities or times
    rnd = random.Random(seed)
    path = tmp_path / "db"
    names = ["Nadia", "Omar", "Caroline", "Melanie", "Ikeja", "Porto", "Oslo", "Acme"]

    def text() -> str:
        a, b = rnd.sample(names, 2)
        return f"{a} met {b} in {rnd.randrange(1990, 2030)} about project {rnd.randrange(99)}."

    with _store(path) as store:
        ids = [store.add(text(), tags=[f"t{i}"], created=_NOW - timedelta(days=i)).id
               for i in range(25)]
    with _store(path) as store:
        for _ in range(30):
            roll = rnd.random()
            if roll < 0.4:
                ids.append(store.add(text(), tags=[f"n{len(ids)}", "new"]).id)
            elif roll < 0.6:
                store.update(rnd.choice(ids), text="An undated note, nothing more.")
            elif roll < 0.8:
                store.update(rnd.choice(ids), tags=[] if rnd.random() < 0.5 else ["x"])
            else:
                store.update(rnd.choice(ids), text=text())
        written = _lists(store)
    with _store(path) as store:
        assert _lists(store) == written
