"""``Client``: ``MemoryStore``'s methods over a running sidecar (``graphmem.connect``).

Each method sends one request (``add_many`` one per 5,000 records) and turns the answer
into the value the embedded store returns (``Memory``, ``Hit``, ``Version``, the
lifecycle's results ...) or raises the ``GraphmemError`` subclass it raises. The
sidecar decides who the caller is: a token sees its owner's memories only, and every
change records that owner as its actor.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Self, Unpack

from .._backup import MANIFEST, BackupInfo, read_manifest, staged_directory
from .._engine import EDGE_KINDS, Link
from .._engine import EntityRecord as Entity
from .._engine import FactRecord as Fact
from .._errors import (
    ConfirmationRequiredError,
    InvalidInputError,
    ReadOnlyStoreError,
    StoreError,
)
from .._input import (
    MEMORY_PAGE,
    MemoryInput,
    UpdateFields,
    check_count,
    check_owner,
    check_reason,
    check_unit,
    memory_id_list,
    parse_records,
    recall_window,
    update_changes,
)
from .._learn import LearnReport
from .._lifecycle import (
    ArchiveResult,
    EvaluationResult,
    LifecycleReport,
    PromoteResult,
    RestoreResult,
)
from .._models import (
    AddResult,
    ChangeType,
    EventType,
    Kind,
    LifecycleEvent,
    Memory,
    Stats,
    Status,
    Version,
)
from .._progress import progress as progress_bar
from .._recall import Hit, RecallConfig
from .._time import parse_iso
from ._transport import Transport, path_segment

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Client", "connect", "for_database"]

#: The most memories one request of the sidecar takes (``MemoriesIn``).
_REQUEST_RECORDS = 5000


def connect(url: str | os.PathLike[str], *, token: str | None = None,
            timeout_s: float = 30.0, actor: str | None = None) -> Client:
    """A client of the graphmem sidecar at ``url``, with the same methods and return
    types as ``MemoryStore`` for what the sidecar serves.

    Parameters
    ----------
    url : str or os.PathLike
        The sidecar's base URL, e.g. ``"http://127.0.0.1:4380"``; or a database
        directory, whose sidecar is found, or started when there is none (a detached
        ``graphmem serve`` that exits after ``GRAPHMEM_SIDECAR_IDLE_S`` without a
        request): how a notebook, agents and commands share one store.
    token : str, optional
        A bearer token from the sidecar's tokens file; without one, a sidecar that has
        no tokens serves this machine as its local user.
    timeout_s : float
        How long one request may take.
    actor : str, optional
        As the local user, the actor the changes record (default ``GRAPHMEM_AGENT_ID``
        for a database directory; the sidecar's own otherwise). A token's owner is always
        its actor.

    Examples
    --------
    >>> import graphmem
    >>> store = graphmem.connect("http://127.0.0.1:4380", token="tok-alice-...")  # doctest: +SKIP
    >>> store.add("Nadia prefers green tea", kind="semantic").owner  # doctest: +SKIP
    'alice'
    """
    if isinstance(url, str | os.PathLike) and not os.fsdecode(url).strip():
        raise InvalidInputError("url is empty: give the sidecar's URL or a database "
                                "directory", field="url")
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        return Client(url, token=token, timeout_s=timeout_s, actor=actor)
    if not isinstance(url, str | os.PathLike) or not Path(url).is_dir():
        raise InvalidInputError(f"{url!r} is neither a sidecar URL (http://HOST:PORT) nor a "
                                "graphmem database directory (create one with MemoryStore("
                                "path) or `graphmem --db PATH init`)", field="url")
    return for_database(url, token=token, timeout_s=timeout_s, actor=actor)


def for_database(db: str | os.PathLike[str], *, token: str | None = None,
                 timeout_s: float = 30.0, actor: str | None = None,
                 embedder: str | None = None) -> Client:
    """A client of the sidecar serving the database directory ``db``, started when there
    is none (``find_or_start``); its secret is the token unless one is given."""
    from .._settings import Settings
    from ._autostart import find_or_start

    found, _ = find_or_start(db, embedder=embedder)
    return Client(found.url, token=token or found.secret, timeout_s=timeout_s,
                  actor=actor or Settings.from_env().agent_id)


class Client:
    """An agent's memories in a store served by ``graphmem serve``.

    The methods are ``MemoryStore``'s (see there) for everything the sidecar serves;
    both are a ``graphmem.MemoryAPI``. What it does not serve (bulk merges, re-embedding,
    ad-hoc writes) is not here.
    """

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 30.0,
                 actor: str | None = None) -> None:
        self._http = Transport(url, token=token, timeout_s=timeout_s, actor=actor)
        self._store: dict[str, Any] | None = None

    # -- the object ----------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self._http.url

    @property
    def path(self) -> str:
        """Where the store is: the sidecar's URL."""
        return self._http.url

    def whoami(self, *, fresh: bool = False) -> dict[str, Any]:
        """What the sidecar says about itself and the caller: store_id, version, auth,
        owner and scopes (asked once, or again when ``fresh``)."""
        if self._store is None or fresh:
            self._store = self._http.call("GET", "/v1/store")
        return dict(self._store)

    @property
    def store_id(self) -> str | None:
        found = self.whoami().get("store_id")
        return str(found) if found else None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    def _memory(self, memory_id: str, suffix: str = "") -> str:
        return f"/v1/memories/{path_segment(memory_id)}{suffix}"

    # -- memories ------------------------------------------------------------------------
    def get(self, memory_id: str, *, owner: str | None = None) -> Memory:
        return Memory.model_validate(self._http.call("GET", self._memory(memory_id),
                                                     params=_owner(owner)))

    def links(self, memory_id: str, *, owner: str | None = None) -> list[Link]:
        body = self._http.call("GET", self._memory(memory_id, "/links"), params=_owner(owner))
        return [Link(**link) for link in body["links"]]

    def history(self, memory_id: str, *, owner: str | None = None) -> list[Version]:
        body = self._http.call("GET", self._memory(memory_id, "/history"),
                               params=_owner(owner))
        return [Version.model_validate(v) for v in body["versions"]]

    def stats(self) -> Stats:
        """The store's counts (a token's: its owner's own)."""
        return Stats.model_validate(self._http.call("GET", "/v1/stats"))

    def memories(self, *, owner: str | None = None, offset: int = 0,
                 limit: int | None = None) -> list[Memory]:
        # checked as the store checks them; one request (a page the sidecar serves, or
        # everything after ``offset`` when more than a page is asked for)
        offset = check_count(offset, "offset")
        limit = None if limit is None else check_count(limit, "limit")
        if limit == 0:
            return []
        paged = limit is not None and limit <= MEMORY_PAGE
        params = {**_owner(owner), **({"offset": offset} if offset else {}),
                  **({"limit": limit} if paged else {})}
        body = self._http.call("GET", "/v1/memories", params=params)
        found = [Memory.model_validate(m) for m in body["memories"]]
        return found if limit is None or paged else found[:limit]

    def memory_count(self, *, owner: str | None = None) -> int:
        body = self._http.call("GET", "/v1/memories", params={**_owner(owner), "limit": 1})
        return int(body["count"])

    def events(self, memory_id: str | None = None, *, event_type: EventType | str | None = None,
               since: datetime | None = None, until: datetime | None = None,
               limit: int | None = None, owner: str | None = None) -> list[LifecycleEvent]:
        given = {"memory_id": memory_id, "event_type": event_type, "since": since,
                 "until": until, "limit": limit, "owner": check_owner(owner)}
        body = self._http.call("GET", "/v1/events", params={
            k: _plain(v) for k, v in given.items() if v is not None})
        return [LifecycleEvent.model_validate(e) for e in body["events"]]

    def add(self, text: str, *, actor: str | None = None, **fields: Any) -> Memory:
        return self.add_many([{"text": text, **fields}], actor=actor)[0]

    def add_many(self, records: Iterable[MemoryInput | Mapping[str, Any] | str], *,
                 batch_size: int = 500, progress: bool = False,
                 actor: str | None = None) -> list[Memory]:
        """Add many memories; every record is checked here first, then each request of
        up to 5,000 records is one transaction on the sidecar (all or none of it)."""
        _no_actor(actor)
        items = [_record_json(item) for item in parse_records(records)]
        bar = progress_bar(len(items), "adding", progress)
        out: list[Memory] = []
        for start in range(0, len(items), _REQUEST_RECORDS):
            chunk = items[start:start + _REQUEST_RECORDS]
            body = self._http.call("POST", "/v1/memories", json={"memories": chunk})
            out += [Memory.model_validate(m) for m in body["memories"]]
            bar.update(len(chunk))
        bar.close()
        return out

    def add_conversation(self, messages: Sequence[Mapping[str, Any] | str], *,
                         session_id: str, owner: str | None = None,
                         timestamp: datetime | None = None, extractor: Any = None,
                         cooccur_window: int = 2, actor: str | None = None) -> AddResult:
        _no_actor(actor)
        if extractor is not None:
            raise InvalidInputError("the sidecar extracts with its own extractor; leave "
                                    "extractor out", field="extractor")
        body = {"messages": list(messages), "session_id": session_id,
                "cooccur_window": cooccur_window, **_owner(owner)}
        if timestamp is not None:
            body["timestamp"] = timestamp.isoformat()
        return AddResult.model_validate(self._http.call("POST", "/v1/conversations",
                                                        json=body))

    def update(self, memory_id: str, *, reason: ChangeType | str = ChangeType.MANUAL_EDIT,
               actor: str | None = None, owner: str | None = None,
               **fields: Unpack[UpdateFields]) -> Memory:
        _no_actor(actor)
        _only_own(owner, self)
        changes = update_changes(fields)
        if "provenance" in changes:
            raise InvalidInputError("the sidecar does not change provenance", field="provenance")
        body = {k: _plain(v) for k, v in changes.items()}
        body["reason"] = _plain(reason)
        return Memory.model_validate(self._http.call("PATCH", self._memory(memory_id),
                                                     json=body))

    def supersede(self, old_id: str, new: Memory | str, *, reason: str = "conflict_update",
                  owner: str | None = None, actor: str | None = None,
                  **fields: Any) -> Memory:
        _no_actor(actor)
        _only_own(owner, self)
        body: dict[str, Any] = {"reason": reason, **{k: _plain(v) for k, v in fields.items()}}
        if isinstance(new, Memory):
            body["new_id"] = new.id
        else:
            body["text"] = new  # the sidecar's store reads an id it can see as that memory
        return Memory.model_validate(self._http.call(
            "POST", self._memory(old_id, "/supersede"), json=body))

    def correct(self, memory_id: str, new_text: str, *, owner: str | None = None,
                actor: str | None = None, **fields: Any) -> Memory:
        """A user correction: a supersede with reason ``conflict_update``."""
        return self.supersede(memory_id, new_text, reason="conflict_update", owner=owner,
                              actor=actor, **fields)

    def link(self, a: str, b: str, *, kind: str = "references", weight: float = 1.0,
             source: str = "explicit", owner: str | None = None) -> None:
        _only_own(owner, self)
        self._http.call("POST", self._memory(a, "/links"),
                        json={"other": b, "kind": kind, "weight": weight, "source": source})

    # -- state changes -------------------------------------------------------------------
    def tombstone(self, memory_id: str, *, reason: str = "manual", owner: str | None = None,
                  actor: str | None = None) -> Memory:
        _no_actor(actor)
        _only_own(owner, self)
        body = self._http.call("DELETE", self._memory(memory_id), params={"reason": reason})
        return Memory.model_validate(body["memory"])

    def forget(self, memory_id: str, *, confirm: bool = False, reason: str = "manual",
               owner: str | None = None, actor: str | None = None) -> None:
        _no_actor(actor)
        _only_own(owner, self)
        check_reason(reason)
        if confirm is not True:
            raise ConfirmationRequiredError(
                f"forget({memory_id!r}) deletes the memory's text for good; pass "
                "confirm=True (or --yes on the command line)")
        self._http.call("DELETE", self._memory(memory_id),
                        params={"hard": "true", "reason": reason})

    def forget_many(self, memory_ids: Sequence[str], *, confirm: bool = False,
                    reason: str = "manual", owner: str | None = None,
                    actor: str | None = None) -> int:
        _no_actor(actor)
        _only_own(owner, self)
        ids = memory_id_list(memory_ids)
        check_reason(reason)
        if confirm is not True:
            raise ConfirmationRequiredError(
                f"forget_many({len(ids)} memories) deletes their texts for good; "
                "pass confirm=True (or --yes on the command line)")
        if not ids:
            return 0
        body = self._http.call("POST", "/v1/forget", json={"ids": ids, "reason": reason})
        return int(body["forgotten"])

    def keep(self, memory_id: str, *, reason: str = "kept on review",
             owner: str | None = None, actor: str | None = None) -> LifecycleEvent:
        _no_actor(actor)
        _only_own(owner, self)
        return LifecycleEvent.model_validate(self._http.call(
            "POST", self._memory(memory_id, "/keep"), json={"reason": reason}))

    # -- recall --------------------------------------------------------------------------
    def recall(self, query: str, *, k: int = 10, preset: str | RecallConfig = "default",
               owner: str | None = None, kinds: Sequence[Kind | str] | None = None,
               as_of: datetime | None = None, include_archived: bool = False,
               record_access: bool = False, since: datetime | str | None = None,
               until: datetime | str | None = None, min_similarity: float | None = None,
               min_relative: float | None = None) -> list[Hit]:
        if not isinstance(preset, str):
            raise InvalidInputError("the sidecar recalls with a named preset (default, "
                                    "hybrid ...), not a RecallConfig", field="preset")
        body: dict[str, Any] = {"query": query, "k": k, "preset": preset,
                                "include_archived": include_archived,
                                "record_access": record_access, "explain": True,
                                **_owner(owner)}
        if kinds is not None:
            body["kinds"] = [_plain(kind) for kind in kinds]
        if as_of is not None:
            body["as_of"] = as_of.isoformat()
        # checked here as the store checks them: the same errors, before any request
        for name, moment in zip(("since", "until"), recall_window(since, until), strict=True):
            if moment is not None:
                body[name] = moment.isoformat()
        for name, share in (("min_similarity", min_similarity), ("min_relative", min_relative)):
            if share is not None:
                body[name] = check_unit(share, field=name)
        answer = self._http.call("POST", "/v1/memories/retrieve", json=body)
        return [Hit.model_validate({k: h[k] for k in ("memory", "score", "rank",
                                                        "explanation")})
                for h in answer["hits"]]

    def feedback(self, memory_id: str, *, useful: bool, query: str | None = None,
                 owner: str | None = None, actor: str | None = None) -> Memory:
        _no_actor(actor)
        _only_own(owner, self)
        body = self._http.call("POST", "/v1/feedback",
                               json={"memory_id": memory_id, "useful": useful, "query": query})
        return Memory.model_validate(body["memory"])

    def learn(self, *, ranker: bool = True, forecast: bool = True,
              horizon_days: float = 30.0) -> LearnReport:
        """Train the store's ranker and forecast (the token needs the admin and
        all_owners scopes: the models learn from, and serve, every owner)."""
        return LearnReport.model_validate(self._http.call("POST", "/v1/learn", json={
            "ranker": ranker, "forecast": forecast, "horizon_days": horizon_days}))

    def learned(self) -> LearnReport:
        """What the store learned (the token needs the all_owners scope)."""
        return LearnReport.model_validate(self._http.call("GET", "/v1/learn"))

    # -- lifecycle -----------------------------------------------------------------------
    def evaluate(self, memory_id: str, *, owner: str | None = None) -> EvaluationResult:
        return _evaluation(self._http.call("GET", self._memory(memory_id, "/evaluation"),
                                           params=_owner(owner)))

    def batch_evaluate(self, ids: Sequence[str] | None = None, *, owner: str | None = None,
                       kinds: Sequence[Kind | str] | None = None,
                       statuses: Sequence[Status | str] = (Status.ACTIVE,)
                       ) -> list[EvaluationResult]:
        body: dict[str, Any] = {"statuses": [_plain(s) for s in statuses], **_owner(owner)}
        if ids is not None:
            body["ids"] = list(ids)
        if kinds is not None:
            body["kinds"] = [_plain(k) for k in kinds]
        answer = self._http.call("POST", "/v1/lifecycle/evaluate", json=body)
        return [_evaluation(e) for e in answer["evaluations"]]

    def promote(self, memory_id: str, *, reason: str = "manual", owner: str | None = None,
                actor: str | None = None) -> PromoteResult:
        _no_actor(actor)
        _only_own(owner, self)
        return PromoteResult.model_validate(self._transition(memory_id, "promote",
                                                             {"reason": reason}))

    def archive(self, memory_id: str, *, reason: str = "manual", create_summary: bool = False,
                owner: str | None = None, actor: str | None = None) -> ArchiveResult:
        _no_actor(actor)
        _only_own(owner, self)
        return ArchiveResult.model_validate(self._transition(
            memory_id, "archive", {"reason": reason, "create_summary": create_summary}))

    def restore(self, memory_id: str, *, owner: str | None = None,
                window_days: float | None = None, actor: str | None = None) -> RestoreResult:
        _no_actor(actor)
        _only_own(owner, self)
        if window_days is not None:
            raise InvalidInputError("the sidecar restores within its own window "
                                    "(GRAPHMEM_RESTORE_WINDOW_DAYS)", field="window_days")
        return RestoreResult.model_validate(self._transition(memory_id, "restore", None))

    def _transition(self, memory_id: str, name: str, body: dict[str, Any] | None) -> Any:
        """A transition's result, also when it did not apply (the sidecar's 409)."""
        return self._http.call("POST", self._memory(memory_id, f"/{name}"), json=body,
                               results_of={409})

    def run_lifecycle(self, *, apply: bool = False, owner: str | None = None,
                      actor: str | None = None) -> LifecycleReport:
        """The lifecycle manager: a dry run (the report; read scope), or with ``apply``
        the changes (admin scope)."""
        _no_actor(actor)
        if not apply:
            return _report(self._http.call("GET", "/v1/lifecycle/report", params=_owner(owner)))
        return _report(self._http.call("POST", "/v1/lifecycle/run",
                                       json={"apply": True, **_owner(owner)}))

    # -- views ---------------------------------------------------------------------------
    def export(self, owner: str | None = None, *, format: str = "gdpr") -> Any:
        """The GDPR export (a dict), or with ``format="ump"`` a UMP file's records."""
        return self._http.call("GET", "/v1/export", params={"format": format, **_owner(owner)})

    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *,
               write: bool = False, as_dataframe: bool = False,
               actor: str | None = None) -> Any:
        """One read-only Cypher statement across owners (the token needs the all_owners
        scope). Timestamps come back as ISO 8601 text."""
        if write:
            raise ReadOnlyStoreError("the sidecar runs no ad-hoc Cypher writes; change "
                                     "memories through the API (update, supersede, link ...)")
        body = self._http.call("POST", "/v1/cypher",
                               json={"query": query, "params": dict(params or {})})
        return _rows(body["rows"], as_dataframe)

    def named_query(self, name: str, params: Mapping[str, Any] | None = None, *,
                    as_dataframe: bool = False, owner: str | None = None) -> Any:
        """Run one of ``queries/``'s named queries on the sidecar (within the token's
        owner). ``queries.library.run_named(client, ...)`` is this call."""
        body = self._http.call("POST", f"/v1/queries/{path_segment(name)}",
                               json={"params": _plain(dict(params or {})), **_owner(owner)})
        return _rows(body["rows"], as_dataframe)

    def entities(self, *, owner: str | None = None) -> list[Entity]:
        body = self._http.call("GET", "/v1/entities", params=_owner(owner))
        return [_entity(e) for e in body["entities"]]

    def facts(self, *, owner: str | None = None, about: str | None = None,
              as_of: datetime | None = None, current: bool = False) -> list[Fact]:
        params: dict[str, Any] = {"current": current, **_owner(owner)}
        if about is not None:
            params["about"] = about
        if as_of is not None:
            params["as_of"] = as_of.isoformat()
        body = self._http.call("GET", "/v1/facts", params=params)
        return [_fact(f) for f in body["facts"]]

    def to_networkx(self, *, owner: str | None = None,
                    edge_kinds: Iterable[str] = EDGE_KINDS,
                    statuses: Iterable[str] | None = None) -> nx.MultiDiGraph:
        import networkx as nx

        params: dict[str, Any] = {"edge_kinds": list(edge_kinds), **_owner(owner)}
        if statuses is not None:
            params["statuses"] = list(statuses)
        body = self._http.call("GET", "/v1/graph", params=params)
        graph = nx.MultiDiGraph()
        for node in body["nodes"]:
            attrs = dict(node)
            if attrs.get("created") is not None:
                attrs["created"] = parse_iso(attrs["created"])
            graph.add_node(attrs.pop("id"), **attrs)
        for edge in body["edges"]:
            graph.add_edge(edge["src"], edge["dst"], key=edge["kind"], kind=edge["kind"],
                           weight=edge["weight"])
        return graph

    def named_queries(self) -> list[dict[str, Any]]:
        """The named queries the sidecar knows, with their parameters."""
        queries: list[dict[str, Any]] = self._http.call("GET", "/v1/queries")["queries"]
        return queries

    # -- backups -------------------------------------------------------------------------
    def backup(self, directory: str | os.PathLike[str]) -> BackupInfo:
        """Write a consistent snapshot of the served store to ``directory`` (new or
        empty) on this machine; its manifest and checksums are checked before it is
        kept (the token needs the admin and all_owners scopes)."""
        target = Path(directory)
        with staged_directory(target, what="backup directory") as scratch:
            with tempfile.TemporaryFile(dir=scratch) as spool:
                with self._http.stream("GET", "/v1/backup") as response:
                    for block in response.iter_bytes(1 << 20):
                        spool.write(block)
                spool.seek(0)
                _unpack(spool, scratch)
            read_manifest(scratch)
        info = read_manifest(target)
        info.path = str(directory)
        return info


