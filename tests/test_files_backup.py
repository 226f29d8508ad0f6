"""A backup directory is untrusted input: restoring one runs none of its Cypher, reads
nothing outside it, refuses malformed manifests and tampered Parquet with a StoreError
that names the field, file or record, and leaves no scratch directory behind, whatever
fails and wherever.

The backups here are legacy ones (format 1: Kuzu's export, as graphmem wrote them before
format 2), whose restore runs the most code over foreign files; the tables of format 2
are tampered with in ``test_files_backup_tables``. Every hostile backup has a manifest
rewritten to match (an attacker who can edit the files can edit their checksums too).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import GraphmemError, MemoryStore, SchemaVersionError, StoreError
from graphmem._backup import MANIFEST, MANIFEST_LIMIT, _hashes
from graphmem._kuzu import SCHEMA_VERSION, Database
from graphmem._kuzu import _restore as restore_module
from graphmem._kuzu._schema import SCHEMAS
from graphmem.cli import cli

EXAMPLES = int(os.environ.get("GRAPHMEM_HOSTILE_EXAMPLES", "40"))
FAST = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])
TABLES = ["CO_OCCURS", "Change", "Entity", "FACT", "HAS_VERSION", "LifecycleEvent", "MENTIONS",
          "Memory", "Meta", "REFERENCES", "SUPERSEDES", "Stage", "Version"]


def export_of(store: MemoryStore) -> str:
    return json.dumps({**store.export(), "generated": None}, sort_keys=True, default=str)


def legacy_backup(store: MemoryStore, directory: Path) -> None:
    """A backup of ``store`` as graphmem wrote them before format 2: Kuzu's export of
    every table, and a manifest of format 1."""
    engine = store._ctx.engine
    directory.mkdir()
    engine.db.export_to(directory / "data")
    counts, meta = engine.counts(), engine.meta()
    (directory / MANIFEST).write_text(json.dumps({
        "created": "2026-06-01T00:00:00+00:00", "schema_version": SCHEMA_VERSION,
        "embedder": store.embedder.name, "embedder_fingerprint": meta["embedder_fingerprint"],
        "memories": sum(counts.by_kind.values()), "versions": counts.versions,
        "events": counts.events, "files": _hashes(directory / "data"), "format": 1}))


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A small busy store's legacy backup and the store's export."""
    base = tmp_path_factory.mktemp("original")
    with MemoryStore(base / "db", embedder="hashing") as store:
        a = store.add("Orchard runs on fly.io in Johannesburg").id
        b = store.add("The harvest calendar lives in Notion").id
        c = store.add("Nadia prefers TypeScript").id
        store.update(a, text="Orchard runs on fly.io in jnb")
        store.link(a, b)
        store.archive(c, reason="manual")
        store.recall("orchard", k=2)  # fixes the embedder fingerprint
        legacy_backup(store, base / "backup")
        yield base / "backup", export_of(store)


@pytest.fixture
def backup(original: tuple[Path, str], tmp_path: Path) -> Path:
    """A private copy of the backup to damage."""
    copy = tmp_path / "backup"
    shutil.copytree(original[0], copy, symlinks=True)
    return copy


def rehash(backup: Path) -> None:
    """Rewrite the manifest's checksums to match the files (as an attacker would)."""
    manifest = json.loads((backup / MANIFEST).read_text())
    files = {}
    for path in sorted((backup / "data").iterdir()):
        if path.is_file() and not path.is_symlink():
            files[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.name in manifest["files"]:
            files[path.name] = manifest["files"][path.name]
    (backup / MANIFEST).write_text(json.dumps({**manifest, "files": files}))


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".partial-" in p.name)


def refused(backup: Path, target: Path, match: str,
            kind: type[GraphmemError] = StoreError) -> StoreError:
    """Restore must fail with ``kind`` matching ``match``, leaving nothing behind."""
    with pytest.raises(kind, match=match) as caught:
        MemoryStore.restore_backup(backup, target)
    assert not target.exists() and leftovers(target.parent) == []
    return caught.value  # type: ignore[return-value]


def restored_equal(backup: Path, target: Path, export: str) -> None:
    MemoryStore.restore_backup(backup, target)
    with MemoryStore(target, embedder="hashing") as copy:
        assert export_of(copy) == export
        tables = sorted(r[0] for r in copy._ctx.engine.db.read("CALL show_tables() RETURN name"))
        assert tables == TABLES
    assert leftovers(target.parent) == []


