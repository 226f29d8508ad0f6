"""Typed entity mentions found by deterministic rules: capitalised names, a gazetteer, cue
phrases, product versions, event nouns, dialogue speakers and (through ``parse_times``) dates."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ._gazetteer import ALIASES, KNOWN_ORGS, KNOWN_PRODUCTS, PLACES
from ._lexicon import (
    ACRONYMS,
    COMMON_STARTERS,
    COUNTER_NOUNS,
    EVENT_MODIFIERS,
    EVENT_NEEDS_MODIFIER,
    EVENT_NOUNS,
    FIRST_NAMES,
    FUNCTION_WORDS,
    HOLIDAYS,
    ORG_PREFIXES,
    ORG_SUFFIXES,
    PERSON_TITLES,
    PLACE_SUFFIXES,
    RELATION_NOUNS,
    words,
)
from ._scan import disjoint, ending_at, finditer, search, starting_at
from ._text import normalize, person_speaker, speaker_label
from ._time import TimeMention, parse_times

__all__ = ["ENTITY_TYPES", "EntityType", "Mention", "extract_mentions"]

EntityType = Literal["person", "place", "organization", "product", "event", "date", "other"]
ENTITY_TYPES: tuple[EntityType, ...] = ("person", "place", "organization", "product", "event",
                                        "date", "other")


@dataclass(frozen=True, slots=True)
class Mention:
    """A typed entity mention: the characters ``text[start:end]``, and the ``normalized`` form
    the resolver groups by (for a date, the label of its window, e.g. ``2023-05-08``)."""

    surface: str
    start: int
    end: int
    type: EntityType
    normalized: str


_TOKEN = (r"(?:[A-Z](?:[\w&+]|-(?![a-z])|['’](?=[A-Za-z])(?!s\b)|\.(?=\w))*|[a-z]+[A-Z][\w+]*|"
          r"\d+[A-Z][\w]*)")
_CONNECTOR = r"(?:of|the|de|da|do|du|van|von|der|den|del|la|le|di|&)"
#: Connectors are taken for good (``*+``): no name starts with one, and handing them back one
#: by one to the name after them is what a backtracking engine would otherwise try.
_SPAN = re.compile(rf"(?<![\w@/.])(?:(?:Mr|Mrs|Ms|Dr|Prof)\.?[ \t]+|(?:Aunt|Uncle|Grandma|Grandpa|"
                   rf"Auntie)[ \t]+(?=[A-Z]))?{_TOKEN}"
                   rf"(?:[ \t]+(?:{_CONNECTOR}[ \t]+)*+{_TOKEN})*")
_WORD = re.compile(r"\S+")
#: the longest name a text may mention, in words and in characters ("The Royal Society
#: for the Protection of Birds" has 8 and 45): a longer capitalised run names nothing
MAX_NAME_WORDS, MAX_NAME_CHARS = 12, 120
_CONNECTOR_WORD = re.compile(_CONNECTOR)
_INITIAL_BEFORE = set(".!?:;\"“(\n•*→-–—[")
#: what may stand between a sentence's end and its first word: spaces, and the variation
#: selector and joiner of an emoji ("❤️")
_BETWEEN = frozenset(" \t\ufe0f\u200d")
#: the Unicode categories of an emoji and of its skin tone ("👍🏽")
_EMOJI = frozenset({"So", "Sk"})
_TIME_WORDS = words("january february march april may june july august september october "
                    "november december monday tuesday wednesday thursday friday saturday sunday "
                    "mondays tuesdays wednesdays thursdays fridays saturdays sundays "
                    "today yesterday tomorrow tonight")
#: function words, which are no names alone, less those that are also first names ("Will")
_NOT_NAMES = FUNCTION_WORDS - frozenset({"will"})
_DROP = frozenset({"I", "I'm", "I've", "I'd", "I'll", "I’m", "I’ve", "I’d", "I’ll"})
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]")
#: A product name before its version. The name runs to the end of a run of name characters
#: ("C++", "GPT-4o") and starts at the first position of that run where a name may start
#: ("3d-Max v2": "Max"). Each pattern enters a run at its first character and finds that start
#: inside an atomic group, so a run is read once: tried from every position of a run, 30,000
#: characters of "Aa-" took 11 s.
_NAME_RUN = r"(?<![\w+#-])(?>[\w+#-]*?{start})(?P<name>[\w+#-]+)[ \t]+"
_VERSION_V = re.compile(_NAME_RUN.format(start=r"\b(?=[A-Za-z])") +
                        r"(?P<ver>v\d+(?:\.\d+)*)\b")
_VERSION_CAP = re.compile(
    _NAME_RUN.format(start=r"(?<![\w.])(?=[A-Z]|[a-z]+[A-Z])") +
    r"(?P<ver>\d+(?:\.\d+)*\+?)(?![\w%]|[.,]\d|\s*(?i:%|gb|mb|km|kg|ms|usd|eur|am|pm|people|"
    r"users|minutes|hours|days|weeks|months|years)\b)")
_VERSION_LOWER = re.compile(_NAME_RUN.format(start=r"(?<![\w.])(?=[a-z][\w+#-]{2})") +
                            r"(?P<ver>\d+\.\d+(?:\.\d+)*)(?![\w%]|\.\d)")
_EVENT = re.compile(r"\b(?:" + "|".join(sorted(EVENT_NOUNS, key=len, reverse=True)) + r")\b",
                    re.IGNORECASE)
_MODIFIER_TOKEN = re.compile(r"([A-Za-z][\w'’-]*)[ \t]+$")
_PLACE_CUE = re.compile(
    r"(?:\b(?:moved|move|moves|moving|relocated|relocating|relocate|trip|travel(?:l?ed|l?ing|s)?"
    r"|flew|fly|flying|flight|drove|drive|driving|road\s+trip|headed|heading|went|go|going|"
    r"get|got|came|come|back)\s+(?:back\s+)?(?:to|from)\b|\b(?:lives?|living|lived|born|"
    r"grew\s+up|vacation|holiday|holidays|based|located|stay(?:ed|ing)?|raised|settled|"
    r"studying|study|studied|weekend|week|days|months|years|spent\s+\w+)\s+in\b|"
    r"\bvisit(?:ed|ing|s)?\b|\b(?:works?|working|worked)\s+from\b|"
    r"\b(?:is|am|are|'m|’m|was|were|comes?|came|'s|’s)\s+from\b)\s*(?:the\s+)?$", re.IGNORECASE)
_ORG_CUE = re.compile(
    r"\b(?:(?:works?|working|worked|job|intern(?:ing|ship)?|position|role|career|employed|"
    r"hired|studies|study|studying|studied|student|candidate|professor|teacher|researcher|"
    r"volunteer(?:s|ed|ing)?|engineer|manager|nurse|doctor|developer|designer)\s+"
    r"(?:at|for|by|with)|joined|joining|join|left|quit)\s+(?:the\s+)?$", re.IGNORECASE)
_PERSON_AFTER = re.compile(r"\s*(?:said|says|told|tells|asked|asks|and\s+I\b|texted|called|"
                           r"replied|mentioned|thinks|wants|loves|likes|is\s+my|was\s+my)\b",
                           re.IGNORECASE)
_PERSON_BEFORE = re.compile(
    r"(?:\b(?:my|his|her|their|our|your)|['’]s)\s+(?:(?:best|older|younger|little|big|twin|"
    r"late|ex|new|old|dear)[\s-]+)?(?:" + "|".join(RELATION_NOUNS) +
    r")s?,?\s+(?:(?:is\s+)?(?:called|named)\s+)?$|\b(?:told|asked|met|meet|texted|thanks|thank|"
    r"hugged|dating|married|marry)\s+$", re.IGNORECASE)
_PLACE_AFTER = re.compile(r",\s*([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)")


def extract_mentions(text: str, *, now: datetime | None = None,
                     times: Sequence[TimeMention] | None = None) -> list[Mention]:
    """The typed entity mentions of ``text``, in order, none overlapping.

    ``now`` resolves relative dates (else only absolute ones are dates); ``times`` passes
    time mentions already found for this text, so they are not parsed twice.

    Rules, in order of precedence: dates; products with a version ("PostgreSQL 16", "orchard
    v1.9.0", "axum 0.7"); events (wedding, conference, "birthday party", a name before an
    event noun); dialogue speakers ("Caroline: ...") are persons; capitalised spans (minus
    sentence-opening common words, pronouns, months and all-capital common nouns like API)
    typed by title (Dr., Prof.), alias and gazetteer, organisation suffix or prefix (Inc,
    Bank, University of ...), known product or camel case (iPhone, TypeScript), event noun,
    first name, cue phrase (moved to / lives in X: place; works at X: organisation; my
    sister X, X said: person), else ``other``. A name typed somewhere in the text gives its
    type to its untyped repetitions and to its parts ("Caroline Smith" ... "Caroline").

    Parameters
    ----------
    text : the text to search
    now : the reference time for relative dates (optional)
    times : the text's time mentions, if already parsed with ``parse_times``

    Returns
    -------
    list of Mention, in text order: surface, character offsets, type (person, place,
    organization, product, event, date, other) and normalized form.

    Examples
    --------
    >>> [(m.surface, m.type) for m in extract_mentions(
    ...     "Caroline: My sister Anna moved to Lisbon and works at Acme Inc.")]
    [('Caroline', 'person'), ('Anna', 'person'), ('Lisbon', 'place'), ('Acme Inc', 'organization')]
    >>> [(m.surface, m.type, m.normalized) for m in extract_mentions(
    ...     "Orchard's API moved to PostgreSQL 16 after the wedding on 8 May, 2023.")]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('Orchard', 'other', 'orchard'), ('PostgreSQL 16', 'product', 'postgresql 16'),
     ('wedding', 'event', 'wedding'), ('8 May, 2023', 'date', '2023-05-08')]
    """
    if times is None:
        times = parse_times(text, now)
    found: list[tuple[int, Mention]] = []  # (rank, mention): lower rank wins an overlap
    for t in times:
        holiday = search(_HOLIDAY, t.surface)
        if holiday is None:
            found.append((0, Mention(t.surface, t.start, t.end, "date", t.window.label)))
        else:  # a holiday is an event; its date stays with the time expression
            start, end = t.start + holiday.start(), t.start + holiday.end()
            found.append((0, Mention(text[start:end], start, end, "event",
                                     normalize(text[start:end]))))
    found += [(1, m) for m in _versions(text)]
    found += [(2, m) for m in _events(text)]
    speakers = _speakers(text)
    found += [(2, m) for m in speakers]
    found += [(3, m) for m in _names(text, {m.start for m in speakers})]
    ranked = sorted(found, key=lambda rm: (rm[0], rm[1].start - rm[1].end, rm[1].start))
    chosen = disjoint((m for _, m in ranked), lambda m: (m.start, m.end), len(text))
    chosen.sort(key=lambda m: m.start)
    return _consistent(_join_possessive_orgs(text, chosen))


_HOLIDAY = re.compile("|".join(sorted((r"\s+".join(w.replace("'", "['’]?") for w in name.split())
                                        for name in HOLIDAYS), key=len, reverse=True)),
                      re.IGNORECASE)


def _versions(text: str) -> list[Mention]:
    out = []
    for pattern in (_VERSION_V, _VERSION_CAP, _VERSION_LOWER):
        for m in finditer(pattern, text):
            name = m["name"]
            first = name.split()[0]
            common = (name.lower() in COUNTER_NOUNS or first.lower() in FUNCTION_WORDS
                      or first in COMMON_STARTERS or first.lower() in _TIME_WORDS
                      or first.upper() in ACRONYMS or name.lower() in FIRST_NAMES
                      or first.lower() in COUNTER_NOUNS)
            # "v1.2" marks a version after any name but a function word ("to v2").
            if common and (pattern is not _VERSION_V or name.lower() in FUNCTION_WORDS):
                continue
            surface = text[m.start("name"):m.end()]
            out.append(Mention(surface, m.start("name"), m.end(), "product", normalize(surface)))
    return out


def _events(text: str) -> list[Mention]:
    out = []
    for m in finditer(_EVENT, text):
        start, noun = m.start(), m.group(0).lower()
        modifiers = 0
        while modifiers < 2:
            before = ending_at(_MODIFIER_TOKEN, text, start)
            if before is None:
                break
            word = before.group(1)
            if word.endswith(("'s", "’s", "'", "’")):  # "Amara's wedding": a possessor
                break
            if word.lower() in EVENT_MODIFIERS or (
                    word[0].isupper() and word not in COMMON_STARTERS and
                    word.lower() not in FUNCTION_WORDS and word.lower() not in _TIME_WORDS):
                start = before.start(1)
                modifiers += 1
            else:
                break
        if noun in EVENT_NEEDS_MODIFIER and not modifiers:
            continue
        surface = text[start:m.end()]
        out.append(Mention(surface, start, m.end(), "event", normalize(surface)))
    return out


def _speakers(text: str) -> list[Mention]:
    out = []
    offset = 0
    for line in text.split("\n"):
        found = speaker_label(line)
        if found is not None and person_speaker(found[0]):  # "Assistant:" is no person
            name, start, end = found
            out.append(Mention(name, offset + start, offset + end, "person", normalize(name)))
        offset += len(line) + 1
    return out


def _initial(text: str, position: int) -> bool:
    """Whether a word at ``position`` opens a sentence, heading, list item or quotation."""
    j = position - 1
    while j >= 0 and text[j] in _BETWEEN:
        j -= 1
    # chat text ends sentences with an emoji as often as with a full stop ("so stressed
    # 😅 And my knee ...")
    return j < 0 or text[j] in _INITIAL_BEFORE or unicodedata.category(text[j]) in _EMOJI


def _names(text: str, speaker_starts: set[int]) -> list[Mention]:
    spans: list[tuple[bool, list[tuple[int, str]]]] = []
    mid_sentence: set[str] = set()
    for m in finditer(_SPAN, text):
        tokens = [(t.start(), t.group(0))
                  for t in finditer(_WORD, text, m.start(), m.end())]
        initial = _initial(text, m.start()) and m.start() not in speaker_starts
        spans.append((initial, tokens))
        mid_sentence.update(w for i, (_, w) in enumerate(tokens) if i or not initial)
    out = []
    for initial, tokens in spans:
        for part in _split(tokens):
            if initial and part[0][0] == tokens[0][0]:
                # the sentence's own first words are no name ("Then Ana came"); counted,
                # not sliced off one at a time (quadratic in a span of 100k words)
                first = 0
                while first < len(part) and (_starter(part[first][1])
                                             or _CONNECTOR_WORD.fullmatch(part[first][1])):
                    first += 1
                part = part[first:]
                if not part:
                    continue
                if part[0][0] == tokens[0][0] and len(part) == 1 and \
                        not _name_like(text, part[0], mid_sentence):
                    continue
            start, end = part[0][0], part[-1][0] + len(part[-1][1])
            if len(part) > MAX_NAME_WORDS or end - start > MAX_NAME_CHARS:
                continue  # a run of capitalised words this long is no name
            surface = text[start:end]
            words = surface.split()
            # a lone function word is no name wherever it stands ("lol And then ..."),
            # unless written as an acronym ("the US") or a name too ("I met Will")
            if len(words) == 1 and (surface.upper() in ACRONYMS or
                                    surface.lower() in _TIME_WORDS or _shouted(surface)
                                    or (surface.lower() in _NOT_NAMES
                                        and not surface.isupper())):
                continue
            out.append(Mention(surface, start, end, _classify(text, start, end, words),
                               normalize(surface)))
    return out


def _split(tokens: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Cut a capitalised span at pronouns ("I"), months and weekdays; drop edge connectors."""
    parts: list[list[tuple[int, str]]] = [[]]
    for position, word in tokens:
        if word in _DROP or word.lower() in _TIME_WORDS or word in ACRONYMS:
            parts.append([])
        else:
            parts[-1].append((position, word))
    out = []
    for part in parts:
        first, end = 0, len(part)
        while end > first and _CONNECTOR_WORD.fullmatch(part[end - 1][1]):
            end -= 1
        while first < end and _CONNECTOR_WORD.fullmatch(part[first][1]):
            first += 1
        if first < end:
            out.append(part[first:end])
    return out


