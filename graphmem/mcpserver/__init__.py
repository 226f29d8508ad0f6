"""The MCP face: graphmem's tools for agents over stdio (``graphmem mcp``).

Tools: remember, recall (explained), feedback, supersede, correct, update, link, forget,
history, lifecycle_report. Changes keep the memory's history: a supersede or correction
keeps the old version (linked by SUPERSEDES), every change writes a version row, and the
actor recorded is the token's owner (through a sidecar with tokens) or the agent id.
On a Kuzu store directory they go through the store's own sidecar, found or started
(``SharedBackend``), so that several MCP servers, commands and notebooks share it;
``embedded=True`` opens it in this process alone. With a sidecar URL they call that
sidecar. With a token too, the sidecar alone answers (it alone knows the token's owner
and scopes); without one, the embedded store answers when the sidecar cannot be
reached, if it is the same store. Every result says which path answered
(``answered_by``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from .._errors import GraphmemError, InvalidInputError
from .._settings import Settings
from ..engines import is_postgres_url
from ._backends import (
    EmbeddedBackend,
    FallbackBackend,
    SharedBackend,
    SidecarBackend,
    within_budget,
)
from ._screen import serve_stdio

__all__ = ["build_server", "run_stdio"]

INSTRUCTIONS = (
    "graphmem is your long-term memory. Call `recall` before answering questions about the "
    "user, past work or decisions; call `remember` for durable facts, preferences and "
    "decisions (one fact per call); call `feedback` with useful=true on recalled memories "
    "that helped. When a remembered fact changes, call `supersede` (or `correct` for a "
    "mistake) with the new text instead of remembering it again: the old version is kept "
    "in the history. `update` changes importance, tags or the subject; `link` connects two "
    "related memories. `forget` tombstones a memory (hard=true erases it).")


def shareable(db: str | Path) -> bool:
    """Whether the store at ``db`` is shared through a sidecar: a Kuzu directory (one
    writing process; PostgreSQL takes many, ``:memory:`` is this process's alone), where
    the sidecar's dependencies (``graphmem[server]``) are installed."""
    if str(db) == ":memory:" or is_postgres_url(str(db)):
        return False
    return all(importlib.util.find_spec(m) is not None for m in ("fastapi", "uvicorn"))


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)  # stdout is the MCP stream


