"""Deterministic fact patterns: verb rules ("X works at Y", "I moved to Y"), relation nouns ("X's
sister Y") and roles ("X is a nurse at Y") over a text's mentions, with validity from its times."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ._calendar import TimeWindow
from ._entities import EntityType, Mention, extract_mentions
from ._facts import Fact
from ._lexicon import FUNCTION_WORDS, PET_NOUNS, RELATION_NOUNS, ROLE_STUDY_WORDS, words
from ._scan import CONTEXT, ending_at, finditer, search, starting_at
from ._text import Sentence, normalize, person_speaker, sentences, speaker_label
from ._time import TimeMention, parse_times

__all__ = ["extract_facts", "sentence_validity"]

_PLACE: frozenset[EntityType] = frozenset({"place", "other"})
# Companies often share their name with a product ("a designer at Figma").
_ORG: frozenset[EntityType] = frozenset({"organization", "other", "place", "product"})
_PERSON: frozenset[EntityType] = frozenset({"person", "other"})
_EVENT: frozenset[EntityType] = frozenset({"event"})
_ANY: frozenset[EntityType] = frozenset({"person", "place", "organization", "product", "event",
                                         "other"})


#: (name, type, confidence factor, start) of a subject; (name, type, end, factor) of an object.
_Subject = tuple[str, EntityType, float, int]
_Object = tuple[str, EntityType, int, float]


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    predicate: str
    pattern: str
    objects: str                       # "entity", "np" or "either"
    types: frozenset[EntityType]       # allowed entity objects
    confidence: float


_RULES = [
    _Rule("dislikes", "dislikes", r"(?:hates?|hated|dislikes?|disliked|detests?|can['’]?t\s+stand|"
          r"cannot\s+stand|(?:don['’]t|doesn['’]t|didn['’]t|does\s+not|do\s+not|did\s+not)\s+"
          r"(?:like|want|enjoy)|(?:is|am|'m|are)\s+not\s+a\s+fan\s+of)", "either", _ANY, 0.8),
    _Rule("fan_of", "likes", r"(?:is|am|'m|’m|are|was|'s|’s)\s+(?:a\s+|such\s+a\s+)?(?:big\s+|"
          r"huge\s+|great\s+)?fan\s+of", "either", _ANY, 0.8),
    _Rule("likes", "likes", r"(?:likes?|liked|loves?|loved|enjoys?|enjoyed|adores?|adored|"
          r"(?:is|am|'m|’m|are)\s+(?:really\s+|so\s+|totally\s+|very\s+)?into)", "either", _ANY,
          0.8),
    _Rule("prefers", "prefers", r"(?:prefers?|preferred)", "either", _ANY, 0.85),
    _Rule("wants", "wants", r"(?:wants?|wanted|would\s+like|['’]d\s+like)", "either", _ANY, 0.6),
    _Rule("works_at", "works_at", r"(?:works?|working|worked)\s+(?:at|for)", "either", _ORG, 0.9),
    _Rule("job_at", "works_at", r"(?:is|am|'m|’m)\s+(?:interning|employed)\s+(?:at|by|with)",
          "either", _ORG, 0.85),
    _Rule("studies_at", "studies_at", r"(?:studies|study|studying|studied|enrolled)\s+at",
          "entity", _ORG, 0.85),
    _Rule("works_from", "lives_in", r"(?:works?|working)\s+from", "entity", _PLACE, 0.6),
    _Rule("lives_in", "lives_in", r"(?:lives?|living|lived|resides?|residing|(?:is|am|'m|’m|are)"
          r"\s+based)\s+(?:(?:alone|together|happily|there|now|still)\s+)?in", "entity", _PLACE,
          0.9),
    _Rule("moved_to", "moved_to", r"(?:moved|relocated)\s+(?:back\s+)?to", "entity", _PLACE, 0.9),
    _Rule("from", "from", r"(?:(?:is|am|'m|’m|are|was|were|'s|’s)\s+(?:originally\s+)?from|"
          r"comes?\s+from|came\s+from|grew\s+up\s+in)", "entity", _PLACE, 0.8),
    _Rule("born_in", "born_in", r"(?:was|were)\s+born\s+in", "entity", _PLACE, 0.9),
    _Rule("married_to", "married_to", r"(?:(?:got|is|am|'m|’m|was|are)\s+married\s+to|married|"
          r"marries)", "entity", _PERSON, 0.9),
    _Rule("supervised_by", "supervisor", r"(?:supervised|advised|mentored)\s+by", "entity",
          _PERSON, 0.8),
    _Rule("is_a", "is_a", r"(?:is|am|'m|’m|was|'s|’s|works\s+as|worked\s+as|became)\s+(?:a|an)",
          "np", _ANY, 0.75),
    _Rule("bought", "bought", r"(?:bought|buys|purchased)", "either", _ANY, 0.8),
    _Rule("adopted", "adopted", r"(?:adopted|adopts)", "either", _ANY, 0.85),
    _Rule("started", "started", r"(?:started|starts|began)", "either", _ANY, 0.7),
    _Rule("joined", "joined", r"(?:joined|joins)", "either", _ANY, 0.8),
    _Rule("uses", "uses", r"(?:uses|using|use|used|switched\s+to)(?!\s+to\b)", "either", _ANY,
          0.8),
    _Rule("took_part", "attended", r"(?:ran|finished|completed|celebrated|competed\s+in|"
          r"participated\s+in|took\s+part\s+in)", "entity", _EVENT, 0.75),
    _Rule("went_to", "visited", r"(?:visited|visits|went\s+(?:back\s+)?to|goes\s+to|"
          r"(?:got|came|just\s+got)\s+back\s+from|returned\s+from|"
          r"travel(?:l?ed|s)\s+to|flew\s+to|drove\s+to|(?:was|were)\s+at|attended|attends)",
          "entity", frozenset({"place", "event"}), 0.75),
]
_VERBS = [re.compile(rf"\b{rule.pattern}\b", re.IGNORECASE) for rule in _RULES]
#: Strings one of which every match of a rule contains: a rule none of whose strings is in a
#: sentence is not run (measured: the rules as one alternation cost ~80 µs a text).
_RULE_GATES: dict[str, tuple[str, ...]] = {
    "dislikes": ("hate", "dislik", "detest", "stand", "n't", "n’t", "not"), "fan_of": ("fan",),
    "likes": ("like", "love", "enjoy", "ador", "into"), "prefers": ("prefer",),
    "wants": ("want", "like"), "works_at": ("work",), "job_at": ("interning", "employed"),
    "studies_at": ("stud", "enrolled"), "works_from": ("work",),
    "lives_in": ("live", "living", "resid", "based"), "moved_to": ("moved", "relocated"),
    "from": ("from", "grew"), "born_in": ("born",), "married_to": ("marr",),
    "supervised_by": ("supervised", "advised", "mentored"), "is_a": (" a ", " an "),
    "bought": ("bought", "buys", "purchased"), "adopted": ("adopt",),
    "started": ("start", "began"), "joined": ("join",), "uses": ("use", "using", "switched"),
    "took_part": ("ran", "finished", "completed", "celebrated", "competed", "participated",
                  "took"),
    "went_to": ("visit", "went", "goes", "travel", "flew", "drove", "back", "returned", " at",
                "attend"),
}
_GATES = [_RULE_GATES[rule.name] for rule in _RULES]
_RELATION = re.compile(
    r"\b(?:(?:best|older|younger|little|big|twin|late|ex|new|old|baby|step)[\s-]+)?"
    r"(?P<rel>" + "|".join(sorted(set(RELATION_NOUNS) | PET_NOUNS, key=len, reverse=True)) +
    r")(?P<pl>s)?\b", re.IGNORECASE)
_RELATION_WORDS = tuple(sorted(set(RELATION_NOUNS) | PET_NOUNS))
_AUX = words("also just recently finally now still really actually always never usually "
                 "often currently officially already has have had 've ’ve 's ’s 'd ’d is am are "
                 "was were be been being will would 'll ’ll can could did does do soon then "
                 "later eventually even both all absolutely totally truly mostly")
_NEGATION = re.compile(r"\b(?:not|never|no\s+longer)\s*$|n['’]t\s*$", re.IGNORECASE)
_FIRST_PERSON = {"i": 1.0, "we": 0.8}
_THIRD_PERSON = frozenset({"he", "she", "they"})
_DETERMINERS = words("a an the my his her their our your some this that these those any")
#: Words before an object that are not part of it ("especially Chopin", "my old iPhone 11").
_OBJECT_ADVERBS = words("especially mostly mainly particularly also even just really only")
_NP_WORD = re.compile(r"[A-Za-z0-9][\w'’+#-]*")
_NOT_ROLES = words("bit lot little great good nice huge big way thing must while few couple "
                       "joke pain mess problem question time idea moment chance risk sec second "
                       "minute shame pity relief blessing dream reminder fan part kind sort "
                       "type lot lots")
_OWNER_WORDS = {"my": "speaker", "our": "speaker", "his": "pronoun", "her": "pronoun",
                "their": "pronoun"}
_NAMED = re.compile(r"(?:,\s*|\s+(?:is\s+|was\s+)?(?:called|named)\s+|\s+)")
_APPOSITION = re.compile(r"(?:,\s*|\s+(?:is|was)\s+)$")
_HAS_A = re.compile(r"\b(?:have|has|had|adopted|got|bought|rescued)\s+(?:a|an|two|three|"
                    r"new)\s+(?:new\s+|little\s+|cute\s+)?$", re.IGNORECASE)
_COORD = re.compile(r"\s*(?:,\s*and|,|and|&|or)\s+")
_OBJECT_LEAD = re.compile(r"\s*(?:(?:especially|mostly|mainly|particularly|also|even|just|really|"
                          r"only)\s+)?(?:(?:the|a|an|my|his|her|their|our|your)\s+)?"
                          r"(?:\w+['’]s\s+)?", re.IGNORECASE)
_NEAR_NAME = re.compile(r"([a-z][a-z-]*)\s+")
_JOB = re.compile(r"\b(?:job|position|internship|role|team|office)\s+(?:at|with)\s+(?:the\s+)?",
                  re.IGNORECASE)
_JOB_LEFT = re.compile(r"(?:\s+(?:a|an|the|new|first|dream|current|part-time|full-time|summer|"
                       r"great))*\s*$", re.IGNORECASE)
_JOB_VERB = re.compile(r"\b(?:got|get|getting|started|starting|start|landed|found|accepted|"
                       r"took|have|has|had|began|love|loves)$", re.IGNORECASE)
_JOB_PAST = re.compile(r"\b(?:quit|quitting|left|leaving|lost|losing|former|ex|old|previous|"
                       r"last)\b[\w\s]{0,12}$", re.IGNORECASE)
_CALLED = re.compile(r"(?:\s*+,)?\s++(?:called|named)\s++")
_CARRY = re.compile(r"(?:,|\b(?:and|but|then|so|and\s+then|,\s*and))\s*$", re.IGNORECASE)
_CLAUSE_BREAK = re.compile(r";|\bbut\b|\bwhile\b|\bwhereas\b|\bbecause\b|\balthough\b",
                           re.IGNORECASE)
_CONTRACTION = re.compile(r"^(?:i|you|we|they|he|she|it|that|there|let)['’]")
_NP_STOP = words("named called who which that because since")


_WORD = re.compile(r"\S+")
_FIRST_WORD = re.compile(r"\s*+(\S+)")
_MARK = re.compile(r"[.!?\n]")
_AND_BEFORE = re.compile(r"(?:\s+and|\s*&|,)\s+$")
_GLUED = re.compile(r" ([a-z][\w-]*)")
_RANGE_TO = re.compile(r"\b(?:to|until|till|through)\s*$")
_UNTIL = re.compile(r"\b(?:until|till)\s+$")
_AT_ORG = re.compile(r"\s+(?:at|for|with)\s+(?:the\s+)?")


@dataclass(slots=True)
class _Persons:
    """The persons a text names (speaker labels left out), in text order, and where its
    sentence marks stand (found on first use): whom "he/she/they/his/her" means."""

    text: str
    found: list[Mention]
    starts: list[int] = field(init=False)
    ends: list[int] = field(init=False)
    marks: list[int] | None = None

    def __post_init__(self) -> None:
        self.starts = [m.start for m in self.found]
        self.ends = [m.end for m in self.found]

    def referent(self, before: int, sentence_start: int) -> Mention | None:
        """The first person named before ``before`` in the same sentence, else the first
        one named in the closest earlier sentence that names one (a sentence's subject is
        more often referred to than its object). Mentions do not overlap, so ends are in
        order too, and each step is a binary search."""
        count = bisect.bisect_right(self.ends, before)
        if count == 0:
            return None
        first_in_sentence = bisect.bisect_left(self.starts, sentence_start)
        if first_in_sentence < count:
            return self.found[first_in_sentence]
        if self.marks is None:
            self.marks = [m.start() for m in finditer(_MARK, self.text)]
        last = self.found[count - 1]
        mark = bisect.bisect_left(self.marks, last.start)
        cut = self.marks[mark - 1] if mark else -1
        return self.found[bisect.bisect_right(self.starts, cut)]


@dataclass(slots=True)
class _Scope:
    text: str
    sentence: Sentence
    speaker: str | None
    persons: _Persons              # of the whole text
    labels: frozenset[int]         # starts of speaker-label mentions
    times: list[TimeMention]       # of this sentence
    by_start: dict[int, Mention]
    by_end: dict[int, Mention]


def extract_facts(text: str, *, speaker: str | None = None, now: datetime | None = None,
                  mentions: Sequence[Mention] | None = None,
                  times: Sequence[TimeMention] | None = None) -> list[Fact]:
    """The facts ``text`` states, by deterministic patterns over its mentions.

    ``speaker`` is who says the text (first-person statements are about them; a dialogue
    label "Caroline: ..." overrides it per line); ``now`` resolves relative times for
    validity. ``mentions`` and ``times`` pass what was already extracted from this text.
    Questions, negated statements ("doesn't work at") and plans ("will move to") state no
    fact; "he/she/they" is the subject named last before. "moved to Y" also gives
    ``lives_in`` Y from the move's time.

    Parameters
    ----------
    text : the text (one message, one memory)
    speaker : who says it, for "I", "my", "we" (optional)
    now : the reference time for validity from relative times (optional)
    mentions, times : what ``extract_mentions`` / ``parse_times`` found in this text already

    Returns
    -------
    list of Fact, by position in the text, each (subject, predicate, object) once.

    Examples
    --------
    >>> from datetime import UTC
    >>> now = datetime(2023, 5, 10, tzinfo=UTC)
    >>> [(f.subject, f.predicate, f.object, f.rule) for f in extract_facts(
    ...     "Caroline: I moved to Lisbon in 2022. My sister Anna works at Acme Inc.", now=now)]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('caroline', 'moved_to', 'lisbon', 'moved_to'), ('caroline', 'lives_in', 'lisbon', 'moved_to'),
     ('caroline', 'sister', 'anna', 'relation'), ('anna', 'works_at', 'acme inc', 'works_at')]
    >>> [f.valid_from.year for f in extract_facts("I moved to Lisbon in 2022.",
    ...                                           speaker="Caroline")]
    [2022, 2022]
    >>> extract_facts("Does Caroline live in Lisbon?"), extract_facts("Mel doesn't live in Rome.")
    ([], [])
    """
    if times is None:
        times = parse_times(text, now)
    if mentions is None:
        mentions = extract_mentions(text, now=now, times=times)
    mentions = [m for m in mentions if m.type != "date"]
    by_start = {m.start: m for m in mentions}
    by_end = {m.end: m for m in mentions}
    line_starts, speakers = _dialogue(text)
    labels = frozenset(start for _, start in speakers.values())
    persons = _Persons(text, [m for m in mentions if m.type == "person"
                              and m.start not in labels])
    times = sorted(times, key=lambda t: t.start)
    time_starts = [t.start for t in times]
    out: list[Fact] = []
    for sentence in sentences(text):
        if sentence.text.rstrip("\"')").endswith("?"):
            continue
        line = line_starts[bisect.bisect_right(line_starts, sentence.start) - 1]
        label = speakers.get(line)
        said_by = person_speaker(label[0] if label else speaker)  # an assistant's "I": nobody
        scope = _Scope(text, sentence, normalize(said_by) if said_by else None, persons,
                       labels, times[bisect.bisect_left(time_starts, sentence.start):
                             bisect.bisect_left(time_starts, sentence.end)],
                       by_start, by_end)
        out += _verb_facts(scope)
        out += _relation_facts(scope)
        out += _job_facts(scope)
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for f in sorted(out, key=lambda f: f.span):
        if (f.subject, f.predicate, f.object) not in seen:
            seen.add((f.subject, f.predicate, f.object))
            unique.append(f)
    return unique


def _dialogue(text: str) -> tuple[list[int], dict[int, tuple[str, int]]]:
    """Where each line starts, and for the lines that open with a speaker label ("Caroline:
    ..."), the speaker and where the label starts, by the line's start."""
    starts: list[int] = []
    speakers: dict[int, tuple[str, int]] = {}
    offset = 0
    for line in text.split("\n"):
        starts.append(offset)
        found = speaker_label(line)
        if found is not None:
            speakers[offset] = (found[0], offset + found[1])
        offset += len(line) + 1
    return starts, speakers


# -- subjects and objects -------------------------------------------------------------------

def _subjects(s: _Scope, position: int
              ) -> tuple[list[_Subject], bool]:
    """Who does what the verb at ``position`` says: [(name, type, confidence factor, start)],
    and whether the verb continues the previous clause ("... and moved to Y")."""
    if ending_at(_NEGATION, s.text, position, s.sentence.start):
        return [], False
    words = _words_before(s, position)
    while words and words[-1][1].lower() in _AUX:
        words.pop()
    if not words:
        return [], False
    end, last = words[-1]
    word = last.lower().replace("’", "'")
    pronoun = word.split("'")[0]
    if pronoun in _FIRST_PERSON and s.speaker:
        found: list[_Subject] = [(s.speaker, "person", _FIRST_PERSON[pronoun],
                                  end - len(last))]
        if len(words) >= 3 and words[-2][1].lower() == "and":
            other = s.by_end.get(end - len(last) - len(" and "))
            if other is not None and other.start not in s.labels:
                found.insert(0, (other.normalized, other.type, 0.9, other.start))
        return found, False
    if pronoun in _THIRD_PERSON and word == pronoun:
        person = s.persons.referent(end - len(last), s.sentence.start)
        if person is None:
            return [], False
        return [(person.normalized, "person", 0.7, person.start)], False
    if word.endswith(","):
        apposed = _apposed(s, end - 1)
        if apposed is None:  # "X is ..., supervised by Y": the clause goes on with its subject
            return [], True
        end = apposed
    subject = s.by_end.get(end)
    if subject is None or subject.start in s.labels or subject.type in ("event", "date"):
        return [], search(_CARRY, " ".join(w for _, w in words)) is not None
    found = [(subject.normalized, subject.type, 1.0, subject.start)]
    link = ending_at(_AND_BEFORE, s.text, subject.start, s.sentence.start)
    if link is not None:
        other = s.by_end.get(link.start())
        if other is not None and other.start not in s.labels and other.type in _PERSON:
            found.insert(0, (other.normalized, other.type, 0.9, other.start))
    return found, False


def _words_before(s: _Scope, position: int) -> list[tuple[int, str]]:
    """The words (end, word) of the sentence among the ``CONTEXT`` characters before
    ``position``; a first word that the window may have cut is left out."""
    low = max(s.sentence.start, position - CONTEXT)
    found = list(finditer(_WORD, s.text, low, position))
    if found and found[0].start() == low > s.sentence.start and not s.text[low - 1].isspace():
        found = found[1:]
    return [(m.end(), m.group(0)) for m in found]


def _opening(s: _Scope) -> list[_Subject]:
    """The subject that opens the sentence ("I quit ... and joined Y"): "I"/"we" (the
    speaker) or a person named first, after any speaker label."""
    start = s.sentence.start
    label = speaker_label(s.sentence.text)
    if label is not None:
        start = s.text.index(":", start + label[2]) + 1
    opener = starting_at(_FIRST_WORD, s.text, start, s.sentence.end)
    if opener is None:
        return []
    first = opener.group(1).lower().replace("’", "'").split("'")[0]
    if first in _FIRST_PERSON and s.speaker:
        return [(s.speaker, "person", _FIRST_PERSON[first], start)]
    named = s.by_start.get(opener.start(1))
    if named is not None and named.type == "person":
        return [(named.normalized, named.type, 1.0, named.start)]
    return []


def _apposed(s: _Scope, comma: int) -> int | None:
    """Where the subject ends when an apposition closes at ``comma``: "My boss, Karen," (the
    name between commas) or "Anna, my older sister," (the name before the first comma)."""
    previous = s.text.rfind(",", max(s.sentence.start, comma - 40), comma)
    if previous < 0:
        return None
    named = s.by_end.get(comma)
    if named is not None and s.text[previous + 1:named.start].strip() == "":
        return comma
    return previous if previous in s.by_end else None


def _objects(s: _Scope, position: int, rule: _Rule) -> list[_Object]:
    """What the verb ending at ``position`` is about: (name, type, end, confidence factor).

    A named entity right after the verb (past determiners, a possessor and adverbs) is the
    object, or one after up to two lowercase words ("my old iPhone 11"); else a noun phrase,
    or the name it is "called"/"named" ("a startup called Loomly")."""
    lead = starting_at(_OBJECT_LEAD, s.text, position, s.sentence.end)
    start = lead.end() if lead else position
    mention = s.by_start.get(start)
    skip = start
    for _ in range(2):  # up to two lowercase words before a name ("my old iPhone 11")
        if mention is not None:
            break
        word = starting_at(_NEAR_NAME, s.text, skip, s.sentence.end)
        if word is None or word.group(1) in FUNCTION_WORDS:
            break
        skip = word.end()
        mention = s.by_start.get(skip)
    if mention is not None and mention.type in rule.types:
        glued = starting_at(_GLUED, s.text, mention.end, mention.end + 20)
        if rule.objects == "entity" or not glued or glued.group(1) in FUNCTION_WORDS:
            return [(mention.normalized, mention.type, mention.end, 1.0),
                    *_coordinated(s, mention, rule)]
    if rule.objects == "entity":
        return []
    found: list[_Object] = []
    phrase = _noun_phrase(s, position)
    while phrase is not None and len(found) < 3:
        called = starting_at(_CALLED, s.text, phrase[1], s.sentence.end)
        name = s.by_start.get(called.end()) if called else None
        if name is not None:
            found.append((name.normalized, name.type, name.end, 0.85))
            break
        found.append((phrase[0], "other", phrase[1], 0.85 if not found else 0.8))
        link = starting_at(_COORD, s.text, phrase[1], s.sentence.end)
        phrase = _noun_phrase(s, link.end()) if link else None
    return found


def _coordinated(s: _Scope, first: Mention, rule: _Rule
                 ) -> list[_Object]:
    found: list[_Object] = []
    current = first
    while True:
        link = starting_at(_COORD, s.text, current.end)
        nxt = s.by_start.get(link.end()) if link else None
        if nxt is None or nxt.type != first.type or nxt.end > s.sentence.end:
            return found
        found.append((nxt.normalized, nxt.type, nxt.end, 0.9))
        current = nxt


def _noun_phrase(s: _Scope, position: int) -> tuple[str, int] | None:
    """Up to four words after ``position``, without determiners, ending before a function
    word, punctuation or a time expression."""
    words: list[str] = []
    pos, end = position, position
    time_starts = {t.start for t in s.times}
    while len(words) < 4:
        while pos < s.sentence.end and s.text[pos] == " ":
            pos += 1
        m = starting_at(_NP_WORD, s.text, pos, s.sentence.end)
        if m is None or pos in time_starts:
            break
        word = m.group(0)
        lower = word.lower()
        if not words and (lower in _DETERMINERS or lower in _OBJECT_ADVERBS or
                          lower.endswith(("'s", "’s"))):
            pos = m.end()
            continue
        if lower in FUNCTION_WORDS or lower in _OWNER_WORDS or lower in _NP_STOP or \
                _CONTRACTION.search(lower):
            break
        words.append(lower)
        pos = end = m.end()
        if pos < s.sentence.end and s.text[pos] != " ":
            break
    while words and words[-1].endswith("ly") and len(words[-1]) > 4:
        words.pop()
    if not words or words[0] == "to":
        return None
    return " ".join(words), end


# -- validity -------------------------------------------------------------------------------

def _validity(s: _Scope) -> tuple[datetime | None, datetime | None, TimeMention | None]:
    return _times_validity(s.text, s.sentence.start, s.times)


def _times_validity(text: str, sentence_start: int, times: Sequence[TimeMention]
                    ) -> tuple[datetime | None, datetime | None, TimeMention | None]:
    """"since X": from X; "from X to Y": X to the end of Y; "until X": to the end of X;
    otherwise from the start of the first time expression."""
    if not times:
        return None, None, None
    first = times[0]
    since = next((t for t in times if t.surface.lower().startswith("since")), None)
    if since is not None:
        return since.window.start, None, since
    if len(times) >= 2 and ending_at(_RANGE_TO, text, times[1].start, first.end):
        return first.window.start, times[1].window.end, first
    if ending_at(_UNTIL, text, first.start, sentence_start):
        return None, first.window.end, first
    return first.window.start, None, first


def sentence_validity(text: str, span: tuple[int, int], times: Sequence[TimeMention]
                      ) -> tuple[datetime | None, datetime | None, TimeWindow | None]:
    """The validity (from, to) and time window a fact stated in ``text[span]`` gets from the
    time expressions in that span, by the rules ``extract_facts`` uses."""
    inside = [t for t in times if span[0] <= t.start < span[1]]
    valid_from, valid_to, anchor = _times_validity(text, span[0], inside)
    return valid_from, valid_to, anchor.window if anchor else None


def _fact(s: _Scope, subject: _Subject, predicate: str,
          obj: _Object, base: float, rule: str,
          verb_start: int) -> Fact:
    valid_from, valid_to, anchor = _validity(s)
    return Fact(subject[0], predicate, obj[0], round(base * subject[2] * obj[3], 2),
                valid_from, valid_to, (min(subject[3], verb_start), obj[2]), rule,
                subject[1], obj[1], anchor.window if anchor else None)


# -- verb rules -----------------------------------------------------------------------------

def _verb_facts(s: _Scope) -> list[Fact]:
    out: list[Fact] = []
    matches = _verb_matches(s)
    attached = _attach_times(s, matches)
    last: list[_Subject] = []
    opening: list[_Subject] | None = None
    for i, (rule, m) in enumerate(matches):
        subjects, carry = _subjects(s, m.start())
        if not subjects and carry:
            if not last and opening is None:
                opening = _opening(s)
            subjects = [(n, t, f * 0.9, start) for n, t, f, start in last or opening or ()]
        if not subjects:
            continue
        last = subjects
        scope = _Scope(s.text, s.sentence, s.speaker, s.persons, s.labels, attached[i],
                       s.by_start, s.by_end)
        for obj in _objects(s, m.end(), rule):
            predicate = rule.predicate
            if rule.name == "went_to":
                predicate = "attended" if obj[1] == "event" else "visited"
            if rule.name == "is_a" and obj[0].split()[-1] in _NOT_ROLES:
                continue
            for subject in subjects:
                if subject[0] == obj[0]:
                    continue
                out.append(_fact(scope, subject, predicate, obj, rule.confidence, rule.name,
                                 m.start()))
                if rule.name == "moved_to":
                    out.append(_fact(scope, subject, "lives_in", obj, rule.confidence,
                                     rule.name, m.start()))
                if rule.name == "is_a":
                    out += _role_at(scope, subject, obj, m.start())
    return out


def _verb_matches(s: _Scope) -> list[tuple[_Rule, re.Match[str]]]:
    """The verb rules that match the sentence, leftmost first, the earlier rule first at one
    position, none overlapping: what one alternation of all rules would find."""
    lower = s.sentence.text.lower()
    found = []
    for index, (rule, pattern, gate) in enumerate(zip(_RULES, _VERBS, _GATES, strict=True)):
        if any(word in lower for word in gate):
            for m in finditer(pattern, s.text, s.sentence.start, s.sentence.end):
                found.append((m.start(), index, rule, m))
    chosen: list[tuple[_Rule, re.Match[str]]] = []
    end = -1
    for start, _, rule, m in sorted(found, key=lambda f: (f[0], f[1])):
        if start >= end:
            chosen.append((rule, m))
            end = m.end()
    return chosen


def _attach_times(s: _Scope, verbs: list[tuple[_Rule, re.Match[str]]]
                  ) -> list[list[TimeMention]]:
    """Each time expression of the sentence belongs to the nearest verb before it in the
    same clause, else to the first verb after it ("Last year I moved to Lisbon").

    Verbs do not overlap, so when a clause break separates a time from the nearest verb on
    one side, it separates it from every verb on that side: two binary searches a time,
    where trying every verb and searching the text between took 36 s for a sentence of 300
    verbs and 300 dates."""
    attached: list[list[TimeMention]] = [[] for _ in verbs]
    if not verbs or not s.times:
        return attached
    starts = [v.start() for _, v in verbs]
    breaks = list(finditer(_CLAUSE_BREAK, s.text, s.sentence.start, s.sentence.end))
    break_starts = [b.start() for b in breaks]

    def separated(start: int, end: int) -> bool:
        i = bisect.bisect_left(break_starts, start)
        return i < len(breaks) and breaks[i].end() <= end

    for t in s.times:
        before = bisect.bisect_left(starts, t.start) - 1
        after = bisect.bisect_left(starts, t.end)
        if before >= 0 and not separated(verbs[before][1].end(), t.start):
            attached[before].append(t)
        elif after < len(verbs) and not separated(t.end, starts[after]):
            attached[after].append(t)
    return attached


def _role_at(s: _Scope, subject: _Subject,
             role: _Object, verb_start: int) -> list[Fact]:
    """"X is a nurse at Y": works_at Y; "a student / PhD candidate at Y": studies_at Y."""
    at = starting_at(_AT_ORG, s.text, role[2], s.sentence.end)
    org = s.by_start.get(at.end()) if at else None
    if org is None or org.type not in _ORG:
        return []
    studies = any(w in ROLE_STUDY_WORDS for w in role[0].split())
    return [_fact(s, subject, "studies_at" if studies else "works_at",
                  (org.normalized, org.type, org.end, 1.0), 0.75, "role_at", verb_start)]


def _job_facts(s: _Scope) -> list[Fact]:
    """"my new job at Dell", "got a job at Google", "her team at Sony": works_at, unless the
    job is a former one ("I quit my job at Amazon")."""
    out: list[Fact] = []
    for m in finditer(_JOB, s.text, s.sentence.start, s.sentence.end):
        org = s.by_start.get(m.end())
        if org is None or org.type not in _ORG:
            continue
        lead = ending_at(_JOB_LEFT, s.text, m.start(), s.sentence.start)
        left = lead.start() if lead else m.start()  # where "a new job" starts
        if ending_at(_JOB_PAST, s.text, left, s.sentence.start):
            continue
        owner = _owner(s, left + 1)
        if owner is None:
            verb = ending_at(_JOB_VERB, s.text, left, s.sentence.start)
            subjects = _subjects(s, verb.start())[0] if verb else []
            owner = subjects[0] if subjects else None
        if owner is not None:
            out.append(_fact(s, owner, "works_at", (org.normalized, org.type, org.end, 1.0),
                             0.8, "job_at", m.start()))
    return out


# -- relation nouns -------------------------------------------------------------------------

def _relation_facts(s: _Scope) -> list[Fact]:
    out: list[Fact] = []
    lower = s.sentence.text.lower()
    if not any(noun in lower for noun in _RELATION_WORDS):
        return out
    for m in finditer(_RELATION, s.text, s.sentence.start, s.sentence.end):
        noun = m["rel"].lower()
        predicate = "has_pet" if noun in PET_NOUNS else RELATION_NOUNS[noun]
        owner = _owner(s, m.start())
        if owner is None:
            continue
        named = starting_at(_NAMED, s.text, m.end())
        name = s.by_start.get(named.end()) if named else None
        names: list[_Object] = []
        if name is not None and name.type in _PERSON | {"other"}:
            names = [(name.normalized, name.type, name.end, 1.0)]
            if m["pl"]:
                names += _coordinated(s, name, _Rule("", "", "", "entity", _PERSON, 0))
        else:
            names = _apposition(s, owner[3])
        timeless = _Scope(s.text, s.sentence, s.speaker, s.persons, s.labels, [], s.by_start,
                          s.by_end)
        for obj in names:
            if obj[0] != owner[0]:
                out.append(_fact(timeless, owner, predicate, obj, 0.85, "relation", owner[3]))
    return out


def _owner(s: _Scope, position: int) -> _Subject | None:
    """Whose relative: "my" (the speaker), "X's", "his/her/their" (the last person named), or
    the subject of "X has a sister"."""
    low = max(s.sentence.start, position - CONTEXT)
    stripped = s.text[low:position].rstrip()
    word = stripped.split()[-1].lower() if stripped.split() else ""
    start = low + len(stripped) - len(word)
    if word in _OWNER_WORDS:
        if _OWNER_WORDS[word] == "speaker":
            return (s.speaker, "person", 1.0, start) if s.speaker else None
        person = s.persons.referent(start, s.sentence.start)
        return (person.normalized, "person", 0.7, person.start) if person else None
    if stripped.endswith(("'s", "’s")):
        owner = s.by_end.get(low + len(stripped) - 2)
        if owner is not None and owner.type in _PERSON:
            return owner.normalized, owner.type, 1.0, owner.start
    has = ending_at(_HAS_A, s.text, position, s.sentence.start)
    if has is not None:
        subjects, _ = _subjects(s, has.start())
        if subjects:
            return subjects[0]
    return None


def _apposition(s: _Scope, owner_start: int) -> list[_Object]:
    """"Anna, my sister" / "Anna is Caroline's sister": the name before the owner."""
    link = ending_at(_APPOSITION, s.text, owner_start, s.sentence.start)
    if link is None:
        return []
    name = s.by_end.get(link.start())
    if name is None or name.type not in _PERSON:
        return []
    return [(name.normalized, name.type, name.end, 0.9)]
