"""Entity resolution for one owner: surface forms clustered into canonical entities by named,
reversible rules (each merge is data: entity, alias, rule, evidence), and entity weights."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
import re
from collections.abc import Collection, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ._entities import ENTITY_TYPES, EntityType, Mention
from ._gazetteer import ALIASES
from ._lexicon import NICKNAMES, words
from ._text import normalize

__all__ = ["MERGE_RULES", "ROLE_WEIGHTS", "Entity", "EntityResolver", "Merge", "Resolution",
           "entity_weights", "informativeness", "new_entity_id", "restrict"]

#: How much a mention counts for, by its role in the text (a speaker's own turns mention
#: the speaker, weakly).
ROLE_WEIGHTS = {"subject": 1.0, "object": 1.0, "mention": 0.8, "speaker": 0.3}

#: The rules that merge a surface form into an existing entity, in the order they are tried.
MERGE_RULES = ("known_alias", "nickname", "prefix", "token_subset", "org_suffix")
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_ORG_SUFFIX = words("inc inc. ltd ltd. llc corp corp. co co. company corporation gmbh plc ag sa")
_MIN_PREFIX = 3
#: the longest prefix kept for the prefix rule: a form's prefixes cost the square of its
#: first word's length (a word of 100k letters made 5 GB of them); a short form longer
#: than this finds its candidates by its first 40 letters, checked in full as before, and
#: a name of one word joins no shorter form of over 40 letters
_MAX_PREFIX = 40


@dataclass(frozen=True, slots=True)
class Merge:
    """One surface form (``alias``, normalized) joined to an entity, by which rule and why."""

    entity_id: str
    alias: str
    rule: str
    evidence: str


@dataclass(frozen=True, slots=True)
class Entity:
    """A canonical entity of one owner: its normalized ``name``, every normalized surface form
    that resolves to it (``aliases``, name included) and the merges that added forms."""

    id: str
    owner: str
    name: str
    type: EntityType
    aliases: tuple[str, ...]
    merges: tuple[Merge, ...] = ()


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where one mention went: its entity, whether that entity is new, the merge (if a rule
    joined the form to an entity) and the rule's name (``exact`` or ``new`` otherwise)."""

    key: str
    entity: Entity
    created: bool
    merge: Merge | None
    rule: str


@dataclass(slots=True)
class _Cluster:
    id: str
    name: str
    type: EntityType
    origin: str
    aliases: list[str] = field(default_factory=list)
    merges: list[Merge] = field(default_factory=list)


