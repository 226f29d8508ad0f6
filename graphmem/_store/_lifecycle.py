"""The lifecycle: the archivist (evaluate, promote, archive, restore) and the lifecycle
manager (``run``): plans computed over arrays, applied as set-based engine jobs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from .._context import Changed, StoreContext
from .._engine import Decision, Job
from .._engine_rules import job_fields
from .._errors import InvalidInputError
from .._lifecycle._centrality import grouped_pagerank, grouped_reference_counts
from .._lifecycle._results import (
    ArchiveResult,
    EvaluationResult,
    JobCounts,
    LifecycleReport,
    PromoteResult,
    RestoreResult,
)
from .._lifecycle._rules import (
    ARCHIVE_REASONS,
    ARCHIVE_TAGS,
    PROMOTE_REASONS,
    PROMOTE_TAGS,
    evaluate_arrays,
    evaluate_memory_lifecycle,
)
from .._lifecycle._summary import summarize
from .._models import (
    ChangeType,
    EventType,
    Kind,
    Memory,
    Status,
    TriggeredBy,
    parse_kind,
    parse_status,
)
from .._ollama import OllamaGenerator
from .._recall._actr import activation_arrays
from .._recall._config import ActrParams
from .._settings import Settings
from .._time import new_event_ids, to_utc
from ._memories import Memories
from ._transitions import Transitions

__all__ = ["Lifecycle"]

_DAY = 86400.0
#: Past this many changed memories, the recall index is rebuilt rather than patched.
_PATCH_LIMIT = 200
_SCAN = ["id", "kind", "status", "hot", "subject", "text", "tags", "importance",
         "original_importance", "confidence", "created", "last_accessed", "access_count",
         "access_times", "payload_at", "owner", "centrality", "xref_count"]
#: The jobs that write a lifecycle event per memory.
_AUDITED = frozenset({"promote", "archive", "expire", "hot", "cool"})
#: Detailed evaluations kept per action in a lifecycle report (counts are always complete).
REPORT_SAMPLE = 100


class Lifecycle:
    """The archivist and the lifecycle manager over one store."""

    def __init__(self, ctx: StoreContext, memories: Memories, transitions: Transitions) -> None:
        self._ctx = ctx
        self._memories = memories
        self._transitions = transitions
        self._signals: _Signals | None = None
        #: the forecast of need (``graphmem._learn``): (horizon in days, memory id ->
        #: probability of use), or None when the store has no validated forecast
        self.forecaster: Callable[[], tuple[float, Mapping[str, float]] | None] | None = None
        #: while an applying run plans: the memories other writers changed meanwhile
        self._moved: set[str] | None = None
        ctx.on_change(self._on_change)

    def _on_change(self, change: Changed) -> None:
        if change.access_only:  # ranks and cross-references do not count accesses
            return
        if self._moved is not None:
            self._moved.update(change.ids)
        self._signals = None  # a new memory changes its owner's ranks too

    # -- graph signals ------------------------------------------------------------------
    def _graph_signals(self) -> _Signals:
        """Centrality and cross-reference counts of every memory, each computed within
        its owner's memories (see ``_centrality``); cached until the store changes."""
        signals = self._signals
        if signals is None:
            table = self._ctx.engine.scan(["id", "owner"]).table
            ids = [str(i) for i in table.column("id").to_pylist()]
            codes: dict[str | None, int] = {}
            groups = np.array([codes.setdefault(o, len(codes))
                               for o in table.column("owner").to_pylist()], dtype=np.int64)
            pos = {memory_id: i for i, memory_id in enumerate(ids)}
            ends: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            for kind in ("references", "co_occurs"):
                edges = self._ctx.engine.edge_arrays(kind)
                ends[kind] = (np.array([pos[i] for i in edges.src], dtype=np.int64),
                              np.array([pos[i] for i in edges.dst], dtype=np.int64))
            # A co-occurrence is stored once per pair but goes both ways.
            src = np.concatenate([ends["references"][0], *ends["co_occurs"]])
            dst = np.concatenate([ends["references"][1], *ends["co_occurs"][::-1]])
            ranks = grouped_pagerank(groups, src, dst)
            xrefs = grouped_reference_counts(groups, *ends["references"])
            signals = self._signals = _Signals(
                centrality=dict(zip(ids, ranks.tolist(), strict=True)),
                xrefs={i: int(x) for i, x in zip(ids, xrefs.tolist(), strict=True) if x})
        return signals

    def centrality(self) -> dict[str, float]:
        """PageRank of every memory over REFERENCES and CO_OCCURS within its owner's
        memories (each owner's ranks sum to 1), computed on first use after a change."""
        return self._graph_signals().centrality

    def _age_days(self, created: datetime, now: datetime) -> float:
        return max((now - created).total_seconds(), 0.0) / _DAY

    # -- the archivist --------------------------------------------------------------------
    def evaluate(self, memory_id: str, *, owner: str | None = None) -> EvaluationResult:
        """Recommend promote, archive, maintain or review for one memory (the archivist policy).

        Metrics include its cross-reference count (distinct memories that reference it)
        and its centrality. Its importance is today's: decayed as the lifecycle manager
        would decay it before judging (``run``), so the recommendation is the report's.
        """
        memory = self._ctx.visible(memory_id, owner)
        [result] = self.batch_evaluate([memory.id])
        return result

    def _forecast(self) -> tuple[float, Mapping[str, float]] | None:
        return self.forecaster() if self.forecaster is not None else None

    def _beside_forecast(self, result: EvaluationResult,
                         forecast: tuple[float, Mapping[str, float]] | None
                         ) -> EvaluationResult:
        """The rule's evaluation with the forecast of need beside it; an archive of a
        memory likely to be needed, or a promotion of one unlikely to be, goes to review."""
        if forecast is None:
            return result
        horizon, probabilities = forecast
        p = probabilities.get(result.memory_id)
        if p is None:
            return result
        s = self._ctx.settings
        update: dict[str, Any] = {"forecast": round(p, 4)}
        said = f"{p:.0%} likely to be needed within {horizon:g} days"
        action = result.recommended_action
        if (action == "archive" and p >= s.forecast_archive_review) or (
                action == "promote" and p <= s.forecast_promote_review):
            update.update(recommended_action="review", confidence=0.5, reasons=[
                f"forecast: {said}; the rule's {action} goes to review", *result.reasons])
        return result.model_copy(update=update)

    def batch_evaluate(
        self,
        ids: Sequence[str] | None = None,
        *,
        owner: str | None = None,
        kinds: Sequence[Kind | str] | None = None,
        statuses: Sequence[Status | str] = (Status.ACTIVE,),
    ) -> list[EvaluationResult]:
        """Evaluate many memories: these ``ids``, or every memory matching the filters
        (by default the active ones), with today's importance (see ``evaluate``)."""
        wanted_status = {parse_status(s).value for s in statuses}
        wanted_kinds = {parse_kind(k).value for k in kinds} if kinds is not None else None
        self._ctx.before_read()
        now = self._ctx.now()
        table = self._ctx.engine.scan(_SCAN, owner=owner,
                                      ids=list(ids) if ids is not None else None).table
        rows = table.to_pylist()
        if ids is None:
            chosen = [i for i, r in enumerate(rows) if r["status"] in wanted_status
                      and (wanted_kinds is None or r["kind"] in wanted_kinds)]
        else:  # a scan by ids is not scoped to the owner: another owner's ids are unknown
            chosen = [i for i, r in enumerate(rows) if owner is None or r["owner"] == owner]
        view = _Columns(table, now.timestamp())
        active = np.flatnonzero(view.active)
        importance = _decayed(view, active, view.kind[active], self._ctx.settings)[3]
        signals = self._graph_signals()
        forecast = self._forecast()
        return [self._beside_forecast(
            self._evaluate_row({**rows[i], "importance": float(importance[i])}, now,
                               signals.xrefs, signals.centrality), forecast)
                for i in chosen]

    def _evaluate_row(self, row: Mapping[str, Any], now: datetime, xrefs: Mapping[str, int],
                      centrality: Mapping[str, float]) -> EvaluationResult:
        created = to_utc(row["created"])
        result = evaluate_memory_lifecycle(
            memory_id=row["id"], importance=float(row["importance"]),
            age_in_days=self._age_days(created, now), access_count=int(row["access_count"]),
            type=row["kind"], tags=row["tags"] or (),
            cross_reference_count=xrefs.get(row["id"], 0),
            centrality=centrality.get(row["id"], 0.0), settings=self._ctx.settings)
        label = row["subject"] or " ".join((row["text"] or "").split())[:60]
        return result.model_copy(update={"subject": label})

    def promote(self, memory_id: str, *, reason: str = "manual", owner: str | None = None,
                triggered_by: TriggeredBy = TriggeredBy.MANUAL,
                actor: str | None = None) -> PromoteResult:
        """Promote an episodic memory to semantic (the archivist's promoteMemory)."""
        if reason not in PROMOTE_REASONS:
            raise InvalidInputError(f"reason must be one of {', '.join(PROMOTE_REASONS)}",
                                    field="reason")
        memory = self._ctx.current(memory_id, owner)
        now = self._ctx.now()
        if memory.kind is not Kind.EPISODIC or memory.status is not Status.ACTIVE:
            return PromoteResult(success=False, memory_id=memory_id, old_type=memory.kind.value,
                                 reason=reason, timestamp=now,
                                 error=f"only active episodic memories are promoted; this one "
                                       f"is {memory.status.value} {memory.kind.value}")
        self._transitions.transition(memory, kind=Kind.SEMANTIC, event_type=EventType.PROMOTE,
                                     change_type=ChangeType.PROMOTED, reason=reason,
                                     triggered_by=triggered_by,
                                     metadata=self._metrics(memory, now), actor=actor)
        return PromoteResult(success=True, memory_id=memory_id, old_type=memory.kind.value,
                             reason=reason, timestamp=now)

    def archive(self, memory_id: str, *, reason: str = "manual", create_summary: bool = False,
                owner: str | None = None, triggered_by: TriggeredBy = TriggeredBy.MANUAL,
                actor: str | None = None) -> ArchiveResult:
        """Move a memory to the archive (the archivist's archiveMemory): kept for audit and
        export, out of normal recall, restorable. ``create_summary`` writes a summary of
        the memory and its graph neighbourhood into the event (Ollama when configured)."""
        if reason not in ARCHIVE_REASONS:
            raise InvalidInputError(f"reason must be one of {', '.join(ARCHIVE_REASONS)}",
                                    field="reason")
        memory = self._ctx.current(memory_id, owner)
        now = self._ctx.now()
        if memory.status not in (Status.ACTIVE, Status.CANDIDATE):
            return ArchiveResult(success=False, memory_id=memory_id, old_type=memory.kind.value,
                                 reason=reason, timestamp=now,
                                 error=f"memory is {memory.status.value}; only active or "
                                       "candidate memories are archived")
        metadata = self._metrics(memory, now)
        summary = None
        if create_summary:
            others = [x.other for x in self._memories.links(memory_id, owner=owner)][:5]
            neighbours = self._memories.get_many(others, owner=owner)
            summary, source = summarize(memory, neighbours,
                                        OllamaGenerator.from_settings(self._ctx.settings))
            # summaryFrom: forget() redacts a summary built from a memory it forgets
            metadata.update(summary=summary, summarySource=source,
                            summaryFrom=[n.id for n in neighbours])
        self._transitions.transition(memory, status=Status.ARCHIVED,
                                     event_type=EventType.ARCHIVE,
                                     change_type=ChangeType.ARCHIVED, reason=reason,
                                     triggered_by=triggered_by, metadata=metadata,
                                     extra_sets={"hot": False}, actor=actor)
        return ArchiveResult(success=True, memory_id=memory_id, old_type=memory.kind.value,
                             reason=reason, summary=summary, timestamp=now)

    def restore(self, memory_id: str, *, owner: str | None = None,
                window_days: float | None = None, actor: str | None = None) -> RestoreResult:
        """Undo the latest archive, promotion, tombstone or expiry of a memory, within
        ``window_days`` (default ``GRAPHMEM_RESTORE_WINDOW_DAYS``, 7)."""
        memory = self._ctx.current(memory_id, owner)
        now = self._ctx.now()
        window = self._ctx.settings.restore_window_days if window_days is None else window_days
        undoable = {EventType.ARCHIVE, EventType.PROMOTE, EventType.TOMBSTONE, EventType.EXPIRE}
        last = [e for e in self._memories.events(memory_id) if e.event_type in undoable
                or e.event_type is EventType.RESTORE]
        if not last or last[-1].event_type is EventType.RESTORE:
            return RestoreResult(success=False, memory_id=memory_id, timestamp=now,
                                 error="nothing to restore: no archive, promotion or "
                                       "tombstone since the last restore")
        event = last[-1]
        if now - event.timestamp > timedelta(days=window):
            return RestoreResult(success=False, memory_id=memory_id, timestamp=now,
                                 undone=event.event_type.value,
                                 error=f"the {event.event_type.value} of "
                                       f"{event.timestamp:%Y-%m-%d} is outside the restore "
                                       f"window ({window:g} days)")
        if memory.status is Status.FORGOTTEN:
            return RestoreResult(success=False, memory_id=memory_id, timestamp=now,
                                 error="forgotten memories cannot be restored")
        # A promotion changed the kind; every other undoable event the status.
        promoted = event.event_type is EventType.PROMOTE
        self._transitions.transition(
            memory, kind=Kind(event.from_state) if promoted else None,
            status=None if promoted else Status(event.from_state),
            event_type=EventType.RESTORE, change_type=ChangeType.RESTORED,
            reason=f"undo {event.reason}", metadata={"undoes": event.event_id}, actor=actor)
        current = memory.kind.value if promoted else memory.status.value
        return RestoreResult(success=True, memory_id=memory_id, undone=event.event_type.value,
                             from_state=current, to_state=event.from_state, timestamp=now)

    def _metrics(self, memory: Memory, now: datetime) -> dict[str, Any]:
        return {"accessCount": memory.access_count, "importance": memory.importance,
                "ageInDays": round(self._age_days(memory.created, now), 2)}

    # -- the lifecycle manager -------------------------------------------------------------
    def run(self, *, apply: bool = False, owner: str | None = None,
            actor: str | None = None) -> LifecycleReport:
        """The lifecycle manager: graph signals, decay (memories tagged
        critical or permanent do not decay), score recompute,
        promotions, auto-archive (only with ``AUTO_ARCHIVE_ENABLED``, else listed for
        review), the hot set, weak-candidate expiry and payload retention.

        A dry run (the default) computes everything and changes nothing. With ``apply``
        each job is one set-based transaction (state, version rows and events together);
        a second run on the same day changes nothing. With ``owner`` only that owner's
        memories are evaluated and changed. Graph signals (centrality, cross-references)
        and the hot set are always each owner's own: nothing one owner sees depends on
        another owner's memories. What it applies is recorded under ``actor`` (by
        default the store's agent id).
        """
        if apply:
            # Processes that share the store run it one after the other: the second
            # plans from what the first applied, and finds nothing left to do.
            with self._ctx.engine.exclusive("lifecycle"):
                self._moved = set()
                try:
                    return self._run(apply=True, owner=owner, actor=actor)
                finally:
                    self._moved = None
        return self._run(apply=False, owner=owner, actor=actor)

    def _run(self, *, apply: bool, owner: str | None, actor: str | None) -> LifecycleReport:
        started = time.perf_counter()
        self._ctx.before_read()
        now = self._ctx.now()
        signals = self._graph_signals()
        centrality, xrefs = signals.centrality, signals.xrefs
        view = _Columns(self._ctx.engine.scan(_SCAN, owner=owner).table, now.timestamp())
        plan = self.plan(view, xrefs, now)
        if apply:
            plan.decisions["signals"] = _signal_changes(view, signals)
        evaluations = self._sample_evaluations(view, plan, xrefs, centrality, now)
        size = {job: len(rows) for job, rows in plan.decisions.items()}
        if apply:  # what was written: a memory changed meanwhile is left for the next run
            size |= self._apply(plan, now, self._ctx.actor(actor))
        jobs = JobCounts(
            centrality_computed=view.n, decayed=size["decay"], recomputed=size["recompute"],
            promoted=size["promote"], archived=size["archive"],
            archive_for_review=plan.review_archive, hot_added=size["hot"],
            hot_removed=size["cool"], candidates_expired=size["expire"],
            payloads_redacted=size["payload"])
        return LifecycleReport(generated=now, applied=apply, evaluated=int(view.active.sum()),
                               counts=plan.counts, evaluations=evaluations, jobs=jobs,
                               seconds=time.perf_counter() - started,
                               forecast_horizon_days=plan.forecast[0] if plan.forecast
                               else None, forecast_reviews=plan.forecast_reviews)

    def plan(self, v: _Columns, xrefs: Mapping[str, int], now: datetime) -> LifecyclePlan:
        """Every job's decisions, vectorised over the scanned memories."""
        s = self._ctx.settings
        act = np.flatnonzero(v.active)
        idle_days = np.maximum(v.now_s - v.last[act], 0.0) / _DAY
        target, decay, recompute, importance = _decayed(v, act, v.kind[act], s)
        judged = importance  # what the rules see, as evaluate() and the report show it
        xref = np.array([xrefs.get(v.ids[i], 0) for i in act], dtype=np.int64)
        masks = evaluate_arrays(
            importance=importance[act], age_in_days=v.age_days[act],
            access_count=v.access[act], episodic=v.kind[act] == Kind.EPISODIC.value,
            promote_tag=v.promote_tag[act], archive_tag=v.archive_tag[act],
            cross_reference_count=xref, settings=s)
        forecast = self._forecast()
        against = _contradicted(masks, [v.ids[i] for i in act], forecast, s)
        if s.archivist_enabled and masks["promote"].any():
            # A memory promoted now decays from now on as semantic: its score is set by
            # the semantic half-life in this run, so that the next run finds nothing to do.
            kinds = np.where(masks["promote"], Kind.SEMANTIC.value, v.kind[act])
            target, decay, recompute, importance = _decayed(v, act, kinds, s)
        decisions: dict[Job, list[Decision]] = {
            "decay": [Decision(v.ids[i], number=float(t), reason=f"idle {d:.0f} days")
                      for i, t, d in zip(act[decay], target[decay], idle_days[decay],
                                         strict=True)],
            "recompute": [Decision(v.ids[i], number=float(t), reason="recompute")
                          for i, t in zip(act[recompute], target[recompute], strict=True)],
        }

        def staged(action: str) -> list[Decision]:
            out = []
            for k in np.flatnonzero(masks[action]):
                i = act[k]
                out.append(Decision(v.ids[i], reason=str(masks["reason"][k]), metadata={
                                        "accessCount": int(v.access[i]),
                                        "importance": round(float(importance[i]), 4),
                                        "ageInDays": round(float(v.age_days[i]), 2),
                                        "crossReferenceCount": int(xref[k])}))
            return out

        decisions["promote"] = staged("promote") if s.archivist_enabled else []
        archives = int(masks["archive"].sum())
        review_archive = archives
        decisions["archive"] = []
        if s.archivist_enabled and s.auto_archive_enabled:
            decisions["archive"], review_archive = staged("archive"), 0
        decisions["hot"], decisions["cool"] = self._plan_hot(v, now)
        expire = np.flatnonzero(v.candidate & (v.now_s - v.created
                                               > s.candidate_expiry_days * _DAY))
        decisions["expire"] = [Decision(v.ids[i], reason="weak candidate never reinforced")
                               for i in expire]
        with np.errstate(invalid="ignore"):
            old = np.flatnonzero(v.now_s - v.payload_at > s.payload_retention_days * _DAY)
        decisions["payload"] = [Decision(v.ids[i], reason="payload retention") for i in old]
        return LifecyclePlan(
            decisions=decisions, masks=masks, active=act, importance=importance,
            judged=judged,
            counts={a: int(masks[a].sum()) for a in ("promote", "archive", "maintain",
                                                     "review")},
            review_archive=review_archive, forecast=forecast, forecast_reviews=against)

    def _plan_hot(self, v: _Columns, now: datetime) -> tuple[list[Decision], list[Decision]]:
        """The hot set: each owner's ``hot_set_size`` active memories of highest ACT-R
        activation (recall's formula and parameters: the exact base level where the
        access history is complete, the approximation else). Returns (heat, cool)."""
        act = np.flatnonzero(v.active)
        if act.size == 0:
            return [], []
        params = ActrParams()
        keep = np.isin(v.history_of, act)
        position = np.full(v.n, -1, dtype=np.int64)
        position[act] = np.arange(act.size)
        activation = activation_arrays(
            now=v.now_s, created=v.created[act], access_count=v.access[act],
            confidence=v.confidence[act], history=v.history[keep],
            history_of=position[v.history_of[keep]], d=params.d, beta=params.beta,
            epsilon=params.epsilon)
        owner = v.owner_code[act]
        order = np.lexsort((-activation, owner))
        first = np.r_[0, np.flatnonzero(np.diff(owner[order])) + 1]
        place = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
        hot = np.zeros(v.n, dtype=bool)
        hot[act[order[place < self._ctx.settings.hot_set_size]]] = True
        heat = [Decision(v.ids[i], reason="top activation") for i in np.flatnonzero(hot & ~v.hot)]
        cool = [Decision(v.ids[i], reason="left the hot set")
                for i in np.flatnonzero(v.hot & ~hot & v.active)]
        return heat, cool

    def _sample_evaluations(self, v: _Columns, plan: LifecyclePlan,
                            xrefs: Mapping[str, int], centrality: Mapping[str, float],
                            now: datetime) -> list[EvaluationResult]:
        """Full evaluations (with reasons) of up to ``REPORT_SAMPLE`` memories per action:
        the report's lists; the counts cover everything."""
        out = []
        for action in ("promote", "archive", "review"):
            chosen = plan.active[np.flatnonzero(plan.masks[action])][:REPORT_SAMPLE]
            for i in chosen:
                out.append(self._beside_forecast(
                    self._evaluate_row(v.row(i, importance=float(plan.judged[i])), now,
                                       xrefs, centrality), plan.forecast))
        return out

    def _apply(self, plan: LifecyclePlan, now: datetime, actor: str) -> dict[Job, int]:
        """Write the plan's decisions; returns how many of each job were written."""
        ctx = self._ctx
        handed = _JobPatches(now)
        reread: set[str] = set()
        written: dict[Job, int] = {}
        with ctx.lock:
            # a memory another writer changed while the plan was made (forgotten,
            # tombstoned, edited) is left for the next run: its decision is stale
            moved, self._moved = self._moved or set(), None
            order: tuple[Job, ...] = ("signals", "decay", "recompute", "promote", "archive",
                                      "expire", "cool", "hot", "payload")
            for job in order:
                decisions = [d for d in plan.decisions.get(job, [])
                             if d.memory_id not in moved]
                if decisions and job in _AUDITED:  # events get their ids when written
                    decisions = [d._replace(event_id=e) for d, e in
                                 zip(decisions, new_event_ids(now, len(decisions)), strict=True)]
                # what was written: a memory another handle changed meanwhile is left
                written[job] = ctx.engine.apply_decisions(job, decisions, now=now, actor=actor)
                if written[job] == len(decisions):
                    handed.add(job, decisions)
                else:  # some were left: which, only the store knows
                    reread.update(d.memory_id for d in decisions)
            signals = self._signals
            # what the jobs set, handed to the recall index and the cached rows (an index
            # built again after a run took 22 s at 100k memories); memories a job left
            # are read again, or, past a few hundred, everything is
            if len(reread) > _PATCH_LIMIT:
                ctx.changed(Changed(sorted(reread | set(handed)), bulk=True))
            else:
                handed.drop(reread)
                if handed:
                    ctx.changed(Changed(list(handed), patched=handed, partial=True))
                if reread:
                    ctx.changed(Changed(sorted(reread)))
            self._signals = signals  # states changed, the graph did not
        return written