def _shouted(word: str) -> bool:
    """An ordinary word written in capitals for emphasis ("NOT", "PASSED"), not an
    acronym: a function word of three letters or more (not "US", "IT"), or a verb or
    adverb form.

    >>> _shouted("NOT"), _shouted("PASSED"), _shouted("NHS"), _shouted("US")
    (True, True, False, False)
    """
    lower = word.lower()
    return word.isupper() and word.isalpha() and len(word) > 2 and (
        lower in FUNCTION_WORDS or (len(word) > 4 and lower.endswith(("ed", "ing", "ly"))))


def _starter(word: str) -> bool:
    """A capitalised word that opens sentences without being a name."""
    if word in COMMON_STARTERS or word.replace("’", "'") in COMMON_STARTERS:
        return True
    lower = word.lower()
    return len(word) > 4 and lower.endswith(("ed", "ing", "ly")) and lower not in FIRST_NAMES


def _name_like(text: str, token: tuple[int, str], mid_sentence: set[str]) -> bool:
    """Whether a lone capitalised word at a sentence start is a name: known, possessive,
    seen capitalised mid-sentence, non-ASCII, camel case or with digits."""
    position, word = token
    lower = word.lower()
    return (lower in FIRST_NAMES or lower in PLACES or lower in ALIASES or lower in KNOWN_ORGS
            or lower in KNOWN_PRODUCTS or word in mid_sentence or not word.isascii()
            or _camel(word) or text.startswith(("'s", "’s"), position + len(word))
            or starting_at(_PERSON_AFTER, text, position + len(word)) is not None)


