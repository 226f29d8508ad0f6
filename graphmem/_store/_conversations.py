"""Conversations: ``add_conversation`` (quality gate, extraction, weak candidates and their
reinforcement, in one transaction) and the REFERENCES edges
ingest derives (``derive_links``)."""

from __future__ import annotations

import bisect
import functools
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .._context import Changed, StoreContext
from .._errors import InvalidInputError
from .._input import MAX_TEXT, MemoryInput, check_count, check_unicode, moment
from .._kg._text import named
from .._models import STATUS_CODE, AddResult, ChangeType, Edge, EventType, Kind, Memory, Status
from .._ollama import OllamaGenerator
from .._recall._channels import lexical_neighbours
from .._recall._index import ASSISTANT_TAG
from .._recall._vectors import matvec
from .._redact import Mentions, keyed_digest, said_form, said_whole, unmarked
from .._time import new_memory_id, parse_iso, still_id, to_utc
from ._memories import Memories, speaker_of
from ._recall_index import IndexSync
from ._transitions import Transitions

if TYPE_CHECKING:
    from .._extract._corrections import Statement
    from .._extract._links import LinkIndex
    from .._extract._rules import Extracted

# The extractors (rules, the Ollama model, corrections, links) are imported by the
# methods that use them: a process that only recalls never loads them.

__all__ = ["Conversations", "Extractor"]

#: Cosine above which a new signal confirms a weak candidate of an earlier session.
REINFORCE = 0.8
_SKIPPED_ROLES = {"system", "tool"}
#: The roles a message may give, by the names chat formats use (LangChain's human and ai,
#: Gemini's model, OpenAI's developer and function), as the gate reads them.
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
          "model": "assistant", "bot": "assistant", "system": "system",
          "developer": "system", "tool": "tool", "function": "tool"}
#: How many full-text matches a new memory is compared with, for duplicates and candidates.
_SIMILAR = 10
#: A statement keeps the message it was said in whole up to this many characters, and of
#: a longer one this many on either side of it (``_around``)
_MESSAGE_KEPT = 2_000
_MESSAGE_AROUND = 1_000
#: At most this many words of the message a statement answers are its context.
_CONTEXT_WORDS = 30
#: how many texts back (the statements before it in its message, then the user's earlier
#: messages of the sitting) the person "she" / "he" stands for is looked for
_ANTECEDENT_TEXTS = 4
#: how many messages back an assistant's reply looks for the user's request it answers
_ASKED_WITHIN = 4
#: how many of the user's latest statements a correction may replace (what the assistant
#: said between comes with them, up to four times as many in all)
_WITHIN_REACH = 40
#: Past this many changed memories, the link index is read again when next needed
#: rather than each of them now (a lifecycle run may change every memory's state).
_LINKS_REREAD = 1000
#: What the link index reads of each memory.
_LINK_FIELDS = ["id", "owner", "created", "status", "entities", "subject"]


class Extractor(Protocol):
    """Finds memories in a message (``RuleExtractor``, ``OllamaExtractor``, yours)."""

    name: str

    def extract(self, text: str) -> list[Extracted]: ...


@dataclass(frozen=True)
class _Found:
    """A statement the extractor found in message ``index``, and the gate's verdict."""

    index: int
    message: Mapping[str, Any]
    item: Extracted
    status: Status


class _Replan(Exception):
    """A conversation's plan is stale: another writer changed what it was planned on."""


class _TextVectors:
    """The vectors of texts alone (no context), kept for the texts asked for again: the
    statements a conversation's new ones are compared with (their full-text neighbours,
    the owner's recent statements) recur from one message to the next, and embedding
    them again took two thirds of the ingest of a day's chats. Up to ``LIMIT`` texts,
    the least recently used dropped first; all dropped when the model changes or a
    memory is forgotten (no forgotten text stays in memory)."""

    LIMIT = 4096

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, np.ndarray] = OrderedDict()
        self._model: object = ctx.embedder
        #: counts the clears: what was embedded across one is returned, not kept (a
        #: memory forgotten meanwhile may have been among the texts)
        self._epoch = 0

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._epoch += 1

    @property
    def epoch(self) -> int:
        """How many times all was dropped: taken before the texts are read from the store."""
        return self._epoch

    def __call__(self, texts: Sequence[str], *, since: int | None = None) -> np.ndarray:
        """The vectors of ``texts`` (one row each), those not kept embedded in one call;
        kept only if nothing was dropped ``since`` (an ``epoch``) or during the call."""
        with self._lock:
            if self._model is not self._ctx.embedder:
                self._kept.clear()
                self._model = self._ctx.embedder
                self._epoch += 1
            epoch = self._epoch if since is None else since
            have = {t: self._kept[t] for t in texts if t in self._kept}
        missing = list(dict.fromkeys(t for t in texts if t not in have))
        made = dict(zip(missing, self._ctx.embed(missing), strict=True)) if missing else {}
        with self._lock:
            if self._epoch == epoch:
                for text in have:
                    if text in self._kept:
                        self._kept.move_to_end(text)
                self._kept.update(made)
                while len(self._kept) > self.LIMIT:
                    self._kept.popitem(last=False)
        if not texts:
            return np.zeros((0, self._ctx.embedder.dim), dtype=np.float32)
        return np.stack([made[t] if t in made else have[t] for t in texts])


