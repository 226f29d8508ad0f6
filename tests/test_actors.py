"""Every write records who made it. Each write route of each face runs once: the sidecar's
routes and the dashboard's (with a token: its owner; without: the local user), the MCP
tools (on the embedded store, and through a sidecar with a token), every command of the
command line and every method of the Python API. After each, every version row and
lifecycle event it wrote names that actor, read back through ``history()`` and
``events()``. The routes, tools, commands and methods are listed from the faces
themselves, so a new one fails here until it is driven (or said to write no history)."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click
import httpx
import pytest
from click.testing import CliRunner
from fastapi.routing import APIRoute
from mcp import Client
from starlette.routing import BaseRoute

from graphmem import Edge, MemoryInput, MemoryStore, Settings
from graphmem.cli import cli
from graphmem.mcpserver import build_server
from graphmem.sidecar import Tokens, create_app

from ._servers import every_route, running_sidecar
from .conftest import SAMPLE, Clock
from .test_compact import DAILY

#: The local user's actor: the store's agent id (GRAPHMEM_AGENT_ID).
AGENT = "agent-7"
ALICE = "tok-actors-alice-0123456"
TOKENS = Tokens.from_mapping({ALICE: {"owner": "alice", "scopes": [
    "read", "write", "admin", "all_owners"]}})
STRONG = "I moved the greenhouse sensors to the north bed in July."
WEAK = "I might try oat milk sometime."


def ledger(store: MemoryStore) -> dict[str, str | None]:
    """Every version row and lifecycle event of the store: its id -> the actor it names."""
    rows: dict[str, str | None] = {e.event_id: e.agent_id for e in store.events()}
    for memory in store.memories():
        rows.update({v.id: v.actor for v in store.history(memory.id)})
    return rows


class Recorder:
    """Runs routes and checks what each wrote: at least one row (unless it is said to
    write no history), and every new row naming ``expect``."""

    def __init__(self, read: Callable[[], dict[str, str | None]]) -> None:
        self.read = read
        self.ran: set[str] = set()
        self._before: dict[str, str | None] = {}

    def __call__(self, route: str, expect: str, action: Callable[[], Any], *,
                 writes: bool = True) -> Any:
        self._before = self.read()
        result = action()
        self.check(route, expect, writes=writes)
        return result

    async def run(self, route: str, expect: str, action: Callable[[], Awaitable[Any]], *,
                  writes: bool = True) -> Any:
        self._before = self.read()
        result = await action()
        self.check(route, expect, writes=writes)
        return result

    def check(self, route: str, expect: str, *, writes: bool) -> None:
        new = {k: v for k, v in self.read().items() if k not in self._before}
        assert new or not writes, f"{route}: wrote no version row or event"
        wrong = {k: v for k, v in new.items() if v != expect}
        assert not wrong, f"{route}: recorded {wrong}, not {expect!r}"
        self.ran.add(route)


def _ok(response: httpx.Response) -> Any:
    assert response.status_code < 300, (response.request.url, response.text)
    return response.json()


# -- the sidecar and its dashboard ------------------------------------------------------------
def api_routes(routes: Iterable[BaseRoute]) -> Iterator[APIRoute]:
    """Every API route, those of included routers too."""
    return (route for route in every_route(routes) if isinstance(route, APIRoute))


def write_routes(store: MemoryStore) -> set[str]:
    """The sidecar's routes that may change something: every method but GET and HEAD."""
    app = create_app(store, tokens=TOKENS)
    return {f"{method} {route.path}" for route in api_routes(app.routes)
            for method in route.methods - {"GET", "HEAD"}}


#: Write routes that change no memory's history, and what they change instead.
SIDECAR_NO_HISTORY = {
    "POST /v1/memories/retrieve": "access counts",
    "POST /v1/memories/{memory_id}/links": "an edge",
    "POST /v1/lifecycle/evaluate": "nothing: a read with a body",
    "POST /v1/queries/{name}": "nothing: a read with a body",
    "POST /v1/cypher": "nothing: read-only Cypher",
    "POST /v1/learn": "the learned models (store metadata)",
    "POST /ui/api/login": "a session",
    "POST /ui/api/logout": "a session",
    "POST /ui/api/recall": "access counts",
}


@pytest.fixture(params=["token", "local"])
def sidecar(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
            ) -> Iterator[tuple[MemoryStore, str, str | None, Clock]]:
    token = ALICE if request.param == "token" else None
    store = MemoryStore(tmp_path / "db", embedder="hashing", clock=clock,
                        settings=Settings(agent_id=AGENT))
    try:
        with running_sidecar(store, TOKENS if token else None) as url:
            yield store, url, token, clock
    finally:
        store.close()


