"""Rules every engine obeys, written once as data: each dialect (``_kuzu``, ``_postgres``)
renders them into its own statements and adds nothing to them.

- the version id (``version_id``: ``<memory id>#v<seq>``);
- the lifecycle job table (``JOBS``): what each job sets, which memories still need it
  (a job touches a memory only while it is still in the state the plan found it in, so a
  plan applied twice, or by two processes, writes each change, version and event once),
  and the version row and event it records;
- the order in which a ``WriteBatch`` is written (``BATCH_STEPS``, ``write_batch``), and
  how a batch and a job's decisions reach the engine's transaction (``Writes``);
- what erasing a memory's traces does, in order (``erase``);
- which events an ``EventQuery`` selects and in what order (``event_conditions``,
  ``EVENT_ORDER``), and which events quote a memory (``quoting_probes``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from ._engine import BatchWriter, ChangeSet, Decision, EventQuery, Job, WriteBatch
from ._errors import ConflictError

__all__ = [
    "BATCH_STEPS",
    "ERASED_VERSION",
    "EVENT_ORDER",
    "JOBS",
    "JOB_EVENT",
    "JOB_VERSION",
    "KEEPS_METADATA",
    "REDACTED_METADATA",
    "VERSION_MARK",
    "BatchSteps",
    "Dialect",
    "ErasureSteps",
    "Field",
    "JobRule",
    "Next",
    "Param",
    "Staged",
    "Term",
    "VersionId",
    "Writes",
    "erase",
    "event_conditions",
    "job_fields",
    "key_taken",
    "quoting_probes",
    "quoting_rows",
    "render",
    "staged",
    "version_id",
    "write_batch",
]

# -- version ids -----------------------------------------------------------------------
#: Between a memory's id and a version's sequence number in the version's id.
VERSION_MARK = "#v"


def version_id(memory_id: str, seq: int) -> str:
    """The id of a memory's version ``seq``.

    >>> version_id("m:a", 2)
    'm:a#v2'
    """
    return f"{memory_id}{VERSION_MARK}{seq}"


def key_taken(key: str) -> ConflictError:
    """The error for a write refused because ``key`` (a memory's id, or a version's) is
    already stored: a version's means another writer changed the memory after this write
    read it.

    >>> str(key_taken("m:a#v3"))[:64]
    'memory m:a was changed by another writer after this write read i'
    >>> str(key_taken("m:a"))
    'a memory with id m:a already exists'
    """
    memory_id, mark, seq = key.rpartition(VERSION_MARK)
    if mark and memory_id and seq.isdigit():
        return ConflictError(
            f"memory {memory_id} was changed by another writer after this write read it "
            f"(its version {seq} is stored already); nothing was written: read it again "
            "and retry")
    return ConflictError(f"a memory with id {key} already exists")


# -- lifecycle jobs --------------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    """A field of the memory: in ``JobRule.sets`` its value before the job, in the
    version row and the event its value after."""

    name: str


@dataclass(frozen=True)
class Staged:
    """A value of the staged decision: ``number``, ``xrefs``, ``reason``, ``event_id`` or
    ``metadata`` (JSON text)."""

    name: str


@dataclass(frozen=True)
class Param:
    """A value of the job's run: ``now`` or ``actor``."""

    name: str


@dataclass(frozen=True)
class Next:
    """The memory's field plus one (before the job)."""

    name: str


@dataclass(frozen=True)
class VersionId:
    """The version id (``version_id``) of the memory's id and its version after the job."""


#: A value in a job's statement: one of the above, or a literal (text, bool, None).
Term = Field | Staged | Param | Next | VersionId | str | bool | None


@dataclass(frozen=True)
class JobRule:
    """What a job does to each memory of its staged decisions.

    ``sets`` (field, value) in order; ``needs`` the fields of ``sets`` of which one at
    least must differ from the value the job gives it (null counts as a value) for the
    job to touch the memory: the "still in the planned state" guard (none: always);
    ``change`` the version row's change type (the version goes up, ``BUMP``) or None;
    ``event`` (event type, from state, to state) of the event it records, or None;
    ``states`` the statuses the decisions were planned from, which the memory must still
    have (none: any): a memory another handle forgot or tombstoned meanwhile is left."""

    sets: tuple[tuple[str, Term], ...]
    needs: tuple[str, ...] = ()
    change: str | None = None
    event: tuple[str, Term, Term] | None = None
    states: tuple[str, ...] = ()

    def assignments(self) -> tuple[tuple[str, Term], ...]:
        """``sets``, then the version bump when the job records a version."""
        return self.sets + (BUMP if self.change is not None else ())

    def guard(self) -> tuple[tuple[str, Term], ...]:
        """(field, value it is given) for each field of ``needs``."""
        given = dict(self.sets)
        return tuple((name, given[name]) for name in self.needs)

    def version_row(self) -> tuple[tuple[str, Term], ...]:
        """The version row the job records (column, value), or none."""
        if self.change is None:
            return ()
        return (*JOB_VERSION, ("change_type", self.change))

    def event_row(self) -> tuple[tuple[str, Term], ...]:
        """The event the job records (column, value), or none."""
        if self.event is None:
            return ()
        kind, before, after = self.event
        return (*JOB_EVENT, ("event_type", kind), ("from_state", before), ("to_state", after))


