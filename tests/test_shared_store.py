"""Several processes on one Kuzu store with nobody running `graphmem serve`: two real MCP
servers (the SDK's client over stdio) and commands writing at once go through the store's
own sidecar, found or started; it keeps their actors, admits only its user (a secret in
a file only they can read), exits when idle, and two processes starting it at once end
with one. A MemoryStore on a held store says where the sidecar is and how to share."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import graphmem
from graphmem import MemoryStore, StoreError, StoreLockedError
from graphmem._discovery import discover, discovery_path
from graphmem.client import AccessDeniedError, Client, find_or_start
from graphmem.client._autostart import sidecar_log
from graphmem.sidecar import Tokens

from ._servers import running_sidecar

ENV = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing", "GRAPHMEM_SIDECAR_IDLE_S": "60"}


def _stop_sidecar(db: Path, timeout_s: float = 30.0) -> None:
    """SIGTERM the sidecar serving ``db`` (if any) and wait until it has let go."""
    found = discover(db)
    if found is None:
        return
    os.kill(found.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while discovery_path(db).exists() or _alive(found.pid):
        assert time.monotonic() < deadline, "the sidecar did not stop"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as proc:
            return proc.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def _sidecars_of(db: Path) -> list[int]:
    """The live `graphmem serve --auto` processes for ``db``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--auto" in argv and str(db).encode() in argv and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("GRAPHMEM_EMBEDDER", "hashing")
    monkeypatch.setenv("GRAPHMEM_SIDECAR_IDLE_S", "60")
    path = tmp_path / "shared.db"
    yield path
    _stop_sidecar(path)


async def _agent(db: Path, name: str, count: int, errlog: Any) -> list[str]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "graphmem.cli", "--db", str(db), "mcp"],
        env={**ENV, "GRAPHMEM_AGENT_ID": name})
    ids = []
    async with stdio_client(params, errlog=errlog) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        for n in range(count):
            made = await session.call_tool("remember", {"text": f"{name} note {n}: the "
                                                                f"orchard deploy step {n}"})
            assert not made.is_error, made.content
            assert made.structured_content["answered_by"] == "sidecar"
            ids.append(made.structured_content["memory"]["id"])
        found = await session.call_tool("recall", {"query": f"{name} note 0", "k": 3})
        assert not found.is_error and found.structured_content["hits"]
    return ids


def test_two_mcp_servers_and_commands_share_one_store(db: Path, tmp_path: Path) -> None:
    per_agent, commands = 8, 5
    command_ids: list[str] = []
    failures: list[str] = []

    def command_line() -> None:  # commands writing while the agents start and write
        for n in range(commands):
            out = subprocess.run(
                [sys.executable, "-m", "graphmem.cli", "--db", str(db), "add",
                 f"command note {n}: rotate the orchard keys"],
                env={**ENV, "GRAPHMEM_AGENT_ID": "cli"}, capture_output=True, text=True,
                timeout=120)
            if out.returncode:
                failures.append(out.stderr)
            else:
                command_ids.append(out.stdout.strip().split()[-1])

    with contextlib.ExitStack() as stack:
        logs = [stack.enter_context(open(tmp_path / f"mcp-{n}.log", "w+", encoding="utf-8"))
                for n in (1, 2)]

        async def agents() -> list[list[str]]:
            return list(await asyncio.gather(_agent(db, "agent-a", per_agent, logs[0]),
                                             _agent(db, "agent-b", per_agent, logs[1])))

        thread = threading.Thread(target=command_line)
        thread.start()
        try:
            ids_a, ids_b = asyncio.run(asyncio.wait_for(agents(), timeout=240))
        finally:
            thread.join(timeout=300)
        stderr = [log.seek(0) or log.read() for log in logs]
    assert failures == []  # nothing refused for a lock
    # each server says which sidecar it works through; exactly one of them started it
    assert all("shared through the graphmem sidecar at http://127.0.0.1:" in s for s in stderr)
    assert sum("started by this server" in s for s in stderr) == 1, stderr
    deadline = time.monotonic() + 30  # a sidecar that lost the race exits on the lock,
    while len(_sidecars_of(db)) > 1 and time.monotonic() < deadline:  # slowly when busy
        time.sleep(0.2)
    assert _sidecars_of(db) == [discover(db).pid]
    _stop_sidecar(db)
    with MemoryStore(db, read_only=True) as store:
        assert store.stats().memories == 2 * per_agent + commands  # nothing lost
        for actor, ids in (("agent-a", ids_a), ("agent-b", ids_b), ("cli", command_ids)):
            assert len(ids) == len(set(ids))
            for memory_id in ids:  # each change records who made it, as embedded
                assert [v.actor for v in store.history(memory_id)] == [actor]