def test_every_sidecar_and_dashboard_route_records_its_actor(
        sidecar: tuple[MemoryStore, str, str | None, Clock]) -> None:
    store, url, token, clock = sidecar
    actor = "alice" if token else AGENT
    reviewer = f"dashboard:{'alice' if token else 'local'}"
    rec = Recorder(lambda: ledger(store))
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    api = httpx.Client(base_url=url, headers=auth, timeout=60)
    ui = httpx.Client(base_url=url, timeout=60, headers={"Origin": url,
                                                         "Sec-Fetch-Site": "same-origin"})

    def v1(route: str, method: str, path: str, body: Any = None, *,
           writes: bool = True, **params: Any) -> Any:
        return rec(route, actor, lambda: _ok(api.request(method, path, json=body,
                                                        params=params)), writes=writes)

    def one(memory_id: str, suffix: str = "") -> str:
        return f"/v1/memories/{quote(memory_id, safe='')}{suffix}"

    made = v1("POST /v1/memories", "POST", "/v1/memories", {"memories": [
        {"text": "Nadia prefers green tea in the afternoon."},
        {"text": "The orchard deploy runs make release first.", "kind": "procedural"},
        {"text": "The greenhouse pump runs at dusk."},
        {"text": "Nadia might like oolong.", "status": "candidate"}]})["memories"]
    tea, deploy, pump, weak = (m["id"] for m in made)
    talk = "POST /v1/conversations"
    first = v1(talk, "POST", "/v1/conversations", {"session_id": "s1", "messages": [
        {"speaker": "Nadia", "text": STRONG}, {"speaker": "Nadia", "text": WEAK}]})
    assert first["candidate_ids"] and first["created_ids"]
    later = v1(talk, "POST", "/v1/conversations", {"session_id": "s2", "messages": [
        {"speaker": "Nadia", "text": WEAK}]})  # reinforces the candidate: supersedes it
    assert later["reinforced_ids"] == first["candidate_ids"]
    v1("POST /v1/memories/retrieve", "POST", "/v1/memories/retrieve",
       {"query": "green tea", "k": 3}, writes=False)
    v1("POST /v1/memories/{memory_id}/links", "POST", one(pump, "/links"), {"other": deploy},
       writes=False)
    v1("PATCH /v1/memories/{memory_id}", "PATCH", one(tea), {"importance": 0.8})
    newer = v1("POST /v1/memories/{memory_id}/supersede", "POST", one(tea, "/supersede"),
               {"text": "Nadia prefers jasmine tea in the afternoon."})["id"]
    v1("POST /v1/feedback", "POST", "/v1/feedback", {"memory_id": newer, "useful": True})
    v1("POST /v1/feedback", "POST", "/v1/feedback", {"memory_id": weak, "useful": True})
    assert store.get(weak).status.value == "active"  # confirmed: a transition too
    v1("POST /v1/memories/{memory_id}/promote", "POST", one(newer, "/promote"))
    v1("POST /v1/memories/{memory_id}/archive", "POST", one(deploy, "/archive"))
    v1("POST /v1/memories/{memory_id}/restore", "POST", one(deploy, "/restore"))
    v1("POST /v1/memories/{memory_id}/keep", "POST", one(pump, "/keep"), {"reason": "in use"})
    # too little feedback to train on: a 409 that writes nothing
    learned = rec("POST /v1/learn", actor, lambda: api.post("/v1/learn", json={}),
                  writes=False)
    assert learned.status_code == 409, learned.text
    v1("POST /v1/lifecycle/evaluate", "POST", "/v1/lifecycle/evaluate", {}, writes=False)
    clock.advance(days=200)  # decay, expiry, the hot set: the run has work to apply
    v1("POST /v1/lifecycle/run", "POST", "/v1/lifecycle/run", {"apply": True})
    v1("POST /v1/queries/{name}", "POST", "/v1/queries/most_referenced", {}, writes=False)
    v1("POST /v1/cypher", "POST", "/v1/cypher",
       {"query": "MATCH (m:Memory) RETURN count(m) AS n"}, writes=False)
    v1("DELETE /v1/memories/{memory_id}", "DELETE", one(weak))
    v1("DELETE /v1/memories/{memory_id}", "DELETE", one(deploy), hard="true")
    spare = [m["id"] for m in v1("POST /v1/memories", "POST", "/v1/memories", {"memories": [
        {"text": "The seed drill is in shed two."}, {"text": "The hose is in shed one."}]}
                                 )["memories"]]
    v1("POST /v1/forget", "POST", "/v1/forget", {"ids": spare})

    def dashboard(route: str, body: dict[str, Any], *, writes: bool = True) -> Any:
        return rec(route, reviewer, lambda: _ok(ui.post(
            route.removeprefix("POST "), json=body, headers={"X-CSRF-Token": csrf})),
                   writes=writes)

    csrf = ""
    login = rec("POST /ui/api/login", reviewer,
                lambda: _ok(ui.post("/ui/api/login", headers=auth)), writes=False)
    csrf = login["csrf"]
    dashboard("POST /ui/api/recall", {"query": "greenhouse pump"}, writes=False)
    dashboard("POST /ui/api/feedback", {"memory_id": pump, "useful": True})
    dashboard("POST /ui/api/review/decide", {"memory_id": pump, "decision": "keep"})
    dashboard("POST /ui/api/review/decide", {"memory_id": pump, "decision": "archive"})
    dashboard("POST /ui/api/review/undo", {"memory_id": pump})
    # what the archivist still recommends archiving, of every memory the store holds
    approved = dashboard("POST /ui/api/review/approve-archives",
                         {"memory_ids": [m.id for m in store.memories()]})
    assert approved
    dashboard("POST /ui/api/logout", {}, writes=False)
    api.close()
    ui.close()
    assert rec.ran == write_routes(store)
    assert set(SIDECAR_NO_HISTORY) <= rec.ran