class Dialect(Protocol):
    """How one engine's query language writes each kind of ``Term``."""

    def field(self, name: str) -> str: ...
    def staged(self, name: str) -> str: ...
    def param(self, name: str) -> str: ...
    def next(self, name: str) -> str: ...
    def version_id(self) -> str: ...
    def text(self, value: str) -> str: ...


def render(term: Term, dialect: Dialect) -> str:
    """``term`` in ``dialect`` (null and booleans as SQL and Cypher both write them)."""
    if isinstance(term, Field):
        return dialect.field(term.name)
    if isinstance(term, Staged):
        return dialect.staged(term.name)
    if isinstance(term, Param):
        return dialect.param(term.name)
    if isinstance(term, Next):
        return dialect.next(term.name)
    if isinstance(term, VersionId):
        return dialect.version_id()
    if term is None:
        return "NULL"
    if isinstance(term, bool):
        return "true" if term else "false"
    return dialect.text(term)


#: A job that records a version bumps the memory's version and modification time.
BUMP: tuple[tuple[str, Term], ...] = (("version", Next("version")), ("modified", Param("now")))
_NOW = Param("now")

#: job -> its rule. promote (episodic -> semantic), archive, expire (weak candidate ->
#: tombstoned), decay and recompute (importance := number), hot and cool (the hot set),
#: payload (drop the raw payload), signals (centrality := number, cross-references).
_ACTIVE = ("active",)
JOBS: Mapping[Job, JobRule] = {
    "promote": JobRule(
        sets=(("prev_kind", Field("kind")), ("state_changed", _NOW), ("kind", "semantic")),
        needs=("kind",), change="promoted",
        event=("promote", Field("prev_kind"), Field("kind")), states=_ACTIVE),
    "archive": JobRule(
        sets=(("prev_status", Field("status")), ("state_changed", _NOW),
              ("status", "archived"), ("hot", False)),
        needs=("status",), change="archived",
        event=("archive", Field("prev_status"), Field("status")), states=_ACTIVE),
    "expire": JobRule(
        sets=(("prev_status", Field("status")), ("state_changed", _NOW),
              ("status", "tombstoned")),
        needs=("status",), change="tombstoned",
        event=("expire", Field("prev_status"), Field("status")), states=("candidate",)),
    "decay": JobRule(sets=(("importance", Staged("number")),), needs=("importance",),
                     change="importance_decay", states=_ACTIVE),
    "recompute": JobRule(sets=(("importance", Staged("number")),), needs=("importance",),
                         change="importance_boost", states=_ACTIVE),
    "hot": JobRule(sets=(("hot", True),), needs=("hot",),
                   event=("hot", Field("status"), "hot"), states=_ACTIVE),
    "cool": JobRule(sets=(("hot", False),), needs=("hot",),
                    event=("cool", "hot", Field("status")), states=_ACTIVE),
    "payload": JobRule(sets=(("payload", None), ("payload_at", None)),
                       needs=("payload", "payload_at")),
    "signals": JobRule(sets=(("centrality", Staged("number")), ("xref_count", Staged("xrefs")))),
}


def job_fields(job: Job, decision: Decision, now: datetime) -> dict[str, Any]:
    """The fields ``job`` sets on the memory of ``decision`` whose values the rule or the
    decision give (a state's name, a new importance, the run's time), as a commit hands
    them to its listeners (``Changed.patched``); fields set from the memory's own (its
    previous state, its version) are not among them."""
    rule = JOBS[job]
    out: dict[str, Any] = {}
    for column, term in (*rule.sets, *(BUMP if rule.change else ())):
        if isinstance(term, Staged):
            out[column] = getattr(decision, term.name)
        elif isinstance(term, Param) and term.name == "now":
            out[column] = now
        elif not isinstance(term, Field | Next | Param):
            out[column] = term
    return out


