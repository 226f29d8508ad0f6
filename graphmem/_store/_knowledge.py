"""The knowledge graph of a store: entities resolved per owner, the memories that mention
them, and the facts they state with their validity in time, kept in step with every write.

Every path that writes or removes a text asks this component what the graph gains or
loses (``plan_new``, ``plan_retext``, ``plan_supersede``, ``plan_forget``) and commits it
in the same transaction as the memory. Extraction itself is pure (``graphmem._kg``).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from .._context import Changed, StoreContext
from .._derive import Extraction, extract
from .._engine import (
    EntityRecord,
    EventQuery,
    FactRecord,
    MemoryScan,
    MentionRecord,
    Patch,
    WriteBatch,
)
from .._errors import InvalidInputError, NotFoundError, RecordError
from .._graph_leave import (
    entity_of,
    fact_id,
    keyed_id,
    merge_record,
    move_entities,
    rebuilt,
    replayed,
    set_changed,
    set_gone,
)
from .._kg import (
    FUNCTIONAL_PREDICATES,
    NOT_ENTITIES,
    ROLE_WEIGHTS,
    Entity,
    EntityResolver,
    Mention,
    entity_names,
    normalize,
)
from .._kg._text import named
from .._models import EventType, Memory, Status
from .._time import format_iso, parse_iso, to_utc

__all__ = ["Knowledge", "fact_id"]


class _Group:
    """The cached facts of one (subject, predicate): by id, in the order they came; the
    live ones (no end); and by object. What an added fact compares itself with (the same
    object, the live values of a one-at-a-time predicate) is found without a pass over
    the group: one add of a text stating 2,600 moves of one person took 23.6 s, 3.7 s
    now."""

    __slots__ = ("by_id", "live", "objects")

    def __init__(self) -> None:
        self.by_id: dict[str, FactRecord] = {}
        self.live: dict[str, FactRecord] = {}
        self.objects: dict[str, dict[str, FactRecord]] = {}

    def __iter__(self) -> Iterator[FactRecord]:
        return iter(self.by_id.values())

    def add(self, fact: FactRecord) -> None:
        self.by_id[fact.id] = fact
        self.objects.setdefault(fact.object, {})[fact.id] = fact
        if fact.valid_to is None:
            self.live[fact.id] = fact

    def remove(self, fact: FactRecord) -> None:
        self.by_id.pop(fact.id, None)
        self.live.pop(fact.id, None)
        self.objects.get(fact.object, {}).pop(fact.id, None)

    def of_object(self, obj: str) -> list[FactRecord]:
        return list(self.objects.get(obj, {}).values())


class Knowledge:
    """Entities, mentions and facts of one store."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self._lock = threading.RLock()
        self._resolvers: dict[str | None, EntityResolver] = {}
        #: owners an entity of whom a planned write marks gone (``_drop``)
        self._gone_owners: set[str | None] = set()
        #: owner -> (subject entity, predicate) -> its facts (ended ones too)
        self._facts: dict[str | None, dict[tuple[str, str], _Group]] = {}
        #: ... and the same facts by the memories that state them: owner -> memory id ->
        #: fact id -> fact (kept with ``_facts``: ``_owner_facts``, ``_swap``, ``_uncache``)
        self._sources: dict[str | None, dict[str, dict[str, FactRecord]]] = {}
        #: ... and by id: owner -> fact id -> fact
        self._by_id: dict[str | None, dict[str, FactRecord]] = {}
        #: ids (new memories; a file's entities and facts) that writes of this process
        #: planned, with their owners: a later chunk of the same transaction must see
        #: them before the store's reads do (``_check_import``; cleared by ``reset`` and
        #: once a write commits)
        self._planned: dict[str, str | None] = {}
        #: the last ``recorded`` given: facts are recorded in a strict order, which forget
        #: replays (a frozen or coarse clock would give many the same time)
        self._recorded = datetime.min.replace(tzinfo=UTC)
        #: the ids of the entities the batch being planned creates, kept from one memory
        #: of it to the next (read again for each, a sitting of 8,000 statements spent
        #: a second on it): the batch, and its ids while they are as many as its entities
        self._new_ids: tuple[weakref.ref[WriteBatch], set[str]] | None = None
        ctx.on_change(self._on_change)

    def _on_change(self, change: Changed) -> None:
        # committed: the store's reads show what imports planned (and a write's chunks
        # are told of once, after its commit)
        self._planned.clear()
        if change.bulk or (change.foreign and not change.access_only):
            # another process may have resolved entities
            self.reset()
        elif self._gone_owners:
            with self._lock:
                for owner in self._gone_owners:
                    self._resolvers.pop(owner, None)
                self._gone_owners.clear()

    def reset(self) -> None:
        """Forget the cached resolvers and facts (they reload from the engine)."""
        with self._lock:
            self._resolvers.clear()
            self._planned.clear()
            self._uncache()

    @contextlib.contextmanager
    def planning(self) -> Iterator[None]:
        """Plan a write: the caches learn what is planned, and unlearn it if the write
        does not commit."""
        with self._lock, self.unlearning():
            yield

    @contextlib.contextmanager
    def unlearning(self) -> Iterator[None]:
        """What the caches learnt of a plan is forgotten if the block raises (the plan
        failed, or its write did not commit): they stay as the store is. It holds no
        lock: a writer plans and commits under its own."""
        try:
            yield
        except BaseException:
            self.reset()
            raise

    # -- reading the graph ---------------------------------------------------------------
    def entities(self, *, owner: str | None = None) -> list[EntityRecord]:
        """The entities of ``owner``'s memories (of every owner when None), by id, each
        with its mention count and first and last seen."""
        self._ctx.before_read()
        engine = self._ctx.engine
        found = engine.entities(owner=owner, all_owners=owner is None)
        if not found:
            return found
        mentions = engine.mentions(entity_ids=[e.id for e in found])
        scan = engine.scan(["id", "created", "observed"],
                           ids=sorted({m.memory_id for m in mentions})).table.to_pydict()
        when = {memory_id: to_utc(observed or created) for memory_id, created, observed
                in zip(scan["id"], scan["created"], scan["observed"], strict=True)}
        seen: dict[str, list[datetime]] = {}
        counts: dict[str, int] = {}
        for mention in mentions:
            counts[mention.entity_id] = counts.get(mention.entity_id, 0) + 1
            at = when.get(mention.memory_id)
            if at is not None:
                seen.setdefault(mention.entity_id, []).append(at)
        return [replace(e, mentions=counts.get(e.id, 0),
                        first_seen=min(seen[e.id]) if e.id in seen else None,
                        last_seen=max(seen[e.id]) if e.id in seen else None) for e in found]

    def find(self, name: str, *, owner: str | None = None) -> list[EntityRecord]:
        """The entities a name or alias names (``"Mel"`` finds Melanie once merged)."""
        key = normalize(name)
        return [e for e in self.entities(owner=owner) if key == e.name or key in e.aliases]

    def facts(self, *, owner: str | None = None, about: str | None = None,
              as_of: datetime | None = None, current: bool = False) -> list[FactRecord]:
        """Facts of ``owner`` (every owner when None), or about the entity ``about`` (an
        id, name or alias), oldest recorded first; with ``as_of`` only those valid then,
        with ``current`` only those still valid."""
        self._ctx.before_read()
        engine = self._ctx.engine
        if about is not None:
            ids = [about] if about in {e.id for e in self.entities(owner=owner)} else \
                [e.id for e in self.find(about, owner=owner)]
            found = engine.facts(entity_ids=ids)
            if owner is not None:
                found = [f for f in found if f.owner == owner]
        else:
            found = engine.facts(owner=owner, all_owners=owner is None)
        if as_of is not None:
            found = [f for f in found if (f.valid_from is None or f.valid_from <= as_of)
                     and (f.valid_to is None or f.valid_to > as_of)]
        if current:
            found = [f for f in found if f.valid_to is None]
        return found

    def mentions(self, memory_id: str | None = None, *, owner: str | None = None
                 ) -> list[MentionRecord]:
        """The entities one memory mentions (with role and weight); without a memory,
        every mention of ``owner``'s memories (of every owner when None)."""
        if memory_id is not None:
            self._ctx.visible(memory_id, owner)
            return self._ctx.engine.mentions(memory_ids=[memory_id])
        self._ctx.before_read()
        found = self._ctx.engine.mentions()
        if owner is None:
            return found
        mine = {e.id for e in self._ctx.engine.entities(owner=owner)}
        return [m for m in found if m.entity_id in mine]

    def plan_split(self, batch: WriteBatch, entity_id: str, alias: str, *,
                   owner: str | None) -> tuple[EntityRecord, list[str]]:
        """Undo a merge: the form ``alias`` leaves the entity and becomes an entity of its
        own, never merged with it again; the memories that used that form mention it.
        What they state stays as it was stated (a reading of their text again lost the
        facts an import or another extractor had given them). Returns the new entity and
        those memories."""
        ctx = self._ctx
        records = {e.id: e for e in ctx.engine.entities(owner=owner, all_owners=owner is None)}
        record = records.get(entity_id)
        if record is None:
            raise NotFoundError(f"no entity {entity_id}")
        form = normalize(alias)
        if form not in record.aliases or (form == record.name and len(record.aliases) == 1):
            raise InvalidInputError(f"{alias!r} is not a merged form of {record.name!r}",
                                    field="alias")
        with self._lock:
            resolver = self.resolver(record.owner)
            try:
                new = resolver.split(entity_id, form)
            except (KeyError, ValueError) as exc:
                raise InvalidInputError(str(exc), field="alias") from None
            kept = _record(resolver.entity(entity_id), record.created or ctx.now(), resolver)
            created = _record(new, record.created or ctx.now(), resolver)
            batch.changed_entities.append(kept)
            batch.new_entities.append(created)
            moved = sorted({m.memory_id for m in ctx.engine.mentions(entity_ids=[entity_id])
                            if normalize(m.surface) == form})
            batch.unmentioned += moved
            for memory_id in moved:
                for m in ctx.engine.mentions(memory_ids=[memory_id]):
                    target = new.id if m.entity_id == entity_id and normalize(
                        m.surface) == form else m.entity_id
                    batch.mentions.append(replace(m, entity_id=target))
        return created, moved

    # -- state -----------------------------------------------------------------------
    def resolver(self, owner: str | None) -> EntityResolver:
        with self._lock:
            found = self._resolvers.get(owner)
            if found is None:
                records = self._ctx.engine.entities(owner=owner)
                found = EntityResolver(owner or "", entities=[entity_of(r) for r in records],
                                       blocked=[(m["alias"], r.id) for r in records
                                                for m in r.merges if m.get("rule") == "split"],
                                       id_key=self._ctx.keys.id_key())
                self._resolvers[owner] = found
            return found

    def _owner_facts(self, owner: str | None) -> dict[tuple[str, str], _Group]:
        found = self._facts.get(owner)
        if found is None:
            found = self._facts[owner] = {}
            self._sources[owner], self._by_id[owner] = {}, {}
            for fact in self._ctx.engine.facts(owner=owner):
                self._swap(owner, None, fact)
                self._recorded = max(self._recorded, fact.recorded)
        return found

    def _uncache(self, *owners: str | None) -> None:
        """Forget the cached facts of these owners (of every owner when none is given)."""
        for cache in (self._facts, self._sources, self._by_id):
            if owners:
                for owner in owners:
                    cache.pop(owner, None)
            else:
                cache.clear()

    def _stated_by(self, memory: Memory) -> list[FactRecord]:
        """The live facts ``memory`` is a source of, oldest recorded first, from its
        owner's facts as the cache holds them (loaded first: a plan that changes them
        before the cache is read would leave it behind the store)."""
        return self._facts_of(memory.owner, memory.id)

    def _facts_of(self, owner: str | None, memory_id: str) -> list[FactRecord]:
        self._owner_facts(owner)
        return sorted(self._sources[owner].get(memory_id, {}).values(),
                      key=lambda f: (f.recorded, f.id))

    def _grouped_facts(self, owner: str | None, groups: Iterable[tuple[str, str]]
                       ) -> list[FactRecord]:
        """The cached facts of ``owner`` about these (subject, predicate) groups, oldest
        recorded first (as ``_replay`` takes what the store holds)."""
        facts = self._owner_facts(owner)
        return sorted((f for group in groups for f in facts.get(group, ())),
                      key=lambda f: (f.recorded, f.id))

    def _next_recorded(self) -> datetime:
        self._recorded = max(self._ctx.now(), self._recorded + timedelta(microseconds=1))
        return self._recorded

    # -- planning writes ---------------------------------------------------------------
    def plan_new(self, batch: WriteBatch, memories: Sequence[Memory],
                 extractions: Sequence[Extraction | None]) -> None:
        """What new memories add to the graph: their entities, mentions and facts."""
        with self._lock:
            for memory, extraction in zip(memories, extractions, strict=True):
                self._planned[memory.id] = memory.owner  # a later chunk may name it
                if extraction is not None:
                    self._add(batch, memory, extraction)

    def plan_import(self, batch: WriteBatch, memory: Memory, graph: Mapping[str, Any], *,
                    source: str | None = None, index: int | None = None) -> None:
        """What a memory brings from a file that carries its graph (``Memory`` records of
        a UMP file exported by graphmem): its entities as they were (ids, forms, merges),
        its mentions, and its facts with their validity; nothing is extracted again.
        Nothing in it may name another owner's entity, fact or memory: that is a
        ``RecordError`` naming the record and the field (``source``, ``index``)."""
        with self._lock:
            self._check_import(batch, memory, graph, source=source, index=index)
            owner = memory.owner
            # what the store holds and this process planned (earlier chunks of the same
            # transaction too, which the store's reads do not show before the commit)
            resolver = self.resolver(owner)
            self._owner_facts(owner)
            stored = self._by_id[owner]
            planned = {e.id for e in batch.new_entities}
            for mention in graph.get("mentions", ()):
                entity = mention["entity"]
                if entity["id"] not in planned and not resolver.knows(entity["id"]):
                    record = EntityRecord(
                        id=entity["id"], owner=owner, name=entity["name"],
                        type=entity["type"], aliases=tuple(entity.get("aliases", ())),
                        merges=tuple(entity.get("merges", ())), created=memory.created)
                    batch.new_entities.append(record)
                    resolver.adopt(entity_of(record), blocked=[
                        m["alias"] for m in record.merges if m.get("rule") == "split"])
                    planned.add(entity["id"])
                    self._planned[record.id] = owner
                batch.mentions.append(MentionRecord(
                    memory.id, entity["id"], mention.get("role", "mention"),
                    float(mention.get("weight", 1.0)), mention.get("surface", "")))
            planned_facts = {f.id: f for f in batch.facts}
            for raw in graph.get("facts", ()):
                fact = FactRecord(
                    id=raw["id"], owner=owner, subject=raw["subject"],
                    predicate=raw["predicate"], object=raw["object"],
                    confidence=float(raw.get("confidence", 1.0)),
                    valid_from=_when(raw.get("valid_from")), valid_to=_when(raw.get("valid_to")),
                    recorded=_when(raw.get("recorded")) or self._ctx.now(),
                    sources=tuple(raw.get("sources", (memory.id,))), rule=raw.get("rule", ""),
                    ended_by=raw.get("ended_by"))
                # facts are recorded in a strict order (as a reload of the cache takes it)
                self._recorded = max(self._recorded, fact.recorded)
                known = planned_facts.get(fact.id) or stored.get(fact.id)
                if known is None:
                    batch.facts.append(fact)
                    planned_facts[fact.id] = fact
                    self._swap(owner, None, fact)
                    self._planned[fact.id] = owner
                elif set(fact.sources) - set(known.sources):
                    merged = _replace(known, sources=tuple(dict.fromkeys(
                        (*known.sources, *fact.sources))))
                    set_changed(batch, merged)  # planned anew, or a stored one changed
                    if fact.id in planned_facts:
                        planned_facts[fact.id] = merged
                    self._swap(owner, known, merged)
            self._planned[memory.id] = owner

    def _check_import(self, batch: WriteBatch, memory: Memory, graph: Mapping[str, Any], *,
                      source: str | None, index: int | None) -> None:
        """Every id a graph section names is the record owner's, or new: its entities
        (and the ends of its facts), its fact ids and what ended them, the memories that
        state its facts. Held ids (gone ones too) and ids this import already gave to
        another owner count."""
        owner = memory.owner
        engine = self._ctx.engine
        mentions: list[dict[str, Any]] = list(graph.get("mentions", ()))
        facts: list[dict[str, Any]] = list(graph.get("facts", ()))

        def refuse(what: str, field: str) -> RecordError:
            return RecordError(f"{what}; a memory's graph may name only its own owner's "
                               f"({owner!r}) entities, facts and memories", source=source,
                               index=index, record_id=memory.id, field=f"graph.{field}")

        entity_ids = [m["entity"]["id"] for m in mentions]
        ends = [f[key] for f in facts for key in ("subject", "object")]
        entities = engine.graph_owners(entities=[*entity_ids, *ends])
        entities.update(self._planned_owners([*entity_ids, *ends]))
        entities.update({e.id: e.owner for e in batch.new_entities})
        fact_ids = [f["id"] for f in facts] + [f["ended_by"] for f in facts if f.get("ended_by")]
        held = engine.graph_owners(facts=fact_ids)
        held.update(self._planned_owners(fact_ids))
        held.update({f.id: f.owner for f in batch.facts})
        cited = [s for f in facts for s in f.get("sources", ())] + [
            f["ended_by"].removeprefix("memory:") for f in facts
            if str(f.get("ended_by")).startswith("memory:")]
        memories = {i: m.owner for i, m in engine.get_many(cited).items()}
        memories.update(self._planned_owners(cited))
        memories.update({n.memory.id: n.memory.owner for n in batch.memories})
        for n, entity_id in enumerate(entity_ids):
            if entity_id in entities and entities[entity_id] != owner:
                raise refuse(f"entity {entity_id} belongs to another owner",
                             f"mentions[{n}].entity.id")
        own = {i for i, o in entities.items() if o == owner} | set(entity_ids)
        for n, fact in enumerate(facts):
            if fact["id"] in held and held[fact["id"]] != owner:
                raise refuse(f"fact {fact['id']} belongs to another owner", f"facts[{n}].id")
            for key in ("subject", "object"):
                if fact[key] not in own:
                    raise refuse(f"{fact[key]} is not an entity of this memory or its owner",
                                 f"facts[{n}].{key}")
            for source_id in fact.get("sources", ()):
                if source_id in memories and memories[source_id] != owner:
                    raise refuse(f"memory {source_id} belongs to another owner",
                                 f"facts[{n}].sources")
            ended_by = fact.get("ended_by") or ""
            by_memory = ended_by.removeprefix("memory:")
            if (ended_by in held and held[ended_by] != owner) or (
                    ended_by.startswith("memory:") and by_memory in memories
                    and memories[by_memory] != owner):
                raise refuse(f"{ended_by} belongs to another owner", f"facts[{n}].ended_by")

    def _planned_owners(self, ids: Iterable[str]) -> dict[str, str | None]:
        return {i: self._planned[i] for i in ids if i in self._planned}

    def sections(self, memory_ids: Sequence[str], *, owner: str | None = None
                 ) -> dict[str, dict[str, list[dict[str, object]]]]:
        """Each memory's graph as a UMP file carries it: the entities it mentions (with
        their forms and merges) and the facts it states, as plain JSON data."""
        engine = self._ctx.engine
        wanted = set(memory_ids)
        entities = {e.id: e for e in engine.entities(owner=owner, all_owners=owner is None)}
        out: dict[str, dict[str, list[dict[str, object]]]] = {
            i: {"mentions": [], "facts": []} for i in memory_ids}
        for mention in sorted(engine.mentions(), key=lambda m: (m.memory_id, m.entity_id)):
            entity = entities.get(mention.entity_id)
            if mention.memory_id in wanted and entity is not None:
                out[mention.memory_id]["mentions"].append({
                    "entity": {"id": entity.id, "name": entity.name, "type": entity.type,
                               "aliases": list(entity.aliases),
                               "merges": [dict(m) for m in entity.merges]},
                    "role": mention.role, "weight": mention.weight, "surface": mention.surface})
        for fact in engine.facts(owner=owner, all_owners=owner is None):
            for source in fact.sources:
                if source in wanted:
                    out[source]["facts"].append({
                        "id": fact.id, "subject": fact.subject, "predicate": fact.predicate,
                        "object": fact.object, "confidence": fact.confidence,
                        "valid_from": _iso(fact.valid_from), "valid_to": _iso(fact.valid_to),
                        "recorded": _iso(fact.recorded), "sources": list(fact.sources),
                        "rule": fact.rule, "ended_by": fact.ended_by})
        return out

    def plan_retext(self, batch: WriteBatch, memory: Memory, extraction: Extraction) -> None:
        """A memory's text changed: what the old text said leaves the graph (the facts it
        touched are replayed without it: ``_replay``), the new text's statements come in."""
        with self._lock:
            # the owner's facts as the store holds them once what this write planned
            # already is done (another edit of the same merge), from the cache ``_add``
            # keeps (a query for the facts a memory states scanned every fact: 47 ms of a
            # 138 ms update at 100k memories and 160k facts, 32k of them its owner's:
            # eval.bench_writes' store); a fact planned by this write and then changed or
            # gone changes what it plans (``set_changed``, ``set_gone``)
            stated = self._stated_by(memory)
            groups = {(f.subject, f.predicate) for f in stated}
            stored = self._grouped_facts(memory.owner, groups)
            self._drop(batch, memory, keep=self._entities_of(memory, extraction),
                       stated=stated)
            self._replay(batch, memory.owner, groups, dropped=memory.id, forgotten=False,
                         stored=stored)
            self._add(batch, memory, extraction)
            self._still_replaced(batch, memory)
            self._replacing(batch, memory)

    def _still_replaced(self, batch: WriteBatch, memory: Memory) -> None:
        """A replaced memory's new text is as replaced as its old one was: what it states
        that a replacement does not ends when that one replaced it (an edit of a
        superseded memory made its facts current again, beside the replacement's). A
        forgotten replacement replaces nothing (the chain goes on as if never written)."""
        engine = self._ctx.engine
        forgotten = engine.forgotten(list(memory.superseded_by)) if memory.superseded_by \
            else set()
        live = [by for by in memory.superseded_by if by not in forgotten]
        if not live:
            return
        when = self._replaced_at(memory.id)
        for by in live:
            self.plan_supersede(batch, memory, self._facts_of(memory.owner, by),
                                at=when.get(by, memory.modified), by=by)

    def _replacing(self, batch: WriteBatch, memory: Memory) -> None:
        """A replacement's new text replaces as its old one did: what a memory it
        replaced states and it no longer does ends when it replaced that memory (a fact
        it stated again, then no more, stayed current)."""
        engine = self._ctx.engine
        replaced = [link.other for link in engine.links_of(memory.id, kind="supersedes")
                    if link.direction == "out"]
        found = engine.get_many(replaced) if replaced else {}
        stated = self._facts_of(memory.owner, memory.id)  # as its new text states them
        for old in (found[i] for i in replaced if i in found):
            if old.status is Status.FORGOTTEN:
                continue
            self.plan_supersede(batch, old, stated,
                                at=self._replaced_at(old.id).get(memory.id, old.modified),
                                by=memory.id)

    def _replaced_at(self, memory_id: str) -> dict[str, datetime]:
        """When each memory that replaced ``memory_id`` did so (its supersede events)."""
        return {str(e.metadata.get("supersededBy")): e.timestamp
                for e in self._ctx.engine.events(EventQuery(
                    memory_id=memory_id, event_type=EventType.SUPERSEDE.value))}

    def plan_forget(self, batch: WriteBatch, memory: Memory) -> None:
        """A memory is forgotten, as if it had never been: its mentions go, the facts only
        it states go, the other facts lose it as a source, the facts it touched (or
        ended by a supersede) are replayed without it (``_replay``), and the entities it
        mentioned keep only what the memories left say of them (one it alone mentioned
        goes)."""
        with self._lock:
            engine = self._ctx.engine
            owner = memory.owner
            by = f"memory:{memory.id}"
            # from the owner's cached facts, as a text edit reads them (a query scanned
            # every fact of the owner: ~650 ms of a forget at 100k memories)
            stated = self._stated_by(memory)
            touched = {(f.subject, f.predicate) for f in stated} | {
                group for group, found in self._owner_facts(owner).items()
                if any(f.ended_by == by for f in found)}
            stored = self._grouped_facts(owner, touched)
            mentioned = self._drop(batch, memory, keep=set(), stated=stated)
            self._replay(batch, owner, touched, dropped=memory.id, forgotten=True,
                         stored=stored)
            records = [r for r in engine.entities(ids=sorted(mentioned - set(batch.gone_entities)))
                       if r.owner == owner]
            self._rebuild(batch, owner, records, leaving={memory.id},
                          mentions=lambda e: engine.mentions(entity_ids=[e]),
                          texts=lambda ids: _texts(engine.scan(["subject", "text"], ids=ids)))
            self._resolvers.pop(owner, None)  # an entity may have gone or changed

    def _replay(self, batch: WriteBatch, owner: str | None, groups: set[tuple[str, str]], *,
                dropped: str | None, forgotten: bool,
                stored: Sequence[FactRecord] | None = None) -> None:
        """The facts of ``owner`` about these (subject, predicate) groups, replayed as if
        what leaves in ``batch`` had never been (``_graph_leave.replayed``): each source
        that stays is a statement made when its memory was written. When ``dropped`` is
        ``forgotten``, its supersedes leave too. A fact the replay leaves out (it joined
        another) goes; one it starts anew is new. ``stored``: the facts of these groups
        as the store holds them, when the caller has them (before ``batch``)."""
        if not groups:
            return
        engine = self._ctx.engine
        gone = {f.id for f in batch.gone_facts}
        pending = {f.id: f for f in batch.changed_facts}
        if stored is None:
            stored = [f for f in engine.facts(entity_ids=sorted({s for s, _ in groups}))
                      if f.owner == owner and (f.subject, f.predicate) in groups]
        current = {f.id: pending.get(f.id, f) for f in stored if f.id not in gone}
        creators = {f.id: f.sources[0] for f in stored if f.id in current and f.sources
                    and f.sources[0] in current[f.id].sources}
        supersedes = [e for e in engine.edges("supersedes", owner=owner)
                      if not forgotten or dropped not in (e.src, e.dst)]
        grouped: dict[tuple[str, str], list[FactRecord]] = {}
        for fact in current.values():
            grouped.setdefault((fact.subject, fact.predicate), []).append(fact)
        when = self._written(current.values(), creators)
        stated = functools.partial(self._stated, owner=owner)
        for group in grouped.values():
            result = replayed(group, supersedes, creators=creators, when=when, stated=stated,
                              id_key=self._ctx.keys.id_key(), taken=[f.id for f in stored])
            for fact in result:
                before = current.get(fact.id)
                if before is None:
                    batch.facts.append(fact)
                elif fact != before:
                    set_changed(batch, fact)
                self._swap(owner, before or fact, fact)
            kept = {f.id for f in result}
            for fact in group:
                if fact.id not in kept:
                    set_gone(batch, fact)
                    self._swap(owner, fact, None)

    def _written(self, facts: Iterable[FactRecord], creators: Mapping[str, str]
                 ) -> dict[str, datetime]:
        """When each memory that states ``facts`` was written: when the first of these
        facts it made was recorded, else its creation time."""
        when: dict[str, datetime] = {}
        sources: set[str] = set()
        for fact in facts:
            sources.update(fact.sources)
            maker = creators.get(fact.id)
            if maker is not None:
                when[maker] = min(when.get(maker, fact.recorded), fact.recorded)
        rest = sorted(sources - set(when))
        if rest:
            scan = self._ctx.engine.scan(["id", "created"], ids=rest).table.to_pydict()
            when.update({memory_id: to_utc(created) for memory_id, created
                         in zip(scan["id"], scan["created"], strict=True) if created})
        return when

    def _stated(self, memory_id: str, fact: FactRecord, *, owner: str | None) -> FactRecord:
        """``fact`` as the memory ``memory_id`` states it by itself: the start (and an
        end) its text gives as extraction reads it, else the memory's time; the rule and
        confidence it was found with; that memory its only source."""
        memory = self._ctx.engine.get(memory_id)
        if memory is None:
            return replace(fact, sources=(memory_id,))
        at = memory.observed or memory.created
        speaker = _provenance(memory.provenance).get("speaker")
        resolver = self.resolver(owner)
        for said in extract(memory.text, at=at, speaker=named(speaker),
                            facts=self._ctx.facts).facts:
            if said.predicate == fact.predicate \
                    and resolver_lookup(resolver, said.subject) == fact.subject \
                    and resolver_lookup(resolver, said.object) == fact.object:
                return replace(fact, valid_from=said.valid_from or (
                    said.when.start if said.when else None) or at, valid_to=said.valid_to,
                    confidence=said.confidence, rule=said.rule, sources=(memory_id,))
        return replace(fact, valid_from=at, valid_to=None, sources=(memory_id,))

    def _rebuild(self, batch: WriteBatch, owner: str | None, records: Sequence[EntityRecord],
                 *, leaving: Collection[str],
                 mentions: Callable[[str], Sequence[MentionRecord]],
                 texts: Callable[[list[str]], Iterable[str | None]]) -> None:
        """``records`` (entities of ``owner``) as the memories that still mention them
        (all but ``leaving``) name them: an entity no memory mentions goes; one whose
        forms changed is changed, or moves to a keyed id when its id is a plain hash of
        a name; and a split record leaves when no entity uses its form any more."""
        changed: dict[str, EntityRecord] = {}
        for record in records:
            left = [m for m in mentions(record.id) if m.memory_id not in leaving]
            if not left:
                batch.gone_entities.append(record.id)
                continue
            new = rebuilt(record, [m.surface for m in left],
                          functools.partial(texts, sorted({m.memory_id for m in left})))
            if new != record:
                changed[new.id] = new
        gone = set(batch.gone_entities)
        held = {r.id: r for r in self._ctx.engine.entities(owner=owner) if r.id not in gone}
        held.update(changed)
        used = {a for r in held.values() for a in r.aliases}
        for record in held.values():
            merges = tuple(m for m in record.merges if m.get("rule") != "split"
                           or m.get("alias") in used)
            if merges != record.merges:
                changed[record.id] = replace(record, merges=merges)
        batch.changed_entities += [r for r in changed.values() if keyed_id(r.id)]
        moving = [r for r in changed.values() if not keyed_id(r.id)]
        if moving:
            move_entities(self._ctx.engine, batch, owner, moving, taken=set(held),
                          leaving=leaving, id_key=self._ctx.keys.id_key())
            self._uncache(owner)  # their facts moved to the keyed ids, in the batch alone

    def plan_supersede(self, batch: WriteBatch, old: Memory, new_facts: Sequence[FactRecord],
                       at: datetime, by: str) -> None:
        """``old`` is replaced: its facts that the new memory ``by`` does not state again
        (as a new fact, or as one more source of one) and that no other current memory
        states end at ``at``, ended by ``by`` (a fact two memories stated ended when one
        of them was replaced)."""
        with self._lock:
            restated = {(f.subject, f.predicate, f.object) for f in new_facts}
            pending = {f.id: f for f in batch.changed_facts}
            seen: dict[str, bool] = {}

            def current(memory_id: str) -> bool:  # one lookup each, at most once
                if memory_id not in seen:
                    found = self._ctx.engine.get(memory_id)
                    seen[memory_id] = found is not None and found.is_current and \
                        found.status not in (Status.FORGOTTEN, Status.TOMBSTONED)
                return seen[memory_id]

            for stored in self._stated_by(old):
                fact = pending.get(stored.id, stored)
                if fact.valid_to is None and by not in fact.sources and (
                        fact.subject, fact.predicate, fact.object) not in restated and not any(
                        current(s) for s in fact.sources if s != old.id):
                    ended = _replace(fact, valid_to=at, ended_by=f"memory:{by}")
                    set_changed(batch, ended)
                    self._swap(old.owner, fact, ended)

    # -- the parts ---------------------------------------------------------------------
    def _created_in(self, batch: WriteBatch) -> set[str]:
        """The ids of the entities ``batch`` creates (``_add`` adds to them as it creates
        one; an entity it names again keeps its place, so the two stay as many)."""
        kept = self._new_ids
        if kept is None or kept[0]() is not batch or len(kept[1]) != len(batch.new_entities):
            kept = (weakref.ref(batch), {e.id for e in batch.new_entities})
            self._new_ids = kept
        return kept[1]

    def _add(self, batch: WriteBatch, memory: Memory, extraction: Extraction) -> None:
        owner = memory.owner
        resolver = self.resolver(owner)
        conversation = memory.session
        known = self._created_in(batch)
        roles: dict[str, tuple[str, str]] = {}  # entity -> (role, surface)

        def resolve(surface: str, kind: str) -> str:
            result = resolver.resolve(surface, kind, conversation=conversation)  # type: ignore[arg-type]
            entity = result.entity
            record = _record(entity, memory.created, resolver)
            if entity.id in batch.gone_entities:
                # an edit of the same write left it unmentioned; named again, it stays
                # (it went with the facts now stated of it)
                batch.gone_entities[:] = [e for e in batch.gone_entities if e != entity.id]
            if result.created and entity.id not in known:
                batch.new_entities.append(record)
                known.add(entity.id)
            elif result.merge is not None:
                if entity.id in known:  # created in this batch: the latest form wins
                    batch.new_entities[:] = [record if e.id == entity.id else e
                                             for e in batch.new_entities]
                else:
                    batch.changed_entities.append(record)
            return entity.id

        if extraction.speaker:
            roles.setdefault(resolve(extraction.speaker, "person"), ("speaker",
                                                                      extraction.speaker))
        for mention in extraction.mentions:
            if mention.type in NOT_ENTITIES or _labels_speaker(memory.text, mention,
                                                               extraction.speaker):
                continue
            entity_id = resolve(mention.surface, mention.type)
            if roles.get(entity_id, ("speaker",))[0] == "speaker":
                roles[entity_id] = ("mention", mention.surface)
        at = memory.observed or memory.created
        facts = self._owner_facts(owner)
        for fact in extraction.facts:
            subject = resolve(fact.subject, fact.subject_type)
            obj = resolve(fact.object, fact.object_type)
            for entity_id, role, surface in ((subject, "subject", fact.subject),
                                             (obj, "object", fact.object)):
                if roles.get(entity_id, ("speaker",))[0] in ("speaker", "mention"):
                    roles[entity_id] = (role, roles.get(entity_id, (role, surface))[1])
            since = fact.valid_from or (fact.when.start if fact.when else None) or at
            group = facts.get((subject, fact.predicate)) or _Group()
            of_object = group.of_object(obj)
            # stated again: one more source of the live fact of that value, else of the
            # one of the same start (the same statement of the same time, ended since)
            same = [f for f in of_object if f.valid_to is None] or \
                [f for f in of_object if f.valid_from == since]
            if same:
                if memory.id not in same[0].sources:
                    more = _replace(same[0], sources=(*same[0].sources, memory.id))
                    batch.changed_facts.append(more)
                    self._swap(owner, same[0], more)
                continue
            new = FactRecord(id=fact_id(owner, subject, fact.predicate, obj, since,
                                        key=self._ctx.keys.id_key(),
                                        taken={f.id for f in of_object}),
                             owner=owner, subject=subject, predicate=fact.predicate,
                             object=obj, confidence=fact.confidence, valid_from=since,
                             valid_to=fact.valid_to, recorded=self._next_recorded(),
                             sources=(memory.id,),
                             rule=fact.rule)
            if fact.predicate in FUNCTIONAL_PREDICATES:
                # A newer value ends the older ones ("moved to Lisbon" after "lives in
                # Ibadan"): their validity stops where the new one starts.
                for old in list(group.live.values()):  # _swap edits it
                    if old.object != obj and (
                            old.valid_from is None or old.valid_from <= since):
                        ended = _replace(old, valid_to=since, ended_by=new.id)
                        batch.changed_facts.append(ended)
                        self._swap(owner, old, ended)
            batch.facts.append(new)
            self._swap(owner, None, new)
        for entity_id, (role, surface) in roles.items():
            batch.mentions.append(MentionRecord(memory.id, entity_id, role,
                                                ROLE_WEIGHTS.get(role, 1.0), surface))

    def _drop(self, batch: WriteBatch, memory: Memory, *, keep: set[str],
              stated: Sequence[FactRecord] | None = None) -> set[str]:
        """What ``memory``'s text brought leaves: its mentions, the facts only it states
        (``stated``, when the caller read them already; the others lose it as a source)
        and the entities only it mentioned (but those in ``keep``). Returns the entities
        it mentioned."""
        engine = self._ctx.engine
        batch.unmentioned.append(memory.id)
        if stated is None:
            stated = engine.facts(sources=[memory.id])
        for fact in stated:
            rest = tuple(s for s in fact.sources if s != memory.id)
            if rest:
                changed = _replace(fact, sources=rest)
                set_changed(batch, changed)
                self._swap(memory.owner, fact, changed)
            else:
                set_gone(batch, fact)
                self._swap(memory.owner, fact, None)
        mentioned = {m.entity_id for m in engine.mentions(memory_ids=[memory.id])}
        leaving = sorted(mentioned - keep)
        elsewhere = engine.mentioned_elsewhere(leaving, memory.id)
        # ... or by another memory of this write (an edit of the same merge)
        elsewhere |= {m.entity_id for m in batch.mentions if m.memory_id != memory.id}
        going = [e for e in leaving if e not in elsewhere]
        if going:
            batch.gone_entities += going
            # the owner's resolver knows them: once this commits, a later text naming
            # one again must bring it back (a new entity under its old id), not mention
            # it where it went (``_on_change``)
            self._gone_owners.add(memory.owner)
        return mentioned

    def _entities_of(self, memory: Memory, extraction: Extraction) -> set[str]:
        """The entities a text would name, without creating any (what a new text keeps)."""
        resolver = self.resolver(memory.owner)
        forms = entity_names(extraction.mentions, extraction.facts, extraction.speaker)
        return {found for form in forms if (found := resolver_lookup(resolver, form))}

    def _swap(self, owner: str | None, old: FactRecord | None, new: FactRecord | None
              ) -> None:
        """In the cached facts of ``owner`` (when cached), ``old`` gives way to ``new``
        (either may be None: a fact that comes, or goes)."""
        facts = self._facts.get(owner)
        if facts is None:
            return
        by_source, by_id = self._sources[owner], self._by_id[owner]
        if old is not None:
            group = facts.get((old.subject, old.predicate))
            if group is not None:
                group.remove(old)
            for memory_id in old.sources:
                by_source.get(memory_id, {}).pop(old.id, None)
            by_id.pop(old.id, None)
        if new is not None:
            facts.setdefault((new.subject, new.predicate), _Group()).add(new)
            by_id[new.id] = new
            for memory_id in new.sources:
                by_source.setdefault(memory_id, {})[new.id] = new

    # -- migration ---------------------------------------------------------------------
    def derive_all(self, *, chunk: int = 2000) -> int:
        """Build the graph of every stored memory (a store made before v5): one pass,
        one transaction; returns how many memories were read."""
        ctx = self._ctx
        fields = ["id", "owner", "subject", "text", "status", "created", "observed",
                  "session", "provenance"]
        table = ctx.engine.scan(fields).table
        rows = [r for r in table.to_pylist() if r["status"] != "forgotten"]
        self.reset()
        with ctx.lock, self.planning(), ctx.engine.writer() as writer:
            for start in range(0, len(rows), chunk):
                batch = WriteBatch()
                for row in rows[start:start + chunk]:
                    memory = Memory.model_validate({
                        **{k: row[k] for k in ("id", "owner", "subject", "text", "status",
                                               "created", "observed", "session")},
                        "modified": row["created"]})
                    provenance = _provenance(row["provenance"])
                    speaker, who = provenance.get("speaker"), provenance.get("refers_to")
                    extraction = extract(memory.text, at=memory.observed or memory.created,
                                         speaker=named(speaker), facts=ctx.facts,
                                         refers_to=named(who))
                    self._add(batch, memory, extraction)
                    if extraction.times:
                        batch.patches.append(_times_patch(memory.id, extraction))
                writer.write(batch)
            # built from the memories that remain: nothing for ``repair`` to do
            writer.write(WriteBatch(meta={"kg_pending": "0", "kg_repair": "0"}))
        ctx.changed(Changed([r["id"] for r in rows], bulk=True))
        return len(rows)

    def repair(self) -> int:
        """Once, for a store made before v6 (``kg_repair`` in its meta): what forgets
        made before left behind goes, as ``plan_forget`` does since. Facts still ended
        by a fact that is gone or by a forgotten memory get the validity they have
        without it, and the entities of owners who forgot memories keep only the forms
        the memories left use. One transaction; returns how many facts and entities
        changed."""
        ctx = self._ctx
        engine = ctx.engine
        with engine.exclusive("graphmem-repair"):
            if engine.meta().get("kg_repair") != "1":
                return 0  # another process did it
            rows = engine.scan(["id", "owner", "status", "subject", "text"]).table.to_pylist()
            forgotten = {r["id"]: r["owner"] for r in rows if r["status"] == "forgotten"}
            facts = engine.facts(all_owners=True)
            live = {f.id for f in facts}
            ends = {f"memory:{m}" for m in forgotten}
            stale = [f for f in facts if f.ended_by and f.ended_by not in live and (
                f.ended_by in ends or not f.ended_by.startswith("memory:"))]
            owners = {f.owner for f in stale} | set(forgotten.values())
            said = {r["id"]: (r["subject"], r["text"]) for r in rows}
            by_entity: dict[str, list[MentionRecord]] = {}
            for mention in engine.mentions() if forgotten else ():
                by_entity.setdefault(mention.entity_id, []).append(mention)
            self.reset()
            batch = WriteBatch(meta={"kg_repair": "0"})
            with ctx.lock, self.planning():
                for owner in sorted(owners, key=lambda o: o or ""):
                    self._replay(batch, owner, {(f.subject, f.predicate) for f in stale
                                                if f.owner == owner},
                                 dropped=None, forgotten=False)
                    if owner in forgotten.values():
                        self._rebuild(batch, owner, engine.entities(owner=owner), leaving=(),
                                      mentions=lambda e: by_entity.get(e, []),
                                      texts=lambda ids: [t for i in ids for t in said.get(i, ())])
                engine.commit(batch)
                self.reset()
        ctx.changed(Changed([], bulk=True))
        return len(batch.changed_facts) + len(batch.changed_entities) + len(batch.new_entities)