def _camel(word: str) -> bool:
    """iPhone, TypeScript, ESP32, B2: a brand-like spelling, not a name."""
    return word[0].islower() or _CAMEL.search(word) is not None


def _classify(text: str, start: int, end: int, words: list[str]) -> EntityType:
    norm = normalize(" ".join(words))
    tokens = norm.split()
    first, last = words[0].lower().rstrip("."), tokens[-1].rstrip(".")
    before, after = text[max(0, start - 40):start], text[end:end + 24]
    if first in PERSON_TITLES and len(words) > 1:
        return "person"
    if norm in ALIASES:
        return "place" if ALIASES[norm] in PLACES else "organization"
    if last in ORG_SUFFIXES or (len(tokens) > 2 and tokens[0] in ORG_PREFIXES and
                                tokens[1] == "of") or norm in KNOWN_ORGS:
        return "organization"
    if norm in KNOWN_PRODUCTS or any(_camel(w) for w in words
                                     if not _CONNECTOR_WORD.fullmatch(w)):
        return "product"
    if last in EVENT_NOUNS or norm in HOLIDAYS:
        return "event"
    if len(tokens) > 1 and last in PLACE_SUFFIXES:
        return "place"
    # An all-capital word after "went to" is rarely a place ("went to the LGBTQ group").
    place_cue = search(_PLACE_CUE, before) is not None and not "".join(words).isupper()
    if norm in PLACES and (tokens[0] not in FIRST_NAMES or place_cue):
        return "place"
    if tokens[0] in FIRST_NAMES or search(_PERSON_BEFORE, before) or \
            starting_at(_PERSON_AFTER, after, 0):
        return "person"
    place_after = starting_at(_PLACE_AFTER, after, 0)
    if place_cue or (place_after and place_after.group(1).lower() in PLACES):
        return "place"
    if search(_ORG_CUE, before):
        return "organization"
    return "other"


def _join_possessive_orgs(text: str, mentions: list[Mention]) -> list[Mention]:
    """"St Mary's Hospital", "Joe's Bakery": a possessive name before an organisation word is
    one organisation."""
    out: list[Mention] = []
    for m in mentions:
        previous = out[-1] if out else None
        if previous is not None and m.type == "organization" and \
                text[previous.end:m.start] in ("'s ", "’s ") and \
                normalize(m.surface).split()[0] in ORG_SUFFIXES:
            surface = text[previous.start:m.end]
            out[-1] = Mention(surface, previous.start, m.end, "organization", normalize(surface))
        else:
            out.append(m)
    return out


def _consistent(mentions: list[Mention]) -> list[Mention]:
    """One type per name within a text: typed repetitions and parts of a person's full name
    type the ``other`` ones."""
    typed: dict[str, EntityType] = {}
    for m in mentions:
        if m.type not in ("other", "date"):
            typed.setdefault(m.normalized, m.type)
            if m.type == "person":
                for part in m.normalized.split():
                    typed.setdefault(part, "person")
    return [Mention(m.surface, m.start, m.end, typed[m.normalized], m.normalized)
            if m.type == "other" and m.normalized in typed else m for m in mentions]
