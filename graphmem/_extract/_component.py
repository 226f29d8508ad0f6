"""Conversations: ``add_conversation`` (quality gate, extraction, weak candidates and their
reinforcement, in one transaction), confirmation by feedback, and the REFERENCES edges
ingest derives (``derive_links``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from .._context import Changed, StoreContext
from .._derive import session_contexts
from .._errors import InvalidInputError
from .._input import MAX_TEXT, MemoryInput
from .._memories import Edge, Memories
from .._models import ChangeType, EventType, Kind, Memory, Status
from .._ollama import OllamaGenerator
from .._recall._component import Recall
from .._recall._index import STATUS_CODE
from .._time import new_memory_id, parse_iso, to_utc
from .._transitions import Transitions
from ._links import LinkIndex, derive_edges
from ._ollama import OllamaExtractor
from ._rules import Extracted, RuleExtractor, is_filler

__all__ = ["AddResult", "Conversations", "Extractor"]

#: Cosine above which an extracted memory is the same as an existing one.
DUPLICATE = 0.95
#: Cosine above which a new signal confirms a weak candidate of an earlier session.
REINFORCE = 0.8
_SKIPPED_ROLES = {"assistant", "system", "tool"}
#: How many full-text matches a new memory is compared with, for duplicates and candidates.
_SIMILAR = 10
#: What the link index reads of each memory.
_LINK_FIELDS = ["id", "owner", "created", "status", "entities", "subject"]


class Extractor(Protocol):
    """Finds memories in a message (``RuleExtractor``, ``OllamaExtractor``, yours)."""

    name: str

    def extract(self, text: str) -> list[Extracted]: ...


class AddResult(BaseModel):
    """What ``add_conversation`` did (the lifecycle model's add() result, with the ids)."""

    model_config = ConfigDict(frozen=True)

    memories_created: int
    pending_candidates_buffered: int
    nothing_to_extract: bool
    created_ids: list[str] = Field(default_factory=list)
    candidate_ids: list[str] = Field(default_factory=list)
    reinforced_ids: list[str] = Field(default_factory=list)
    dropped: list[tuple[int, str]] = Field(default_factory=list)
    extractor: str = "rules"
    warnings: list[str] = Field(default_factory=list)


class Conversations:
    """Turning conversations into memories, and linking what they mention."""

    def __init__(self, ctx: StoreContext, memories: Memories, recall: Recall,
                 transitions: Transitions) -> None:
        self._ctx = ctx
        self._memories = memories
        self._recall = recall
        self._transitions = transitions
        self._links: LinkIndex | None = None
        ctx.on_change(self._on_change)

    def _on_change(self, change: Changed) -> None:
        links = self._links
        if links is None or change.edges_only or change.access_only:
            return
        if change.bulk:
            self._links = None
        elif change.new and len(change.new) == len(change.ids):
            links.upsert({f: getattr(m, f) for f in _LINK_FIELDS} for m in change.new)
        else:
            links.upsert(self._ctx.engine.scan(_LINK_FIELDS, ids=list(change.ids))
                         .table.to_pylist())

    def _link_index(self) -> LinkIndex:
        if self._links is None:
            built = LinkIndex()
            built.upsert(self._ctx.engine.scan(_LINK_FIELDS).table.to_pylist())
            self._links = built
        return self._links

    # -- conversations -------------------------------------------------------------------
    def add_conversation(
        self,
        messages: Sequence[Mapping[str, Any] | str],
        *,
        session_id: str,
        owner: str | None = None,
        timestamp: datetime | None = None,
        extractor: Extractor | None = None,
        cooccur_window: int = 2,
        actor: str | None = None,
    ) -> AddResult:
        """Remember what a conversation says (the lifecycle model's ``add()``).

        Messages are dicts with ``text`` (or ``content``), and optionally ``speaker`` (or
        ``role``/``name``) and ``timestamp``; plain strings are user messages. Assistant,
        system and tool messages are not mined. A quality gate drops greetings, filler
        and duplicates of existing memories; the extractor (rules by default, Ollama when
        configured and passed) keeps the informative statements: strong signals become
        active episodic memories, weak ones ``candidate`` memories. A signal that matches
        a candidate of an earlier session reinforces it: a new active memory with lineage
        (a REFERENCES edge to the candidate, which it supersedes). Memories of one call
        CO_OCCUR (adjacent ones weighted 1, then 1/2 ...); shared rare entities become
        REFERENCES. Each memory is indexed with the messages around it (``context``).
        Everything is written in one transaction, recorded under ``actor``.
        """
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError("session_id must be a non-empty string", field="session_id")
        parsed = [_message(m, i) for i, m in enumerate(_messages(messages))]
        ctx = self._ctx
        base_time = to_utc(timestamp) if timestamp is not None else ctx.now()
        chosen = extractor or _default_extractor(ctx.settings)
        dropped: list[tuple[int, str]] = []
        warnings: list[str] = []
        found: list[tuple[int, dict[str, Any], Extracted]] = []
        for index, message in enumerate(parsed):
            if message["role"] in _SKIPPED_ROLES:
                dropped.append((index, f"{message['role']} message"))
                continue
            if is_filler(message["text"]):
                dropped.append((index, "greeting or filler"))
                continue
            items = _run(chosen, message)
            warning = getattr(chosen, "last_warning", None)
            if warning:
                warnings.append(f"message {index}: {warning}")
            if not items:
                dropped.append((index, "nothing informative"))
            found += [(index, message, item) for item in items]
        if not found:
            return AddResult(memories_created=0, pending_candidates_buffered=0,
                             nothing_to_extract=True, dropped=dropped,
                             extractor=chosen.name, warnings=warnings)
        contexts = session_contexts([m["text"] for m in parsed], cooccur_window)
        # Texts alone, for duplicates and reinforcement; stored vectors add the context.
        vectors = ctx.embed([item.text for _, _, item in found])
        duplicates, reinforced = self._match_existing(vectors, [i.text for _, _, i in found],
                                                      owner, session_id)
        strong = getattr(chosen, "strong", RuleExtractor().strong)
        records: list[MemoryInput] = []
        candidates: list[str] = []
        lineage: list[tuple[str, str]] = []
        kept = np.empty_like(vectors)  # rows 0 .. n_kept - 1: the texts kept so far
        n_kept = 0
        for n, (index, message, item) in enumerate(found):
            if n in duplicates:
                dropped.append((index, f"duplicate of {duplicates[n]}"))
                continue
            # every kept vector in one call (a Python loop over them took 12 s of 2,000
            # messages' 39); einsum, as BLAS threads contending on 2 busy cores made one
            # such product of 4,000 rows take 14-36 ms instead of 0.3
            similar = np.einsum("ij,j->i", kept[:n_kept], vectors[n])
            if n_kept and float(similar.max()) >= DUPLICATE:
                dropped.append((index, "duplicate within the conversation"))
                continue
            kept[n_kept] = vectors[n]
            n_kept += 1
            memory_id = new_memory_id()
            status = Status.ACTIVE if item.strength >= strong or n in reinforced \
                else Status.CANDIDATE
            when = message["timestamp"] or base_time
            speaker = message["speaker"]
            entities = tuple(dict.fromkeys(
                ([speaker.lower()] if speaker else []) + list(item.entities)))
            provenance: dict[str, Any] = {"source": "conversation", "session": session_id,
                                          "message": index, "speaker": speaker,
                                          "extractor": chosen.name,
                                          "strength": round(item.strength, 3)}
            if n in reinforced:
                provenance["reinforces"] = reinforced[n]
                lineage.append((memory_id, reinforced[n]))
            records.append(MemoryInput(
                id=memory_id, text=item.text, context=contexts[index], kind=Kind.EPISODIC,
                status=status,
                owner=owner, session=session_id, observed=when, created=when,
                confidence=round(min(1.0, 0.5 + item.strength / 2), 3), entities=entities,
                provenance=provenance, payload=message["text"]))
            if status is Status.CANDIDATE:
                candidates.append(memory_id)
        edges = _session_edges([r.id or "" for r in records], cooccur_window, session_id)
        edges += [Edge("references", new, old, source="reinforcement")
                  for new, old in lineage]
        batch, result, new_memories = self._memories.plan_merge(
            records, edges=edges, reason=f"conversation {session_id}", actor=actor)
        for new, old in lineage:  # the candidate is kept, superseded by its confirmation
            candidate = ctx.visible(old, owner)
            patch, edge = self._memories.supersede_patch(candidate, new, reason="reinforced",
                                                         at=ctx.now(), actor=actor)
            batch.patches.append(patch)
            batch.new_edges.append(edge)
            self._memories.knowledge.plan_supersede(
                batch, candidate, [f for f in batch.facts if new in f.sources], at=ctx.now(),
                by=new)
        links = self._link_index()
        links.upsert({f: getattr(m.memory, f) for f in _LINK_FIELDS} for m in new_memories)
        try:
            derived = derive_edges(links, result.created,
                                   {m.memory.id: m.memory.text for m in new_memories})
            batch.new_edges += self._memories.missing_edges(
                derived, known={m.memory.id for m in new_memories})
            self._memories.commit(batch, created=new_memories,
                                  changed=[old for _, old in lineage],
                                  edges=[e.src for e in batch.new_edges]
                                  + [e.dst for e in batch.new_edges])
        except BaseException:
            self._links = None  # it already holds memories that were not written
            raise
        created = [i for i in result.created if i not in candidates]
        return AddResult(memories_created=len(created),
                         pending_candidates_buffered=len(candidates),
                         nothing_to_extract=not result.created, created_ids=created,
                         candidate_ids=candidates, reinforced_ids=[old for _, old in lineage],
                         dropped=sorted(dropped), extractor=chosen.name, warnings=warnings)

    def _match_existing(self, vectors: np.ndarray, texts: Sequence[str],
                        owner: str | None, session: str
                        ) -> tuple[dict[int, str], dict[int, str]]:
        """For each new text: an existing active memory it duplicates, or a candidate of
        another session it reinforces. Stored vectors include each memory's context, so
        the comparison is text to text: the best BM25 matches of the owner's current
        memories are embedded again, without context, and compared by cosine."""
        index = self._recall.ensure_index()
        n = index.size
        if n == 0:
            return {}, {}
        owners = index.owner[:n] == index.owner_codes.get(owner, -2)
        current = np.array([not sup for sup in index.superseded_by], dtype=bool)
        weak = owners & current & (index.status[:n] == STATUS_CODE["candidate"])
        this_session = np.array([s == session for s in index.session], dtype=bool)
        # A repeat within the session is a duplicate; a repeat later on reinforces.
        active = owners & current & (index.status[:n] == STATUS_CODE["active"])
        active |= weak & this_session
        candidate = weak & ~this_session
        eligible = active | candidate
        duplicates, reinforced = {}, {}
        for row, text in enumerate(texts):
            top = self._recall.lexical_neighbours(text, owner=owner, eligible=eligible,
                                                  limit=_SIMILAR)
            if not top:
                continue
            others = self._memories.get_many(top)
            similar = self._ctx.embed([m.text for m in others]) @ vectors[row]
            by_id = {m.id: float(c) for m, c in zip(others, similar, strict=True)}
            best_active = max(((c, i) for i, c in by_id.items() if active[index.pos[i]]),
                              default=(0.0, ""))
            if best_active[0] >= DUPLICATE:
                duplicates[row] = best_active[1]
                continue
            # The most similar candidate; among equals, the oldest (a stable lineage).
            best_weak = max(((c, -index.created[index.pos[i]], i) for i, c in by_id.items()
                             if candidate[index.pos[i]]), default=(0.0, 0.0, ""))
            if best_weak[0] >= REINFORCE:
                reinforced[row] = best_weak[2]
        return duplicates, reinforced

    def confirm(self, memory: Memory, *, actor: str | None = None) -> Memory:
        """Useful feedback on a weak candidate confirms it: it becomes active."""
        if memory.status is not Status.CANDIDATE:
            return memory
        return self._transitions.transition(memory, status=Status.ACTIVE,
                                            event_type=EventType.ACTIVATE,
                                            change_type=ChangeType.PROMOTED,
                                            reason="confirmed by useful feedback", actor=actor)

    def correct(self, memory_id: str, new_text: str, *, owner: str | None = None,
                **fields: Any) -> Memory:
        """A user correction: the replacement memory supersedes the old one (reason
        ``conflict_update``); the old one is kept in the history, out of recall."""
        return self._memories.supersede(memory_id, new_text, reason="conflict_update",
                                        owner=owner, **fields)

    # -- derived edges ----------------------------------------------------------------------
    def derive_links(self, ids: Sequence[str] | None = None, *, max_df: int | None = None,
                     limit: int = 10) -> int:
        """REFERENCES edges from what memories mention (see ``_links.derive_edges``):
        rare shared entities, ids, subjects; within each owner. Returns the number of
        edges created."""
        links = self._link_index()
        targets = list(links.docs) if ids is None else [i for i in ids if i in links.docs]
        if not targets:
            return 0
        texts = dict(zip(*(self._ctx.engine.scan(["id", "text"], ids=targets)
                           .table.column(c).to_pylist() for c in ("id", "text")),
                         strict=True)) if links.subjects else {}
        edges = derive_edges(links, targets, texts, max_df=max_df, limit=limit)
        return self._memories.link_many(edges) if edges else 0


def _default_extractor(settings: Any) -> Extractor:
    generator = OllamaGenerator.from_settings(settings)
    return OllamaExtractor(generator) if generator is not None else RuleExtractor()


def _run(extractor: Extractor, message: Mapping[str, Any]) -> list[Extracted]:
    if isinstance(extractor, OllamaExtractor):
        return extractor.extract(message["text"], speaker=message["speaker"])
    return extractor.extract(message["text"])


def _messages(messages: Any) -> list[Any]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidInputError("messages must be a list of messages", field="messages")
    if len(messages) > 10_000:
        raise InvalidInputError("at most 10,000 messages per call", field="messages")
    return list(messages)


def _message(message: Any, index: int) -> dict[str, Any]:
    """Validate one message: text, speaker/role, optional timestamp."""
    if isinstance(message, str):
        message = {"text": message}
    if not isinstance(message, Mapping):
        raise InvalidInputError(f"message {index} must be a mapping or a string",
                                field=f"messages[{index}]")
    text = message.get("text", message.get("content"))
    if not isinstance(text, str):
        raise InvalidInputError(f"message {index}: text must be a string",
                                field=f"messages[{index}].text")
    if "\x00" in text or len(text) > MAX_TEXT:
        raise InvalidInputError(f"message {index}: text has a NUL character or is longer "
                                f"than {MAX_TEXT} characters", field=f"messages[{index}].text")
    role = message.get("role") or "user"
    speaker = message.get("speaker") or message.get("name")
    if not isinstance(role, str) or (speaker is not None and not isinstance(speaker, str)):
        raise InvalidInputError(f"message {index}: role and speaker must be strings",
                                field=f"messages[{index}].role")
    when = message.get("timestamp")
    if when is not None:
        try:
            when = to_utc(when) if isinstance(when, datetime) else parse_iso(when)
        except (ValueError, TypeError):
            raise InvalidInputError(f"message {index}: timestamp {when!r} is not ISO 8601",
                                    field=f"messages[{index}].timestamp") from None
    return {"text": text, "role": role.lower(), "speaker": speaker or
            (None if role.lower() == "user" else role), "timestamp": when}


def _session_edges(ids: Sequence[str], window: int, session: str) -> list[Edge]:
    """CO_OCCURS between memories of one session, ``1/d`` for a distance ``d <= window``."""
    return [Edge("co_occurs", ids[i], ids[j], weight=1.0 / (j - i), source=f"session:{session}")
            for i in range(len(ids)) for j in range(i + 1, min(len(ids), i + window + 1))]

