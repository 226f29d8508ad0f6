"""The knowledge graph as recall sees it: entities beside the memories, who mentions what,
how informative each entity is within its owner, names to link a query to, facts, and the
times memories speak of. Kept in step with the store like the recall index."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime

import numpy as np

from .._engine import EntityRecord, FactRecord, MentionRecord
from .._kg import ROLE_WEIGHTS, normalize
from ._walk import neighbour_arrays

#: the weight of a mention that is only its memory's speaker
SPEAKER_WEIGHT = ROLE_WEIGHTS["speaker"]

__all__ = ["EntityIndex"]

_WORDS = re.compile(r"[\w'’.-]+")
#: The longest name (in words) a query is searched for.
_MAX_NAME_WORDS = 5
_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0))


class EntityIndex:
    """Entities of every owner, each at a position; memories by their recall positions."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        self.names: list[str] = []
        self.types: list[str] = []
        self.owner: list[str | None] = []
        #: (owner, normalized form) -> entity positions
        self.by_form: dict[tuple[str | None, str], list[int]] = {}
        #: memory position -> {entity position: weight}; entity position -> {memory: weight}
        self.of_memory: dict[int, dict[int, float]] = {}
        self.memories_of: dict[int, dict[int, float]] = {}
        #: entity position -> facts about it (as subject or object)
        self.facts_of: dict[int, list[FactRecord]] = {}
        #: memory position -> the time windows its text speaks of, as POSIX seconds
        self.times: dict[int, np.ndarray] = {}
        self._count: dict[str | None, int] = {}
        #: owner -> the entities that are that owner (see ``selves``), until a change
        self._selves: dict[str | None, frozenset[int]] = {}
        #: owner -> the names of the owner alone (see ``_self_forms``), until a change
        self._forms: dict[str | None, frozenset[str]] = {}
        #: counts the changes (``RecallIndex.derived`` keeps what it made until one)
        self.changes = 0

    @property
    def size(self) -> int:
        return len(self.ids)

    # -- building and updating ---------------------------------------------------------
    def add_entities(self, records: Iterable[EntityRecord]) -> None:
        self._changed()
        # New entities take positions in the order of their owner and name, not of their
        # ids: ids are keyed by each store's own secret, and the sums of a graph walk
        # must not depend on how they are spelt (two stores that hold the same memories
        # give the same scores, to the last bit).
        for record in sorted(records, key=lambda r: (r.owner or "", r.name, r.type, r.id)):
            pos = self.pos.get(record.id)
            if pos is None:
                pos = self.pos[record.id] = len(self.ids)
                self.ids.append(record.id)
                self.names.append(record.name)
                self.types.append(record.type)
                self.owner.append(record.owner)
            else:
                self._unlist(pos)
                self.names[pos], self.types[pos] = record.name, record.type
            for form in {record.name, *record.aliases}:
                if form:
                    self.by_form.setdefault((record.owner, form), []).append(pos)

    def _changed(self) -> None:
        self._selves.clear()
        self._forms.clear()
        self.changes += 1

    def differs(self, record: EntityRecord) -> bool:
        """Whether ``record`` is not held as it is: new, renamed, or with a form (name or
        alias) the index does not list for it."""
        pos = self.pos.get(record.id)
        if pos is None:
            return True
        if (self.names[pos], self.types[pos]) != (record.name, record.type):
            return True
        return any(pos not in self.by_form.get((record.owner, form), ())
                   for form in {record.name, *record.aliases} if form)

    def _unlist(self, pos: int) -> None:
        for key in [k for k, v in self.by_form.items() if pos in v]:
            kept = [p for p in self.by_form[key] if p != pos]
            if kept:
                self.by_form[key] = kept
            else:  # a form no entity has any more (a name a forget took) is not kept
                del self.by_form[key]

    def remove_entity(self, entity_id: str) -> None:
        self._changed()
        pos = self.pos.get(entity_id)
        if pos is not None:
            self._unlist(pos)
            self.names[pos] = ""  # it may be all that is left of a forgotten text
            for memory in self.memories_of.pop(pos, {}):
                self.of_memory.get(memory, {}).pop(pos, None)
            self.facts_of.pop(pos, None)

    def set_mentions(self, memory: int, mentions: Iterable[tuple[int, float]]) -> None:
        """Replace what one memory mentions: (entity position, weight) pairs."""
        self._changed()
        for entity in self.of_memory.pop(memory, {}):
            others = self.memories_of.get(entity)
            if others is not None:
                others.pop(memory, None)
        found: dict[int, float] = {}
        for entity, weight in mentions:
            found[entity] = max(found.get(entity, 0.0), weight)
        if found:
            self.of_memory[memory] = found
            for entity, weight in found.items():
                self.memories_of.setdefault(entity, {})[memory] = weight

    def add_mentions(self, mentions: Iterable[MentionRecord], memory_pos: Mapping[str, int]
                     ) -> None:
        grouped: dict[int, list[tuple[int, float]]] = {}
        for mention in mentions:
            memory = memory_pos.get(mention.memory_id)
            entity = self.pos.get(mention.entity_id)
            if memory is not None and entity is not None:
                grouped.setdefault(memory, []).append((entity, mention.weight))
        for memory, pairs in grouped.items():
            self.set_mentions(memory, pairs)

    def set_facts(self, facts: Iterable[FactRecord]) -> None:
        """Every live fact (oldest recorded first), each listed under its ends."""
        self.changes += 1
        self.facts_of = {}
        for fact in facts:
            for end in {fact.subject, fact.object}:
                pos = self.pos.get(end)
                if pos is not None:
                    self.facts_of.setdefault(pos, []).append(fact)

    def set_facts_of(self, entities: Collection[int], facts: Iterable[FactRecord]) -> None:
        """The facts of these entities: ``facts`` holds every live one about them."""
        self.changes += 1
        ids = {self.ids[pos]: pos for pos in entities}
        listed: dict[int, list[FactRecord]] = {}
        for fact in facts:
            for end in {fact.subject, fact.object}:
                if end in ids:
                    listed.setdefault(ids[end], []).append(fact)
        for pos in entities:
            self._list_facts(pos, listed.get(pos, []))

    def change_facts(self, live: Sequence[FactRecord], gone: Sequence[FactRecord], *,
                     skip: Collection[int] = ()) -> None:
        """What one commit wrote of facts (``live``: created or changed, of one id the
        last wins; ``gone``), listed as ``set_facts`` of every live fact would list it;
        the entities at ``skip`` are left as they are."""
        self.changes += 1
        final: dict[str, FactRecord | None] = {f.id: None for f in gone}
        final.update({f.id: f for f in live})
        ends = {self.pos[end] for fact in (*gone, *live) for end in (fact.subject, fact.object)
                if end in self.pos}
        for pos in ends - set(skip):
            entity = self.ids[pos]
            self._list_facts(pos, [
                *(f for f in self.facts_of.get(pos, ()) if f.id not in final),
                *(f for f in final.values() if f is not None and entity in (f.subject,
                                                                            f.object))])

    def _list_facts(self, pos: int, facts: list[FactRecord]) -> None:
        if facts:
            self.facts_of[pos] = sorted(facts, key=lambda f: (f.recorded, f.id))
        else:
            self.facts_of.pop(pos, None)

    def set_times(self, memory: int, starts: Sequence[datetime], ends: Sequence[datetime]
                  ) -> None:
        self.changes += 1
        if starts:
            self.times[memory] = np.array([[s.timestamp(), e.timestamp()]
                                           for s, e in zip(starts, ends, strict=False)])
        else:
            self.times.pop(memory, None)

    def selves(self, owner: str | None) -> frozenset[int]:
        """The entities that are ``owner`` themselves: named like the owner, or the
        person who speaks most of the owner's memories (three or more). Within one
        owner's memories their name says nothing: every memory is theirs.

        >>> from graphmem._engine import EntityRecord
        >>> index = EntityIndex()
        >>> index.add_entities([EntityRecord(id="e1", name="priya", type="person",
        ...                                  owner="priya"),
        ...                     EntityRecord(id="e2", name="dev", type="person", owner="priya")])
        >>> [index.names[e] for e in index.selves("priya")], sorted(index.selves(None))
        (['priya'], [])
        """
        if owner is None:
            return frozenset()
        found = self._selves.get(owner)
        if found is None:
            named = set(self.by_form.get((owner, normalize(owner)), ()))
            spoken = self._spoken(owner)
            top = max(spoken, key=lambda e: (spoken[e], -e), default=None)
            if top is not None and spoken[top] >= 3:
                named.add(top)
            found = self._selves[owner] = frozenset(named)
        return found

    def spoken_by(self, entities: Iterable[int], owner: str | None,
                  among: Iterable[int]) -> set[int]:
        """The memories of ``among`` that the ``entities`` speak (a mention in the
        speaker's role alone), but not the owner's own (``selves``): every memory of
        theirs is theirs. Reads the mentions of ``among`` (a recall's candidates), not
        every memory a person speaks.

        >>> from graphmem._engine import EntityRecord
        >>> index = EntityIndex()
        >>> index.add_entities([EntityRecord(id="e1", name="priya", type="person",
        ...                                  owner="priya"),
        ...                     EntityRecord(id="e2", name="dev", type="person", owner="priya")])
        >>> priya, dev = index.pos["e1"], index.pos["e2"]
        >>> index.set_mentions(0, [(priya, SPEAKER_WEIGHT)])   # memory 0: said by Priya
        >>> index.set_mentions(1, [(dev, SPEAKER_WEIGHT), (priya, 0.8)])   # by Dev, to her
        >>> index.set_mentions(2, [(dev, 0.8)])   # of Dev
        >>> (sorted(index.spoken_by([priya, dev], "priya", range(3))),
        ...  sorted(index.spoken_by([priya], None, range(3))), index.spoken_by([dev], None, [0]))
        ([1], [0], set())
        """
        speakers = set(entities) - self.selves(owner)
        if not speakers:
            return set()
        return {m for m in among
                if any(self.mentioned(m).get(e) == SPEAKER_WEIGHT for e in speakers)}

    def _spoken(self, owner: str) -> dict[int, int]:
        """Per entity of ``owner``: how many memories it speaks (mentions as speaker)."""
        return {entity: sum(1 for w in memories.values() if w == SPEAKER_WEIGHT)
                for entity, memories in self.memories_of.items()
                if self.owner[entity] == owner}

    def in_first_person(self, query: str, owner: str | None) -> str:
        """``query`` with the owner's own name (``selves``) said as the owner says it:
        "Nadia's" becomes "my", "Nadia" becomes "I". The owner's memories are in the first
        person ("I'm vegetarian"), so their name in a question about them matches nothing
        in what answers it and much in what does not (an assistant's "Morning Nadia!").

        >>> from graphmem._engine import EntityRecord
        >>> index = EntityIndex()
        >>> index.add_entities([EntityRecord(id="e1", name="nadia", type="person",
        ...                                  owner="nadia")])
        >>> index.in_first_person("Is Nadia vegetarian? What is Nadia's editor?", "nadia")
        'Is I vegetarian? What is my editor?'
        >>> index.in_first_person("Is Nadia vegetarian?", "omar")
        'Is Nadia vegetarian?'
        """
        forms = self._self_forms(owner)
        if not forms:
            return query
        out, at = [], 0
        for match in _WORDS.finditer(query):
            word = match.group().rstrip(".")
            if normalize(word) in forms:
                possessive = word.lower().endswith(("'s", "’s", "'", "’"))
                out += [query[at:match.start()], "my" if possessive else "I"]
                at = match.start() + len(word)
        return "".join(out) + query[at:]

    def without_people(self, query: str, owner: str | None) -> str:
        """``query`` without the names of the people ``owner``'s memories mention (every
        owner's when None), as the sentence vectors are searched (``sentence_texts``):
        a sentence says "I went", not its speaker's name, so in "When did Caroline go to
        the support group?" the name only pulls towards what Caroline says of anything.

        >>> from graphmem._engine import EntityRecord
        >>> index = EntityIndex()
        >>> index.add_entities([EntityRecord(id=f"e{n}", name=name, type=kind, owner=None)
        ...                     for n, (name, kind) in enumerate([("caroline", "person"),
        ...                         ("mary ann", "person"), ("lisbon", "place")])])
        >>> index.without_people("Did Caroline's friend Mary Ann move to Lisbon?", None)
        'Did friend move to Lisbon?'
        """
        words = list(_WORDS.finditer(query))
        owners = self._owners(owner)
        cut: list[tuple[int, int]] = []
        start = 0
        while start < len(words):
            size = min(_MAX_NAME_WORDS, len(words) - start)
            while size and not self._person(" ".join(
                    w.group() for w in words[start:start + size]), owners):
                size -= 1
            if size:
                cut.append((words[start].start(), words[start + size - 1].end()))
            start += max(size, 1)
        if not cut:
            return query
        kept, at = [], 0
        for begin, end in cut:
            kept.append(query[at:begin])
            at = end
        kept.append(query[at:])
        return " ".join("".join(kept).split())

    def is_person(self, surface: str, owner: str | None) -> bool:
        """Whether ``surface`` names a person ``owner``'s memories mention (any owner's
        when None)."""
        return self._person(surface, self._owners(owner))

    def _owners(self, owner: str | None) -> set[str | None]:
        """``owner`` alone, or every owner an entity has when None."""
        return set(self.owner) if owner is None else {owner}

    def _person(self, surface: str, owners: set[str | None]) -> bool:
        form = normalize(surface)
        return bool(form) and any(self.types[p] == "person" for o in owners
                                  for p in self.by_form.get((o, form), ()))

    def _self_forms(self, owner: str | None) -> frozenset[str]:
        """The names and aliases of the owner alone (``selves`` where they are the owner
        alone: named like the owner, or the one person who speaks the owner's memories;
        where two people each speak three or more, as in a transcript of two friends, a
        question naming one is about that one), found once until a change."""
        if owner is None:
            return frozenset()
        found = self._forms.get(owner)
        if found is None:
            speakers = [e for e, count in self._spoken(owner).items() if count >= 3]
            selves = set(self.by_form.get((owner, normalize(owner)), ()))
            if len(speakers) == 1:
                selves.update(speakers)
            found = frozenset({self.names[e] for e in selves} | {
                form for (o, form), entities in self.by_form.items()
                if o == owner and selves.intersection(entities)})
            self._forms[owner] = found
        return found

    # -- weights -----------------------------------------------------------------------
    def informativeness(self, entity: int, owner_memories: int) -> float:
        """How much an entity says about a memory that mentions it, in (0, 1]: an inverse
        document frequency over the owner's memories, scaled so that an entity every
        memory mentions (a speaker) weighs about nothing."""
        df = len(self.memories_of.get(entity, ()))
        if df == 0 or owner_memories <= 0:
            return 0.0
        n = max(owner_memories, df)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        return idf / math.log(1.0 + (n + 0.5) / 0.5)

    # -- queries -----------------------------------------------------------------------
    def link(self, query: str, owner: str | None, *, all_owners: bool = False
             ) -> dict[int, str]:
        """The entities a query names: word n-grams (up to five words) that are a name or
        alias of one of ``owner``'s entities (every owner's with ``all_owners``); longer
        names first, and a word belongs to one name only. Entity position -> the form."""
        words = [normalize(w) for w in _WORDS.findall(query)]
        words = [w for w in words if w]
        taken = [False] * len(words)
        found: dict[int, str] = {}
        owners = {o for o in self.owner} if all_owners else {owner}
        for size in range(min(_MAX_NAME_WORDS, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                if any(taken[start:start + size]):
                    continue
                form = " ".join(words[start:start + size])
                hits = [p for o in owners for p in self.by_form.get((o, form), ())]
                if hits:
                    for pos in hits:
                        found.setdefault(pos, form)
                    taken[start:start + size] = [True] * size
        return found

    def row(self, entity: int) -> tuple[np.ndarray, np.ndarray]:
        found = self.memories_of.get(entity)
        if not found:
            return _EMPTY
        return neighbour_arrays(found)

    def mentioned(self, memory: int) -> Mapping[int, float]:
        return self.of_memory.get(memory, {})