# -- Cypher in the backup never runs ---------------------------------------------------------
HOSTILE_CYPHER = [
    "COPY (RETURN 'stolen' AS x) TO '{leak}';",
    "CREATE NODE TABLE Evil(id STRING PRIMARY KEY);",
    "MATCH (m:Memory) SET m.text = 'pwned';",
    "LOAD EXTENSION '{leak}.so';",
    "ATTACH '{leak}.kuzu' AS other (dbtype kuzu);",
    "CALL threads=1;",
    "\x00\xff not even text",
]


@pytest.mark.parametrize("file", ["schema.cypher", "copy.cypher", "index.cypher",
                                  "macro.cypher"])
@pytest.mark.parametrize("statement", HOSTILE_CYPHER)
def test_cypher_in_a_backup_never_runs(backup: Path, tmp_path: Path,
                                       original: tuple[Path, str], file: str,
                                       statement: str) -> None:
    leak = tmp_path / "leak.csv"
    path = backup / "data" / file
    text = path.read_text() if path.exists() else ""
    path.write_text(statement.format(leak=leak) + "\n" + text)  # first, before the COPYs
    rehash(backup)
    restored_equal(backup, tmp_path / "restored", original[1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup", "restored"]


def test_the_cypher_files_are_not_needed(backup: Path, tmp_path: Path,
                                         original: tuple[Path, str]) -> None:
    for path in (backup / "data").glob("*.cypher"):
        path.unlink()
    rehash(backup)
    restored_equal(backup, tmp_path / "restored", original[1])


# -- manifests -----------------------------------------------------------------------------
def manifest(backup: Path) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((backup / MANIFEST).read_text())
    return body


BAD_FIELDS: list[tuple[str, Any, str]] = [
    ("memories", "3", "field 'memories' must be a whole number"),
    ("memories", 3.0, "field 'memories' must be a whole number"),
    ("memories", True, "field 'memories' must be a whole number"),
    ("memories", -1, "field 'memories' must be a whole number"),
    ("memories", 2**64, "field 'memories' must be a whole number"),
    ("memories", 10**300, "field 'memories' must be a whole number"),
    ("versions", None, "field 'versions' must be a whole number"),
    ("events", [], "field 'events' must be a whole number"),
    ("schema_version", 0, "field 'schema_version' must be a whole number from 1"),
    ("schema_version", "3", "field 'schema_version' must be a whole number"),
    ("format", {}, "field 'format' must be a whole number"),
    ("created", 12, "field 'created' must be a string"),
    ("created", "yesterday", "field 'created' must be an ISO date"),
    ("embedder", 7, "field 'embedder' must be a string or null"),
    ("embedder_fingerprint", "x" * 5000, "field 'embedder_fingerprint' must be a string"),
    ("files", [], "field 'files' must be an object"),
    ("files", "Memory.parquet", "field 'files' must be an object"),
    ("files", {f"T{n}.parquet": "0" * 64 for n in range(1001)}, "at most 1000"),
    ("files", {"../x.parquet": "0" * 64}, "'../x.parquet' in 'files' is not the name"),
    ("files", {"/etc/passwd": "0" * 64}, "is not the name of a backup file"),
    ("files", {"sub/Memory.parquet": "0" * 64}, "is not the name of a backup file"),
    ("files", {"..": "0" * 64}, "is not the name of a backup file"),
    ("files", {"": "0" * 64}, "is not the name of a backup file"),
    ("files", {"Memory.parquet\x00": "0" * 64}, "is not the name of a backup file"),
    ("files", {"evil.so": "0" * 64}, "is not the name of a backup file"),
    ("files", {"Memory.parquet": 5}, "checksum of Memory.parquet must be 64 hex digits"),
    ("files", {"Memory.parquet": "XYZ"}, "checksum of Memory.parquet must be 64 hex"),
]


@pytest.mark.parametrize(("key", "value", "message"), BAD_FIELDS,
                         ids=[f"{k}-{n}" for n, (k, _, _) in enumerate(BAD_FIELDS)])
def test_a_malformed_manifest_field_is_named(backup: Path, tmp_path: Path, key: str,
                                             value: Any, message: str) -> None:
    (backup / MANIFEST).write_text(json.dumps({**manifest(backup), key: value}))
    error = refused(backup, tmp_path / "restored", "not a valid backup manifest")
    assert message in str(error)


RAW_MANIFESTS: list[tuple[bytes, str]] = [
    (b"[]", "a JSON object was expected, not list"),
    (b'"a string"', "a JSON object was expected, not str"),
    (b"null", "a JSON object was expected, not NoneType"),
    (b"17", "a JSON object was expected, not int"),
    (b"{}", "missing field(s) created, embedder"),
    (b"{not json", "Expecting property name"),
    (b"\xff\xfe{}", "codec can't decode"),
    (b"[" * 100_000 + b"]" * 100_000, "not a valid backup manifest"),
    (b'{"memories": 1' + b"0" * 5000 + b"}", "not a valid backup manifest"),
    (b'{"memories": 1e999}', "not a valid backup manifest"),
    (b" " * (MANIFEST_LIMIT + 1), f"larger than {MANIFEST_LIMIT} bytes"),
]


@pytest.mark.parametrize(("raw", "message"), RAW_MANIFESTS,
                         ids=[f"raw-{n}" for n in range(len(RAW_MANIFESTS))])
def test_a_manifest_that_is_not_a_manifest(backup: Path, tmp_path: Path, raw: bytes,
                                           message: str) -> None:
    (backup / MANIFEST).write_bytes(raw)
    error = refused(backup, tmp_path / "restored", "not a valid backup manifest")
    assert message in str(error)


def test_missing_unknown_and_newer(backup: Path, tmp_path: Path) -> None:
    body = manifest(backup)
    target = tmp_path / "restored"
    (backup / MANIFEST).write_text(json.dumps({k: v for k, v in body.items()
                                               if k != "events"}))
    refused(backup, target, r"missing field\(s\) events")
    (backup / MANIFEST).write_text(json.dumps({**body, "run": "rm -rf /"}))
    refused(backup, target, r"unknown field\(s\) 'run'")
    (backup / MANIFEST).write_text(json.dumps({**body, "schema_version": 2**40}))
    refused(backup, target, "newer than this graphmem", SchemaVersionError)
    (backup / MANIFEST).write_text(json.dumps({**body, "format": 3}))
    refused(backup, target, "has format 3; this graphmem reads format 2 and older")
    (backup / MANIFEST).write_text(json.dumps({**body, "format": 2, "schema_version": 1}))
    refused(backup, target, r"file 'CO_OCCURS_Memory_Memory\.parquet' in 'files' is not a "
            "table of a format 2 backup")
    (backup / MANIFEST).write_text(json.dumps({**body, "memories": body["memories"] + 1}))
    refused(backup, target, r"gave \(memories, versions, events, fingerprint\)")


nasty = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
    st.sampled_from([math.inf, 2**63, -(2**63), 10**40, "", "../../x", "\x00", "💥" * 50]),
    st.text(max_size=30), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=12), st.text(max_size=70), max_size=3),
)