class Conversations:
    """Turning conversations into memories, and linking what they mention."""

    def __init__(self, ctx: StoreContext, memories: Memories, index: IndexSync,
                 transitions: Transitions) -> None:
        self._ctx = ctx
        self._memories = memories
        self._index = index
        self._transitions = transitions
        self._links: LinkIndex | None = None
        self._text_vectors = _TextVectors(ctx)
        ctx.on_change(self._on_change)

    def _on_change(self, change: Changed) -> None:
        if change.removed or change.bulk or change.foreign:
            self._text_vectors.clear()
        links = self._links
        if links is None or change.edges_only or change.access_only:
            return
        if change.bulk or len(change.ids) > _LINKS_REREAD:
            self._links = None  # read again when next needed
        elif change.patched is not None and not any(
                set(fields) & set(_LINK_FIELDS) for fields in change.patched.values()):
            return  # nothing it links by changed
        elif change.new and len(change.new) == len(change.ids):
            links.upsert({f: getattr(m, f) for f in _LINK_FIELDS} for m in change.new)
        else:
            links.upsert(self._ctx.engine.scan(_LINK_FIELDS, ids=list(change.ids))
                         .table.to_pylist())

    def _link_index(self) -> LinkIndex:
        from .._extract._links import LinkIndex

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
        ``role``/``name``) and ``timestamp``; plain strings are user messages. A role is
        ``user`` (or ``human``), ``assistant`` (or ``ai``, ``model``, ``bot``),
        ``system`` (or ``developer``) or ``tool`` (or ``function``), and any other is
        an error naming the message; system and tool messages are skipped. A message
        without a role whose speaker is one of these names (``assistant``, ``AI``,
        ``system`` ...) takes that role. The quality gate keeps what the user said
        about themselves and their world: statements become active episodic memories; hedges and
        hypotheticals ("maybe I'll ...", "if I had time ...") become ``candidate``
        memories; greetings, filler, questions that say nothing about the asker and
        duplicates of existing memories are dropped. Of the assistant's messages only
        what it did or recommended is kept (a reminder set, a booking, "I'd suggest
        ...", "a good first one: ..."), as the assistant's. A correction ("scratch that,
        it's Tuesday", "I meant the 21st, not the 14th") supersedes the statement it
        corrects. A candidate that a later session states again is reinforced: it
        becomes active (history ``reinforced``), or the new statement replaces it. The
        extractor (rules by default, Ollama when configured and passed) proposes the
        statements; the gate decides. Memories of one call CO_OCCUR (adjacent ones
        weighted 1, then 1/2 ...); shared rare entities become REFERENCES. Each memory is
        indexed with the statements it needs to be understood (``context``). Everything
        is written in one transaction, recorded under ``actor``.
        """
        check_count(cooccur_window, "cooccur_window")
        if extractor is not None and not callable(getattr(extractor, "extract", None)):
            raise InvalidInputError("extractor must have an extract(text) method (an "
                                    f"Extractor), got {extractor!r}", field="extractor")
        if actor is not None and not isinstance(actor, str):
            raise InvalidInputError(f"actor must be a name, got {actor!r}", field="actor")
        model = self._ctx.embedder
        try:
            return self._add_conversation(messages, session_id=session_id, owner=owner,
                                          timestamp=timestamp, extractor=extractor,
                                          cooccur_window=cooccur_window, actor=actor,
                                          locked=False)
        except _Replan:
            pass
        except ValueError:
            if self._ctx.embedder is model:
                raise
            # ``reembed`` switched the model meanwhile: vectors of two models were compared
        # another writer changed what it was planned on: planned again, alone
        with self._ctx.lock:
            return self._add_conversation(messages, session_id=session_id, owner=owner,
                                          timestamp=timestamp, extractor=extractor,
                                          cooccur_window=cooccur_window, actor=actor,
                                          locked=True)

    def _add_conversation(
        self, messages: Sequence[Mapping[str, Any] | str], *, session_id: str,
        owner: str | None, timestamp: datetime | None, extractor: Extractor | None,
        cooccur_window: int, actor: str | None, locked: bool,
    ) -> AddResult:
        """``add_conversation``, planned while other writers go on (``locked``: while
        none can); the commit refuses (``_Replan``) a plan that another writer's forget,
        or change of a memory it updates, made stale meanwhile."""
        from .._extract._corrections import (
            Statement,
            adds_news,
            bare_take_back,
            correction_target,
            correction_targets,
            is_correction,
            may_replace,
            redoes,
            said_values,
            says_now,
            takes_back,
        )
        from .._extract._links import derive_edges
        from .._extract._rules import DUPLICATE, RuleExtractor, is_hedge

        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError("session_id must be a non-empty string", field="session_id")
        check_unicode(session_id, field="session_id")
        parsed = [_message(m, i) for i, m in enumerate(_messages(messages))]
        ctx = self._ctx
        since = self._text_vectors.epoch  # before anything is read from the store
        base_time = moment(timestamp, "timestamp") or ctx.now()
        chosen = extractor or _default_extractor(ctx.settings)
        strong = getattr(chosen, "strong", RuleExtractor().strong)
        dropped: list[tuple[int, str]] = []
        warnings: list[str] = []
        found: list[_Found] = []
        for index, message in enumerate(parsed):
            before = parsed[index - 1] if index else None
            asked = before["text"] if before is not None and before["role"] == "user" else None
            items, reason = self._statements(chosen, message, warnings, index, asked)
            if not items:
                dropped.append((index, reason))
            for item in items:
                status = (Status.CANDIDATE if item.strength < strong or is_hedge(item.text)
                          else Status.ACTIVE)
                found.append(_Found(index, message, item, status))
        if not found:
            return AddResult(memories_created=0, pending_candidates_buffered=0,
                             nothing_to_extract=True, dropped=dropped,
                             extractor=chosen.name, warnings=warnings)
        # words the owner's forget erased are not stored again, nor kept in what the
        # message's other statements keep of it (payload, context)
        erased = self._erased(found, owner)
        for index in {found[n].index for n in erased}:
            said = parsed[index]["text"]
            # each text once however typed (a message of 1,000 retypings was quadratic)
            gone = list({said_form(found[n].item.text): found[n].item.text
                         for n in erased if found[n].index == index}.values())
            parsed[index]["text"] = Mentions(
                gone, anywhere=True, whole={t for t in gone if said_whole(t, said)}
            ).scrub(said)
        siblings: dict[int, list[str]] = {}
        for n, f in enumerate(found):
            if n not in erased:
                siblings.setdefault(f.index, []).append(f.item.text)
        said_in = _said_in(found)
        # Texts alone, for duplicates and reinforcement; stored vectors add the context.
        vectors = self._text_vectors([f.item.text for f in found], since=since)
        duplicates, similar = self._match_existing(vectors, [f.item.text for f in found],
                                                   owner, session_id, since=since,
                                                   speakers=[f.message["speaker"]
                                                             for f in found],
                                                   times=[f.message["timestamp"] or base_time
                                                          for f in found])
        recent = self._recent_statements(owner)
        records: list[MemoryInput] = []
        candidates: list[str] = []
        reinforced: dict[str, str] = {}    # candidate -> memory id that confirms it
        in_place: list[str] = []           # candidates that become active as they are
        corrected: dict[str, str] = {}     # memory id -> the id of the one it corrects
        echoes: dict[str, list[str]] = {}  # ... and of what repeated that, replaced with it
        taken: set[str] = set()            # ... the ids of both
        kept = np.empty_like(vectors)  # rows 0 .. n_kept - 1: the texts kept so far
        kept_as: list[Statement] = []  # ... and who said them
        n_kept = 0
        for n, f in enumerate(found):
            if n in erased:
                dropped.append((f.index, "forgotten: forget erased these words of the owner's, "
                                "and a conversation does not store them again"))
                continue
            if n in duplicates:
                dropped.append((f.index, f"duplicate of {duplicates[n]}"))
                continue
            # every kept vector in one call (a Python loop over them took 12 s of 2,000
            # messages' 39), in this thread: BLAS threads contending on 2 busy cores made
            # one such product of 4,000 rows take 14-36 ms instead of 0.3
            close = matvec(kept[:n_kept], vectors[n])
            if n_kept and float(close.max()) >= DUPLICATE and any(
                    not said.about_another(f.item.text, f.message["speaker"])
                    and said_values(said.text) == said_values(f.item.text)
                    for said in (kept_as[row] for row in np.flatnonzero(close >= DUPLICATE))):
                # the same words again (not another day, time or number: "moved it to
                # Wednesday at 5" after "to Tuesday at 4"); another speaker's of
                # themselves are theirs
                dropped.append((f.index, "duplicate within the conversation"))
                continue
            kept[n_kept] = vectors[n]
            kept_as.append(Statement("", f.item.text, assistant=f.message["role"] == "assistant",
                                     speaker=f.message["speaker"]))
            n_kept += 1
            if n in similar:
                candidate, cosine = similar[n]
                if cosine >= DUPLICATE and candidate not in reinforced:
                    # the same words again: the candidate itself becomes active
                    in_place.append(candidate)
                    reinforced[candidate] = candidate
                    dropped.append((f.index, f"reinforces {candidate}"))
                    continue
            memory_id = new_memory_id()
            status = f.status
            if n in similar and similar[n][0] not in reinforced:
                reinforced[similar[n][0]] = memory_id
                status = Status.ACTIVE
            targets: tuple[str, ...] = ()
            if f.message["role"] == "user" and status is Status.ACTIVE:
                own = siblings[f.index]
                at = own.index(f.item.text) if f.item.text in own else 0
                # the statement that says it corrects; the one after a statement that
                # only takes back ("Scratch that. It's Tuesday."); or, when the message
                # says so only as a whole ("sorry. it's Tuesday."), its first statement
                said = f.item.text if is_correction(f.item.text) else "" if adds_news(
                    f.item.text) else (  # "[oh wait!] I forgot to say ..." takes nothing back
                    f"{own[at - 1]} {f.item.text}" if at and bare_take_back(own[at - 1])
                    else f.message["text"] if at == 0 and not any(map(is_correction, own))
                    else "")
                said = said or (f.item.text if says_now(f.item.text) else "")
                # what replaces nothing (``may_replace``) is not compared with the recent
                # statements: every message's first statement asked for their cosines
                if said and may_replace(said):
                    # what the message itself said is corrected only when taken back
                    # outright ("at 3. scratch that, 4"): "we added Mondays. so it's 3
                    # days now not 2" corrects an earlier message, and its first statement
                    # says what about; what another person of the user's side said of
                    # themselves, never (``Statement.about_another``)
                    outright = takes_back(said)
                    earlier = [r for r in recent
                               if not r.about_another(f.item.text, f.message["speaker"])
                               and (outright or r.message != f.message["text"])]
                    targets = correction_targets(said, earlier,
                                                 self._similarity(vectors[n], earlier, since,
                                                                  f.item.text),
                                                 about=own[at - 1] if at else None)
            elif status is Status.ACTIVE and redoes(f.item.text):
                # the assistant changing what it did ("I've moved your reminder to
                # Tuesday") replaces what it said it did, never what the user said
                done = [r for r in recent if r.assistant and r.message != f.message["text"]]
                target = correction_target(f.item.text, done,
                                           self._similarity(vectors[n], done, since),
                                           redo=True)
                targets = (target,) if target else ()
            # each earlier statement is replaced once (the first correction of it): a
            # second correction of the user's statement still replaces the assistant's
            # echo of it that the first left
            fresh = [t for t in targets if t not in taken]
            if fresh:
                corrected[memory_id] = fresh[0]
                echoes[memory_id] = fresh[1:]
                taken.update(fresh)
            who = _who(f, siblings[f.index], parsed)
            # a correction is about what it corrects: indexed with it
            context = (next(_around(r.message, r.text) if r.message else r.text
                            for r in recent if r.id == corrected[memory_id])
                       if memory_id in corrected
                       else _context(f, siblings[f.index], parsed, cooccur_window, who))
            records.append(self._record(memory_id, f, said_in[n], status, context, owner,
                                        session_id, base_time, chosen.name,
                                        reinforces=next((c for c, m in reinforced.items()
                                                         if m == memory_id), None),
                                        corrects=corrected.get(memory_id), refers_to=who))
            if status is Status.CANDIDATE:
                candidates.append(memory_id)
            else:
                recent.insert(0, Statement(memory_id, f.item.text,
                                           assistant=f.message["role"] == "assistant",
                                           message=f.message["text"],
                                           speaker=f.message["speaker"]))
                # as far back as ``_recent_statements`` reaches: a sitting of 8,000 turns
                # compared each statement with all before it (325 s against 4,000's 33)
                del recent[_reach([r.assistant for r in recent[:4 * _WITHIN_REACH]]):]
        edges = _session_edges([r.id or "" for r in records], cooccur_window, session_id)
        records += self._still_true(records, corrected, owner,  # (corrections' contexts too)
                                    since=since)
        batch, result, new_memories = self._memories.plan_merge(
            records, edges=edges, reason=f"conversation {session_id}", actor=actor)
        created_now = {m.memory.id: m.memory for m in new_memories}
        # a candidate this conversation confirms is corrected as what confirms it: one it
        # makes active in place stays a candidate, replaced; one a new statement replaces,
        # that statement (two changes of one memory in one write were refused)
        confirmed = {old: new for old, new in reinforced.items() if new != old}
        fixes = [(new, confirmed.get(old, old)) for new, old in
                 [*corrected.items(), *((new, old) for new, olds in echoes.items()
                                        for old in olds)]]
        fixes = list({old: (new, old) for new, old in reversed(fixes) if new != old}.values())
        in_place = [c for c in in_place if c not in {old for _, old in fixes}]
        changed: list[str] = []
        now = ctx.now()
        read: dict[str, int] = {}  # the stored memories it updates: their versions read
        for candidate in in_place:
            memory = ctx.visible(candidate, owner)
            read[candidate] = memory.version
            batch.patches.append(self._transitions.transition_patch(
                memory, status=Status.ACTIVE,
                event_type=EventType.ACTIVATE, change_type=ChangeType.REINFORCED,
                reason=f"stated again in conversation {session_id}", actor=actor))
            changed.append(candidate)
        replaced = [(new, old, "reinforced", ChangeType.REINFORCED)
                    for old, new in reinforced.items() if new != old]
        replaced += [(new, old, "correction", ChangeType.CONFLICT_UPDATE)
                     for new, old in fixes]
        for new, old, reason, change_type in replaced:
            memory = created_now.get(old) or ctx.visible(old, owner)
            if old not in created_now:
                read[old] = memory.version
            patch, edge = self._memories.supersede_patch(memory, new, reason=reason, at=now,
                                                         actor=actor, change_type=change_type)
            batch.patches.append(patch)
            batch.new_edges.append(edge)
            self._memories.knowledge.plan_supersede(
                batch, memory, [fact for fact in batch.facts if new in fact.sources], at=now,
                by=new)
            changed.append(old)
        links = self._link_index()
        links.upsert({f: getattr(m.memory, f) for f in _LINK_FIELDS} for m in new_memories)
        try:
            # a memory and the one it replaces are linked by SUPERSEDES alone
            replacing = {frozenset((new, old)) for new, old, _, _ in replaced}
            derived = [e for e in derive_edges(links, result.created,
                                               {m.memory.id: m.memory.text
                                                for m in new_memories})
                       if frozenset((e.src, e.dst)) not in replacing]
            batch.new_edges += self._memories.missing_edges(
                derived, known={m.memory.id for m in new_memories})
            self._memories.commit(batch, created=new_memories, changed=changed,
                                  edges=[e.src for e in batch.new_edges]
                                  + [e.dst for e in batch.new_edges],
                                  check=None if locked else functools.partial(
                                      self._unchanged, since, read))
        except BaseException:
            self._links = None  # it already holds memories that were not written
            raise
        created = [i for i in result.created if i not in candidates]
        return AddResult(memories_created=len(created),
                         pending_candidates_buffered=len(candidates),
                         nothing_to_extract=not result.created and not in_place,
                         created_ids=created, candidate_ids=candidates,
                         reinforced_ids=list(reinforced),
                         corrected_ids=[old for _, old in fixes],
                         dropped=sorted(dropped), extractor=chosen.name, warnings=warnings)

    def _unchanged(self, since: int, read: Mapping[str, int]) -> None:
        """Raise ``_Replan`` when, since a conversation was planned, a memory was forgotten
        (or the store changed in bulk, or from another process: ``since``, an epoch of
        the text vectors) or a memory it updates was changed (``read``: their versions
        then); called under the write lock."""
        if self._text_vectors.epoch != since:
            raise _Replan
        if read:
            now = self._ctx.engine.get_many(list(read))
            if any(i not in now or now[i].version != v for i, v in read.items()):
                raise _Replan

    def _statements(self, chosen: Extractor, message: Mapping[str, Any],
                    warnings: list[str], index: int, asked: str | None = None
                    ) -> tuple[list[Extracted], str]:
        """What the gate may keep of one message, or why nothing; ``asked``: the user's
        message an assistant's answers."""
        from .._extract._rules import assistant_statements, is_filler

        role = message["role"]
        if role == "assistant":
            return assistant_statements(message["text"], asked), "assistant message"
        if role in _SKIPPED_ROLES:
            return [], f"{role} message"
        if is_filler(message["text"]):
            return [], "greeting or filler"
        items = _run(chosen, message)
        warning = getattr(chosen, "last_warning", None)
        if warning:
            warnings.append(f"message {index}: {warning}")
        return items, "nothing informative"

    def _still_true(self, records: list[MemoryInput], corrected: Mapping[str, str],
                    owner: str | None, *, since: int) -> list[MemoryInput]:
        """What the user's corrections leave true of the statements they replace, each a
        memory of its own said where the statement was (``still_true``: "my wife walks him
        in the morning, I do the evening walk at 7" corrected by "I do the evening walk at
        8 now" leaves "my wife walks him in the morning"), its provenance naming the
        statement (``remains_of``), its id made of the statement's (``still_id``: forget
        takes it along). The correction's context (the message it corrects) no
        longer holds what is left: the question about that is answered by it alone."""
        from .._extract._corrections import clause_spans, still_true

        at = {r.id: n for n, r in enumerate(records)}
        pairs: list[tuple[str, MemoryInput, MemoryInput | Memory, list[tuple[int, int]]]] = []
        for new, old in corrected.items():
            before = records[at[old]] if old in at else self._ctx.visible(old, owner)
            if ASSISTANT_TAG in records[at[new]].tags or ASSISTANT_TAG in before.tags:
                continue
            spans = clause_spans(before.text)
            if len(spans) > 1:
                pairs.append((old, records[at[new]], before, spans))
        if not pairs:
            return []
        # (the corrections' own texts are kept from finding what they correct)
        vectors = iter(self._text_vectors([t for _, said, before, spans in pairs for t in (
            said.text, *(before.text[a:b] for a, b in spans))], since=since))
        out = []
        for old, said, before, spans in pairs:
            own = next(vectors)
            closeness = [float(next(vectors) @ own) for _ in spans]
            left = still_true(before.text, spans, said.text, closeness)
            if left is None:
                continue
            provenance = {k: v for k, v in before.provenance.items()
                          if k not in ("corrects", "reinforces")}
            provenance["remains_of"] = old
            context = said.context or ""
            for run in left.split(" … "):
                context = context.replace(run, "")
            records[at[said.id]] = said.model_copy(update={"context": context or None})
            out.append(MemoryInput(
                id=still_id(old), text=left, context=before.context, kind=before.kind,
                status=Status.ACTIVE, tags=before.tags, owner=owner, session=before.session,
                observed=before.observed, created=before.created,
                confidence=before.confidence, provenance=provenance, payload=before.payload))
        return out

    def _record(self, memory_id: str, f: _Found, said_in: str, status: Status,
                context: str | None,
                owner: str | None, session_id: str, base_time: datetime, extractor: str, *,
                reinforces: str | None, corrects: str | None,
                refers_to: str | None = None) -> MemoryInput:
        message, item = f.message, f.item
        speaker = message["speaker"]
        by_assistant = message["role"] == "assistant"
        provenance: dict[str, Any] = {"source": "conversation", "session": session_id,
                                      "message": f.index, "extractor": extractor,
                                      "strength": round(item.strength, 3)}
        if by_assistant:
            # the assistant is not a person of the user's world: not its memory's speaker
            provenance["role"] = "assistant"
            provenance["assistant"] = speaker
        else:
            provenance["speaker"] = speaker
        if reinforces:
            provenance["reinforces"] = reinforces
        if corrects:
            provenance["corrects"] = corrects
        if refers_to:
            # whom its leading "she" / "he" means: its facts are read with that name
            provenance["refers_to"] = refers_to
        when = message["timestamp"] or base_time
        return MemoryInput(
            id=memory_id, text=item.text, context=context, kind=Kind.EPISODIC, status=status,
            tags=(ASSISTANT_TAG,) if by_assistant else (),
            owner=owner, session=session_id, observed=when, created=when,
            confidence=round(min(1.0, 0.5 + item.strength / 2), 3),
            provenance=provenance, payload=said_in)

    def _similarity(self, vector: np.ndarray, recent: Sequence[Statement],
                    since: int | None = None, text: str | None = None) -> dict[str, float]:
        """The cosine of a statement (its text alone) with each recent statement's text
        (their vectors kept from one call to the next: ``_TextVectors``); given the
        statement's ``text``, of the two with the names they share out of sight
        (``masked``) where they share one."""
        from .._extract._corrections import masked_many, name_blind

        if not recent:
            return {}
        vectors = self._text_vectors([s.text for s in recent], since=since)
        out = {s.id: float(v @ vector) for s, v in zip(recent, vectors, strict=True)}
        if text is not None:
            # statements that share a name with it: compared with the name out of sight
            pairs = {s.id: pair for s, pair in zip(
                recent, masked_many(text, [s.text for s in recent]), strict=True) if pair}
            if pairs:
                found = self._text_vectors([t for pair in pairs.values() for t in pair],
                                           since=since)
                for n, memory_id in enumerate(pairs):
                    out[memory_id] = name_blind(out[memory_id],
                                                float(found[2 * n] @ found[2 * n + 1]))
        return out

    def _recent_statements(self, owner: str | None, limit: int = _WITHIN_REACH
                           ) -> list[Statement]:
        """The owner's latest current statements (active or candidate), most recent
        first: what a correction may replace. ``limit`` counts what the user said; what
        the assistant said between comes with it, up to ``4 * limit`` in all (an answer
        of twenty bullet points does not push the user's own words out of reach)."""
        index = self._index.ensure_index()
        n = index.size
        if n == 0:
            return []
        mine = index.owner[:n] == index.owner_codes.get(owner, -2)
        current = np.array([not sup for sup in index.superseded_by], dtype=bool)
        status = index.status[:n]
        eligible = mine & current & ((status == STATUS_CODE["active"])
                                     | (status == STATUS_CODE["candidate"]))
        positions = np.flatnonzero(eligible)
        if not len(positions):
            return []
        latest = positions[np.argsort(-index.created[positions], kind="stable")]
        latest = latest[:_reach(index.assistant[latest[:4 * limit]].tolist(), limit)]
        ids = [index.ids[p] for p in latest]
        found = self._memories.get_many(ids)
        by_id = {m.id: m for m in found}
        return [_statement_of(by_id[i]) for i in ids if i in by_id]

    def _erased(self, found: Sequence[_Found], owner: str | None) -> set[int]:
        """The positions of the ``found`` statements that a forgotten memory of ``owner``
        said, word for word or as the conversation's duplicates read it (``said_form``):
        their keyed digests under any forget key the store holds. A sitting imported
        again after a forget, perhaps typed again, does not bring them back, nor the
        pieces of a forgotten sentence typed again across lines (a message's sentences
        are also read with its line breaks as spaces and without its lines' bullets, numbers
        and labels, and cut also where an emoji may stand for a full stop: a statement that
        holds any of a forgotten sentence goes). A store that never forgot pays nothing."""
        from .._extract._rules import sentences

        keys = self._ctx.keys.forget_keys()
        if not keys:
            return set()

        def digests(text: str) -> set[str]:
            return {keyed_digest(key, said, key_id=tag) for said in (text, said_form(text))
                    for tag, key in keys.items()}

        mine = [digests(f.item.text) for f in found]
        # each message once (once a statement, a message of many lines was quadratic):
        # its sentences with line breaks read as spaces, where each starts and ends
        folded = {i: _unmarked_lines(message["text"])
                  for i, message in {f.index: f.message for f in found}.items()}
        spans = {i: _spans(text, sentences(text, finer=True)) for i, text in folded.items()}
        whole = {i: [(first, last, digests(said_form(folded[i][first:last])))
                     for first, last in found_at] for i, found_at in spans.items()}
        gone = self._ctx.engine.forgotten_digests(sorted(set().union(
            *mine, *(d for parts in whole.values() for _, _, d in parts))), owner=owner)
        by_message: dict[int, list[int]] = {}
        for n, f in enumerate(found):
            by_message.setdefault(f.index, []).append(n)
        # a statement that holds any of a forgotten sentence: a piece of it, or more
        pieces: set[int] = set()
        for i, parts in whole.items():
            gone_at = [(first, last) for first, last, d in parts if d & gone]
            if gone_at:
                ours = by_message[i]
                placed = _spans(folded[i], [unmarked(found[n].item.text) for n in ours],
                                in_order=False)
                pieces.update(n for n, (first, last) in zip(ours, placed, strict=True)
                              if first >= 0 and any(first < b and a < last
                                                     for a, b in gone_at))
        return {n for n in range(len(found)) if mine[n] & gone} | pieces

    def _match_existing(self, vectors: np.ndarray, texts: Sequence[str],
                        owner: str | None, session: str, *, since: int | None = None,
                        speakers: Sequence[str | None] | None = None,
                        times: Sequence[datetime] | None = None
                        ) -> tuple[dict[int, str], dict[int, tuple[str, float]]]:
        """For each new text: an existing active memory it duplicates, or a candidate of
        another session it reinforces (with their cosine). Stored vectors include each
        memory's context, so the comparison is text to text: the best BM25 matches of the
        owner's current memories are embedded again, without context, and compared by
        cosine. Given each text's ``speakers``, what another speaker said of themselves
        is neither (Ana's "I live in Linz" after Tom's is hers to keep)."""
        from .._extract._corrections import said_values
        from .._extract._rules import DUPLICATE

        index = self._index.ensure_index()
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
        # what this very sitting said and a correction replaced since: said again (the
        # same transcript imported again), it is a repeat, not a new statement; said in
        # another sitting, it is said anew ("I moved back to Lisbon")
        said_before = owners & ~current & (index.status[:n] != STATUS_CODE["forgotten"])
        active |= said_before & this_session
        # ... and what another sitting said at the very same time, replaced since, is the
        # same transcript imported under another session id: a repeat too (said again
        # later, it is said anew)
        replaced = said_before & ~this_session
        eligible = active | candidate | (replaced if times is not None else False)
        duplicates: dict[int, str] = {}
        reinforced: dict[int, tuple[str, float]] = {}
        # one read and one embedding of each neighbour, however many statements share it
        # (a long message that says one thing many times has one neighbour); read a
        # statement's few at a time (by key: all of a sitting's at once may be a scan)
        near: dict[str, Memory] = {}
        near_vectors: dict[str, np.ndarray] = {}
        near_values: dict[str, set[str]] = {}

        def values_of(memory: Memory) -> set[str]:
            if memory.id not in near_values:
                near_values[memory.id] = said_values(memory.text)
            return near_values[memory.id]

        for row, text in enumerate(texts):
            top = lexical_neighbours(index, text, owner=owner, eligible=eligible,
                                     limit=_SIMILAR)
            wanted = [i for i in top if i not in near]
            found = self._memories.get_many(wanted) if wanted else []
            if found:
                near.update((m.id, m) for m in found)
                near_vectors.update(zip([m.id for m in found], self._text_vectors(
                    [m.text for m in found], since=since), strict=True))
            others = [near[i] for i in top if i in near]
            if not others:
                continue
            speaker = speakers[row] if speakers is not None else None
            if speaker is not None:
                others = [m for m in others
                          if not _statement_of(m).about_another(text, speaker)]
                if not others:
                    continue
            similar = matvec(np.array([near_vectors[m.id] for m in others]), vectors[row])
            by_id = {m.id: float(c) for m, c in zip(others, similar, strict=True)}
            at = times[row].timestamp() if times is not None else math.nan
            # the values of the text and of each close neighbour, read only for those
            # (a neighbour's once, however many texts it is close to)
            values = said_values(text) if max(by_id.values()) >= REINFORCE else None
            best_active = max(((c, i) for i, c in by_id.items() if c >= DUPLICATE
                               and (active[index.pos[i]] or (replaced[index.pos[i]] and
                                                            index.created[index.pos[i]] == at))
                               and values_of(near[i]) == values), default=None)
            if best_active is not None:
                duplicates[row] = best_active[1]
                continue
            # The most similar candidate; among equals, the oldest (a stable lineage).
            best_weak = max(((c, -index.created[index.pos[i]], i) for i, c in by_id.items()
                             if candidate[index.pos[i]]), default=(0.0, 0.0, ""))
            if best_weak[0] >= REINFORCE:
                # (said with other values, it is said anew: it replaces the candidate)
                cosine = best_weak[0] if values_of(near[best_weak[2]]) == values \
                    else min(best_weak[0], DUPLICATE - 1e-6)
                reinforced[row] = (best_weak[2], cosine)
        return duplicates, reinforced

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
        from .._extract._links import derive_edges

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
    from .._extract._ollama import OllamaExtractor
    from .._extract._rules import RuleExtractor

    generator = OllamaGenerator.from_settings(settings)
    return OllamaExtractor(generator) if generator is not None else RuleExtractor()


def _run(extractor: Extractor, message: Mapping[str, Any]) -> list[Extracted]:
    from .._extract._ollama import OllamaExtractor

    if isinstance(extractor, OllamaExtractor):
        return extractor.extract(message["text"], speaker=message["speaker"])
    return extractor.extract(message["text"])


def _statement_of(memory: Memory) -> Statement:
    """A stored memory as the correction rules read a statement."""
    from .._extract._corrections import Statement

    return Statement(memory.id, memory.text, assistant=ASSISTANT_TAG in memory.tags,
                     message=memory.payload, speaker=speaker_of(memory.provenance))


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
    # "text" when it holds one, else "content" ({"text": None, "content": "hi"} is "hi")
    key = "text" if message.get("text") is not None or "content" not in message \
        else "content"
    text = message.get(key)
    if key == "text" and message.get("content") not in (None, text):
        raise InvalidInputError(f"message {index} has both a text and a content, which "
                                "differ: give one", field=f"messages[{index}].content")
    if text is None:
        raise InvalidInputError(f"message {index} has no text (give it as 'text' or "
                                f"'content'; its keys are {', '.join(map(str, message))[:80]})",
                                field=f"messages[{index}].text")
    if not isinstance(text, str):
        raise InvalidInputError(f"message {index}: {key} must be a string, not "
                                f"{type(text).__name__}", field=f"messages[{index}].{key}")
    if "\x00" in text:
        raise InvalidInputError(f"message {index}: {key} has a NUL character (at character "
                                f"{text.index(chr(0)) + 1})", field=f"messages[{index}].{key}")
    if len(text) > MAX_TEXT:
        raise InvalidInputError(f"message {index}: {key} is {len(text):,} characters long; "
                                f"the limit is {MAX_TEXT:,}", field=f"messages[{index}].{key}")
    role = message.get("role")
    said_by = "speaker" if message.get("speaker") else "name"
    speaker = message.get(said_by)
    for name, value in (("role", role), (said_by, speaker)):
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"message {index}: {name} must be a string, not "
                                    f"{type(value).__name__}",
                                    field=f"messages[{index}].{name}")
    for name, value in (("text", text), ("role", role), ("speaker", speaker)):
        if value is not None:
            check_unicode(value, field=f"messages[{index}].{name}")
    if speaker is not None:
        speaker = speaker.strip() or None  # a blank one: none given
    if speaker is not None and named(speaker) is None:
        raise InvalidInputError(f"message {index}: speaker {speaker!r} names no one",
                                field=f"messages[{index}].speaker")
    if role and role.strip().lower() not in _ROLES:
        raise InvalidInputError(
            f"message {index}: role {role[:40]!r} is not one of user, assistant, system, "
            "tool (nor human, ai, model, bot, developer, function); a person's name goes "
            "in speaker", field=f"messages[{index}].role")
    if role:
        role = _ROLES[role.strip().lower()]
    else:  # the speaker may say whose it is ("assistant", "AI", "system"): a role's name
        role = _ROLES.get(speaker.lower() if speaker else "", "user")
    when = message.get("timestamp")
    if when is not None:
        try:
            when = to_utc(when) if isinstance(when, datetime) else parse_iso(when)
        except (ValueError, TypeError) as exc:
            raise InvalidInputError(f"message {index}: timestamp {when!r}: {exc}",
                                    field=f"messages[{index}].timestamp") from None
    return {"text": text, "role": role.lower(), "speaker": speaker or
            (None if role.lower() == "user" else role), "timestamp": when}