def resolver_lookup(resolver: EntityResolver, surface: str) -> str | None:
    """The id of the entity a surface form names, if the owner has one (nothing made)."""
    key = normalize(surface)
    for entity in resolver.entities:
        if key in entity.aliases:
            return entity.id
    return None


def _texts(scan: MemoryScan) -> list[str | None]:
    """The subjects and texts of scanned memories."""
    table = scan.table.to_pydict()
    return [*table["subject"], *table["text"]]


def _times_patch(memory_id: str, extraction: Extraction) -> Patch:
    return Patch(memory_id, set={"times_from": [t.window.start for t in extraction.times],
                                 "times_to": [t.window.end for t in extraction.times]})


def _provenance(value: object) -> Mapping[str, object]:
    import json

    if isinstance(value, str) and value:
        loaded = json.loads(value)
        return loaded if isinstance(loaded, dict) else {}
    return value if isinstance(value, dict) else {}


def _record(entity: Entity, created: datetime, resolver: EntityResolver) -> EntityRecord:
    """``entity`` as it is stored: its merges, then the forms split from it (the resolver
    keeps those apart; a merge written without them lost a split, and a reopened store
    could merge the form back)."""
    splits = sorted(form for form, owner_id in resolver.blocked if owner_id == entity.id)
    return EntityRecord(id=entity.id, owner=entity.owner or None, name=entity.name,
                        type=entity.type, aliases=entity.aliases,
                        merges=(*(merge_record(m) for m in entity.merges),
                                *({"alias": form, "rule": "split", "evidence": "split by hand"}
                                  for form in splits)), created=created)


def _when(value: object) -> datetime | None:
    return parse_iso(value) if isinstance(value, str) and value else None


def _iso(value: datetime | None) -> str | None:
    return format_iso(value) if value is not None else None


def _replace(fact: FactRecord, **changes: object) -> FactRecord:
    return replace(fact, **changes)  # type: ignore[arg-type]


def _labels_speaker(text: str, mention: Mention, speaker: str | None) -> bool:
    """Whether a mention is the label of who speaks a transcript's line ("Caroline: I
    went ..." said by Caroline): the speaker, not someone the line speaks of.

    >>> from graphmem._kg import Mention
    >>> label = Mention("Caroline", 0, 8, "person", "caroline")
    >>> _labels_speaker("Caroline: I went.", label, "Caroline")
    True
    >>> _labels_speaker("Caroline: I went.", label, "Melanie"), _labels_speaker(
    ...     "Caroline went.", label, "Caroline")
    (False, False)
    """
    return (speaker is not None and mention.start == 0 and mention.surface == speaker
            and text[mention.end:mention.end + 1] == ":")