@FAST
@given(changes=st.dictionaries(
    st.sampled_from(["created", "schema_version", "embedder", "embedder_fingerprint",
                     "memories", "versions", "events", "files", "format", "extra"]),
    nasty, min_size=1, max_size=3))
def test_any_manifest_gives_a_store_error_or_the_original(
        original: tuple[Path, str], changes: dict[str, Any]) -> None:
    base = Path(tempfile.mkdtemp(prefix="graphmem-manifest-"))
    try:
        backup = base / "backup"
        shutil.copytree(original[0], backup)
        body = {**manifest(backup), **changes}
        (backup / MANIFEST).write_text(json.dumps(body, allow_nan=True))
        target = base / "restored"
        try:
            MemoryStore.restore_backup(backup, target)
        except StoreError as exc:
            assert str(exc).strip() and not target.exists()
        else:
            with MemoryStore(target, embedder="hashing") as copy:
                assert export_of(copy) == original[1]
        assert leftovers(base) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- tampered Parquet -------------------------------------------------------------------------
def rewrite(backup: Path, name: str, change: Callable[[pa.Table], pa.Table]) -> None:
    path = backup / "data" / name
    pq.write_table(change(pq.read_table(path)), path)
    rehash(backup)


def set_column(table: pa.Table, column: str, values: list[Any]) -> pa.Table:
    index = table.schema.get_field_index(column)
    return table.set_column(index, column, pa.array(values, table.schema.field(index).type))


