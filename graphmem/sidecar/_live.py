"""The analyst's read side of a live store: what the command line and notebooks need
while the sidecar holds the database (Kuzu lets one process write it).

    GET  /v1/stats             counts; a token's are its owner's own            read
    GET  /v1/entities          the knowledge graph's entities, the token's owner's read
    GET  /v1/facts             its facts (about an entity, as of a time)         read
    GET  /v1/graph             the memory graph, as ``to_networkx`` builds it    read
    GET  /v1/queries           the named queries, and which are owner-scoped     read
    POST /v1/queries/{name}    one named query, run within the token's owner     read
    POST /v1/cypher            one read-only Cypher statement, across owners     read + all_owners
    GET  /v1/backup            a consistent snapshot, as a tar stream            admin + all_owners

Named queries confine themselves to one owner (``queries.library``); ad-hoc Cypher
cannot be confined, so it needs ``all_owners``, granted explicitly, and it stays
read-only whatever the token (the store's Cypher gate, then a read-only transaction).
A backup holds every owner's memories: ``all_owners`` too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tarfile
import tempfile
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from .._engine import EDGE_KINDS
from .._errors import ReadOnlyStoreError
from .._facade import MemoryStore
from .._models import Stats
from .._time import format_iso
from .._views import to_json
from ..named import find_query, load_queries
from ._auth import Principal
from ._deps import Admin, AllOwners, OwnerParam, Reader, scoped_owner
from ._errors import BODY, GATE, errors
from ._guard import Refusal
from ._schemas import CypherIn, NamedQueryIn

__all__ = ["BACKUP_MEDIA_TYPE", "add_live_routes", "owner_stats"]

BACKUP_MEDIA_TYPE = "application/x-tar"
_EDGE_KINDS: list[str] = list(EDGE_KINDS)


def owner_stats(store: MemoryStore, owner: str) -> Stats:
    """The store's statistics counted over one owner's memories, their edges, versions
    and events (``MemoryStore.stats`` counts every owner's)."""
    memories = store.memories(owner=owner)
    export = store.export(owner=owner)
    whole = store.stats()
    return Stats(memories=len(memories),
                 by_kind=dict(Counter(m.kind.value for m in memories)),
                 by_status=dict(Counter(m.status.value for m in memories)),
                 hot=sum(m.hot for m in memories),
                 superseded=sum(bool(m.superseded_by) for m in memories),
                 edges={kind: len(edges) for kind, edges in export["edges"].items()},
                 versions=len(export["versions"]), events=len(export["events"]),
                 owners=1 if memories else 0, embedder=whole.embedder,
                 schema_version=whole.schema_version)


def add_live_routes(app: FastAPI, store: MemoryStore) -> None:
    """Add the read-side routes of the module docstring to ``app``."""

    def stats_of(who: Principal) -> Stats:
        if who.owner is None or who.allows("all_owners"):
            return store.stats()
        return owner_stats(store, who.owner)

    @app.get("/v1/stats", tags=["analysis"], responses=errors(*GATE))
    def stats(who: Reader) -> dict[str, Any]:
        """Counts by kind, status and edge type, versions and events: the whole store's
        for the local user or an all_owners token, else the token's owner's."""
        return to_json(stats_of(who))

    @app.get("/v1/entities", tags=["analysis"], responses=errors(*GATE, 422))
    def entities(who: Reader, owner: OwnerParam = None) -> dict[str, Any]:
        """The entities the caller's memories mention, with aliases and mention counts."""
        found = store.entities(owner=scoped_owner(who, owner))
        return {"count": len(found), "entities": [to_json(e) for e in found]}

    @app.get("/v1/facts", tags=["analysis"], responses=errors(*GATE, 422))
    def facts(who: Reader, owner: OwnerParam = None, about: str | None = None,
              as_of: datetime | None = None, current: bool = False) -> dict[str, Any]:
        """Facts between entities: ``about`` one (an id or a name), valid ``as_of`` a
        time, or ``current`` ones only."""
        found = store.facts(owner=scoped_owner(who, owner), about=about, as_of=as_of,
                            current=current)
        return {"count": len(found), "facts": [to_json(f) for f in found]}

    @app.get("/v1/graph", tags=["analysis"], responses=errors(*GATE, 422))
    def graph(who: Reader, owner: OwnerParam = None,
              edge_kinds: Annotated[list[str], Query()] = _EDGE_KINDS,
              statuses: Annotated[list[str] | None, Query()] = None) -> dict[str, Any]:
        """The memory graph (``MemoryStore.to_networkx``): nodes with their attributes,
        edges with their kind and weight."""
        found = store.to_networkx(owner=scoped_owner(who, owner), edge_kinds=edge_kinds,
                                  statuses=statuses)
        return {"nodes": _plain([{"id": node, **attrs}
                                 for node, attrs in found.nodes(data=True)]),
                "edges": [{"src": src, "dst": dst, "kind": kind, "weight": data["weight"]}
                          for src, dst, kind, data in found.edges(keys=True, data=True)]}

    @app.get("/v1/queries", tags=["analysis"], responses=errors(*GATE))
    def list_queries(who: Reader) -> dict[str, Any]:
        """The named queries: parameters, description, and whether this caller may run
        them (a token without all_owners runs the owner-scoped ones)."""
        wide = who.owner is None or who.allows("all_owners")
        return {"queries": [
            {"name": q.name, "description": q.description, "owner_scoped": q.owner_scoped,
             "runnable": wide or q.owner_scoped,
             "parameters": [p.describe() for p in q.params if p.name != "owner" or wide]}
            for q in load_queries().values()]}

    @app.post("/v1/queries/{name}", tags=["analysis"],
              responses=errors(*GATE, *BODY, 501))
    def named_query(name: str, who: Reader, body: NamedQueryIn | None = None
                    ) -> dict[str, Any]:
        """Run a named query: within the token's owner, or for the local user and an
        all_owners token as asked (``owner``: within that one). A query that reads across
        owners needs all_owners."""
        query = find_query(name)
        body = body or NamedQueryIn()
        wide = who.owner is None or who.allows("all_owners")
        owner = body.owner if wide else scoped_owner(who, body.owner)
        if not wide and not query.owner_scoped:
            raise Refusal(403, "forbidden", f"{name} reads across owners; this token needs "
                                            "the all_owners scope to run it")
        rows = store.named_query(name, body.params, owner=owner)
        return {"name": name, "count": len(rows), "rows": _plain(rows)}

    @app.post("/v1/cypher", tags=["analysis"], responses=errors(*GATE, *BODY, 501))
    def cypher(body: CypherIn, who: Reader, _: AllOwners) -> dict[str, Any]:
        """One read-only Cypher statement over every owner's memories (hence the
        all_owners scope), on a Kuzu store: a PostgreSQL store answers 501 (the named
        queries answer on both). Writes are refused: change memories through their
        routes. A statement still running after GRAPHMEM_CYPHER_TIMEOUT_S (10 s unless
        the sidecar sets it) is stopped: 422, field 'query'; other requests are served
        meanwhile."""
        try:
            rows = store.cypher(body.query, body.params)
        except ReadOnlyStoreError as exc:  # the library's way to write is not this route's
            raise ReadOnlyStoreError(f"{exc.reason or exc}; /v1/cypher only reads: change "
                                     "memories through their routes (/v1/memories ...)"
                                     ) from None
        return {"count": len(rows), "rows": _plain(rows)}

    @app.get("/v1/backup", tags=["analysis"], responses=errors(*GATE),
             response_class=FileResponse)
    def backup(who: Admin, _: AllOwners) -> FileResponse:
        """A consistent snapshot of the whole store (what ``graphmem backup`` writes) as
        an uncompressed tar stream: ``graphmem-backup.json`` and ``data/``. Writers wait
        while it is taken."""
        scratch = Path(tempfile.mkdtemp(prefix=".graphmem-backup-", dir=_scratch_parent(store)))
        try:
            store.backup(scratch / "backup")
            archive = scratch / "backup.tar"
            with tarfile.open(archive, "w") as tar:
                for path in sorted((scratch / "backup").rglob("*")):
                    if path.is_file():
                        tar.add(path, arcname=path.relative_to(scratch / "backup").as_posix(),
                                recursive=False)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        return FileResponse(archive, media_type=BACKUP_MEDIA_TYPE,
                            filename="graphmem-backup.tar",
                            background=BackgroundTask(shutil.rmtree, scratch, True))


def _scratch_parent(store: MemoryStore) -> str | None:
    """Beside the database (a backup can be large; /tmp is often a small tmpfs), or the
    system's temporary directory when that is not writable."""
    with contextlib.suppress(OSError):
        parent = Path(store.path).resolve().parent
        if os.access(parent, os.W_OK):
            return str(parent)
    return None


def _plain(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Query rows as JSON data: timestamps in ISO 8601 (Kuzu's are UTC), other values
    JSON cannot hold as text."""
    out: list[dict[str, Any]] = json.loads(json.dumps(rows, default=_json_value))
    return out


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_iso(value if value.tzinfo else value.replace(tzinfo=UTC))
    if isinstance(value, date):
        return value.isoformat()
    return str(value)