def _spans(text: str, parts: Sequence[str], *, in_order: bool = True
           ) -> list[tuple[int, int]]:
    """Where each of ``parts`` lies in ``text``, spaces read as one ((-1, -1): not found),
    each looked for after the one before: in the order given, or (not ``in_order``) in
    the order of where each is first found (the extractor gives a message's strong
    statements before its weak ones).

    >>> _spans("maybe my sister is pregnant. my sister is pregnant.",
    ...        ["my sister is pregnant.", "maybe my sister is pregnant."], in_order=False)
    [(29, 51), (0, 28)]
    """
    words = [" ".join(part.split()) for part in parts]
    order: Sequence[int] = range(len(parts))
    if not in_order:
        first = [text.find(w) if w else -1 for w in words]
        order = sorted(order, key=lambda k: (first[k] < 0, first[k]))
    out = [(-1, -1)] * len(parts)
    cursor = 0
    for k in order:
        at = text.find(words[k], cursor) if words[k] else -1
        if at >= 0:
            out[k] = (at, at + len(words[k]))
            cursor = at + len(words[k])
    return out


def _unmarked_lines(message: str) -> str:
    """A message's lines without their opening marks (``unmarked``), joined by single
    spaces."""
    return " ".join(" ".join(unmarked(line).split()) for line in message.splitlines())