class EntityResolver:
    """Clusters the surface forms one owner mentions into canonical entities.

    Rules, tried in order when a normalized form is not yet known (``MERGE_RULES``):

    - ``known_alias``: the gazetteer names the same place ("NYC" -> "new york", "the US" ->
      "united states"); the entity takes the canonical name;
    - ``nickname``: a short form that is not a prefix ("Bob" ~ "Robert"), persons only;
    - ``prefix``: a single name of three letters or more that begins the first name of
      exactly one known person ("Mel" ~ "Melanie"), or the other way round; with a
      ``conversation``, only persons seen in the same conversation count;
    - ``token_subset``: a person's name whose words are a subset of exactly one known
      person's name ("Caroline" ~ "Caroline Smith"), either way round;
    - ``org_suffix``: organisations equal without Inc, Ltd, Company ... ("Acme" ~ "Acme Inc").

    Ambiguous candidates (two Carolines) merge nothing. Everything is deterministic: the same
    mentions in the same order give the same entities, ids and merges. Each merge can be
    undone with ``split`` (the form gets its own entity and that pair is never merged
    again); the state (``entities``, ``blocked``) reloads through the constructor.

    Examples
    --------
    >>> r = EntityResolver("u1")
    >>> [r.resolve(s, "person", conversation="c1").rule
    ...  for s in ("Melanie", "Mel", "Caroline Smith", "caroline's")]
    ['new', 'prefix', 'new', 'token_subset']
    >>> mel = r.resolve("Mel", "person").entity
    >>> mel.name, mel.aliases, mel.merges[0].evidence
    ('melanie', ('melanie', 'mel'), "'mel' begins the first name of the only person 'melanie'")
    >>> r.resolve("NYC", "place").entity.name, r.resolve("New York", "place").rule
    ('new york', 'exact')
    >>> r.split(mel.id, "mel").name, r.entity(mel.id).aliases
    ('mel', ('melanie',))
    """

    def __init__(self, owner: str = "", *, entities: Iterable[Entity] = (),
                 blocked: Iterable[tuple[str, str]] = (), id_key: bytes = b"") -> None:
        self.owner = owner
        #: the secret that keys new ids (a store's: then no id is a plain hash of a name)
        self._id_key = id_key
        self._clusters: dict[str, _Cluster] = {}
        self._by_key: dict[str, list[str]] = {}
        self._blocked: set[tuple[str, str]] = set(blocked)
        self._seen_in: dict[str, set[str]] = {}
        self._forms = _Forms()
        for e in entities:
            self.adopt(e)

    def adopt(self, e: Entity, *, blocked: Iterable[str] = ()) -> None:
        """Know ``e`` as it is (its id, forms and merges), as the entities given at the
        start are known: an entity made elsewhere (a file's) that resolving may meet;
        ``blocked``: forms split from it, never merged into it again."""
        self._blocked.update((form, e.id) for form in blocked)
        c = _Cluster(e.id, e.name, e.type, e.aliases[0] if e.aliases else e.name,
                     list(e.aliases), list(e.merges))
        self._clusters[e.id] = c
        self._forms.add(c.name, c.id)
        for key in c.aliases:
            self._know(key, c.id)

    def knows(self, entity_id: str) -> bool:
        """Whether ``entity_id`` is one of this resolver's entities."""
        return entity_id in self._clusters

    @property
    def entities(self) -> list[Entity]:
        """Every entity, in creation order."""
        return [self._snapshot(c) for c in self._clusters.values()]

    @property
    def merges(self) -> list[Merge]:
        """Every merge in force, by entity in creation order."""
        return [m for c in self._clusters.values() for m in c.merges]

    @property
    def blocked(self) -> frozenset[tuple[str, str]]:
        """(alias, entity id) pairs split apart, which no rule joins again."""
        return frozenset(self._blocked)

    def entity(self, entity_id: str) -> Entity:
        """The entity with this id (``KeyError`` if none)."""
        return self._snapshot(self._clusters[entity_id])

    def resolve(self, surface: str | Mention, type: EntityType | None = None, *,
                conversation: str | None = None) -> Resolution:
        """The entity a surface form (or a ``Mention``) names, creating it when new.

        Parameters
        ----------
        surface : the name as written, or a Mention (its normalized form and type are used)
        type : the entity type (default: the mention's, else ``other``)
        conversation : where it was said; the prefix and nickname rules only look at persons
            seen in the same conversation (None: the whole owner)

        Returns
        -------
        Resolution: the entity, whether it was created, and the merge if a rule joined it.
        """
        if isinstance(surface, Mention):
            key, kind = surface.normalized, type or surface.type
        else:
            key, kind = normalize(surface), type or "other"
        if not key:
            raise ValueError(f"nothing to resolve in {surface!r}: the name is empty after "
                             "normalization")
        rule, merge, created = "exact", None, False
        cluster = self._exact(key, kind)
        if cluster is None:
            found = self._by_rule(key, kind, conversation)
            if found is None:
                cluster, rule, created = self._create(key, kind), "new", True
            else:
                cluster, rule, evidence, created = found
                merge = Merge(cluster.id, key, rule, evidence)
                cluster.aliases.append(key)
                cluster.merges.append(merge)
                self._know(key, cluster.id)
                cluster.name = self._display_name(cluster)
        if cluster.type == "other" and kind not in ("other", "date"):
            cluster.type = kind
        if conversation is not None:
            self._seen_in.setdefault(conversation, set()).add(cluster.id)
        return Resolution(key, self._snapshot(cluster), created, merge, rule)

    def split(self, entity_id: str, alias: str) -> Entity:
        """Undo the merge that joined ``alias`` to the entity: the alias becomes an entity of
        its own (returned), and no rule joins the two again."""
        cluster = self._clusters[entity_id]
        alias = normalize(alias)
        merge = next((m for m in cluster.merges if m.alias == alias), None)
        if merge is None:
            raise ValueError(f"{alias!r} was not merged into entity {entity_id} "
                             f"({cluster.name!r}); its merged aliases are "
                             f"{[m.alias for m in cluster.merges]}")
        cluster.merges.remove(merge)
        cluster.aliases.remove(alias)
        self._by_key[alias].remove(entity_id)
        self._blocked.add((alias, entity_id))
        cluster.name = self._display_name(cluster)
        return self._snapshot(self._create(alias, cluster.type))

    def undo(self, merge: Merge) -> Entity:
        """``split`` by a recorded merge."""
        return self.split(merge.entity_id, merge.alias)

    # -- rules ---------------------------------------------------------------------------

    def _exact(self, key: str, kind: EntityType) -> _Cluster | None:
        ids = self._by_key.get(key, [])
        clusters = [self._clusters[i] for i in ids]
        for wanted in (kind, "other"):
            for c in clusters:
                if c.type == wanted:
                    return c
        if kind == "other" and clusters:
            # an untyped mention of a form several entities share ("Calvin" a person and
            # a place): the first by type (``ENTITY_TYPES``), not by id (ids are keyed by
            # each store's own secret: two stores of the same memories split the mentions
            # differently, and ranked them differently)
            return min(clusters, key=lambda c: ENTITY_TYPES.index(c.type))
        return None

    def _by_rule(self, key: str, kind: EntityType, conversation: str | None
                 ) -> tuple[_Cluster, str, str, bool] | None:
        canonical = ALIASES.get(key)
        if canonical is not None and canonical != key and kind in ("place", "organization",
                                                                   "other"):
            target = self._exact(canonical, kind)
            created = target is None
            if target is None:
                target = self._create(canonical, kind)
            if (key, target.id) not in self._blocked:
                return target, "known_alias", f"the gazetteer gives {key!r} = {canonical!r}", \
                    created
        if kind == "person":
            for rule in (self._nickname, self._prefix, self._token_subset):
                found = rule(key, conversation)
                if found is not None:
                    return found[0], rule.__name__.lstrip("_"), found[1], False
        if kind == "organization":
            found = self._org_suffix(key)
            if found is not None:
                return found[0], "org_suffix", found[1], False
        return None

    def _persons(self, key: str, conversation: str | None,
                 ids: Iterable[str]) -> list[_Cluster]:
        """The persons among ``ids`` a rule may join ``key`` to."""
        scope = self._seen_in.get(conversation, set()) if conversation is not None else None
        return [c for i in set(ids) if (c := self._clusters[i]).type == "person"
                and (scope is None or c.id in scope)
                and (key, c.id) not in self._blocked]

    def _nickname(self, key: str, conversation: str | None) -> tuple[_Cluster, str] | None:
        full = NICKNAMES.get(key)
        if not full:
            return None
        found = [c for c in self._persons(key, conversation, self._forms.by_first(full))
                 if c.name.split()[0] in full]
        if len(found) != 1:
            return None
        return found[0], f"{key!r} is a nickname of {found[0].name.split()[0]!r}"

    def _prefix(self, key: str, conversation: str | None) -> tuple[_Cluster, str] | None:
        if " " in key or len(key) < _MIN_PREFIX:
            return None
        candidates = self._persons(key, conversation,
                                   self._forms.prefix.get(key[:_MAX_PREFIX], ()))
        longer = [c for c in candidates if any(
            a.split()[0].startswith(key) and a.split()[0] != key for a in c.aliases)]
        if len(longer) == 1:
            return longer[0], (f"{key!r} begins the first name of the only person "
                               f"{longer[0].name!r}")
        candidates = self._persons(key, conversation, self._forms.by_single(
            key[:end] for end in range(_MIN_PREFIX, min(len(key), _MAX_PREFIX + 1))))
        shorter = [c for c in candidates if any(
            " " not in a and len(a) >= _MIN_PREFIX and key.startswith(a) and a != key
            for a in c.aliases)]
        if len(shorter) == 1 and not longer:
            return shorter[0], (f"the only person {shorter[0].name!r} is a short form of "
                                f"{key!r}")
        return None

    def _token_subset(self, key: str, conversation: str | None
                      ) -> tuple[_Cluster, str] | None:
        words = set(key.split())
        candidates = self._persons(key, None, self._forms.containing(words))
        if len(words) == 1:
            found = [c for c in candidates if any(
                len(a.split()) > 1 and words <= set(a.split()) for a in c.aliases)]
            if len(found) == 1:
                return found[0], f"{key!r} is part of the only person {found[0].name!r}"
            return None
        found = [c for c in candidates if any(set(a.split()) < words for a in c.aliases)]
        if len(found) == 1:
            return found[0], f"the only person {found[0].name!r} is part of {key!r}"
        return None

    def _org_suffix(self, key: str) -> tuple[_Cluster, str] | None:
        bare = _strip_suffix(key)
        found = [c for i in self._forms.bare.get(bare, set())
                 if (c := self._clusters[i]).type == "organization"
                 and (key, c.id) not in self._blocked
                 and any(_strip_suffix(a) == bare for a in c.aliases)]
        if len(found) == 1:
            return found[0], f"{key!r} and {found[0].name!r} differ only by a company suffix"
        return None

    # -- bookkeeping ---------------------------------------------------------------------

    def _create(self, key: str, kind: EntityType) -> _Cluster:
        entity_id = new_entity_id(self.owner, kind, key, taken=self._clusters,
                                  id_key=self._id_key)
        cluster = _Cluster(entity_id, key, kind, key, [key])
        self._clusters[entity_id] = cluster
        self._know(key, entity_id)
        return cluster

    def _know(self, form: str, entity_id: str) -> None:
        """``form`` names the entity: exactly, and for the merge rules' lookups. The
        entities of one form stay in id order, as a resolver made from the store's
        entities (read by id) holds them: ``_exact`` picks alike in a live process and a
        reopened one."""
        bisect.insort(self._by_key.setdefault(form, []), entity_id)
        self._forms.add(form, entity_id)

    def _display_name(self, c: _Cluster) -> str:
        return _display_name(c.type, c.origin, c.aliases, c.merges)

    def _snapshot(self, c: _Cluster) -> Entity:
        return Entity(c.id, self.owner, c.name, c.type, tuple(c.aliases), tuple(c.merges))


