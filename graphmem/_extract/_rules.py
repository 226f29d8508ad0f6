"""Deterministic extraction: which sentences of a message are worth remembering, and the
entities and key phrases they mention. Plain rules, no model, the same answer every time."""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass, field

from .._kg._scan import finditer, search
from .._recall._bm25 import STOPWORDS

__all__ = ["Extracted", "RuleExtractor", "extract_entities", "is_filler", "signal_strength"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+(?:[.,:/]\d+)*")
_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z'’-]+(?:\s+(?:of\s+|the\s+)?[A-Z][a-zA-Z'’-]+)*")
#: A number ends where a word character does not follow (what a final \b said), checked after
#: each part, so a run of parts is read once and never given back.
_NUMBER = re.compile(r"\b\d++(?!\w)(?:[.,:/-]\d++(?!\w))*+")
#: Codes mixing letters and digits: bed-18, v1.9.0, r51, p95, ISO-8601.
#: Each part is the whole run of letters and digits after a separator: parts that could be cut
#: anywhere ("(?:[.-]?[A-Za-z0-9]+)*") made "a1", 24 digits and "_" take 4 s, and each two
#: more digits four times as long.
_CODE = re.compile(r"\b[A-Za-z]+-?\d++[A-Za-z0-9]*+(?!\w)(?:[.-][A-Za-z0-9]++(?!\w))*+")
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_MONTH = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b",
                    re.IGNORECASE)
_WIKI = re.compile(r"\[(wiki/[^\[\]\s]+)\]")
_URN = re.compile(r"\burn:[a-z0-9-]+:[A-Za-z0-9:._-]+", re.IGNORECASE)
_FIRST_PERSON = {"i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine", "we", "we're", "our",
                 "us", "myself"}
_CUES = {"prefer", "prefers", "preferred", "like", "likes", "love", "loves", "hate", "hates",
         "favorite", "favourite", "always", "never", "usually", "allergic", "plan", "plans",
         "planning", "decided", "decide", "started", "start", "moved", "move", "bought",
         "joined", "graduated", "adopted", "married", "born", "work", "works", "working",
         "live", "lives", "living", "learned", "learning", "want", "wants", "going", "will",
         "goal", "dream", "birthday", "anniversary", "remember", "need", "needs", "use",
         "uses", "switched", "visited", "finished", "won", "lost", "met", "got", "signed"}
_FILLER = {"hi", "hello", "hey", "yo", "thanks", "thank", "thx", "ok", "okay", "k", "cool",
           "nice", "great", "awesome", "lol", "haha", "hahaha", "yes", "yeah", "yep", "no",
           "nope", "sure", "bye", "goodbye", "good", "morning", "night", "evening", "wow",
           "welcome", "you", "too", "sounds", "see", "soon", "later", "np", "alright", "hmm",
           "oh", "ah", "right", "exactly", "agreed", "same", "true", "indeed", "mel",
           "there", "doing", "how", "are", "what's", "up", "much", "so", "it", "that",
           "really", "appreciate", "care", "take"}
_COMMON_CAPITALISED = {"I", "I'm", "I've", "I'd", "I'll", "The", "A", "An", "It", "It's",
                       "We", "My", "You", "Yes", "No", "Oh", "So", "And", "But", "That",
                       "This", "What", "When", "Where", "Why", "How", "Hey", "Hi", "Thanks",
                       "Wow", "Also", "Just", "Then", "There", "They", "He", "She", "Our",
                       "Your", "If", "Well", "Sure", "Yeah", "Maybe", "Haha", "Lol", "Ok",
                       "Okay", "Great", "Cool", "Nice", "Awesome", "Congrats", "Definitely",
                       "Totally", "Absolutely", "Thank", "Sounds", "Glad", "Good", "Love",
                       "Let", "Let's", "Do", "Did", "Is", "Are", "Was", "Were", "Can",
                       "Could", "Would", "Should", "Will", "Have", "Has", "Had", "Not"}


_TIME_WORDS = {"yesterday", "today", "tomorrow", "last", "next", "year", "years", "week",
               "weeks", "month", "months", "time", "times", "ago", "soon", "later", "also",
               "just", "still", "even", "much", "very", "really", "went", "going", "said",
               "told", "thing", "things", "something", "anything", "everything", "lots",
               "little", "pretty", "maybe", "kind", "sort", "make", "made", "take", "took",
               "know", "think", "feel", "felt", "want", "wanted"}


@dataclass(frozen=True)
class Extracted:
    """One candidate memory found in a message."""

    text: str
    strength: float
    entities: tuple[str, ...] = ()
    reasons: tuple[str, ...] = field(default_factory=tuple)


def _words(text: str) -> list[str]:
    return [m.group(0).lower().strip("'’") for m in finditer(_WORD, text)]


def is_filler(text: str) -> bool:
    """Greetings, thanks, acknowledgements, emoji-only: nothing to remember.

    >>> is_filler("Thanks so much!! 😊"), is_filler("I moved to Lagos in 2023")
    (True, False)
    """
    words = _words(text)
    if not words:
        return True
    content = [w for w in words if w not in _FILLER and w not in STOPWORDS]
    return len(content) < 2