def _said_in(found: Sequence[_Found]) -> list[str]:
    """What each statement keeps of the message it was said in as its payload
    (``_around``). The statements are found in their message's order, so each is looked
    for after the one before."""
    out = []
    cursor: dict[int, int] = {}
    for f in found:
        message, text = f.message["text"], f.item.text
        if len(message) <= _MESSAGE_KEPT:
            out.append(message)
            continue
        at = message.find(text, cursor.get(f.index, 0))
        if at < 0:  # its spaces differ: near the one before
            at = cursor.get(f.index, 0)
        else:
            cursor[f.index] = at + len(text)
        out.append(_window(message, at, len(text)))
    return out


def _around(message: str, text: str) -> str:
    """What a statement keeps of the message it was said in (its payload, and the context
    of a later correction of it): the message; of a message over ``_MESSAGE_KEPT``
    characters, its whole sentences within ``_MESSAGE_AROUND`` characters on either side
    of the statement (``_window``). Each statement kept the whole message: one message of
    N statements stored N copies of it (800 statements, 62k characters: 45 s, measured
    from outside). The statements of such a message do not share a payload, nor the
    recall index's message code (``corrections_first`` does not see them as one
    message)."""
    if len(message) <= _MESSAGE_KEPT:
        return message
    return _window(message, max(message.find(text), 0), len(text))


