"""Facts as data: (subject, predicate, object) triples with confidence, validity and provenance,
the predicates graphmem knows, which are functional, and when a newer fact ends an older one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ._calendar import TimeWindow
from ._entities import EntityType, Mention
from ._lexicon import RELATION_NOUNS
from ._text import normalize, person_speaker

__all__ = ["ASKED_AS", "FUNCTIONAL_PREDICATES", "NOT_ENTITIES", "PREDICATES",
           "RELATION_PREDICATES", "Fact", "entity_names", "normalize_predicate", "supersedes"]

#: Mentions of these types are times, not entities (a memory keeps them as its times).
NOT_ENTITIES = frozenset({"date"})

#: Family and social relations: ``(x, "sister", y)`` says y is x's sister.
RELATION_PREDICATES = frozenset(RELATION_NOUNS.values())

#: Every predicate the rules produce and an LLM answer may use.
PREDICATES = frozenset({
    "works_at", "studies_at", "lives_in", "moved_to", "from", "born_in", "married_to",
    "likes", "dislikes", "prefers", "wants", "is_a", "bought", "adopted", "started", "joined",
    "uses", "visited", "attended", "has_pet",
}) | RELATION_PREDICATES

#: Predicates with one object at a time: a newer fact with another object ends the older
#: one's validity ("moved to Lisbon" after "lives in Ibadan"). People can hold two jobs; the
#: store treats a new employer as a change all the same, and says so in the fact's rule.
FUNCTIONAL_PREDICATES = frozenset({
    "lives_in", "works_at", "studies_at", "married_to", "born_in", "husband", "wife",
    "spouse", "partner", "boyfriend", "girlfriend", "fiance", "fiancee", "mother", "father",
})

#: The words a question asks for a predicate in, beyond the predicate's own name: "what
#: does Fatima do for work?" asks for ``is_a``, "which university?" for ``studies_at``
#: ("for a living" is read as "for work" first: ``asked_words``).
ASKED_AS: dict[str, tuple[str, ...]] = {
    "is_a": ("job", "work", "profession", "occupation", "career", "trade"),
    "works_at": ("job", "employer", "company", "firm", "employed", "office"),
    "studies_at": ("study", "university", "college", "school", "student", "degree", "major"),
    "lives_in": ("home", "city", "town", "based", "address", "where"),
    "moved_to": ("move", "moving", "relocate"),
    "from": ("origin", "hometown", "grew", "nationality"),
    "born_in": ("birthplace", "born"),
    "married_to": ("husband", "wife", "spouse", "partner"),
    "likes": ("favourite", "favorite", "enjoy", "love", "fan"),
    "dislikes": ("hate", "avoid", "refuse", "stand"),
    "prefers": ("favourite", "favorite", "rather"),
    "uses": ("tool", "app", "software", "editor", "program"),
    "has_pet": ("pet", "dog", "cat"),
    "visited": ("trip", "travel", "visit", "went"),
}

_SYNONYMS = {
    "works_for": "works_at", "work_at": "works_at", "employed_by": "works_at",
    "employer": "works_at", "job_at": "works_at", "live_in": "lives_in", "resides_in": "lives_in",
    "lived_in": "lives_in", "located_in": "lives_in", "based_in": "lives_in",
    "moved": "moved_to", "relocated_to": "moved_to", "move_to": "moved_to",
    "is_from": "from", "comes_from": "from", "origin": "from", "grew_up_in": "from",
    "birthplace": "born_in", "was_born_in": "born_in", "married": "married_to",
    "spouse_of": "married_to", "is_married_to": "married_to", "like": "likes", "loves": "likes",
    "love": "likes", "enjoys": "likes", "hates": "dislikes", "dislike": "dislikes",
    "prefer": "prefers", "want": "wants", "is": "is_a", "isa": "is_a", "instance_of": "is_a",
    "occupation": "is_a", "buy": "bought", "purchased": "bought", "adopt": "adopted",
    "start": "started", "began": "started", "join": "joined", "member_of": "joined",
    "use": "uses", "using": "uses", "visit": "visited", "went_to": "visited",
    "attend": "attended", "studies": "studies_at", "study_at": "studies_at",
    "student_at": "studies_at", "pet": "has_pet", "owns_pet": "has_pet",
}


@dataclass(frozen=True, slots=True)
class Fact:
    """One relation stated by a text.

    ``subject`` and ``object`` are normalized names (the resolver maps them to entities);
    ``span`` is the characters of the text that state it; ``rule`` names the pattern (or
    ``ollama``) that found it. ``valid_from`` / ``valid_to`` come from a time expression in
    the same sentence ("in 2022", "since March", "from May to July"); None means the text
    gave none, and the store uses the memory's own time. ``when`` is that expression's
    window (the time an event happened).
    """

    subject: str
    predicate: str
    object: str
    confidence: float
    valid_from: datetime | None
    valid_to: datetime | None
    span: tuple[int, int]
    rule: str
    subject_type: EntityType = "other"
    object_type: EntityType = "other"
    when: TimeWindow | None = None


def normalize_predicate(predicate: str) -> str | None:
    """The known predicate a free-form one means, or None.

    Examples
    --------
    >>> normalize_predicate("Works for"), normalize_predicate("lives in")
    ('works_at', 'lives_in')
    >>> normalize_predicate("mom"), normalize_predicate("is the CEO of")
    ('mother', None)
    """
    key = "_".join(predicate.strip().lower().replace("-", " ").split())
    if key in PREDICATES:
        return key
    if key in _SYNONYMS:
        return _SYNONYMS[key]
    return RELATION_NOUNS.get(key.removesuffix("_of").replace("_", "-"))


def supersedes(old: Fact, new: Fact) -> bool:
    """Whether ``new`` ends ``old``'s validity: the same subject and functional predicate
    with a different object, and ``new`` is not older information.

    ``new`` does not supersede when it starts before ``old`` does (a past fact arriving
    late), or when its own validity is already closed ("lived in Paris until 2020"). The
    store ends ``old`` at ``new.valid_from`` (or at the time ``new`` was recorded).

    Parameters
    ----------
    old : a fact in force
    new : a fact just extracted

    Returns
    -------
    bool

    Examples
    --------
    >>> from datetime import UTC
    >>> def fact(p, o, start=None, end=None):
    ...     return Fact("caroline", p, o, 0.9, start, end, (0, 1), "test")
    >>> supersedes(fact("lives_in", "ibadan"), fact("lives_in", "lisbon"))
    True
    >>> supersedes(fact("lives_in", "ibadan"), fact("lives_in", "ibadan"))
    False
    >>> supersedes(fact("likes", "jazz"), fact("likes", "hiking"))
    False
    >>> supersedes(fact("lives_in", "lisbon", datetime(2022, 1, 1, tzinfo=UTC)),
    ...            fact("lives_in", "paris", datetime(2010, 1, 1, tzinfo=UTC)))
    False
    """
    if old.subject != new.subject or old.predicate != new.predicate or \
            old.predicate not in FUNCTIONAL_PREDICATES or old.object == new.object:
        return False
    if new.valid_to is not None:
        return False
    return not (old.valid_from is not None and new.valid_from is not None
                and new.valid_from < old.valid_from)


def entity_names(mentions: Sequence[Mention], facts: Sequence[Fact],
                 speaker: str | None) -> tuple[str, ...]:
    """The names under which a text names its entities, in the resolver's normal form: its
    speaker when a person, its mentions but dates, and the two ends of its facts; each
    once, in that order. They are what the knowledge graph resolves to entities, so each
    is an alias of an entity the text mentions (its name unless merged with another).

    Examples
    --------
    >>> from ._entities import extract_mentions
    >>> entity_names(extract_mentions("Bob's manager is Carol. Carol works at Acme on Monday"),
    ...              [], "Assistant")
    ('bob', 'carol', 'acme')
    """
    person = person_speaker(speaker)
    names = [normalize(person)] if person else []
    names += [m.normalized for m in mentions if m.type not in NOT_ENTITIES]
    names += [normalize(end) for f in facts for end in (f.subject, f.object)]
    return tuple(dict.fromkeys(n for n in names if n))