def extract_entities(text: str) -> tuple[str, ...]:
    """Names, dates, numbers, wiki pages, memory ids and two-word key phrases, lowercased.

    >>> extract_entities("Caroline went to the LGBTQ support group in May 2023")
    ('caroline', 'lgbtq', 'may', '2023', 'lgbtq support', 'support group')
    >>> extract_entities("2026-04-01: moved bed-18 to 14% after v1.9.0, 120 ms at 9:30")
    ('bed-18', 'v1.9.0', '2026-04-01', '120', '9:30')
    """
    out: list[str] = []
    for match in finditer(_CAPITALISED, text):
        words = match.group(0).split()
        common = next((i for i, w in enumerate(words) if w not in _COMMON_CAPITALISED),
                      len(words))
        if words[common:]:
            out.append(" ".join(words[common:]).lower())
    out += [m.group(0).lower() for m in finditer(_MONTH, text)]
    codes = list(finditer(_CODE, text))
    out += [m.group(0).lower() for m in codes]
    code_starts = [c.start() for c in codes]
    out += [m.group(0) for m in finditer(_NUMBER, text)
            if _meaningful_number(m, codes, code_starts)]
    out += [m.group(1).lower() for m in finditer(_WIKI, text)]
    out += [m.group(0) for m in finditer(_URN, text)]
    out += [f"{a} {b}" for a, b in itertools.pairwise(_words(text))
            if _phrase_word(a) and _phrase_word(b)]
    seen: dict[str, None] = {}
    for entity in out:
        entity = entity.strip(" .,'’")
        if len(entity) >= 2:
            seen.setdefault(entity, None)
    return tuple(seen)


def _meaningful_number(match: re.Match[str], codes: list[re.Match[str]],
                       code_starts: list[int]) -> bool:
    """Years, dates, times, versions and numbers of three digits or more; not the small
    bare numbers (14, 18) that mean different things in every sentence, nor the digits
    of a code (codes do not overlap: the one starting last before the number is the only
    one that can hold it)."""
    i = bisect.bisect_right(code_starts, match.start()) - 1
    if i >= 0 and match.start() < codes[i].end():
        return False
    number = match.group(0)
    return len(number) >= 3


def _phrase_word(word: str) -> bool:
    """A word that can be half of a key phrase (a content word, not a verb form or a
    word about time)."""
    return (len(word) >= 4 and word not in STOPWORDS and not word[0].isdigit()
            and not word.endswith(("ed", "ly")) and word not in _TIME_WORDS
            and word not in _FILLER and word not in _CUES)


def signal_strength(sentence: str) -> tuple[float, tuple[str, ...]]:
    """How memorable a sentence is, in [0, 1], and why: first-person statements, cue words
    (preferences, plans, life events), names, numbers and dates, and enough content.

    >>> strength, reasons = signal_strength("I moved to Ibadan in March 2026 for lab work.")
    >>> round(strength, 3), reasons
    (0.95, ('first person', 'preference, plan or event', 'names', 'numbers or dates'))
    >>> signal_strength("Should we move the standup?")
    (0.0, ('a question',))
    """
    words = _words(sentence)
    content = [w for w in words if w not in STOPWORDS and w not in _FILLER]
    reasons: list[str] = []
    score = 0.0
    if sentence.rstrip().endswith("?"):
        return 0.0, ("a question",)
    if any(w in _FIRST_PERSON for w in words):
        score += 0.25
        reasons.append("first person")
    if any(w in _CUES for w in words):
        score += 0.25
        reasons.append("preference, plan or event")
    names = [e for e in extract_entities(sentence) if " " not in e and not e[0].isdigit()]
    if names:
        score += 0.15
        reasons.append("names")
    if search(_NUMBER, sentence) or search(_MONTH, sentence):
        score += 0.15
        reasons.append("numbers or dates")
    score += 0.2 * min(len(content) / 8.0, 1.0)
    return min(score, 1.0), tuple(reasons)


class RuleExtractor:
    """Keeps the informative sentences of a message (strong and weak signals).

    ``strong``: at or above this strength a sentence becomes an active memory;
    ``weak``: at or above this, a candidate; below, it is not kept.

    Examples
    --------
    >>> [found] = RuleExtractor().extract("Hi! I moved to Ibadan in March 2026. "
    ...                                   "Lovely weather.")
    >>> found.text, found.entities
    ('I moved to Ibadan in March 2026.', ('ibadan', 'march', '2026'))
    >>> RuleExtractor().extract("Thanks so much, see you later!")
    []
    """

    name = "rules"

    def __init__(self, *, strong: float = 0.55, weak: float = 0.35) -> None:
        self.strong = strong
        self.weak = weak

    def extract(self, text: str) -> list[Extracted]:
        if is_filler(text):
            return []
        out = []
        for sentence in _SENTENCE.split(" ".join(text.split())):  # one space between words
            strength, reasons = signal_strength(sentence)
            if strength >= self.weak:
                out.append(Extracted(sentence, strength, extract_entities(sentence), reasons))
        return _merge(out)


def _merge(parts: list[Extracted]) -> list[Extracted]:
    """One memory per message: its kept sentences, at the strength of the strongest."""
    if len(parts) <= 1:
        return parts
    entities = tuple(dict.fromkeys(e for p in parts for e in p.entities))
    reasons = tuple(dict.fromkeys(r for p in parts for r in p.reasons))
    return [Extracted(" ".join(p.text for p in parts), max(p.strength for p in parts),
                      entities, reasons)]