def _window(message: str, at: int, length: int) -> str:
    """The whole sentences of ``message`` within ``_MESSAGE_AROUND`` characters on either
    side of ``at`` .. ``at + length``, and that: cut between sentences, never inside one,
    so that forget, which cuts a forgotten sentence whole, leaves no piece of one in a
    neighbour's payload (cut at spaces, it left "... the credit union is <secret>.")."""
    bounds = _sentence_bounds(message)
    first = bisect.bisect_left(bounds, max(0, at - _MESSAGE_AROUND))
    start = bounds[first] if first < len(bounds) and bounds[first] <= at else at
    last = bisect.bisect_right(bounds, min(len(message), at + length + _MESSAGE_AROUND)) - 1
    end = bounds[last] if last >= 0 and bounds[last] >= at + length else at + length
    return message[start:end].strip()


_SENTENCE_BREAK = re.compile(r"[.!?…]+[\"'’”)\]]*\s+|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]+")


@functools.lru_cache(maxsize=4)
def _sentence_bounds(message: str) -> list[int]:
    """Where the sentences of a message start (and its end): after closing marks and the
    spaces after them, and after line breaks."""
    return [0, *(m.end() for m in _SENTENCE_BREAK.finditer(message)), len(message)]


def _context(found: _Found, siblings: Sequence[str], parsed: Sequence[Mapping[str, Any]],
             window: int, who: str | None) -> str | None:
    """What a statement is indexed with besides its own words: nothing when it says what
    it is about (a neighbour's words would let it win queries about them); when it
    points back ("she's 9", "the blue one"), the statement before it in its message or,
    first in its message, the last sentence of the message it answers, and for "she" or
    "he" whom it means (``who``, ``_who``). Indexing every statement with the rest of its
    message was measured to lose (``eval/results/conversations.md``)."""
    if window <= 0:
        return None
    from .._extract._rules import needs_context, sentences

    if found.message["role"] == "assistant":
        return _answered(found, parsed)
    text = found.item.text
    at = siblings.index(text) if text in siblings else 0
    if not needs_context(text):
        return None
    if at:
        return _with(who, siblings[at - 1])
    if found.index == 0:
        return who
    before = sentences(parsed[found.index - 1]["text"])
    return _with(who, " ".join(before[-1].split()[:_CONTEXT_WORDS]) if before else None)