def _unpack(spool: Any, root: Path) -> None:
    """Extract a backup tar: regular files under ``data/`` and the manifest, nothing
    else (no links, devices, absolute paths or ``..``)."""
    try:
        with tarfile.open(fileobj=spool, mode="r:") as tar:
            for member in tar.getmembers():
                name = PurePosixPath(member.name)
                inside = not name.is_absolute() and ".." not in name.parts and (
                    name.parts[:1] == ("data",) or str(name) == MANIFEST)
                if not (member.isfile() and inside):
                    raise StoreError(f"the sidecar's backup holds {member.name!r}, which a "
                                     "backup never does; nothing was kept")
                source = tar.extractfile(member)
                assert source is not None  # a regular file
                path = root.joinpath(*name.parts)
                path.parent.mkdir(parents=True, exist_ok=True)
                with source, path.open("xb") as out:
                    while block := source.read(1 << 20):
                        out.write(block)
    except tarfile.TarError as exc:
        raise StoreError(f"the sidecar's backup is not a readable tar stream ({exc})") from None


def _owner(owner: str | None) -> dict[str, str]:
    """The ``owner`` a call names as request parameters, checked as the store checks it:
    a wrong one is refused here, before any request."""
    checked = check_owner(owner)
    return {} if checked is None else {"owner": checked}