def build_server(db: str | Path, *, sidecar_url: str | None = None, token: str | None = None,
                 settings: Settings | None = None, embedder: str | None = None,
                 embedded: bool = False) -> Any:
    """The MCP server (an ``MCPServer`` of the ``mcp`` SDK) and its tools."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from .. import __version__

    settings = settings or Settings.from_env()
    if token and not sidecar_url:
        raise InvalidInputError(
            "a token is for the sidecar, which enforces its owner and scopes: pass --sidecar "
            "URL (or set GRAPHMEM_SIDECAR_URL), or leave the token out to use the store at "
            f"{db} directly as its local user", field="token")
    local = EmbeddedBackend(db, settings=settings, embedder=embedder)
    fallback: FallbackBackend | SharedBackend | None = None
    if sidecar_url:
        sidecar = SidecarBackend(sidecar_url, token=token,
                                 timeout_s=settings.sidecar_timeout_s)
        fallback = FallbackBackend(sidecar, None if token else local, db=db)
    elif not embedded and shareable(db):
        fallback = SharedBackend(db, settings=settings, embedder=embedder, say=_say)
    elif not embedded and str(db) != ":memory:" and not is_postgres_url(str(db)):
        _say(f"graphmem mcp: {db} is opened in this process alone (install graphmem[server] "
             "to share it with other MCP servers and commands through its sidecar)")
    server: Any = MCPServer("graphmem", version=__version__, instructions=INSTRUCTIONS,
                            log_level="WARNING")

    def run(operation: Any, *, changes: bool = False) -> tuple[Any, dict[str, Any]]:
        try:
            if fallback is None:
                return operation(local), {"answered_by": "embedded"}
            result, path, why = fallback.call(operation, changes=changes)
        except GraphmemError as exc:
            raise ToolError(str(exc)) from None
        meta: dict[str, Any] = {"answered_by": path}
        if why:
            meta["sidecar_error"] = why
        return result, meta

    @server.tool()
    def remember(text: str, kind: str = "episodic", subject: str | None = None,
                 importance: float = 0.5, tags: list[str] | None = None) -> dict[str, Any]:
        """Store one memory (a fact, preference, decision or event) and return it.
        kind: episodic, semantic, procedural, identity, working or note."""
        fields: dict[str, Any] = {"text": text, "kind": kind, "importance": importance,
                                  "tags": tags or []}
        if subject:
            fields["subject"] = subject
        memory, meta = run(lambda b: b.remember(fields), changes=True)
        return {"memory": memory, **meta}

    @server.tool()
    def recall(query: str, k: int = 5, preset: str = "default", explain: bool = True,
               record_access: bool = False, since: str | None = None,
               until: str | None = None, min_similarity: float | None = None,
               min_relative: float | None = None,
               max_chars: int | None = None) -> dict[str, Any]:
        """The memories that best answer the query, best first, each with why it came
        back (its rank in each channel and its ACT-R activation). A recall changes
        nothing unless record_access is true; say which memories helped with feedback.
        since / until (ISO 8601, e.g. 2026-05-01): only memories created in that range
        (until excluded). min_similarity (0..1, 0.25 suits the default model): answer
        nothing when no memory is that similar to the query. min_relative (0..1): drop
        hits scoring below that share of the best. max_chars: at most that many
        characters of hit text, best hits first (left_out says how many did not fit)."""
        if max_chars is not None and (isinstance(max_chars, bool) or max_chars < 1):
            raise ToolError(f"max_chars must be a positive number of characters, got "
                            f"{max_chars!r}")
        options = {name: value for name, value in (
            ("since", since), ("until", until), ("min_similarity", min_similarity),
            ("min_relative", min_relative)) if value is not None}
        hits, meta = run(lambda b: b.recall(query, k, preset, explain, record_access,
                                            options), changes=record_access)
        hits, left_out = within_budget(hits, max_chars)
        budget = {} if max_chars is None else {"max_chars": max_chars, "left_out": left_out}
        return {"query": query, "hits": hits, **budget, **meta}

    @server.tool()
    def feedback(memory_id: str, useful: bool, query: str | None = None) -> dict[str, Any]:
        """Say whether a recalled memory helped; useful ones gain importance and get
        linked to the other useful memories of the same recall."""
        result, meta = run(lambda b: b.feedback(memory_id, useful, query), changes=True)
        return {**result, **meta}

    @server.tool()
    def supersede(memory_id: str, text: str, reason: str = "conflict_update",
                  subject: str | None = None, kind: str | None = None) -> dict[str, Any]:
        """Replace a memory with a newer version (its text changed: a move, an upgrade,
        a new decision). The old one is kept, marked superseded, and out of recall."""
        fields = {k: v for k, v in (("subject", subject), ("kind", kind)) if v is not None}
        memory, meta = run(lambda b: b.supersede(memory_id, text, reason, fields),
                           changes=True)
        return {"memory": memory, "supersedes": memory_id, **meta}

    @server.tool()
    def correct(memory_id: str, text: str) -> dict[str, Any]:
        """Correct a memory that was wrong: the corrected text supersedes it (reason
        conflict_update); the wrong version stays in the history."""
        memory, meta = run(lambda b: b.supersede(memory_id, text, "conflict_update", {}),
                           changes=True)
        return {"memory": memory, "supersedes": memory_id, **meta}

    @server.tool()
    def update(memory_id: str, importance: float | None = None, tags: list[str] | None = None,
               subject: str | None = None, kind: str | None = None,
               reason: str = "manual_edit") -> dict[str, Any]:
        """Change a memory's importance, tags, subject or kind in place (one version row
        with change type reason: manual_edit or importance_boost). To change what it
        says, use supersede or correct."""
        fields: dict[str, Any] = {k: v for k, v in (("importance", importance), ("tags", tags),
                                                     ("subject", subject), ("kind", kind))
                                  if v is not None}
        if not fields:
            raise ToolError("nothing to change: give importance, tags, subject or kind")
        memory, meta = run(lambda b: b.update(memory_id, {**fields, "reason": reason}),
                           changes=True)
        return {"memory": memory, **meta}

    @server.tool()
    def link(memory_id: str, other_id: str, kind: str = "references",
             weight: float = 1.0) -> dict[str, Any]:
        """Connect two memories: references (the first points at the other) or
        co_occurs (they belong together). Recall walks these edges."""
        result, meta = run(lambda b: b.link(memory_id, other_id, kind, weight), changes=True)
        return {**result, **meta}

    @server.tool()
    def forget(memory_id: str, hard: bool = False) -> dict[str, Any]:
        """Tombstone a memory (reversible), or with hard=true erase its text everywhere."""
        result, meta = run(lambda b: b.forget(memory_id, hard), changes=True)
        return {**result, **meta}

    @server.tool()
    def history(memory_id: str) -> dict[str, Any]:
        """The append-only version history of a memory, oldest first."""
        versions, meta = run(lambda b: b.history(memory_id))
        return {"memory_id": memory_id, "versions": versions, **meta}

    @server.tool()
    def lifecycle_report() -> dict[str, Any]:
        """The Archivist Lifecycle Report (a dry run: what would be promoted, archived or
        reviewed, and why), as Markdown."""
        report, meta = run(lambda b: b.lifecycle_report())
        return {"report": report, **meta}

    _refuse_unknown_arguments(server)
    server.graphmem_embedded = local
    server.graphmem_sidecar = fallback.primary if isinstance(fallback, FallbackBackend) \
        else fallback
    return server


def _refuse_unknown_arguments(server: Any) -> None:
    """Make every tool refuse an argument it does not take, as the sidecar's API does
    (the SDK dropped them: recall with ``kinds`` misspelt answered unfiltered), and say
    so in the schema it lists."""
    from pydantic import ConfigDict

    for tool in server._tool_manager.list_tools():
        loose = tool.fn_metadata.arg_model
        tool.fn_metadata.arg_model = type(loose.__name__, (loose,), {
            "model_config": ConfigDict(extra="forbid", arbitrary_types_allowed=True),
            "__module__": loose.__module__})
        tool.parameters = {**tool.parameters, "additionalProperties": False}


def run_stdio(db: str | Path, *, sidecar_url: str | None = None, token: str | None = None,
              settings: Settings | None = None, embedder: str | None = None,
              embedded: bool = False) -> None:
    """Serve the tools on stdin/stdout until the client closes them."""
    server = build_server(db, sidecar_url=sidecar_url, token=token, settings=settings,
                          embedder=embedder, embedded=embedded)
    try:
        serve_stdio(server)
    finally:
        server.graphmem_embedded.close()
        if server.graphmem_sidecar is not None:
            server.graphmem_sidecar.close()