def _who(found: _Found, siblings: Sequence[str], parsed: Sequence[Mapping[str, Any]]
         ) -> str | None:
    """Whom a user's statement that starts with "she" or "he" means: the last person
    the user named before it, this sitting (``antecedent``), else None."""
    from .._extract._rules import antecedent

    text = found.item.text
    if found.message["role"] == "assistant":
        return None
    at = siblings.index(text) if text in siblings else 0
    # the nearest texts first, taken only as far as needed (every statement asks)
    said = islice(chain(reversed(siblings[:at]),
                        (parsed[k]["text"] for k in range(found.index - 1, -1, -1)
                         if parsed[k]["role"] == "user")), _ANTECEDENT_TEXTS)
    return antecedent(text, list(said))


def _answered(found: _Found, parsed: Sequence[Mapping[str, Any]]) -> str | None:
    """The context of what an assistant proposed or did: the user's message it answers
    (its last ``_CONTEXT_WORDS`` words: what was asked comes last) and, for an item of a
    list, the line that leads into the list. "Brimham Rocks - giant rock formations" is
    found by "which day trips did you suggest for Oliver's visit?" through the request
    ("any ideas for day trips while Oliver is here?") and the lead-in ("Some ideas:")."""
    from .._extract._rules import list_lead_ins

    asked = next((parsed[k]["text"] for k in range(found.index - 1,
                                                  max(found.index - _ASKED_WITHIN, 0) - 1, -1)
                  if parsed[k]["role"] == "user"), "")
    return _with(list_lead_ins(found.message["text"]).get(found.item.text),
                 _last_words(asked) or None)