def _decayed(v: _Columns, act: np.ndarray, kinds: np.ndarray, s: Any
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Decay and score recompute of the active memories ``act`` (scan positions) as of
    these ``kinds``: importance follows original * 0.5^(idle days / half-life), moved only
    by at least ``decay_min_drop``; memories tagged critical or permanent are exempt
    (someone said they matter). Returns the targets and the decay and recompute masks
    (over ``act``), and every scanned memory's importance after the move."""
    idle_days = np.maximum(v.now_s - v.last[act], 0.0) / _DAY
    half_life = np.array([s.half_life(k) for k in kinds], dtype=float)
    target = np.where(v.promote_tag[act], v.importance[act],
                      v.original[act] * 0.5 ** (idle_days / half_life))
    delta = v.importance[act] - target
    decay, recompute = delta >= s.decay_min_drop, -delta >= s.decay_min_drop
    importance = v.importance.copy()
    importance[act] = np.where(decay | recompute, target, v.importance[act])
    return target, decay, recompute, importance


@dataclass
class LifecyclePlan:
    """What one lifecycle run decided: each job's staged decisions, the archivist's
    masks over the active memories (``active`` holds their scan positions), the
    importance after decay (as the masks judged it, and as written: a memory promoted
    now decays as semantic), the action counts, and archives left for review."""

    decisions: dict[Job, list[Decision]]
    masks: dict[str, np.ndarray]
    active: np.ndarray
    importance: np.ndarray
    judged: np.ndarray
    counts: dict[str, int]
    review_archive: int
    forecast: tuple[float, Mapping[str, float]] | None = None
    forecast_reviews: int = 0


def _contradicted(masks: dict[str, Any], ids: Sequence[str],
                  forecast: tuple[float, Mapping[str, float]] | None, s: Settings) -> int:
    """Move to review the rule's archives of memories the forecast finds likely to be
    needed, and its promotions of memories it finds unlikely to be (masks change in
    place); returns how many moved."""
    if forecast is None or not ids:
        return 0
    _, probabilities = forecast
    p = np.array([probabilities.get(i, np.nan) for i in ids])
    with np.errstate(invalid="ignore"):
        against = (masks["archive"] & (p >= s.forecast_archive_review)) | (
            masks["promote"] & (p <= s.forecast_promote_review))
    if against.any():
        masks["archive"] = masks["archive"] & ~against
        masks["promote"] = masks["promote"] & ~against
        masks["review"] = masks["review"] | against
        masks["reason"] = np.where(against, "forecast", masks["reason"])
    return int(against.sum())


@dataclass(frozen=True)
class _Signals:
    """Graph signals by memory id: centrality, and cross-reference counts (only > 0)."""

    centrality: dict[str, float]
    xrefs: dict[str, int]


class _JobPatches(Mapping[str, Mapping[str, Any]]):
    """Memory id -> the fields a run's jobs set on it (``job_fields``, in the order the jobs
    ran), as ``Changed.patched`` hands them over; made when asked: a first run touches
    every memory."""

    def __init__(self, now: datetime) -> None:
        self._now = now
        self._jobs: list[tuple[Job, dict[str, Decision]]] = []
        self._ids: dict[str, None] = {}

    def add(self, job: Job, decisions: Sequence[Decision]) -> None:
        if decisions:
            self._jobs.append((job, {d.memory_id: d for d in decisions}))
            self._ids.update(dict.fromkeys(d.memory_id for d in decisions))

    def drop(self, ids: set[str]) -> None:
        for memory_id in ids:
            self._ids.pop(memory_id, None)

    def __getitem__(self, memory_id: str) -> Mapping[str, Any]:
        if memory_id not in self._ids:
            raise KeyError(memory_id)
        out: dict[str, Any] = {}
        for job, decisions in self._jobs:
            if memory_id in decisions:
                out.update(job_fields(job, decisions[memory_id], self._now))
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def _signal_changes(v: _Columns, signals: _Signals) -> list[Decision]:
    """Decisions that store the signals that changed, for the scanned memories: the
    centrality as ``number``, the cross-reference count as ``xrefs``."""
    rows = []
    stored_c = v.table.column("centrality").to_pylist()
    stored_x = v.table.column("xref_count").to_pylist()
    for i, memory_id in enumerate(v.ids):
        rank = signals.centrality.get(memory_id, 0.0)
        xref = signals.xrefs.get(memory_id, 0)
        if stored_c[i] is None or abs(stored_c[i] - rank) > 1e-12 or stored_x[i] != xref:
            rows.append(Decision(memory_id, number=rank, xrefs=xref))
    return rows


class _Columns:
    """The scanned memories as numpy arrays (one entry per memory)."""

    def __init__(self, table: pa.Table, now_s: float) -> None:
        import pyarrow.compute as pc  # lazily: 0.2 s of every start

        self.table = table
        self.now_s = now_s
        self.n = table.num_rows
        self.ids: list[str] = table.column("id").to_pylist()
        owners: dict[str | None, int] = {}
        self.owner_code = np.array([owners.setdefault(o, len(owners))
                                    for o in table.column("owner").to_pylist()], dtype=np.int64)
        status = table.column("status")
        self.active = _np(pc.equal(status, Status.ACTIVE.value)).astype(bool)
        self.candidate = _np(pc.equal(status, Status.CANDIDATE.value)).astype(bool)
        self.kind = np.array(table.column("kind").to_pylist(), dtype=object)
        self.hot = _np(pc.fill_null(table.column("hot"), False)).astype(bool)
        self.importance = _np(table.column("importance")).astype(float)
        self.original = _np(table.column("original_importance")).astype(float)
        self.confidence = _np(pc.fill_null(table.column("confidence"), 0.0)).astype(float)
        self.access = _np(pc.fill_null(table.column("access_count"), 0)).astype(np.int64)
        self.created = _seconds(table.column("created"))
        last = _seconds(table.column("last_accessed"))
        self.last = np.where(np.isnan(last), self.created, last)
        self.payload_at = _seconds(table.column("payload_at"))
        self.age_days = np.maximum(now_s - self.created, 0.0) / _DAY
        self.promote_tag = _tagged(table.column("tags"), PROMOTE_TAGS, self.n)
        self.archive_tag = _tagged(table.column("tags"), ARCHIVE_TAGS, self.n)
        # every kept access time, flattened, and the memory it belongs to
        times = table.column("access_times").combine_chunks()
        self.history = _seconds(pc.list_flatten(times)) if len(times) else np.zeros(0)
        self.history_of = (_np(pc.list_parent_indices(times)).astype(np.int64)
                           if len(times) else np.zeros(0, dtype=np.int64))

    def row(self, i: int, **override: Any) -> dict[str, Any]:
        data: dict[str, Any] = self.table.slice(int(i), 1).to_pylist()[0]
        data.update(override)
        return data


def _np(array: Any) -> np.ndarray:
    return np.asarray(array.to_numpy(zero_copy_only=False))


def _seconds(column: Any) -> np.ndarray:
    """A timestamp column as POSIX seconds (NaN where null)."""
    import pyarrow.compute as pc  # lazily: 0.2 s of every start

    micros = pc.cast(column, pa.int64())
    values = _np(micros).astype(float)
    return values / 1e6


def _tagged(tags: Any, wanted: Sequence[str], n: int) -> np.ndarray:
    import pyarrow.compute as pc  # lazily: 0.2 s of every start

    out = np.zeros(n, dtype=bool)
    tags = tags.combine_chunks()
    if len(tags):
        flat = pc.list_flatten(tags)
        hit = _np(pc.is_in(flat, value_set=pa.array(list(wanted)))).astype(bool)
        out[_np(pc.list_parent_indices(tags)).astype(np.int64)[hit]] = True
    return out