# -- the MCP server -----------------------------------------------------------------------------
#: Tools that change no memory's history, and what they change instead.
MCP_NO_HISTORY = {"recall": "access counts", "link": "an edge", "history": "nothing",
                  "lifecycle_report": "nothing: a dry run"}


async def _mcp_script(server: Any, rec: Recorder, actor: str) -> None:
    async with Client(server) as client:
        tools = {t.name for t in (await client.list_tools()).tools}

        async def call(name: str, arguments: dict[str, Any], *, writes: bool = True
                       ) -> dict[str, Any]:
            async def action() -> dict[str, Any]:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, result.content)
                out: dict[str, Any] = result.structured_content
                return out

            return await rec.run(name, actor, action, writes=writes)

        first, second, third = [(await call("remember", {"text": text}))["memory"]["id"]
                                for text in ("Orchard stores data in PostgreSQL 15",
                                             "To deploy orchard: make release",
                                             "The pump runs at dusk")]
        await call("recall", {"query": "orchard database"}, writes=False)
        await call("feedback", {"memory_id": first, "useful": True})
        newer = (await call("supersede", {"memory_id": first,
                                          "text": "Orchard stores data in PostgreSQL 16"}
                            ))["memory"]["id"]
        fixed = (await call("correct", {"memory_id": newer,
                                        "text": "Orchard stores data in PostgreSQL 16.2"}
                            ))["memory"]["id"]
        await call("update", {"memory_id": fixed, "importance": 0.9, "tags": ["db"]})
        await call("link", {"memory_id": second, "other_id": fixed}, writes=False)
        await call("history", {"memory_id": fixed}, writes=False)
        await call("lifecycle_report", {}, writes=False)
        await call("forget", {"memory_id": third})
        await call("forget", {"memory_id": second, "hard": True})
    assert rec.ran == tools
    assert set(MCP_NO_HISTORY) <= rec.ran


def test_every_mcp_tool_on_the_embedded_store_records_the_agent(tmp_path: Path) -> None:
    server = build_server(tmp_path / "db", settings=Settings(agent_id=AGENT),
                          embedder="hashing", embedded=True)
    try:
        rec = Recorder(lambda: ledger(server.graphmem_embedded.store))
        asyncio.run(asyncio.wait_for(_mcp_script(server, rec, AGENT), timeout=120))
    finally:
        server.graphmem_embedded.close()


def test_every_mcp_tool_through_a_sidecar_records_the_token_owner(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "db", embedder="hashing", settings=Settings(agent_id=AGENT))
    try:
        with running_sidecar(store, TOKENS) as url:
            server = build_server(tmp_path / "db", sidecar_url=url, token=ALICE,
                                  settings=Settings(agent_id="not-me"), embedder="hashing")
            try:
                asyncio.run(asyncio.wait_for(
                    _mcp_script(server, Recorder(lambda: ledger(store)), "alice"),
                    timeout=120))
            finally:
                server.graphmem_sidecar.close()
            assert server.graphmem_embedded._store is None  # the sidecar alone answered
    finally:
        store.close()