@functools.lru_cache(maxsize=16)
def _last_words(text: str) -> str:
    """The last ``_CONTEXT_WORDS`` words of a message (once for all its replies' items)."""
    return " ".join(text.split()[-_CONTEXT_WORDS:])


def _with(name: str | None, context: str | None) -> str | None:
    """A context and the person a pronoun stands for, one per line."""
    return "\n".join(x for x in (name, context) if x) or None


def _session_edges(ids: Sequence[str], window: int, session: str) -> list[Edge]:
    """CO_OCCURS between memories of one session, ``1/d`` for a distance ``d <= window``."""
    return [Edge("co_occurs", ids[i], ids[j], weight=1.0 / (j - i), source=f"session:{session}")
            for i in range(len(ids)) for j in range(i + 1, min(len(ids), i + window + 1))]


def _reach(by_assistant: Sequence[bool], limit: int = _WITHIN_REACH) -> int:
    """How many of a speaker-ordered run of statements (most recent first; whether the
    assistant said each) a correction may reach: through the user's ``limit``-th, at
    most ``4 * limit``.

    >>> _reach([False, True, True, False, False], limit=2), _reach([True] * 9, limit=2)
    (4, 8)
    """
    users = 0
    for n, assistant in enumerate(by_assistant[:4 * limit]):
        users += not assistant
        if users == limit:
            return n + 1
    return min(len(by_assistant), 4 * limit)