#: A person's name of more words than this is not matched by its parts (``token_subset``
#: looks up every proper part of a name: 2^n - 2 of them).
_MAX_NAME_WORDS = 8


@dataclass(slots=True)
class _Forms:
    """Which entities each normalized form could join by a merge rule, so that a rule looks
    up a few candidates instead of trying every entity of the owner (which made a text
    naming 2,858 new people take 16 s to resolve, four times as long for twice as many).
    Forms are only added: a rule checks each candidate as before, so an entry left behind
    by ``split`` costs a check and changes nothing."""

    first: dict[str, set[str]] = field(default_factory=dict)     # first word of a form
    prefix: dict[str, set[str]] = field(default_factory=dict)    # its proper prefixes (3+)
    single: dict[str, set[str]] = field(default_factory=dict)    # forms of one word
    word: dict[str, set[str]] = field(default_factory=dict)      # words of longer forms
    words: dict[frozenset[str], set[str]] = field(default_factory=dict)  # word set of a form
    bare: dict[str, set[str]] = field(default_factory=dict)      # without company suffix

    def add(self, form: str, entity_id: str) -> None:
        parts = form.split()
        if not parts:
            return
        first = parts[0]
        self.first.setdefault(first, set()).add(entity_id)
        for end in range(_MIN_PREFIX, min(len(first), _MAX_PREFIX + 1)):
            self.prefix.setdefault(first[:end], set()).add(entity_id)
        if len(parts) == 1:
            self.single.setdefault(form, set()).add(entity_id)
        if len(parts) > 1:
            for part in set(parts):
                self.word.setdefault(part, set()).add(entity_id)
        self.words.setdefault(frozenset(parts), set()).add(entity_id)
        self.bare.setdefault(_strip_suffix(form), set()).add(entity_id)

    def by_first(self, firsts: Iterable[str]) -> set[str]:
        return set().union(*(self.first.get(f, ()) for f in firsts))

    def by_single(self, forms: Iterable[str]) -> set[str]:
        return set().union(*(self.single.get(f, ()) for f in forms))

    def containing(self, words: set[str]) -> set[str]:
        """Entities with a form of several words that holds this one word, or with a form
        whose words are a proper part of these words."""
        if len(words) == 1:
            return set(self.word.get(next(iter(words)), ()))
        if len(words) > _MAX_NAME_WORDS:
            return set()
        ordered = sorted(words)
        return set().union(*(self.words.get(frozenset(part), ())
                             for size in range(1, len(ordered))
                             for part in itertools.combinations(ordered, size)))