# -- the command line ---------------------------------------------------------------------------
def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> set[str]:
    """Every command under ``group``, as typed (``import ump``)."""
    found: set[str] = set()
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found |= commands(command, (*prefix, name))
        else:
            found.add(" ".join((*prefix, name)))
    return found


#: Commands not run here, and why.
CLI_NOT_RUN = {
    "serve": "the sidecar: its routes are driven above",
    "ui": "the dashboard: its routes are driven above (the sidecar's /ui)",
    "mcp": "the MCP server: its tools are driven above",
    "eval run": "builds its own stores from a benchmark corpus",
}
#: Commands that change no memory's history.
CLI_NO_HISTORY = {"init", "show", "history", "export", "stats", "recall", "query",
                  "lifecycle evaluate", "lifecycle report", "learn", "backup",
                  "restore-backup", "draw", "reembed"}


def _inputs(root: Path) -> dict[str, Path]:
    """A small file for each importer."""
    records = [r for r in json.loads(SAMPLE.read_text(encoding="utf-8"))
               if not r.get("superseded_by")][:3]
    ump = root / "three.ump.json"
    ump.write_text(json.dumps(records), encoding="utf-8")
    daily = root / "agent" / "workspace" / "memory" / "2026-05-21.md"
    daily.parent.mkdir(parents=True)
    daily.write_text(DAILY, encoding="utf-8")
    (daily.parent / "cold-storage").mkdir()
    locomo = root / "locomo.json"
    locomo.write_text(json.dumps([{"sample_id": "conv-x", "qa": [], "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Mel",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Caroline", "dia_id": "D1:1",
                       "text": "I moved to Lisbon last spring."},
                      {"speaker": "Mel", "dia_id": "D1:2", "text": "How is the weather?"}]}}]))
    talk = root / "talk.json"
    talk.write_text(json.dumps([{"speaker": "Nadia", "text": STRONG}]), encoding="utf-8")
    return {"ump": ump, "markdown": daily.parents[2], "locomo": locomo, "talk": talk}


def test_every_command_records_the_local_user(tmp_path: Path) -> None:
    db = tmp_path / "db"
    files = _inputs(tmp_path)
    runner = CliRunner(env={"GRAPHMEM_AGENT_ID": AGENT, "GRAPHMEM_DB": None,
                            "GRAPHMEM_SIDECAR_URL": None})

    def read() -> dict[str, str | None]:
        with MemoryStore(db, read_only=True) as store:
            return ledger(store)

    rec = Recorder(lambda: read() if db.exists() else {})

    def gm(command: str, *args: str, writes: bool | None = None,
           now: str = "2026-06-02T09:00:00Z") -> str:
        def action() -> str:
            result = runner.invoke(cli, ["--db", str(db), "--embedder", "hashing",
                                         "--now", now, *command.split(), *args])
            assert result.exit_code == 0, (command, args, result.output)
            return result.output.strip()

        return str(rec(command, AGENT, action, writes=command not in CLI_NO_HISTORY
                       if writes is None else writes))

    gm("init")
    first = gm("add", "Nadia prefers green tea in the afternoon.")
    weak = gm("add", "Nadia might like oolong.", "--status", "candidate")
    gm("import ump", str(files["ump"]))
    gm("import markdown", str(files["markdown"]))
    gm("import locomo", str(files["locomo"]))
    gm("import conversation", str(files["talk"]), "--session", "s1")
    gm("compact", "--root", str(files["markdown"]), "--apply")  # archives dropped bullets
    for command, args in (("show", [first]), ("history", [first]), ("export", []),
                          ("stats", []), ("recall", ["green tea"]),
                          ("lifecycle evaluate", []), ("lifecycle report", []),
                          ("query", ["MATCH (m:Memory) RETURN count(m) AS n"])):
        gm(command, *args)
    gm("feedback", weak, "--useful")  # confirms the candidate too
    gm("update", first, "--importance", "0.7", "--tag", "tea")
    gm("promote", first)
    gm("archive", first)
    gm("restore", first)
    gm("tombstone", weak)
    gm("query", "MATCH (m:Memory) WHERE m.id = $id SET m.confidence = 0.4", "--write",
       "--param", f"id={first}", writes=True)  # a cypher_write event
    gm("lifecycle run", "--apply", now="2027-03-01T09:00:00Z")
    gm("forget", weak, "--yes")
    gm("learn", "--status")  # training needs weeks of use; it writes a model, no history
    gm("draw", first, "--out", str(tmp_path / "drawing.html"))
    gm("backup", str(tmp_path / "backup"))
    other = tmp_path / "restored"
    rec("restore-backup", AGENT, lambda: runner.invoke(
        cli, ["--db", str(other), "restore-backup", str(tmp_path / "backup")]), writes=False)
    assert other.exists()
    gm("reembed", "--embedder", "hashing:128")  # last: the store's model changes
    assert rec.ran == commands(cli) - set(CLI_NOT_RUN)


