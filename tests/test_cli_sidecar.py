"""The command line on a live store: `graphmem serve` holds the database, and the
commands work through it (found from <db>.sidecar.json, or named with --sidecar /
GRAPHMEM_SIDECAR_URL) instead of failing on Kuzu's lock; with a token, as its owner."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem import MemoryStore
from graphmem._discovery import discovery_path
from graphmem.cli import cli
from graphmem.client import Discovery, discover, write_discovery
from graphmem.sidecar import Tokens
from ingest.ump import SAMPLE_PATH, import_ump

from ._servers import free_port, running_sidecar, serve_process

ENV = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing"}
for name in ("GRAPHMEM_SIDECAR_URL", "GRAPHMEM_SIDECAR_TOKEN", "GRAPHMEM_DB"):
    ENV.pop(name, None)


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def gm(*args: str, env: dict[str, str] | None = None) -> Ran:
    """One command, in this process (the sidecar and its lock are another process's)."""
    chosen = env or ENV
    unset: dict[str, str | None] = {k: None for k in os.environ if k not in chosen}
    result = CliRunner().invoke(cli, list(args), env={**chosen, **unset})
    return Ran(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """`graphmem serve` on the sample corpus, in its own process."""
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        import_ump(store, SAMPLE_PATH)
    with serve_process(db, env=ENV) as (url, _):
        yield db, url


def test_commands_find_the_sidecar_that_holds_the_database(served: tuple[Path, str],
                                                           tmp_path: Path) -> None:
    db, url = served
    found = discover(db)
    assert found is not None and found.url == url and found.auth == "local"
    stats = gm("--db", str(db), "--json", "stats")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["memories"] == 301 and stats.stderr == ""
    shown = gm("stats", "--db", str(db))
    assert shown.returncode == 0 and shown.stdout.startswith("memories 301")
    link = tmp_path / "linked"  # the same database through a symbolic link
    link.symlink_to(db)
    linked = gm("--db", str(link), "--json", "stats")
    assert linked.returncode == 0 and json.loads(linked.stdout)["memories"] == 301, linked
    assert shown.stderr == f"note: the sidecar at {url} holds {db}; working through it\n"
    named = gm("--db", str(db), "--json", "query", "most_referenced", "--param", "limit=2")
    assert named.returncode == 0 and len(json.loads(named.stdout)) == 2
    cypher = gm("--db", str(db), "--json", "query", "MATCH (m:Memory) RETURN count(*) AS n")
    assert json.loads(cypher.stdout) == [{"n": 301}]
    added = gm("--db", str(db), "add", "Written while the sidecar serves", "--json")
    memory = json.loads(added.stdout)
    assert gm("--db", str(db), "--json", "show", memory["id"]).returncode == 0
    hits = json.loads(gm("--db", str(db), "--json", "recall", "written sidecar serves",
                         "-k", "1").stdout)
    assert hits[0]["memory"]["id"] == memory["id"]
    report = gm("--db", str(db), "lifecycle", "report")
    assert report.stdout.startswith("# Archivist Lifecycle Report")
    backup = gm("--db", str(db), "--json", "backup", str(tmp_path / "backup"))
    assert backup.returncode == 0, backup.stderr
    assert json.loads(backup.stdout)["memories"] == 302
    # learning: the sidecar serves it (the command was refused while one held the store)
    status = gm("--db", str(db), "--json", "learn", "--status")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["ranker"] is None
    learned = gm("--db", str(db), "--json", "learn")  # no feedback yet: the store says so
    assert learned.returncode == 1 and "nothing learned: ranker not trained" in learned.stderr
    # what needs the database itself says so, and changes nothing
    refused = gm("--db", str(db), "import", "ump", str(SAMPLE_PATH))
    assert refused.returncode == 1 and refused.stderr.endswith(
        f"works on the database itself, and the sidecar at {url} holds it: stop the "
        "sidecar, run the command, start it again\n")
    assert "Could not set lock" not in refused.stderr


def test_the_discovery_file_goes_with_the_server(served: tuple[Path, str]) -> None:
    db, _ = served
    assert discovery_path(db).exists()
    pid = discover(db).pid  # type: ignore[union-attr]
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + 60
    while discovery_path(db).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not discovery_path(db).exists()
    deadline = time.monotonic() + 60
    while True:  # the lock goes with the process
        stats = gm("--db", str(db), "--json", "stats")
        if stats.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert json.loads(stats.stdout)["memories"] == 301 and stats.stderr == ""


def test_a_stale_or_planted_discovery_file_is_ignored(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        store.add("one memory")
        store_id = store.store_id
    dead = Discovery(url=f"http://127.0.0.1:{free_port()}", store_id=store_id,
                     pid=os.getpid(), auth="local")
    write_discovery(db, dead)  # nothing listens there: the database is used
    stats = gm("--db", str(db), "--json", "stats")
    assert json.loads(stats.stdout)["memories"] == 1
    planted = discovery_path(db)
    for url in ("http://evil.example:4380", "https://127.0.0.1:4380"):
        planted.write_text(json.dumps({"url": url, "store_id": store_id,
                                       "pid": os.getpid()}))
        assert discover(db) is None, url
    write_discovery(db, dead)
    assert discover(db) == dead
    planted.chmod(0o666)  # anyone could have written it
    assert discover(db) is None


def test_another_store_behind_the_url_is_not_used(tmp_path: Path) -> None:
    db, other = tmp_path / "db", tmp_path / "other"
    with MemoryStore(db, embedder="hashing") as store:
        store.add("mine")
        store_id = store.store_id
    with MemoryStore(other, embedder="hashing") as elsewhere, running_sidecar(elsewhere) as url:
        elsewhere.add("theirs")
        elsewhere.add("theirs too")
        write_discovery(db, Discovery(url=url, store_id=store_id, pid=os.getpid(),
                                      auth="local"))
        stats = json.loads(gm("--db", str(db), "--json", "stats").stdout)
        assert stats["memories"] == 1  # its own database, not the other store's sidecar
        named = json.loads(gm("--sidecar", url, "--json", "stats").stdout)
        assert named["memories"] == 2  # unless the sidecar is named
        # ... but not beside a --db it does not serve: the write went to the other store
        for env in (ENV, {**ENV, "GRAPHMEM_SIDECAR_URL": url}):
            both = gm("--db", str(tmp_path / "new"), *(() if "GRAPHMEM_SIDECAR_URL" in env
                                                       else ("--sidecar", url)),
                      "add", "which store am I in", env=env)
            assert both.returncode == 2 and "serves another store" in both.stderr, both
        assert elsewhere.stats().memories == 2 and not (tmp_path / "new").exists()
    copy = tmp_path / "copy"  # a copy of the store has its id, not its sidecar
    shutil.copytree(db, copy)
    with serve_process(db, env=ENV) as (url, _), serve_process(copy, env=ENV) as (other, _):
        both = gm("--db", str(db), "--sidecar", url, "--json", "add", "through its sidecar")
        assert both.returncode == 0, both.stderr  # the sidecar of --db: the two agree
        wrong = gm("--db", str(db), "--sidecar", other, "add", "into the copy?")
        assert wrong.returncode == 2 and "or a copy" in wrong.stderr, wrong
    with MemoryStore(copy, embedder="hashing", read_only=True) as store:
        assert store.stats().memories == 1


def test_a_token_works_as_its_owner(tmp_path: Path) -> None:
    db = tmp_path / "db"
    tokens = {"tok-cli-alice-01234567": {"owner": "alice", "scopes": ["read", "write"]}}
    with MemoryStore(db, embedder="hashing") as store, \
            running_sidecar(store, Tokens.from_mapping(tokens)) as url:
        bobs = store.add("Bob keeps the spare key in the mailbox.", owner="bob")
        env = {**ENV, "GRAPHMEM_SIDECAR_URL": url, "GRAPHMEM_SIDECAR_TOKEN":
               "tok-cli-alice-01234567"}
        mine = json.loads(gm("--json", "add", "Alice keeps hers under the pot.",
                             env=env).stdout)
        assert mine["owner"] == "alice"
        assert store.history(mine["id"])[0].actor == "alice"
        assert json.loads(gm("--json", "stats", env=env).stdout)["memories"] == 1
        hidden = gm("show", bobs.id, env=env)
        assert hidden.returncode == 1 and hidden.stderr == f"error: no memory {bobs.id}\n"
        wide = gm("--json", "query", "MATCH (m:Memory) RETURN m.text", env=env)
        assert wide.returncode == 1
        assert json.loads(wide.stderr) == {"error": "forbidden", "detail":
                                           "this token lacks the all_owners scope"}
        rows = json.loads(gm("--json", "query", "recent_memories", env=env).stdout)
        assert [r["id"] for r in rows] == [mine["id"]]
        refused = gm("--json", "--token", "tok-nobody-0000000000", "stats", env=env)
        assert json.loads(refused.stderr)["error"] == "unauthorized"