#: The version row a job records: column -> value (``change_type`` is the rule's).
JOB_VERSION: tuple[tuple[str, Term], ...] = (
    ("id", VersionId()), ("memory_id", Field("id")), ("seq", Field("version")),
    ("at", _NOW), ("reason", Staged("reason")), ("actor", Param("actor")),
    ("text", Field("text")), ("subject", Field("subject")),
    ("text_sha256", Field("text_sha256")), ("importance", Field("importance")),
    ("status", Field("status")), ("kind", Field("kind")), ("redacted", False),
)
#: The event a job records: column -> value (``event_type``, ``from_state`` and
#: ``to_state`` are the rule's).
JOB_EVENT: tuple[tuple[str, Term], ...] = (
    ("event_id", Staged("event_id")), ("memory_id", Field("id")),
    ("reason", Staged("reason")), ("triggered_by", "auto"), ("agent_id", Param("actor")),
    ("timestamp", _NOW), ("metadata", Staged("metadata")),
)


def staged(decisions: Sequence[Decision]) -> list[dict[str, Any]]:
    """The decisions as staged rows, one per memory (the last decision for a memory wins):
    ``id`` and the values ``Staged`` names."""
    last = {d.memory_id: d for d in decisions}
    return [{"id": d.memory_id, "number": d.number, "xrefs": d.xrefs or 0,
             "reason": d.reason, "event_id": d.event_id,
             "metadata": json.dumps(dict(d.metadata), sort_keys=True) if d.metadata else "{}"}
            for d in last.values()]


# -- writing a batch -------------------------------------------------------------------
#: The order in which a batch's parts are written (each a ``WriteBatch`` field): new
#: memories with their first versions, patches, events, edges; of the knowledge graph
#: what leaves first, then what comes; store properties; erasures last.
BATCH_STEPS: tuple[str, ...] = (
    "memories", "patches", "events", "new_edges", "merged_edges",
    "unmentioned", "gone_facts", "gone_entities",
    "new_entities", "changed_entities", "mentions", "facts", "changed_facts",
    "meta", "erasures",
)
assert set(BATCH_STEPS) == {f.name for f in dataclasses.fields(WriteBatch)}


class BatchSteps(Protocol):
    """How one engine writes each part of a batch (in an open transaction)."""

    def memories(self, rows: list[Any]) -> None: ...
    def patches(self, rows: list[Any]) -> None: ...
    def events(self, rows: list[Any]) -> None: ...
    def new_edges(self, rows: list[Any]) -> None: ...
    def merged_edges(self, rows: list[Any]) -> None: ...
    def unmentioned(self, rows: list[str]) -> None: ...
    def gone_facts(self, rows: list[Any]) -> None: ...
    def gone_entities(self, rows: list[str]) -> None: ...
    def new_entities(self, rows: list[Any]) -> None: ...
    def changed_entities(self, rows: list[Any]) -> None: ...
    def mentions(self, rows: list[Any]) -> None: ...
    def facts(self, rows: list[Any]) -> None: ...
    def changed_facts(self, rows: list[Any]) -> None: ...
    def meta(self, rows: dict[str, str]) -> None: ...
    def erasures(self, rows: list[Any]) -> None: ...


def write_batch(batch: WriteBatch, steps: BatchSteps) -> None:
    """Write each non-empty part of ``batch`` through ``steps``, in ``BATCH_STEPS`` order
    (a change of a fact the batch creates is written as part of it: ``folded_facts``)."""
    facts, changed = folded_facts(batch.facts, batch.changed_facts)
    for name in BATCH_STEPS:
        rows = facts if name == "facts" else changed if name == "changed_facts" \
            else getattr(batch, name)
        if rows:
            getattr(steps, name)(rows)