def invalid_utf8(table: pa.Table, column: str) -> pa.Table:
    """``column`` holding bytes that are not UTF-8 (Parquet readers do not check)."""
    n = table.num_rows
    offsets = pa.py_buffer(b"".join((3 * i).to_bytes(4, "little") for i in range(n + 1)))
    values = pa.Array.from_buffers(pa.string(), n, [None, offsets, pa.py_buffer(b"\xe6ab" * n)])
    return table.set_column(table.schema.get_field_index(column), column, values)


TAMPERED: list[tuple[str, Callable[[pa.Table], pa.Table], str]] = [
    ("Memory.parquet", lambda t: t.rename_columns(["a.ID", *t.column_names[1:]]),
     r"data/Memory\.parquet has the columns \['a\.ID'"),
    ("Memory.parquet", lambda t: t.drop_columns(["a.vec"]),
     r"data/Memory\.parquet has the columns"),
    ("Memory.parquet", lambda t: t.append_column("a.evil", pa.array(["x"] * t.num_rows)),
     r"data/Memory\.parquet has the columns"),
    ("Memory.parquet", lambda t: t.set_column(6, "a.hot", pa.array(["yes"] * t.num_rows)),
     r"data/Memory\.parquet: column a\.hot has type string, expected bool"),
    ("Version.parquet", lambda t: t.set_column(
        4, "a.at", t.column(4).cast(pa.timestamp("ns"))),
     r"data/Version\.parquet: column a\.at has type timestamp\[ns\], expected timestamp\[us\]"),
    ("Memory.parquet", lambda t: pa.concat_tables([t, t]),
     r"data/Memory\.parquet could not be loaded into table Memory"),
    ("REFERENCES_Memory_Memory.parquet",
     lambda t: set_column(t, "a.id", ["urn:nowhere"] * t.num_rows),
     r"data/REFERENCES_Memory_Memory\.parquet could not be loaded"),
    ("Memory.parquet", lambda t: set_column(t, "a.kind", ["evil"] * t.num_rows),
     r"memory 'urn:.*' is not a valid memory"),
    ("Memory.parquet", lambda t: set_column(t, "a.provenance", ["{not json"] * t.num_rows),
     r"memory 'urn:.*' is not a valid memory"),
    ("Memory.parquet", lambda t: set_column(t, "a.vec", ["!!not base64!!"] * t.num_rows),
     r"has a stored vector that is not base64 of finite float32 values"),
    ("Meta.parquet", lambda t: set_column(
        t, "a.value", ["2" if k == "schema_version" else v for k, v in
                       zip(t.column(0).to_pylist(), t.column(1).to_pylist(), strict=True)]),
     r"data/Meta\.parquet records schema version '2', the manifest says " + str(SCHEMA_VERSION)),
    ("Meta.parquet", lambda t: set_column(
        t, "a.value", ["abc" if k == "embedder_dim" else v for k, v in
                       zip(t.column(0).to_pylist(), t.column(1).to_pylist(), strict=True)]),
     r"Meta records embedder_dim 'abc', not a dimension"),
    ("Memory.parquet", lambda t: invalid_utf8(t, "a.text"),
     r"data/Memory\.parquet could not be read: .*Invalid UTF8"),
    ("Meta.parquet", lambda t: invalid_utf8(t, "a.value"),
     r"data/Meta\.parquet could not be read: .*Invalid UTF8"),
    ("LifecycleEvent.parquet", lambda t: t.slice(0, 0),
     r"gave \(memories, versions, events, fingerprint\)"),
]