# -- the Python API -----------------------------------------------------------------------------
#: MemoryStore methods that read, or change no memory's history, and are not driven here.
API_NOT_DRIVEN = {
    "get", "get_many", "memories", "memory_count", "links", "history", "events", "stats",
    "now", "embed",
    "verify_forgotten", "forecast", "learned", "centrality", "evaluate", "batch_evaluate",
    "entities", "find_entities", "facts", "mentions", "graph_sections", "export",
    "vectors", "to_networkx", "named_query", "sql", "close", "warm", "drop_caches", "flush",
    # changes without a version row or event: vectors, models (training needs weeks of
    # use), the entity graph, a new store from a backup
    "reembed", "learn", "use_ranker", "split_entity", "restore_backup",
}
API_NO_HISTORY = {"link", "link_many", "derive_links", "recall", "purge", "backup"}


def test_every_write_method_of_the_python_api_records_the_agent(tmp_path: Path,
                                                                 clock: Clock) -> None:
    public = {name for name, value in vars(MemoryStore).items()
              if not name.startswith("_") and callable(value)}
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock,
                     settings=Settings(agent_id=AGENT)) as store:
        rec = Recorder(lambda: ledger(store))

        def call(name: str, *args: Any, **kwargs: Any) -> Any:
            method = getattr(store, name)
            if name not in API_NO_HISTORY:  # every write can be told its actor
                assert "actor" in inspect.signature(method).parameters, name
            return rec(name, AGENT, lambda: method(*args, **kwargs),
                       writes=name not in API_NO_HISTORY)

        tea = call("add", "Nadia prefers green tea in the afternoon.")
        deploy, pump, weak = call("add_many", [
            {"text": "The orchard deploy runs make release first.", "kind": "procedural"},
            "The greenhouse pump runs at dusk.",
            {"text": "Nadia might like oolong.", "status": "candidate"}])
        call("merge", [MemoryInput(id="urn:x:1", text="Imported note one"),
                       MemoryInput(id="urn:x:2", text="Imported note two")],
             edges=[Edge("references", "urn:x:1", "urn:x:2")])
        call("merge", [MemoryInput(id="urn:x:1", text="Imported note one, edited")])
        call("merge_chunks", [[MemoryInput(id="urn:x:3", text="A chunked note")]],
             index_of={"urn:x:3": 0})
        call("update", tea.id, importance=0.8)
        newer = call("supersede", tea.id, "Nadia prefers jasmine tea in the afternoon.")
        fixed = call("correct", newer.id, "Nadia prefers jasmine tea after lunch.")
        call("add_conversation", [STRONG, WEAK], session_id="s1")
        call("add_conversation", [WEAK], session_id="s2")  # reinforces: supersedes
        call("recall", "jasmine tea")
        call("feedback", fixed.id, useful=True, query="jasmine tea")
        call("feedback", weak.id, useful=True)
        call("link", pump.id, deploy.id)
        call("link_many", [Edge("co_occurs", pump.id, fixed.id)])
        call("derive_links")
        call("promote", fixed.id)
        call("archive", deploy.id)
        call("restore", deploy.id)
        call("keep", pump.id)
        call("tombstone", weak.id)
        call("cypher", "MATCH (m:Memory) WHERE m.id = $id SET m.confidence = 0.4",
             {"id": pump.id}, write=True)
        clock.advance(days=200)
        call("run_lifecycle", apply=True)
        call("forget", pump.id, confirm=True)
        call("forget_many", [deploy.id], confirm=True)
        call("purge")
        call("backup", tmp_path / "backup")
        assert rec.ran | API_NOT_DRIVEN == public
        assert not rec.ran & API_NOT_DRIVEN
