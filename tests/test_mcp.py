"""The MCP server, driven by the SDK's own client over stdio: every tool, errors, the
sidecar path with its fallback to the same embedded store when the sidecar is stopped,
and what a token changes: the sidecar alone answers, scoped to the token."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from graphmem import MemoryStore, NotFoundError, Settings
from graphmem.mcpserver._backends import EmbeddedBackend
from graphmem.sidecar import Tokens

from ._servers import free_port, running_sidecar

Session = Callable[[str, dict[str, Any]], Awaitable[Any]]

ALICE, READER = "tok-mcp-alice-0123456789", "tok-mcp-reader-01234567"
TOKENS = Tokens.from_mapping({ALICE: {"owner": "alice", "scopes": ["read", "write"]},
                              READER: {"owner": "alice", "scopes": ["read"]}})


def _with_mcp(db: Path | str, script: Callable[[Session], Awaitable[None]], *extra: str,
              env: dict[str, str] | None = None) -> None:
    environment = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing", **(env or {})}
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "graphmem.cli", "--db", str(db), "mcp", *extra],
                                   env=environment)

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def call(name: str, arguments: dict[str, Any]) -> Any:
                return await session.call_tool(name, arguments)

            tools = await session.list_tools()
            assert {t.name for t in tools.tools} == {
                "remember", "recall", "feedback", "forget", "history", "lifecycle_report",
                "supersede", "correct", "update", "link"}
            await script(call)

    asyncio.run(asyncio.wait_for(main(), timeout=180))


def _error(result: Any) -> str:
    """The message of a failed tool call (without the SDK's "Error executing tool X: ")."""
    assert result.is_error, result.structured_content
    return re.sub(r"^Error executing tool \w+: ", "", str(result.content[0].text))


def _snapshot(db: Path) -> str:
    with MemoryStore(db, read_only=True) as store:
        return json.dumps({**store.export(), "generated": None}, sort_keys=True)


def test_every_tool_on_the_embedded_store(tmp_path: Path) -> None:
    async def script(call: Session) -> None:
        made = await call("remember", {"text": "Nadia prefers green tea in the afternoon.",
                                       "kind": "semantic", "tags": ["tea"]})
        assert not made.is_error
        memory = made.structured_content["memory"]
        assert made.structured_content["answered_by"] == "embedded"
        await call("remember", {"text": "The orchard deploy runs make release first.",
                                "kind": "procedural", "subject": "Deploy orchard"})
        found = (await call("recall", {"query": "what tea does Nadia like", "k": 2}))
        hits = found.structured_content["hits"]
        assert hits[0]["id"] == memory["id"] and hits[0]["why"][0].startswith("preset default")
        terse = await call("recall", {"query": "tea", "explain": False, "preset": "fulltext"})
        assert "why" not in terse.structured_content["hits"][0]
        useful = await call("feedback", {"memory_id": memory["id"], "useful": True,
                                         "query": "what tea does Nadia like"})
        assert useful.structured_content["useful_count"] == 1
        history = await call("history", {"memory_id": memory["id"]})
        assert [v["change_type"] for v in history.structured_content["versions"]] == [
            "created", "importance_boost"]
        report = await call("lifecycle_report", {})
        assert report.structured_content["report"].startswith("# Archivist Lifecycle Report")
        soft = await call("forget", {"memory_id": memory["id"]})
        assert soft.structured_content["status"] == "tombstoned"
        hard = await call("forget", {"memory_id": memory["id"], "hard": True})
        assert hard.structured_content["status"] == "forgotten"
        missing = await call("history", {"memory_id": "urn:graphmem:nope"})
        assert missing.is_error and "no memory urn:graphmem:nope" in missing.content[0].text
        empty = await call("remember", {"text": "   "})
        assert empty.is_error and "text" in empty.content[0].text
        # an argument a tool does not take is refused, naming it, as the sidecar's API
        # does (a misspelt filter answered unfiltered), and nothing is written
        for name, arguments in (("recall", {"query": "tea", "kinds": "semantic"}),
                                ("remember", {"text": "Nadia rows", "colour": "red"})):
            extra = await call(name, arguments)
            message = _error(extra)
            assert (set(arguments) - {"query", "text"}).pop() in message
            assert "Extra inputs are not permitted" in message

    # --embedded is this process alone, whatever sidecar the environment names
    _with_mcp(tmp_path / "db", script, "--embedded",
              env={"GRAPHMEM_SIDECAR_URL": "http://127.0.0.1:9"})
    with MemoryStore(tmp_path / "db", read_only=True) as store:
        assert store.stats().by_status == {"active": 1, "forgotten": 1}
    # ... and a sidecar named beside it contradicts it: refused before anything starts
    refused = subprocess.run([sys.executable, "-m", "graphmem.cli", "--db", str(tmp_path / "db"),
                              "mcp", "--embedded", "--sidecar", "http://127.0.0.1:9"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--embedded opens the store in this process alone" \
        in refused.stderr


def test_sidecar_first_then_the_embedded_fallback(tmp_path: Path) -> None:
    """Without a token, a stopped sidecar is replaced by the embedded store at --db, which
    is the store it served (same store_id)."""
    db = tmp_path / "db"
    store = MemoryStore(db, embedder="hashing", settings=Settings())
    server = running_sidecar(store)
    url = server.__enter__()

    async def script(call: Session) -> None:
        made = await call("remember", {"text": "Amara works as a nurse in Lagos."})
        assert made.structured_content["answered_by"] == "sidecar"
        hits = await call("recall", {"query": "where does Amara work"})
        assert hits.structured_content["answered_by"] == "sidecar"
        assert hits.structured_content["hits"][0]["text"].startswith("Amara")
        # the sidecar goes away (and releases the database): the embedded store answers
        server.__exit__(None, None, None)
        store.close()
        again = await call("recall", {"query": "where does Amara work"})
        assert again.structured_content["answered_by"] == "embedded"
        assert "sidecar unreachable: cannot connect" in \
            again.structured_content["sidecar_error"]
        assert again.structured_content["hits"][0]["text"].startswith("Amara")
        written = await call("remember", {"text": "Written while the sidecar was down."})
        assert written.structured_content["answered_by"] == "embedded"

    try:
        _with_mcp(db, script, "--sidecar", url)
    finally:
        server.__exit__(None, None, None)
        store.close()
    with MemoryStore(db, read_only=True) as reopened:
        assert reopened.stats().memories == 2


def test_a_sidecar_never_reached_is_not_replaced(tmp_path: Path) -> None:
    """It never said which store it serves, so no store is used in its place, and none
    is created at --db."""
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    db = tmp_path / "never"

    async def script(call: Session) -> None:
        for name, arguments in [("remember", {"text": "Remembered while it was down."}),
                                ("recall", {"query": "anything"}),
                                ("history", {"memory_id": "urn:x"})]:
            message = _error(await call(name, arguments))
            assert f"the graphmem sidecar at {url} did not answer: cannot connect" in message
            assert "has not said which store it serves" in message
            assert f"graphmem mcp without --sidecar to use {db}" in message

    _with_mcp(db, script, "--sidecar", url)
    assert not db.exists()


def test_the_fallback_refuses_another_store(tmp_path: Path) -> None:
    served, other = tmp_path / "served", tmp_path / "other"
    with MemoryStore(other, embedder="hashing") as elsewhere:
        elsewhere.add("A memory of another store.")
        other_id = elsewhere.store_id
    before = _snapshot(other)
    store = MemoryStore(served, embedder="hashing", settings=Settings())
    server = running_sidecar(store)
    url = server.__enter__()

    async def script(call: Session) -> None:
        made = await call("remember", {"text": "Amara works as a nurse in Lagos."})
        assert made.structured_content["answered_by"] == "sidecar"
        server.__exit__(None, None, None)
        store.close()
        for name, arguments in [("recall", {"query": "Amara"}),
                                ("forget", {"memory_id": made.structured_content["memory"]["id"],
                                            "hard": True})]:
            message = _error(await call(name, arguments))
            assert f"The store at {other} (store {other_id}) is not the one the sidecar " \
                   f"serves (store {store.store_id})" in message, message

    try:
        _with_mcp(other, script, "--sidecar", url)
    finally:
        server.__exit__(None, None, None)
        store.close()
    assert _snapshot(other) == before
    with MemoryStore(served, read_only=True) as reopened:
        assert reopened.stats().memories == 1


def test_every_tool_through_the_sidecar_with_a_token(tmp_path: Path) -> None:
    """The token's owner and scopes hold for every tool; when the sidecar stops, the
    tools fail and say what to do, although the store at --db is the sidecar's own and
    could be opened: a fallback there would act as the local user, every owner's."""
    db = tmp_path / "db"
    store = MemoryStore(db, embedder="hashing", settings=Settings())
    bobs = store.add("Bob keeps the spare key in the mailbox.", owner="bob")
    server = running_sidecar(store, TOKENS)
    url = server.__enter__()
    state: dict[str, str] = {}

    async def script(call: Session) -> None:
        made = await call("remember", {"text": "Alice keeps the spare key under the pot.",
                                       "kind": "semantic"})
        memory = made.structured_content["memory"]
        assert made.structured_content["answered_by"] == "sidecar"
        assert memory["owner"] == "alice"
        hits = (await call("recall", {"query": "where is the spare key", "k": 5}))
        assert [h["id"] for h in hits.structured_content["hits"]] == [memory["id"]]
        useful = await call("feedback", {"memory_id": memory["id"], "useful": True})
        assert useful.structured_content["useful_count"] == 1
        history = await call("history", {"memory_id": memory["id"]})
        assert [v["change_type"] for v in history.structured_content["versions"]] == [
            "created", "importance_boost"]
        report = (await call("lifecycle_report", {})).structured_content["report"]
        assert report.startswith("# Archivist Lifecycle Report") and bobs.id not in report
        for name, arguments in [("feedback", {"memory_id": bobs.id, "useful": True}),
                                ("history", {"memory_id": bobs.id}),
                                ("forget", {"memory_id": bobs.id}),
                                ("forget", {"memory_id": bobs.id, "hard": True})]:
            assert _error(await call(name, arguments)) in (
                f"no memory {bobs.id}", "this token lacks the admin scope"), name
        soft = await call("forget", {"memory_id": memory["id"]})
        assert soft.structured_content["status"] == "tombstoned"
        assert _error(await call("forget", {"memory_id": memory["id"], "hard": True})) == \
            "this token lacks the admin scope"
        # the sidecar stops and releases the store
        server.__exit__(None, None, None)
        store.close()
        state["before"] = _snapshot(db)
        for name, arguments in [("recall", {"query": "spare key"}),
                                ("remember", {"text": "Written while it was down."}),
                                ("forget", {"memory_id": bobs.id, "hard": True}),
                                ("lifecycle_report", {})]:
            message = _error(await call(name, arguments))
            assert message.startswith(f"the graphmem sidecar at {url} did not answer: "
                                      "cannot connect"), message
            assert "started with a token, whose owner and scopes only the sidecar can " \
                   f"enforce, so it does not answer from the store at {db} instead" in message
            assert "Start the sidecar (graphmem --db DB serve --tokens FILE)" in message

    try:
        _with_mcp(db, script, "--sidecar", url, env={"GRAPHMEM_SIDECAR_TOKEN": ALICE})
    finally:
        server.__exit__(None, None, None)
        store.close()
    assert _snapshot(db) == state["before"]
    with MemoryStore(db, read_only=True) as reopened:
        assert reopened.get(bobs.id).status.value == "active"


@pytest.mark.parametrize("token", [None, ALICE])
def test_a_slow_sidecar_never_gets_a_change_repeated(tmp_path: Path,
                                                     token: str | None) -> None:
    """The sidecar takes longer than GRAPHMEM_SIDECAR_TIMEOUT_S to add a memory: it may
    have added it, so the change is not made again elsewhere (a duplicate), with or
    without a token; reads go on through the sidecar."""
    db = tmp_path / "db"
    store = MemoryStore(db, embedder="hashing", settings=Settings())
    slow_add, release = store.add_many, threading.Event()

    def add_many(*args: Any, **kwargs: Any) -> Any:
        release.wait(timeout=30)
        return slow_add(*args, **kwargs)

    store.add_many = add_many  # type: ignore[method-assign]
    extra = ["--token", token] if token else []

    async def script(call: Session) -> None:
        assert (await call("recall", {"query": "x"})).structured_content["answered_by"] == \
            "sidecar"
        started = time.monotonic()
        message = _error(await call("remember", {"text": "Amara works in Lagos."}))
        assert time.monotonic() - started < 10
        assert "did not answer: no answer within 1 s (ReadTimeout)" in message
        assert "The change may have been made there" in message
        release.set()
        deadline = time.monotonic() + 20
        while store.stats().memories < 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        hits = await call("recall", {"query": "where does Amara work"})
        assert hits.structured_content["answered_by"] == "sidecar"
        assert [h["text"] for h in hits.structured_content["hits"]] == [
            "Amara works in Lagos."]

    try:
        with running_sidecar(store, TOKENS if token else None) as url:
            _with_mcp(db, script, "--sidecar", url, *extra,
                      env={"GRAPHMEM_SIDECAR_TIMEOUT_S": "1"})
    finally:
        release.set()
        store.close()
    with MemoryStore(db, read_only=True) as reopened:
        assert reopened.stats().memories == 1  # once, never twice


def test_a_token_without_a_sidecar_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing", "GRAPHMEM_SIDECAR_TOKEN": ALICE}
    env.pop("GRAPHMEM_SIDECAR_URL", None)
    done = subprocess.run([sys.executable, "-m", "graphmem.cli", "--db", str(tmp_path / "db"),
                           "mcp"], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: a token is for the sidecar, which enforces its "
                                  "owner and scopes: pass --sidecar URL")
    assert not (tmp_path / "db").exists()


def test_the_embedded_backend_scopes_every_call_to_its_owner(store: MemoryStore,
                                                            tmp_path: Path) -> None:
    """An embedded backend with an owner passes it to every store call: another owner's
    memory is unknown to each tool, and remember writes the owner."""
    bobs = store.add("Bob keeps the spare key in the mailbox.", owner="bob")
    path = store.path
    store.close()
    alice = EmbeddedBackend(path, embedder="hashing", owner="alice")
    try:
        mine = alice.remember({"text": "Alice keeps the spare key under the pot."})
        assert mine["owner"] == "alice"
        assert [h["id"] for h in alice.recall("spare key", 5, "default", False, False, {})] == [
            mine["id"]]
        for call in (lambda: alice.feedback(bobs.id, True, None),
                     lambda: alice.forget(bobs.id, False),
                     lambda: alice.forget(bobs.id, True),
                     lambda: alice.history(bobs.id)):
            with pytest.raises(NotFoundError, match=f"no memory {bobs.id}"):
                call()
        assert bobs.id not in alice.lifecycle_report()
        assert "Bob" not in alice.lifecycle_report()
        assert alice.forget(mine["id"], False)["status"] == "tombstoned"
        assert alice.store.get(bobs.id).status.value == "active"
    finally:
        alice.close()


def test_a_request_holding_a_lone_surrogate_is_answered_with_its_field(tmp_path: Path) -> None:
    """JSON may escape a lone surrogate; the SDK's parser refuses such a line, and the
    request went unanswered (the client waited for ever). It gets an error naming the
    field, nothing is stored, and the server goes on."""
    import selectors

    server = subprocess.Popen(
        [sys.executable, "-m", "graphmem.cli", "--db", str(tmp_path / "db"), "mcp", "--embedded"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**os.environ, "GRAPHMEM_EMBEDDER": "hashing"})
    assert server.stdin is not None and server.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(server.stdout, selectors.EVENT_READ)

    def send(line: str) -> None:
        assert server.stdin is not None
        server.stdin.write(line.encode() + b"\n")
        server.stdin.flush()

    def answer() -> dict[str, Any]:
        assert server.stdout is not None and selector.select(timeout=120), "no answer"
        return dict(json.loads(server.stdout.readline()))

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}))
        assert answer()["id"] == 1
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        send('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": '
             '{"name": "remember", "arguments": {"text": "x \\ud800"}}}')
        refused = answer()
        assert refused["id"] == 2 and refused["error"]["code"] == -32602
        assert refused["error"]["message"].startswith("params.arguments.text: holds U+D800")
        # a line that is not JSON: a parse error, id null (JSON-RPC 2.0, 5.1)
        send('{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {')
        unparsed = answer()
        assert unparsed["id"] is None and unparsed["error"]["code"] == -32700, unparsed
        # a request of the wrong shape with an id an answer can carry: invalid request
        send('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": [1]}')
        shaped = answer()
        assert shaped["id"] == 5 and shaped["error"]["code"] == -32600, shaped
        # a response holding an object with a method and an id is still a response:
        # never answered (it once got an error with the inner id, a second answer to it)
        send('{"jsonrpc": "2.0", "id": 9, "error": {"method": "m", "id": 7}}')
        # deeper than the SDK's parser goes: answered with its id, not dropped
        send('{"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"x": '
             + "[" * 300 + "1" + "]" * 300 + "}}")
        deep = answer()
        assert deep["id"] == 6 and deep["error"]["code"] == -32600, deep
        send('[{"jsonrpc": "2.0", "id": 11, "method": "ping"}]')  # a batch: not taken
        batch = answer()
        assert batch["id"] is None and batch["error"]["code"] == -32600, batch
        # no id an answer could carry, or a response (never answered): dropped, and the
        # server goes on (an id of true once crashed it)
        send('{"jsonrpc": "2.0", "id": true, "method": "tools/call", "params": '
             '{"name": "remember", "arguments": {"text": "\\ud800"}}}')
        send('{"jsonrpc": "2.0", "id": 52, "result": {"x": "\\ud800"}}')
        # bytes that are not UTF-8: refused naming the field (they were stored as U+FFFD)
        assert server.stdin is not None
        server.stdin.write(b'{"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": '
                           b'{"name": "remember", "arguments": {"text": "caf\xe9"}}}\n')
        server.stdin.flush()
        latin = answer()
        assert latin["id"] == 13 and latin["error"]["code"] == -32602, latin
        assert latin["error"]["message"].startswith("params.arguments.text: holds U+DCE9")
        assert "not UTF-8" in latin["error"]["message"]
        # a CR between a message's tokens is JSON's whitespace, not the end of a line (the
        # message was split in two, neither answered); CR LF ends a line as LF does
        send('{"jsonrpc": "2.0",\r "id": 14, "method": "ping"}')
        assert answer() == {"jsonrpc": "2.0", "id": 14, "result": {}}
        send('{"jsonrpc": "2.0", "id": 15, "method": "ping"}\r')
        assert answer()["id"] == 15
        send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "remember", "arguments": {"text": "a \U0001f600 pair is fine"}}}))
        stored = answer()
        assert stored["id"] == 3 and not stored["result"].get("isError"), stored
    finally:
        server.terminate()
        server.wait(timeout=60)
    with MemoryStore(tmp_path / "db", read_only=True) as store:
        assert [m.text for m in store.memories()] == ["a \U0001f600 pair is fine"]