def _display_name(kind: str, origin: str, aliases: Sequence[str],
                  merges: Iterable[Merge]) -> str:
    """The canonical name: a gazetteer name if merged by alias, else the fullest form."""
    if any(m.rule == "known_alias" for m in merges) or kind != "person":
        return origin if origin in aliases else aliases[0]
    return max(aliases, key=lambda a: (len(a.split()), len(a)))


def restrict(entity: Entity, forms: Collection[str]) -> Entity | None:
    """``entity`` as only ``forms`` name it (the forms of the memories that still mention
    it): the other aliases and their merges leave (a merge whose evidence names a form
    that left keeps only its rule), and the name is chosen again by the resolver's rule
    (a gazetteer name stays with a form it stands for). None when no form is left.

    >>> r = EntityResolver("u1")
    >>> _ = [r.resolve(s, "person") for s in ("Melanie", "Mel", "Melanie Okafor")]
    >>> r.entities[0].name, restrict(r.entities[0], {"mel", "melanie"}).name
    ('melanie okafor', 'melanie')
    >>> restrict(r.entities[0], {"mel", "melanie"}).merges[0].evidence
    "'mel' begins the first name of the only person 'melanie'"
    >>> restrict(r.entities[0], {"mel"}).merges, restrict(r.entities[0], {"x"})
    ((), None)
    """
    wanted = set(forms) | {ALIASES[f] for f in forms if f in ALIASES}
    aliases = tuple(a for a in entity.aliases if a in wanted)
    if not aliases:
        return None
    origin = entity.name if entity.name in aliases else aliases[0]
    merges = []
    for merge in entity.merges:
        if merge.alias not in aliases or (merge.alias == aliases[0]
                                          and entity.aliases[0] not in aliases):
            continue  # a form that left, or the form the entity now starts from
        quoted = {a or b for a, b in _QUOTED.findall(merge.evidence)}
        if not quoted <= set(aliases):  # the evidence names a form that left
            merge = Merge(merge.entity_id, merge.alias, merge.rule,
                          f"joined by the {merge.rule} rule")
        merges.append(merge)
    return Entity(entity.id, entity.owner, _display_name(entity.type, origin, aliases, merges),
                  entity.type, aliases, tuple(merges))