def test_the_started_sidecar_admits_its_user_alone_and_exits_when_idle(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_SIDECAR_IDLE_S", "3")
    MemoryStore(db).close()
    store = graphmem.connect(db)  # a notebook sharing the store: its sidecar is started
    memory = store.add("Nadia prefers green tea")
    found = discover(db)
    assert found is not None and found.secret and found.url == store.url
    assert stat.S_IMODE(discovery_path(db).stat().st_mode) == 0o600
    with pytest.raises(AccessDeniedError, match="needs a token"):  # no secret, no entry
        Client(found.url).stats()
    assert httpx.get(f"{found.url}/v1/stats", timeout=5).status_code == 401
    with pytest.raises(StoreLockedError, match=rf"sidecar at {found.url}.*graphmem.connect"):
        MemoryStore(db)
    store.close()
    deadline = time.monotonic() + 30  # nobody uses it: it goes, and lets go of the store
    while _alive(found.pid) or discovery_path(db).exists():
        assert time.monotonic() < deadline, "the idle sidecar did not exit"
        time.sleep(0.2)
    with MemoryStore(db) as again:
        assert again.get(memory.id).text == "Nadia prefers green tea"


def test_two_processes_starting_it_at_once_end_with_one(db: Path) -> None:
    MemoryStore(db).close()
    results: list[Any] = []

    def start() -> None:
        results.append(find_or_start(db, timeout_s=60))

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and len({found.url for found, _ in results}) == 1
    assert sum(started for _, started in results) == 1
    deadline = time.monotonic() + 30  # the losers exit on the lock (slowly on a busy machine)
    while _sidecars_of(db) != [results[0][0].pid] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _sidecars_of(db) == [results[0][0].pid]
    log = sidecar_log(db).read_text(encoding="utf-8")
    assert "in use by another process" in log  # they did race: the others lost the lock


def test_a_store_held_for_a_moment_is_waited_for(db: Path) -> None:
    """A command holds the store for a second or two: the sidecar started meanwhile
    fails on the lock, and another is started once the store is free."""
    holder = MemoryStore(db)

    def release_once_refused() -> None:  # however slowly the sidecar starts
        log, deadline = sidecar_log(db), time.monotonic() + 60
        while time.monotonic() < deadline and not (
                log.is_file() and "in use by another process" in log.read_text(encoding="utf-8")):
            time.sleep(0.1)
        holder.close()

    releaser = threading.Thread(target=release_once_refused)
    releaser.start()
    try:
        found, started = find_or_start(db, timeout_s=60)
    finally:
        releaser.join()
    assert started and found.pid in _sidecars_of(db)
    assert "in use by another process" in sidecar_log(db).read_text(encoding="utf-8")


def test_a_store_held_without_a_sidecar_is_reported(db: Path) -> None:
    with MemoryStore(db):  # a notebook that did not share it
        started = time.monotonic()
        with pytest.raises(StoreLockedError, match="does not serve it"):
            find_or_start(db, timeout_s=3)
        assert time.monotonic() - started < 20
        out = subprocess.run([sys.executable, "-m", "graphmem.cli", "--db", str(db), "stats"],
                             env={**ENV, "GRAPHMEM_LOCK_WAIT_S": "2.5"}, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 1
        assert "no sidecar serves it" in out.stderr and "graphmem.connect(" in out.stderr
        assert "(waited 2.5 s for it)" in out.stderr
    assert _sidecars_of(db) == []


def test_a_command_runs_once_another_process_lets_the_store_go(db: Path) -> None:
    """Another command (or a script) holds the store for a moment: a command that needs
    the store opens it once it is free, whether it works through a sidecar when one
    serves (``stats``) or on the database itself (``query --write``). Both waited for a
    sidecar alone and failed after 15 s."""
    with MemoryStore(db) as store:
        store.add("the harbour ferry leaves at nine")
    for command in (["stats"], ["query", "--write", "MATCH (m:Memory) RETURN count(m) AS n"]):
        holder = subprocess.Popen(
            [sys.executable, "-c", "import sys, time\nfrom graphmem import MemoryStore\n"
             "with MemoryStore(sys.argv[1]):\n    print('held', flush=True)\n"
             "    time.sleep(2)", str(db)], env=ENV, stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "graphmem.cli", "--db", str(db),
                              *command], env=ENV, capture_output=True, text=True,
                             timeout=120)
        assert holder.wait(timeout=60) == 0
        assert out.returncode == 0, out.stderr
        assert time.monotonic() - started < 12, command
    assert _sidecars_of(db) == []


def test_the_local_user_names_its_actor_and_a_token_may_not(tmp_path: Path) -> None:
    token = "tok-alice-0123456789abc"
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        with running_sidecar(store) as url, Client(url, actor="agent-9") as client:
            memory = client.add("Nadia moved standup to Wednesday")
            assert [v.actor for v in store.history(memory.id)] == ["agent-9"]
        tokens = Tokens.from_mapping({token: {"owner": "alice", "scopes": ["read", "write"]}})
        with running_sidecar(store, tokens) as url:
            answer = httpx.post(f"{url}/v1/memories", json={"text": "x"}, timeout=10,
                                headers={"Authorization": f"Bearer {token}",
                                         "X-Graphmem-Actor": "mallory"})
            assert answer.status_code == 400 and answer.json()["field"] == "actor"
            assert json.loads(answer.text)["error"] == "invalid_input"


def test_a_sidecar_that_cannot_start_is_reported_with_its_log(db: Path) -> None:
    MemoryStore(db).close()  # embedded with hashing-384: another model cannot serve it
    with pytest.raises(StoreError, match=r"failed 3 times: .*reembed.*sidecar\.log"):
        find_or_start(db, embedder="hashing:64", timeout_s=120)
    assert _sidecars_of(db) == [] and not discovery_path(db).exists()
