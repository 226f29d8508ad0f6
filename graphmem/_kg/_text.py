"""Text helpers shared by the extraction rules: the normal form of a name, sentence spans and
dialogue speaker labels ("Caroline: ..."), each one compiled regex and a small function."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._lexicon import COMMON_STARTERS
from ._scan import finditer, search, starting_at

__all__ = ["ROLE_SPEAKERS", "Sentence", "initial_at", "named", "normalize", "person_speaker",
           "sentences", "speaker_label"]

_TITLE = re.compile(r"^(?:mr|mrs|ms|dr|prof|professor|aunt|auntie|uncle|grandma|grandpa)\.?\s+")
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b|(?<=s)['’](?=\s|$)")
_EDGE = " \t\n.,;:!?\"'“”‘’()[]{}"
#: A sentence ends at . ! ? followed by space, or at a line break; an abbreviation such as
#: "Dr." or "Prof." or an initial does not end one (checked after the match: lookbehinds in
#: the pattern ran at every position and cost 20 µs a text). A run of marks is tried from
#: its first mark only: tried from each, 30,000 "!" took 19 s.
_BOUNDARY = re.compile(r"(?<![.!?])[.!?]+[\"')\]]*\s+|\n+")
_ABBREVIATION = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof|St|vs|e\.g|i\.e|etc)$")
_SPEAKER = re.compile(r"\s*([A-Z][\w'’.-]*(?:\s[A-Z][\w'’.-]*){0,2})\s*:\s")
#: Speakers that are a chat's roles, not people: no person entity, and their "I" is nobody
#: of the user's world.
ROLE_SPEAKERS = frozenset({"assistant", "ai", "bot", "system", "tool"})


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of a text: its characters ``text[start:end]``."""

    start: int
    end: int
    text: str


def named(value: object) -> str | None:
    """``value`` when it is a name that names someone (a provenance's speaker), else None:
    not a string, or nothing left once normalized (".", "  ").

    >>> named("Tom"), named("."), named(3)
    ('Tom', None, None)
    """
    return value if isinstance(value, str) and normalize(value) else None


def normalize(surface: str) -> str:
    """The normal form of a name: lowercase, single spaces, no possessive, no edge punctuation,
    no leading article or title.

    Examples
    --------
    >>> normalize("  Caroline's "), normalize("The  University of Lagos"), normalize("James'")
    ('caroline', 'university of lagos', 'james')
    >>> normalize("the US"), normalize("NYC."), normalize("Prof. Adeyemi")
    ('us', 'nyc', 'adeyemi')
    """
    text = _POSSESSIVE.sub("", surface.replace("’", "'"))
    text = " ".join(text.split()).strip(_EDGE).lower()
    if text.startswith("the "):
        text = text[4:]
    return _TITLE.sub("", text)


def sentences(text: str) -> list[Sentence]:
    """The sentences of ``text`` with their character offsets (empty ones left out).

    Examples
    --------
    >>> [s.text for s in sentences("I met Dr. Okafor. She moved to Lagos!\\nBye")]
    ['I met Dr. Okafor.', 'She moved to Lagos!', 'Bye']
    """
    out: list[Sentence] = []
    start = 0
    for match in finditer(_BOUNDARY, text):
        # only the last few characters can hold an abbreviation: searching the whole
        # prefix made long texts quadratic
        if match.group(0)[0] == "." and (initial_at(text, match.start()) or search(
                _ABBREVIATION, text[max(0, match.start() - 12):match.start()])):
            continue
        end = match.start() + len(match.group(0).rstrip())
        _add(out, text, start, end)
        start = match.end()
    _add(out, text, start, len(text))
    return out


def initial_at(text: str, dot: int) -> bool:
    """Whether the full stop ``text[dot]`` closes an initial ("J. Lee", "the U.S. team")
    rather than a sentence: a capital letter alone before it, and the next word not one
    that often opens a sentence, in any case ("I got an A. It was great").

    >>> initial_at("I met J. Lee", 7), initial_at("I got an A. It was great", 10)
    (True, False)
    >>> initial_at("Anna K. Berg", 6), initial_at("my plan B. then lunch", 9)
    (True, False)
    """
    if dot < 1 or not text[dot - 1].isupper() or (dot > 1 and text[dot - 2].isalnum()):
        return False
    after = text[dot + 1:dot + 41].split(maxsplit=1)
    word = after[0].strip("\"'“”‘’()[]*_,;:!?") if after else ""
    return bool(word) and word[:1].upper() + word[1:].lower() not in COMMON_STARTERS


def _add(out: list[Sentence], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        out.append(Sentence(start, end, text[start:end]))


def speaker_label(line: str) -> tuple[str, int, int] | None:
    """The speaker of a dialogue line ``"Name: words"``: (name, start, end), or None.

    One to three capitalised words before a colon at the start of the line; words that open
    headings ("Note:", "Update:") are not speakers.

    Examples
    --------
    >>> speaker_label("Caroline: I moved to Lisbon last year.")
    ('Caroline', 0, 8)
    >>> speaker_label("Note: call the bank"), speaker_label("2026-04-01: Deployed v2")
    (None, None)
    """
    match = starting_at(_SPEAKER, line, 0)
    if match is None:
        return None
    name = match.group(1)
    if name.split()[0] in COMMON_STARTERS:
        return None
    return name, match.start(1), match.end(1)


def person_speaker(name: str | None) -> str | None:
    """``name`` when the speaker it names is a person; None for a chat role.

    Examples
    --------
    >>> person_speaker("Nadia"), person_speaker("Assistant"), person_speaker("AI")
    ('Nadia', None, None)
    """
    if not name or normalize(name) in ROLE_SPEAKERS:
        return None
    return name