def _only_own(owner: str | None, client: Client) -> None:
    """Changes are scoped by the sidecar to the token's owner (or, for the local user,
    to whoever owns the memory): an owner given here can only repeat the token's."""
    if check_owner(owner) is not None and owner != client.whoami().get("owner"):
        raise InvalidInputError("over the sidecar, changes are scoped to the token's owner; "
                                "leave owner out (or give the token's own)", field="owner")


def _no_actor(actor: str | None) -> None:
    if actor is not None:
        raise InvalidInputError("the sidecar records the token's owner as the actor; leave "
                                "actor out", field="actor")


def _plain(value: Any) -> Any:
    """A value as JSON: enums by value, times in ISO 8601, containers item by item."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str):
        return str(value)  # a StrEnum's value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _record_json(item: MemoryInput) -> dict[str, Any]:
    """A checked record as the sidecar's body: the fields that differ from the defaults."""
    data: dict[str, Any] = item.model_dump(mode="json", exclude_defaults=True)
    data["text"] = item.text
    return data


def _times(data: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: None if data[name] is None else parse_iso(data[name]) for name in names}


def _entity(data: dict[str, Any]) -> Entity:
    return Entity(**{**data, "aliases": tuple(data["aliases"]), "merges": tuple(data["merges"]),
                     **_times(data, "created", "first_seen", "last_seen")})


def _fact(data: dict[str, Any]) -> Fact:
    return Fact(**{**data, "sources": tuple(data["sources"]),
                   **_times(data, "valid_from", "valid_to", "recorded")})


def _evaluation(data: dict[str, Any]) -> EvaluationResult:
    return EvaluationResult.model_validate(data)


def _report(data: dict[str, Any]) -> LifecycleReport:
    return LifecycleReport.model_validate(data)


def _rows(rows: list[dict[str, Any]], as_dataframe: bool) -> Any:
    if as_dataframe:
        import pandas as pd

        return pd.DataFrame(rows)
    return rows