@pytest.mark.parametrize(("name", "change", "message"), TAMPERED,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(TAMPERED)])
def test_tampered_parquet_is_refused_by_name(backup: Path, tmp_path: Path, name: str,
                                             change: Callable[[pa.Table], pa.Table],
                                             message: str) -> None:
    rewrite(backup, name, change)
    refused(backup, tmp_path / "restored", message)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_file_that_is_not_parquet(backup: Path, tmp_path: Path, damage: str) -> None:
    path = backup / "data" / "Version.parquet"
    data = path.read_bytes()
    path.write_bytes({"garbage": b"PAR1" + os.urandom(300) + b"PAR1",
                      "truncated": data[: len(data) // 2], "empty": b""}[damage])
    rehash(backup)
    refused(backup, tmp_path / "restored",
            r"data/Version\.parquet (is not a readable Parquet file|could not be read)")


def test_a_table_file_missing_from_the_manifest(backup: Path, tmp_path: Path) -> None:
    body = manifest(backup)
    del body["files"]["Stage.parquet"]
    (backup / MANIFEST).write_text(json.dumps(body))
    refused(backup, tmp_path / "restored",
            r"incomplete: data/Stage\.parquet is not listed in its manifest")


@FAST
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1,
                      max_size=4), name=st.sampled_from(["Memory.parquet", "Version.parquet",
                                                         "SUPERSEDES_Memory_Memory.parquet",
                                                         "Meta.parquet"]))
def test_flipped_bytes_give_a_store_error_or_a_store_that_works(
        original: tuple[Path, str], flips: list[tuple[int, int]], name: str) -> None:
    restore_flipped(original[0], name, flips, rehash)


def restore_flipped(original: Path, name: str, flips: list[tuple[int, int]],
                    rehash: Callable[[Path], None]) -> None:
    """A copy of the backup ``original`` with bytes of ``name`` flipped (the manifest
    rewritten by ``rehash``) gives a StoreError, or a store that works or says what is
    wrong; nothing is left behind."""
    base = Path(tempfile.mkdtemp(prefix="graphmem-flips-"))
    try:
        backup = base / "backup"
        shutil.copytree(original, backup)
        path = backup / "data" / name
        data = bytearray(path.read_bytes())
        for at, xor in flips:
            data[at % len(data)] ^= xor
        path.write_bytes(bytes(data))
        rehash(backup)
        target = base / "restored"
        try:
            MemoryStore.restore_backup(backup, target)
        except StoreError as exc:
            assert str(exc).strip() and not target.exists()
        else:  # the change was in a value: the store reads whole, or says what is wrong
            try:
                with MemoryStore(target, embedder="hashing") as copy:
                    copy.export()
                    copy.recall("orchard", k=3)
            except GraphmemError as exc:  # e.g. a flipped embedder name in Meta
                assert str(exc).strip()
        assert leftovers(base) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- links and special files in a backup --------------------------------------------------
def test_links_inside_a_backup_are_refused(backup: Path, tmp_path: Path,
                                           original: tuple[Path, str]) -> None:
    target = tmp_path / "restored"
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(backup, elsewhere)
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the backup\n")

    manifest_path = backup / MANIFEST
    manifest_path.unlink()
    manifest_path.symlink_to(elsewhere / MANIFEST)  # a valid manifest, but through a link
    refused(backup, target, "graphmem-backup.json is a symbolic link")
    manifest_path.unlink()
    shutil.copy(elsewhere / MANIFEST, manifest_path)

    memory = backup / "data" / "Memory.parquet"
    memory.unlink()
    memory.symlink_to(elsewhere / "data" / "Memory.parquet")  # same bytes, same checksum
    refused(backup, target, r"data/Memory\.parquet is a symbolic link")
    memory.unlink()
    shutil.copy(elsewhere / "data" / "Memory.parquet", memory)

    body = manifest(backup)  # a listed extra file that points outside: never read
    (backup / "data" / "notes.cypher").symlink_to(secret)
    body["files"]["notes.cypher"] = hashlib.sha256(secret.read_bytes()).hexdigest()
    (backup / MANIFEST).write_text(json.dumps(body))
    refused(backup, target, r"data/notes\.cypher is a symbolic link")
    (backup / "data" / "notes.cypher").unlink()
    shutil.copy(elsewhere / MANIFEST, manifest_path)

    shutil.rmtree(backup / "data")
    (backup / "data").symlink_to(elsewhere / "data")
    refused(backup, target, "data is a symbolic link")
    (backup / "data").unlink()
    shutil.copytree(elsewhere / "data", backup / "data")

    # The backup directory itself is the user's own choice: a link to it is fine.
    (tmp_path / "via-link").symlink_to(backup)
    restored_equal(tmp_path / "via-link", target, original[1])


def test_special_files_in_a_backup_do_not_hang(backup: Path, tmp_path: Path) -> None:
    path = backup / "data" / "Stage.parquet"
    path.unlink()
    os.mkfifo(path)
    refused(backup, tmp_path / "restored", r"data/Stage\.parquet is not a regular file")
    path.unlink()
    path.mkdir()
    refused(backup, tmp_path / "restored", r"data/Stage\.parquet is not a regular file")
    (backup / MANIFEST).unlink()
    os.mkfifo(backup / MANIFEST)
    refused(backup, tmp_path / "restored", "graphmem-backup.json is not a regular file")


def test_a_target_that_is_a_link_is_refused(backup: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "link").symlink_to(empty)
    with pytest.raises(StoreError, match="is a symbolic link"):
        MemoryStore.restore_backup(backup, tmp_path / "link")
    assert list(empty.iterdir()) == [] and leftovers(tmp_path) == []


# -- no scratch directory survives a failure ------------------------------------------------
class Boom(Exception):
    pass


@pytest.mark.parametrize("stage", ["schema", "copy", "open", "rows", "counts", "rename"])
@pytest.mark.parametrize("error", [Boom, KeyboardInterrupt, StoreError])
def test_a_failed_restore_leaves_no_scratch(backup: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch, stage: str,
                                            error: type[BaseException]) -> None:
    import graphmem._backup as backup_module
    import graphmem._kuzu._engine as kuzu_engine_module

    where: dict[str, tuple[Any, str]] = {
        "schema": (Database, "run_auto"),
        "copy": (restore_module, "_copy_table"),
        "open": (kuzu_engine_module, "KuzuEngine"),
        "rows": (restore_module, "check_rows"),
        "counts": (kuzu_engine_module.KuzuEngine, "counts"),
        "rename": (backup_module.os, "replace"),
    }
    fails_cleanly(backup, tmp_path, monkeypatch, where[stage], error)


def fails_cleanly(backup: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  patched: tuple[Any, str], error: type[BaseException]) -> None:
    """A restore whose ``patched`` step raises ``error`` raises it and leaves neither the
    target nor a scratch directory, and the next attempt restores."""
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise error("injected")

    monkeypatch.setattr(*patched, fail)
    target = tmp_path / "restored"
    with pytest.raises(error):
        MemoryStore.restore_backup(backup, target)
    monkeypatch.undo()
    assert not target.exists() and leftovers(tmp_path) == []
    MemoryStore.restore_backup(backup, target)  # and nothing blocks the next attempt


def test_a_scratch_left_by_a_dead_process_is_removed(backup: Path, tmp_path: Path) -> None:
    """kill -9 (or a crash inside Kuzu) skips every cleanup: the next restore beside the
    same target removes scratch directories whose process is gone, and only those."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = tmp_path / f".restored.partial-{int(dead.stdout)}"
    (stale / "graph.kuzu").mkdir(parents=True)
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as alive:
        try:
            busy = tmp_path / f".restored.partial-{alive.pid}"
            busy.mkdir()
            MemoryStore.restore_backup(backup, tmp_path / "restored")
            assert not stale.exists() and busy.is_dir()  # another live restore's is kept
        finally:
            alive.kill()


# -- the CLI ----------------------------------------------------------------------------------
@pytest.mark.parametrize("raw", [b"[]", b'{"files": 3}', b"\xff", b"{" * 50_000])
def test_cli_restore_of_a_hostile_manifest_is_one_error_line(backup: Path, tmp_path: Path,
                                                             raw: bytes) -> None:
    (backup / MANIFEST).write_bytes(raw)
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "new"), "restore-backup",
                                      str(backup)])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: ") and "not a valid backup manifest" in \
        result.output
    assert "Traceback" not in result.output and len(result.output.splitlines()) == 1
    assert not (tmp_path / "new").exists() and leftovers(tmp_path) == []


def test_the_schema_comes_from_graphmem_for_each_version(original: tuple[Path, str]) -> None:
    """What restore builds for the current version is exactly graphmem's own schema."""
    with tempfile.TemporaryDirectory() as scratch:
        db = Database(str(Path(scratch) / "db"), buffer_pool_mb=64)
        try:
            for statement in SCHEMAS[SCHEMA_VERSION]:
                db.run_auto(statement)
            files = restore_module.table_files(db)
        finally:
            db.close()
    assert sorted(t.file for t in files) == sorted(
        p.name for p in (original[0] / "data").glob("*.parquet"))