def folded_facts(facts: Sequence[Any], changed: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """The facts a batch creates, each as the batch's last change of it leaves it, and
    the changes of the others (the last of each id): one pass, where one statement a
    change made a text stating 2,600 moves of one person write 2,600 updates of facts it
    had just created.

    >>> from types import SimpleNamespace as F
    >>> made, rest = folded_facts([F(id="a", v=1)], [F(id="a", v=2), F(id="b", v=1),
    ...                                                  F(id="b", v=3)])
    >>> [(f.id, f.v) for f in made], [(f.id, f.v) for f in rest]
    ([('a', 2)], [('b', 3)])
    """
    made = {f.id: f for f in facts}
    others: dict[str, Any] = {}
    for fact in changed:
        if fact.id in made:
            made[fact.id] = fact
        else:
            others.pop(fact.id, None)
            others[fact.id] = fact
    return list(made.values()), list(others.values())


class _Writer(Protocol):
    def writer(self) -> contextlib.AbstractContextManager[BatchWriter]: ...
    def _run_job(self, job: Job, decisions: Sequence[Decision], changes: ChangeSet, *,
                 now: datetime, actor: str) -> int: ...


class Writes:
    """``Engine.commit`` and ``Engine.apply_decisions`` as every engine does them, over
    its ``writer`` and its ``_run_job`` (which applies ``JOBS[job]`` to the decisions in
    one transaction that records ``changes``, and returns how many memories it changed)."""

    def commit(self: _Writer, batch: WriteBatch) -> None:
        """Write the batch in one transaction: all of it is committed, or none."""
        if not batch:
            return
        with self.writer() as writer:
            writer.write(batch)

    def apply_decisions(self: _Writer, job: Job, decisions: Sequence[Decision], *,
                        now: datetime, actor: str) -> int:
        """Apply a lifecycle job to staged decisions in one transaction; returns how many
        memories it changed (a memory no longer in the state the decision was planned
        from is left; none staged: no transaction)."""
        if not decisions:
            return 0
        changes = ChangeSet()
        changes.touch(d.memory_id for d in decisions)
        return self._run_job(job, decisions, changes, now=now, actor=actor)


# -- erasure ---------------------------------------------------------------------------
#: What a memory's versions keep of their text once it is erased.
ERASED_VERSION: Mapping[str, Any] = {"text": None, "subject": None, "reason": None,
                                     "redacted": True}
#: The metadata of a memory's own events once it is erased, and their reason (what its
#: writer said of a change, which can quote the memory: "moved Nadia to room 12") ...
REDACTED_METADATA: Mapping[str, Any] = {"redacted": True}
REDACTED_REASON = "redacted"
#: ... except of these event types (the record that it was forgotten).
KEEPS_METADATA: tuple[str, ...] = ("delete",)


class ErasureSteps(Protocol):
    """How one engine carries out each step of an erasure (in an open transaction)."""

    def set_event_metadata(self, metadata: Mapping[str, Mapping[str, Any]]) -> None:
        """Event id -> its new metadata."""
        ...
    def set_versions(self, memory_id: str, values: Mapping[str, Any]) -> None:
        """Set ``values`` on every version of the memory."""
        ...
    def set_version_digests(self, digests: Mapping[str, str]) -> None:
        """Version id -> its new ``text_sha256``."""
        ...
    def redact_events(self, memory_id: str, metadata: Mapping[str, Any], reason: str,
                      keep: Sequence[str]) -> None:
        """Set ``metadata`` and ``reason`` on the memory's own events but those of the
        ``keep`` types."""
        ...
    def drop_edges(self, memory_id: str) -> None:
        """The memory's edges leave (with whatever text they hold)."""
        ...


def erase(erasure: Any, steps: ErasureSteps) -> None:
    """Erase what ``erasure`` (an ``Erasure``) names beyond the memory's own fields: the
    metadata of events that quoted it, the text of its versions (their digests
    replaced), its own events' metadata, its edges; in that order."""
    if erasure.event_metadata:
        steps.set_event_metadata(erasure.event_metadata)
    steps.set_versions(erasure.memory_id, ERASED_VERSION)
    if erasure.version_digests:
        steps.set_version_digests(erasure.version_digests)
    steps.redact_events(erasure.memory_id, REDACTED_METADATA, REDACTED_REASON,
                        KEEPS_METADATA)
    steps.drop_edges(erasure.memory_id)


# -- reading events --------------------------------------------------------------------
#: Events are listed by time, then id.
EVENT_ORDER: tuple[str, ...] = ("timestamp", "event_id")


def event_conditions(query: EventQuery) -> list[tuple[str, str, Any]]:
    """(field, operator, value) that each event ``query`` selects meets, all of them;
    ``owner`` is the owner of the event's memory, every other field the event's own.

    >>> event_conditions(EventQuery(memory_id="m:a", limit=3))
    [('memory_id', '=', 'm:a')]
    """
    out: list[tuple[str, str, Any]] = []
    for name, operator, value in (("memory_id", "=", query.memory_id),
                                  ("owner", "=", query.owner),
                                  ("event_type", "=", query.event_type),
                                  ("timestamp", ">=", query.since),
                                  ("timestamp", "<", query.until)):
        if value is not None:
            out.append((name, operator, value))
    return out


def quoting_probes(memory_id: str, probe: str) -> tuple[str, ...]:
    """The texts of which one must be in an event's metadata for the event to quote the
    memory (``Engine.events_mentioning``: events of other memories, by event id)."""
    return (memory_id, probe) if probe else (memory_id,)


def quoting_rows(rows: Sequence[Sequence[Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(event id, metadata as JSON text) rows of the events that quote a memory as
    ``Engine.events_mentioning`` returns them."""
    return [(str(event_id), json.loads(raw) if raw else {}) for event_id, raw in rows]
