"""The data behind each dashboard page, for one owner (``None``: the local user, every
owner), made only from ``MemoryStore``'s public methods and returned as JSON-ready dicts.

Whole-store scans (the memories of an owner, their graph) are cached per owner until the
store changes: ``stats()`` (~40 ms at 100k memories) gives the signature, since every
change writes a version row, an event or an edge.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from ..._errors import GraphmemError
from ..._facade import MemoryStore
from ..._models import EventType, Memory, Status
from ..._text import tokenize

__all__ = ["DECISIONS", "Pages", "actor_of"]

#: What a reviewer may decide for a queued memory.
DECISIONS = ("promote", "archive", "keep")
#: Undoable decisions, by the event type each one writes.
_UNDOABLE = {EventType.PROMOTE, EventType.ARCHIVE}
#: The transitions ``restore`` undoes (the latest one), and restores themselves.
_TRANSITIONS = {EventType.PROMOTE, EventType.ARCHIVE, EventType.TOMBSTONE, EventType.EXPIRE,
                EventType.RESTORE}
_ACTOR_PREFIX = "dashboard:"
_TOP = 20


def actor_of(owner: str | None) -> str:
    """The actor a reviewer's decisions are recorded under: the dashboard and the
    token's owner (``local`` for a sidecar without tokens)."""
    return f"{_ACTOR_PREFIX}{owner or 'local'}"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _label(subject: str | None, text: str | None, width: int = 80) -> str:
    line = " ".join((subject or text or "").split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _brief(memory: Memory) -> dict[str, Any]:
    return {"id": memory.id, "label": memory.short(80), "kind": memory.kind.value,
            "status": memory.status.value, "hot": memory.hot, "owner": memory.owner,
            "importance": round(memory.importance, 3), "current": memory.is_current}


def _buckets(dates: Sequence[datetime]) -> dict[str, Any]:
    """Memories created per day, week or month (whichever gives at most ~120 bars)."""
    if not dates:
        return {"unit": "day", "labels": [], "counts": []}
    span = (max(dates) - min(dates)).days
    unit, fmt = ("day", "%Y-%m-%d") if span <= 120 else \
        ("week", "%G-W%V") if span <= 7 * 120 else ("month", "%Y-%m")
    counts = Counter(d.strftime(fmt) for d in dates)
    first, last = min(dates).date(), max(dates).date()
    labels = list(dict.fromkeys((first + timedelta(days=n)).strftime(fmt)
                                for n in range((last - first).days + 1)))
    return {"unit": unit, "labels": labels, "counts": [counts[k] for k in labels]}


class _Cache:
    """Values per key, kept while the store's signature is unchanged (and ``ttl_s``)."""

    def __init__(self, store: MemoryStore, ttl_s: float) -> None:
        self._store, self._ttl = store, ttl_s
        self._values: dict[Any, tuple[Any, float, Any]] = {}
        self._lock = threading.Lock()

    def signature(self) -> Any:
        s = self._store.stats()
        return (s.memories, s.versions, s.events, s.hot, tuple(sorted(s.edges.items())),
                tuple(sorted(s.by_status.items())))

    def get(self, key: Any, build: Callable[[], Any]) -> Any:
        signature = self.signature()
        with self._lock:
            found = self._values.get(key)
        if found and found[0] == signature and time.monotonic() - found[1] < self._ttl:
            return found[2]
        value = build()
        with self._lock:
            self._values[key] = (signature, time.monotonic(), value)
        return value


class Pages:
    """Page data over one store; see the module docstring."""

    def __init__(self, store: MemoryStore, *, ttl_s: float = 600.0) -> None:
        self.store = store
        self._cache = _Cache(store, ttl_s)

    # -- overview -------------------------------------------------------------------------
    def overview(self, owner: str | None) -> dict[str, Any]:
        return dict(self._cache.get(("overview", owner), lambda: self._overview(owner)))

    def _overview(self, owner: str | None) -> dict[str, Any]:
        store = self.store
        # The local user sees every owner: the store's own counts are theirs, and a graph
        # of nodes only is 5x faster than one with every edge (1.0 s vs 5.3 s at 100k).
        graph = store.to_networkx(owner=owner, edge_kinds=() if owner is None else
                                  ("references", "co_occurs", "supersedes"))
        nodes = [data for _, data in graph.nodes(data=True)]
        if owner is None:
            edges = dict(store.stats().edges)
        else:
            edges = dict(Counter(data["kind"] for _, _, data in graph.edges(data=True)))
            edges = {k: edges.get(k, 0) for k in ("references", "co_occurs", "supersedes")}
        hot = sorted(((n, data) for n, data in graph.nodes(data=True) if data["hot"]),
                     key=lambda item: -item[1]["importance"])
        return {
            "memories": len(nodes),
            "by_kind": dict(Counter(d["kind"] for d in nodes).most_common()),
            "by_status": dict(Counter(d["status"] for d in nodes).most_common()),
            "by_owner": dict(Counter(d["owner"] or "(none)" for d in nodes).most_common(_TOP)),
            "owners": len({d["owner"] for d in nodes}),
            "growth": _buckets([d["created"] for d in nodes if d.get("created")]),
            "hot": {"count": len(hot),
                    "top": [{"id": n, "label": _label(d["subject"], d["label"]),
                             "kind": d["kind"], "importance": round(d["importance"], 3),
                             "access_count": d["access_count"]} for n, d in hot[:_TOP]]},
            "edges": edges,
            "last_run": self._last_run(owner),
            "entities": self._entity_counts(owner),
        }

    def _last_run(self, owner: str | None) -> dict[str, Any] | None:
        """The last lifecycle-manager run that changed something: its time and what it did
        (events it wrote, by type); None when it never ran."""
        automatic = [e for e in self.store.events(owner=owner)
                     if e.triggered_by.value == "auto"]
        if not automatic:
            return None
        last = max(e.timestamp for e in automatic)
        done = Counter(e.event_type.value for e in automatic if e.timestamp == last)
        return {"at": _iso(last), "events": dict(done.most_common()),
                "agent": automatic[-1].agent_id}

    def _entity_counts(self, owner: str | None) -> dict[str, Any] | None:
        """The knowledge graph: entities by type, the most mentioned ones, facts still
        valid and ended (None when it is empty)."""
        entities = self.store.entities(owner=owner)
        if not entities:
            return None
        names = {e.id: e for e in entities}
        mentioned = Counter(m.entity_id for m in self.store.mentions(owner=owner)
                            if m.entity_id in names)
        facts = self.store.facts(owner=owner)
        return {"count": len(entities),
                "by_type": dict(Counter(e.type for e in entities).most_common()),
                "top": [{"name": names[i].name, "type": names[i].type, "mentions": n}
                        for i, n in mentioned.most_common(10)],
                "facts": {"current": sum(f.valid_to is None for f in facts),
                          "ended": sum(f.valid_to is not None for f in facts)}}

    # -- extraction quality ---------------------------------------------------------------
    def memories(self, owner: str | None) -> list[Memory]:
        """Every memory of ``owner`` (cached until the store changes)."""
        value: list[Memory] = self._cache.get(("memories", owner),
                                              lambda: self.store.memories(owner=owner))
        return value

    def quality(self, owner: str | None) -> dict[str, Any]:
        return dict(self._cache.get(("quality", owner), lambda: self._quality(owner)))

    def _quality(self, owner: str | None) -> dict[str, Any]:
        memories = self.memories(owner)
        extracted = [m for m in memories if m.provenance.get("source") == "conversation"]
        events = self.store.events(owner=owner)
        by_type: dict[str, list[Any]] = defaultdict(list)
        for event in events:
            by_type[event.event_type.value].append(event)
        extractors = Counter(str(m.provenance.get("extractor", "unknown")) for m in extracted)
        kinds = sorted({m.kind.value for m in memories})
        feedback_by_kind = {k: {"useful": 0, "ignored": 0} for k in kinds}
        for m in memories:
            feedback_by_kind[m.kind.value]["useful"] += m.useful_count
            feedback_by_kind[m.kind.value]["ignored"] += m.ignored_count
        ignored = sorted((m for m in memories if m.ignored_count),
                         key=lambda m: (-m.ignored_count, m.useful_count, m.id))[:_TOP]
        corrections = [e for e in by_type.get("supersede", [])
                       if e.reason in ("conflict_update", "correction")]
        return {
            "conversations": {
                "sessions": len({m.session for m in extracted if m.session}),
                "extracted": len(extracted),
                "by_status": dict(Counter(m.status.value for m in extracted).most_common()),
                "candidates_now": sum(m.status is Status.CANDIDATE for m in extracted),
                "reinforced": sum(1 for m in extracted if m.provenance.get("reinforces")),
                "confirmed_by_feedback": len(by_type.get("activate", [])),
                "expired": len(by_type.get("expire", [])),
                "extractors": dict(extractors.most_common()),
            },
            "feedback": {
                "useful": sum(m.useful_count for m in memories),
                "ignored": sum(m.ignored_count for m in memories),
                "corrections": len(corrections),
                "by_kind": feedback_by_kind,
                "over_time": _feedback_over_time(memories, by_type.get("feedback", []),
                                                 corrections),
            },
            "most_ignored": [{**_brief(m), "useful": m.useful_count,
                              "ignored": m.ignored_count} for m in ignored],
        }

    # -- review queue ---------------------------------------------------------------------
    def review(self, owner: str | None) -> dict[str, Any]:
        """What the archivist sends to review: memories whose rules disagree or are within
        reach of a threshold, and archives waiting for approval (unless
        ``AUTO_ARCHIVE_ENABLED``); the lifecycle's dry run gives all counts and the first
        100 of each; plus this dashboard's decisions still inside the restore window."""
        report = self.store.run_lifecycle(apply=False, owner=owner)
        auto_archive = self.store.settings.auto_archive_enabled
        window = timedelta(days=self.store.settings.restore_window_days)
        kept = {e.memory_id for e in self.store.events(owner=owner,
                                                        since=self.store.now() - window)
                if e.event_type is EventType.KEEP}
        actions = ("review",) if auto_archive else ("review", "archive")
        queued = [e for e in report.evaluations
                  if e.recommended_action in actions and e.memory_id not in kept]
        held = {m.id: m for m in self.store.get_many([e.memory_id for e in queued],
                                                     owner=owner)}
        items = []
        for e in queued:
            choices = ["promote", "archive", "keep"] if e.recommended_action == "review" \
                else ["archive", "keep"]
            if e.current_state != "episodic" and "promote" in choices:
                choices.remove("promote")
            memory = held.get(e.memory_id)
            items.append({"id": e.memory_id, "subject": e.subject,
                          "text": _label(None, memory.text, 280) if memory else "",
                          "created": _iso(memory.created) if memory else None,
                          "owner": memory.owner if memory else None,
                          "action": e.recommended_action, "kind": e.current_state,
                          "confidence": e.confidence, "reasons": e.reasons,
                          "metrics": e.metrics.model_dump(mode="json"),
                          "choices": choices})
        items.sort(key=lambda item: actions.index(item["action"]))  # stable: review first
        return {"counts": {a: report.count(a) for a in actions}, "items": items,
                "auto_archive": auto_archive, "kept": len(kept),
                "window_days": self.store.settings.restore_window_days,
                "decisions": self.decisions(owner)}

    def decisions(self, owner: str | None) -> list[dict[str, Any]]:
        """This dashboard's promotions and archives that undo would still reverse, newest
        first: each is its memory's latest undoable transition (``restore`` undoes the
        latest one only) and inside the restore window."""
        window = timedelta(days=self.store.settings.restore_window_days)
        events = self.store.events(owner=owner, since=self.store.now() - window)
        latest = {e.memory_id: e for e in events if e.event_type in _TRANSITIONS}
        mine = sorted((e for e in latest.values() if e.event_type in _UNDOABLE
                       and e.agent_id.startswith(_ACTOR_PREFIX)),
                      key=lambda e: e.timestamp, reverse=True)
        labels = {m.id: m.short(60) for m in self.store.get_many([e.memory_id for e in mine],
                                                                 owner=owner)}
        return [{"event_id": e.event_id, "memory_id": e.memory_id,
                 "label": labels.get(e.memory_id, e.memory_id),
                 "decision": e.event_type.value, "from": e.from_state, "to": e.to_state,
                 "actor": e.agent_id, "at": _iso(e.timestamp),
                 "undo_until": _iso(e.timestamp + window)} for e in mine]

    def decide(self, memory_id: str, decision: str, *, owner: str | None,
               actor: str) -> dict[str, Any]:
        """Apply a reviewer's decision as ``actor``: promote, archive (audited, with a
        version row and an event naming the actor; restorable) or keep (an event naming
        the actor; the memory leaves the queue for the restore window)."""
        memory = self.store.get(memory_id, owner=owner)
        if decision == "keep":
            event = self.store.keep(memory.id, owner=owner, actor=actor)
            return {"success": True, "memory_id": memory.id, "decision": "keep",
                    "recorded": True, "event_id": event.event_id}
        act = self.store.promote if decision == "promote" else self.store.archive
        result = act(memory.id, owner=owner, actor=actor)
        return {**result.model_dump(mode="json"), "decision": decision, "recorded": True}

    def approve_archives(self, memory_ids: Sequence[str], *, owner: str | None,
                         actor: str) -> dict[str, Any]:
        """Archive, as ``actor``, each of these memories that the archivist still
        recommends archiving (evaluated again now, together); the others are left as
        they are and listed with the reason. Each archive is restorable as one."""
        ids = list(dict.fromkeys(memory_ids))
        found = {e.memory_id: e for e in self.store.batch_evaluate(ids, owner=owner)}
        archived: list[str] = []
        skipped: list[dict[str, str]] = []
        for memory_id in ids:
            evaluation = found.get(memory_id)
            if evaluation is None:
                skipped.append({"id": memory_id, "why": f"no active memory {memory_id}"})
                continue
            if evaluation.recommended_action != "archive":
                skipped.append({"id": memory_id, "why": "the archivist now recommends "
                                                        f"{evaluation.recommended_action}"})
                continue
            try:
                result = self.store.archive(memory_id, owner=owner, actor=actor)
            except GraphmemError as exc:  # changed meanwhile: the rest go on
                skipped.append({"id": memory_id, "why": str(exc)})
                continue
            if result.success:
                archived.append(memory_id)
            else:
                skipped.append({"id": memory_id, "why": result.error or "not archived"})
        return {"archived": archived, "skipped": skipped}

    def undo(self, memory_id: str, *, owner: str | None, actor: str) -> dict[str, Any]:
        """Restore a memory's last promotion or archive, within the restore window."""
        result = self.store.restore(memory_id, owner=owner, actor=actor)
        out: dict[str, Any] = result.model_dump(mode="json")
        return out

    # -- one memory -----------------------------------------------------------------------
    def memory(self, memory_id: str, owner: str | None) -> dict[str, Any]:
        store = self.store
        memory = store.get(memory_id, owner=owner)
        links = store.links(memory.id, owner=owner)
        others = {m.id: m for m in store.get_many([x.other for x in links], owner=owner)}
        edges = [{"kind": x.kind, "direction": x.direction, "weight": round(x.weight, 3),
                  "other": _brief(others[x.other]) if x.other in others else
                  {"id": x.other, "label": x.other}} for x in links]
        evaluation = None
        if memory.status in (Status.ACTIVE, Status.CANDIDATE):
            found = store.evaluate(memory.id, owner=owner)
            evaluation = {"action": found.recommended_action, "reasons": found.reasons,
                          "confidence": found.confidence,
                          "metrics": found.metrics.model_dump(mode="json")}
        return {
            "memory": memory.model_dump(mode="json", exclude={"payload", "access_times"}),
            "versions": [v.model_dump(mode="json") for v in store.history(memory.id,
                                                                          owner=owner)],
            "events": [e.model_dump(mode="json")
                       for e in store.events(memory.id, owner=owner)],
            "edges": edges,
            "chain": self._chain(memory, owner),
            "evaluation": evaluation,
            **self._knowledge(memory.id, owner),
        }

    def _chain(self, memory: Memory, owner: str | None) -> list[Any]:
        """The supersede chain through ``memory``, oldest first, each version numbered
        and dated with its own text (the versions of a chain often share a subject)."""
        older, newer = self._older(memory, owner), self._newer(memory, owner)
        if not older and not newer:
            return []
        return [{**_brief(m), "version": n, "created": _iso(m.created),
                 "excerpt": _label(None, m.text, 160), "this": m.id == memory.id}
                for n, m in enumerate([*reversed(older), memory, *newer], 1)]

    def _older(self, memory: Memory, owner: str | None, limit: int = 25) -> list[Memory]:
        """The versions ``memory`` replaced, newest first (SUPERSEDES points from the
        newer memory to the one it replaces)."""
        older: list[Memory] = []
        current = memory
        while len(older) < limit:
            replaced = [x.other for x in self.store.links(current.id, owner=owner)
                        if x.kind == "supersedes" and x.direction == "out"]
            found = self.store.get_many(replaced[:1], owner=owner)
            if not found or found[0].id in {m.id for m in older} | {memory.id}:
                break
            current = found[0]
            older.append(current)
        return older

    def _newer(self, memory: Memory, owner: str | None, limit: int = 25) -> list[Memory]:
        """The versions that replaced ``memory``, oldest first."""
        newer: list[Memory] = []
        current = memory
        while current.superseded_by and len(newer) < limit:
            found = self.store.get_many(current.superseded_by[:1], owner=owner)
            if not found or found[0].id in {m.id for m in newer} | {memory.id}:
                break
            current = found[0]
            newer.append(current)
        return newer

    def _knowledge(self, memory_id: str, owner: str | None) -> dict[str, Any]:
        """The entities a memory mentions and the facts it states, with entity names."""
        section = self.store.graph_sections([memory_id], owner=owner)[memory_id]
        names = {m["entity"]["id"]: m["entity"]["name"] for m in section["mentions"]}
        names.update({e.id: e.name for e in self.store.entities(owner=owner)
                      if any(e.id in (f["subject"], f["object"]) for f in section["facts"])})
        return {
            "entities": [{"name": m["entity"]["name"], "type": m["entity"]["type"],
                          "role": m["role"], "surface": m["surface"]}
                         for m in section["mentions"]],
            "facts": [{**f, "subject_name": names.get(str(f["subject"]), f["subject"]),
                       "object_name": names.get(str(f["object"]), f["object"])}
                      for f in section["facts"]],
        }

    def find(self, query: str, owner: str | None, *, limit: int = 30
             ) -> list[dict[str, Any]]:
        """Memories to open. For words: recall's full-text matches (current versions,
        archived ones too, no access recorded) and the versions recall never returns
        (candidates, superseded and tombstoned ones) that hold at least half of the
        words, most of the words first, each followed by the other versions of its
        supersede chain. With no words: the newest memories, whatever their state."""
        if not query.strip():
            graph = self._cache.get(("nodes", owner),
                                    lambda: self.store.to_networkx(owner=owner, edge_kinds=()))
            newest = sorted(graph.nodes(data=True), key=lambda item: item[1]["created"],
                            reverse=True)[:limit]
            return [{"id": n, "label": _label(d["subject"], d["label"]), "kind": d["kind"],
                     "status": d["status"], "hot": d["hot"], "owner": d["owner"],
                     "importance": round(d["importance"], 3), "created": _iso(d["created"]),
                     "found": "newest"} for n, d in newest]
        words = set(tokenize(query)) or {query.lower()}
        hits = [(len(words & _terms(hit.memory)) / len(words), hit.memory)
                for hit in self.store.recall(query, k=limit, preset="fulltext", owner=owner,
                                             include_archived=True, record_access=False)]
        hidden = sorted(((len(words & terms) / len(words), memory)
                         for memory, terms in self._hidden(owner)),
                        key=lambda m: -m[1].created.timestamp())
        # most of the words first; among equals, recall's rank, then the newest
        matches = sorted([*hits, *(m for m in hidden if m[0] >= 0.5)], key=lambda m: -m[0])
        found: dict[str, dict[str, Any]] = {}
        for _, memory in matches:
            if len(found) >= limit:
                break
            if memory.id in found:
                continue
            found[memory.id] = {**_brief(memory), "created": _iso(memory.created),
                                "found": "words"}
            for other in [*self._older(memory, owner), *self._newer(memory, owner)]:
                found.setdefault(other.id, {**_brief(other), "created": _iso(other.created),
                                            "found": f"a version of {memory.id}"})
        return list(found.values())[:limit]

    def _hidden(self, owner: str | None) -> list[tuple[Memory, frozenset[str]]]:
        """The versions recall never returns, each with its words (cached until the
        store changes)."""
        def build() -> list[tuple[Memory, frozenset[str]]]:
            return [(m, _terms(m)) for m in self.memories(owner)
                    if m.status in (Status.CANDIDATE, Status.TOMBSTONED)
                    or (m.superseded_by and m.status is not Status.FORGOTTEN)]

        value: list[tuple[Memory, frozenset[str]]] = self._cache.get(("hidden", owner), build)
        return value

    # -- recall ---------------------------------------------------------------------------
    def recall(self, query: str, *, owner: str | None, preset: str, k: int,
               kinds: Sequence[str] | None, record_access: bool) -> dict[str, Any]:
        hits = self.store.recall(query, k=k, preset=preset, owner=owner, kinds=kinds or None,
                                 record_access=record_access)
        return {"query": query, "preset": preset, "record_access": record_access,
                "hits": [{"rank": h.rank, "score": h.score, "memory": _brief(h.memory),
                          "text": h.memory.text, "explanation":
                              h.explanation.model_dump(mode="json"),
                          "why": h.explanation.lines()} for h in hits]}


def _terms(memory: Memory) -> frozenset[str]:
    """The words of a memory's subject and text, as full-text search sees them."""
    return frozenset(tokenize(f"{memory.subject or ''} {memory.text}"))


def _feedback_over_time(memories: Sequence[Memory], feedback: Sequence[Any],
                        corrections: Sequence[Any]) -> dict[str, Any]:
    """Useful and ignored feedback and corrections per day. Every mark writes a feedback
    event, which dates it; a memory whose counters exceed its events (counts that came
    with an import) has the rest as ``undated``, so that the days and the undated add up
    to the totals the page shows."""
    counters = {m.id: {"useful": m.useful_count, "ignored": m.ignored_count}
                for m in memories}
    days: dict[str, Counter[str]] = defaultdict(Counter)
    left = {memory_id: dict(counts) for memory_id, counts in counters.items()}
    for event in sorted(feedback, key=lambda e: e.timestamp, reverse=True):
        mark = "useful" if event.reason == "useful" else "ignored"
        if left.get(event.memory_id, {}).get(mark, 0) > 0:  # the newest ones, as counted
            left[event.memory_id][mark] -= 1
            days[event.timestamp.strftime("%Y-%m-%d")][mark] += 1
    for event in corrections:
        days[event.timestamp.strftime("%Y-%m-%d")]["corrections"] += 1
    labels = sorted(days)
    return {"labels": labels, "useful": [days[d]["useful"] for d in labels],
            "ignored": [days[d]["ignored"] for d in labels],
            "corrections": [days[d]["corrections"] for d in labels],
            "undated": {mark: sum(c[mark] for c in left.values())
                        for mark in ("useful", "ignored")}}