def new_entity_id(owner: str, kind: str, name: str, *, taken: Container[str] = (),
                  id_key: bytes = b"") -> str:
    """The id of a new entity: a BLAKE2b of owner, type and name, keyed by ``id_key``
    (16 hex digits; 12 without a key), with ``_2``, ``_3`` ... while ``taken`` has it.

    >>> new_entity_id("u1", "person", "melanie")
    'ent_232ed7c759b1'
    >>> len(new_entity_id("u1", "person", "melanie", id_key=b"k" * 32))
    20
    """
    digest = hashlib.blake2b(f"{owner}\x1f{kind}\x1f{name}".encode(), key=id_key,
                             digest_size=8 if id_key else 6).hexdigest()
    entity_id, n = f"ent_{digest}", 1
    while entity_id in taken:
        n += 1
        entity_id = f"ent_{digest}_{n}"
    return entity_id


def _strip_suffix(name: str) -> str:
    words = name.replace(",", " ").split()
    while len(words) > 1 and words[-1] in _ORG_SUFFIX:
        words.pop()
    return " ".join(words)


def informativeness(doc_freq: int, n_docs: int) -> float:
    """How much an entity tells apart the memories that mention it, in (0, 1]: BM25's
    inverse document frequency, scaled so an entity in one memory weighs 1.

    An entity mentioned by every memory (a speaker, the owner) weighs almost nothing, so a
    graph walk through it spreads little.

    Parameters
    ----------
    doc_freq : how many of the owner's memories mention the entity
    n_docs : how many memories the owner has

    Returns
    -------
    float in [0, 1]; 0 for an entity no memory mentions.

    Examples
    --------
    >>> round(informativeness(1, 1000), 3), round(informativeness(10, 1000), 3)
    (1.0, 0.701)
    >>> round(informativeness(1000, 1000), 4)
    0.0001
    """
    if n_docs <= 0 or doc_freq <= 0:
        return 0.0
    doc_freq = min(doc_freq, n_docs)
    top = math.log1p((n_docs - 0.5) / 1.5)
    if top <= 0:
        return 1.0
    return math.log1p((n_docs - doc_freq + 0.5) / (doc_freq + 0.5)) / top


def entity_weights(doc_freqs: Mapping[str, int], n_docs: int) -> dict[str, float]:
    """``informativeness`` of every entity, from how many of the owner's ``n_docs`` memories
    mention each.

    Parameters
    ----------
    doc_freqs : entity id -> number of the owner's memories that mention it
    n_docs : how many memories the owner has

    Returns
    -------
    dict of entity id -> weight in [0, 1]

    Examples
    --------
    >>> weights = entity_weights({"caroline": 40, "sweden": 2, "melanie": 38}, 40)
    >>> {entity: round(w, 3) for entity, w in weights.items()}
    {'caroline': 0.004, 'sweden': 0.846, 'melanie': 0.019}
    """
    return {entity: informativeness(count, n_docs) for entity, count in doc_freqs.items()}
