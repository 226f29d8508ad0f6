"""Corrections in conversations: "scratch that, it's Tuesday", "I meant the 21st, not the
14th", "actually my sister lives in Graz". Which earlier statement of the same person a
correction replaces, decided by plain rules over the recent statements (pure functions).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .._kg._gazetteer import KNOWN_ORGS, KNOWN_PRODUCTS, PLACES
from .._kg._scan import finditer, search, starting_at
from .._text import CLAUSE_MARKS, tokenize
from ._rules import is_hedge, kin_of, sentences

__all__ = ["NOW_SIMILAR", "Statement", "adds_news", "bare_take_back", "correction_target",
           "correction_targets", "is_correction", "masked", "masked_many", "may_replace",
           "name_blind", "redoes", "said_values", "says_now", "takes_back"]


_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*"
_DAYS = (r"(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:days?)?\b"
         r"|" + _MONTHS + r"\b")
#: Phrases by which a person takes back what they said ...
_TAKE_BACK = re.compile(
    r"\b(?:scratch that|correction|i meant|i mean,|no,? wait|wait,? no|oh wait|hang on"
    r"|i (?:got|had) (?:that|it|them|the [\w ]{1,30}?) wrong|i was wrong"
    # "one thing i told u wrong", "I said it wrong", "I gave you the wrong date"
    r"|i (?:told|said|gave|wrote|typed|put)(?: (?:you|u|ya|it|that|this|them))?(?: the)?"
    r" wrong\b"
    r"|\bi(?:'ve|’ve| have)? changed my mind\b"
    r"|(?:that|this|it) (?:was|is) wrong"
    r"|(?:sorry|oops|oh|ah)\W+wrong (?:date|day|time|number|name|place|city|address|year"
    r"|month|week|one)"
    r"|my (?:bad|mistake)|i misspoke|typo|i mis(?:read|heard|remembered|typed)"
    r"|i mixed (?:it|that|them) up|correct(?:ing)? (?:myself|that|what i said)"
    r"|(?:ignore|disregard) (?:what i (?:said|wrote|told you)|my last)"
    r"|forget what i (?:said|wrote|told you)|make (?:that|it) (?=\d|the\b)"
    r"|i mean (?=(?:the )?(?:\d|" + _DAYS + r"))"
    r"|(?:it|that|she|he|they)(?:'s|’s| is| was| were)? actually"
    r"(?=\s(?:(?:the|in|at|on|to)\s)?(?:\d|" + _DAYS + r"|(?-i:[A-Z])))"
    r"|i (?:said|told you)\b[^.?!]{0,60}\bbut)\b"
    r"|^\W*(?:wait|actually|no,? sorry|wrong (?:date|day|time|number|name|place))\b",
    re.IGNORECASE)
#: ... or changes it: a new value for an old thing.
_CHANGE = re.compile(
    r"\b(?:(?:moved|changed|pushed|switched|rescheduled|brought) (?:(?:it|that|back|forward) )?"
    r"(?:to|until)|it'?s now|now (?:on|at|in)|no longer|not any ?more|instead of|rather than)\b"
    r"|(?-i:\bNOT\b)", re.IGNORECASE)
_NOT = re.compile(r"\bnot\b", re.IGNORECASE)
#: What follows "not" in "16 people not 14", "friday the 6th not thursday", "Calgary, not
#: Edmonton": a number, a day or month, or a name.
_VALUE_AFTER = re.compile(r"\s(?:the\s)?(?:\d|" + _DAYS + r"|(?-i:[A-Z]))", re.IGNORECASE)
#: ... and then the value that holds: " Tuesday, it is Wednesday", " the 14th but the 21st".
#: a capitalised word, a name (the pronoun "I" is not one)
_NAME = r"(?-i:(?!I\b|I['’])[A-Z])"
_BUT_VALUE = re.compile(r"\s(?:the\s)?[\w'’-]+,?\s(?:it'?s|it is|it was|its|but)\s"
                        r"(?:on\s|at\s|in\s)?(?:the\s)?(?:\d|" + _DAYS + r"|" + _NAME + r")",
                        re.IGNORECASE)
#: a value before "not"
_VALUE_WORD = re.compile(r"\d|" + _DAYS + r"|" + _NAME, re.IGNORECASE)
#: ... or says how things are now, which may replace how they were ("I've gone vegan now",
#: "I quit the bakery job", "turns out it was gluten", "rent went up to 900"): such a
#: statement replaces only a statement it is close to.
_NOW = re.compile(r"\b(?:now|these days|anymore|any more|no more|quit|stopped|gave up"
                  r"|switched|gone|dropped|turns out|turned out)\b"
                  # an amount that changed: "went up to $168", "I'm down to one a month"
                  r"|\b(?:(?:went|goes|gone) (?:up|down)|(?:increased|decreased|raised|lowered"
                  r"|reduced|upped|bumped|rose|fell|cut)(?: [\w'’]+){0,3}"
                  r"|(?:i'?m|is|are|we'?re) down) to (?:[$£€]?\d|(?:one|two|three|four|five"
                  r"|six|seven|eight|nine|ten|eleven|twelve|twenty|half)\b)", re.IGNORECASE)
#: ... or how the speaker's own plan turned out ("we ended up going Turkish", "I've decided
#: it is adult nursing", "I got the blue ones instead"), not another person's ("my brother
#: decided"), not a choice still open or refused ("I haven't decided", "help me decide",
#: "I decided not to tell her"), not a fear ("I'll end up failing") ...
_INSTEAD = re.compile(r"\b(?:i|we)\b[^.?!]{0,80}\binstead\b(?! of\b)", re.IGNORECASE)
_OUTCOME = re.compile(
    r"\b(?:i|we)(?:'ve|’ve| have| had)? (?:finally |eventually |just )?"
    r"(?:decided (?!not\b)|ended up\b)"
    # or did not go as planned: "I didn't end up taking the job", "we never ended up moving"
    r"|\b(?:i|we) (?:didn['’]?t|did not|never) end(?:ed)? up\b|" + _INSTEAD.pattern,
    re.IGNORECASE)
#: ... and not what might have been, may be or someone thinks ("I should have taken the
#: train instead", "if we decided to stay", "maybe we'll end up in Leeds", "my wife thinks
#: we ended up paying too much") ...
_MIGHT = re.compile(r"\b(?:should|could|would|might|wish|if|maybe|perhaps|probably"
                    r"|will|gonna|going to|want to|wanna|thinks?|says?|said|reckons?)\b"
                    r"|['’](?:d|ll)\b", re.IGNORECASE)
#: ... nor one occasion beside a habit ("this Tuesday I swam instead", "last year we
#: ended up in Cornwall", "the other day I ended up taking the train")
_ONE_OFF = re.compile(
    r"\b(?:today|tonight|yesterday|ago|for once|one time|the other (?:day|night|week)"
    r"|this (?:morning|afternoon|evening|time|once|week(?:end)?"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day)|last (?:night|week(?:end)?|month|year"
    r"|time|(?:mon|tues|wednes|thurs|fri|satur|sun)day))\b", re.IGNORECASE)
#: ... unless it says that it adds to what was ("Sam has a school play now too", "I also
#: have to get the VAT return in now", "the next scan is on 14 April", "now that I booked
#: it"); "also" opening a statement opens a new point ("also I dropped the sat shift").
_ADDS = re.compile(
    r"\b(?:too|as well)(?=\s*(?:[,.!?;:)]|$))|\b(?:another|separately|in addition|now that"
    r"|either)\b|(?<=\w )also\b|\b(?:a|the) (?:next|second|other) (?!(?:week|month|year|weekend|day"
    r"|time)s?\b)", re.IGNORECASE)
#: How close (cosine of the two texts) a statement of how things are now must be to what it
#: replaces; and a correction that shares no word or value with any statement. 0.50 on the
#: everyday chats' three development sets (0.55 before: one more stale statement first).
NOW_SIMILAR = 0.50
#: "..., not the 14th" / "not Linz": the value a correction takes back (up to 3 words).
_NEGATED = re.compile(r"\bnot\s+((?:the\s+)?[\w'’-]+(?:\s+[\w'’-]+){0,2})", re.IGNORECASE)
#: "before I said under 2h15, but ...", "I told you the 14th": the value taken back, too
#: (a word, perhaps quoted: "something I told you - the wedding is on Sunday" took back "the
#: wedding"; "I said 'Tuesday' but ..." takes back Tuesday)
_SAID = re.compile(r"\bi (?:said|told (?:you|u)|wrote|mentioned)\s+((?:the\s+)?['\"‘“]?\w[\w'’-]*"
                   r"(?:\s+[\w'’-]+){0,2})", re.IGNORECASE)
_NOT_VALUES = frozenset({"earlier", "before", "wrong", "that", "it", "last", "time"})
_SLOTS = {
    "weekday": re.compile(r"\b(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:days?)?"
                          r"\b", re.IGNORECASE),
    "month": re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b",
                        re.IGNORECASE),
    "day": re.compile(r"\b\d{1,2}(?:st|nd|rd|th)\b", re.IGNORECASE),
    "time": re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b", re.IGNORECASE),
    "number": re.compile(r"\b\d+(?:[.,]\d+)?\b"),
    # a capitalised word inside a sentence (chat text often starts sentences in lower case)
    "name": re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]{2,}\b"),
}
#: Kinds of value by which a short correction finds what it corrects.
_DATE_SLOTS = frozenset({"weekday", "month", "day", "time"})
#: Words of a correction that say it is one, not what it is about.
_MARKER_TERMS = frozenset(tokenize("scratch that correction correct correcting myself meant "
                                   "mean wait actually wrong mistake bad misspoke misread "
                                   "misheard misremembered typo instead rather changed moved "
                                   "now longer anymore end ended decide decided sorry oops no "
                                   "yes ok okay ignore disregard forget said told make err"))
#: ... nor a pronoun's or a verb's contraction, which ``tokenize`` keeps whole and in parts
#: ("I'm", "we've", "don't"): two statements that both say "I'm" share no word of what
#: they are about. (Of the parts, only the endings: "don" may be a name.)
_CONTRACTIONS = frozenset(
    t for t in tokenize("i'm i've i'd i'll you're you've you'd you'll we're we've we'd we'll "
                        "they're they've they'd they'll he'd he'll she'd she'll it'll that'll "
                        "there're don't doesn't didn't can't won't isn't aren't wasn't "
                        "weren't haven't hasn't hadn't couldn't wouldn't shouldn't")
    if "'" in t or t in ("m", "re", "ve", "d", "ll", "t"))


#: A word that may start with a capital, a name when two statements both spell it so
#: ("Pedro", "Łukasz", "Aunt Helga"; ``_capitals``); "I" and its contractions ("I'm",
#: "I’ve") are none. (An ASCII lower-case letter never starts one.)
_CAPITAL = re.compile(r"\b(?!I(?:['’]\w+)?\b)[^\W\d_a-z][\w'’-]*")


#: Names that say what a statement is about, not whom: places, organisations, products.
_KNOWN = PLACES | KNOWN_ORGS | KNOWN_PRODUCTS


class _Capital(NamedTuple):
    start: int
    end: int
    #: the word as ``_terms`` spells it
    terms: frozenset[str]
    #: a place, organisation or product the gazetteer knows
    known: bool


def _capitals(text: str) -> tuple[_Capital, ...]:
    """The words of ``text`` that start with a capital letter, of any script."""
    return tuple(_Capital(found.start(), found.end(), frozenset(_terms(word)),
                          _plain(word) in _KNOWN)
                 for found in finditer(_CAPITAL, text)
                 if (word := found.group(0))[0].isupper())


def _names(text: str) -> set[str]:
    """The capitalised words of ``text`` that may name a person, as ``_terms`` spells
    them: not "I", marker words, or the places, organisations and products the
    gazetteer knows ("moved to Lisbon, not Porto" is about Lisbon).

    >>> sorted(_names("Scratch that, I'm told Pedro moved to Lisbon with Ana's kids"))
    ['ana', 'pedro']
    >>> sorted(_names("Łukasz moved to Berlin with Ömer"))
    ['ömer', 'łukasz']
    """
    return _person_terms(_capitals(text))


def _person_terms(capitals: Sequence[_Capital]) -> set[str]:
    """The terms of those of ``capitals`` the gazetteer does not know (``_names``)."""
    return set().union(*(word.terms for word in capitals if not word.known))


def _plain(word: str) -> str:
    """A word as the gazetteer spells names: lower case, without a possessive."""
    word = word.lower().replace("’", "'")
    return word[:-2] if word.endswith("'s") else word


#: How a cosine that a shared name inflates is read: the higher of the cosine with the
#: name out of sight plus ``MASKED_LIFT`` and the plain one less ``NAME_SHARE`` (on
#: hand-written pairs of a person's statements, a change of one thing of theirs kept
#: 0.25-0.83 masked and 0.56-0.87 plain, another thing of theirs said 0.0-0.54 and
#: 0.30-0.65).
MASKED_LIFT = 0.10
NAME_SHARE = 0.18


def name_blind(plain: float, hidden: float) -> float:
    """The cosine of two statements that share a name, as ``NOW_SIMILAR`` reads it:
    ``plain`` with the name, ``hidden`` without (``masked``); never above ``plain``.

    >>> round(name_blind(0.61, 0.25), 2), round(name_blind(0.87, 0.83), 2)
    (0.43, 0.87)
    """
    return min(plain, max(hidden + MASKED_LIFT, plain - NAME_SHARE))


def masked(text: str, other: str) -> tuple[str, str] | None:
    """Both texts with the names they share put out of sight (None: they share none): a
    short statement about a person is close to any other about them by that name alone
    (MiniLM: "Pedro moved to Lisbon last spring" and "Pedro is married to Sofia" 0.61),
    so what they say of the person is compared without it.

    >>> masked("Pedro moved to Lisbon", "Pedro is married to Sofia")
    ('someone moved to Lisbon', 'someone is married to Sofia')
    >>> masked("I moved to Lisbon", "I live in Porto") is None
    True
    """
    return masked_many(text, [other])[0]


def masked_many(text: str, others: Sequence[str]) -> list[tuple[str, str] | None]:
    """``masked`` of ``text`` with each of ``others``, ``text`` read once."""
    mine = _capitals(text)
    names = _person_terms(mine)
    out: list[tuple[str, str] | None] = []
    for other in others:
        theirs = _capitals(other)
        shared = names & _person_terms(theirs)
        out.append((_hide(text, mine, shared), _hide(other, theirs, shared))
                   if shared else None)
    return out


def _hide(text: str, capitals: Sequence[_Capital], names: set[str]) -> str:
    """``text`` with the words of ``capitals`` that spell one of ``names`` as "someone"."""
    out, at = [], 0
    for word in capitals:
        if word.terms & names:
            out += [text[at:word.start], "someone"]
            at = word.end
    return "".join(out) + text[at:]


@dataclass(frozen=True)
class Statement:
    """An earlier statement a correction may replace: its id and text, most recent first
    in the list given to ``correction_target``; ``assistant``: the assistant said it (a
    reminder it set), which only an explicit correction replaces."""

    id: str
    text: str
    assistant: bool = False
    #: the whole message it was said in (what a correction of it is indexed with)
    message: str | None = None
    #: who said it, when the conversation named a speaker (one of the user's side)
    speaker: str | None = None

    def about_another(self, text: str, speaker: str | None) -> bool:
        """Whether ``text``, said by ``speaker``, cannot correct this statement because
        they are two people speaking each of themselves: both name a speaker, the names
        differ, and ``text`` is said in the first person singular (Ana's "actually I live
        in Graz now" is no correction of Tom's "I live in Linz"), or this statement is
        and ``text`` does not name its speaker. What they share ("we meet at 4", "Mia
        starts school in Graz") and what one says of the other ("Tom works at Bosch
        now") may correct; a message without a speaker may correct anyone's.

        >>> tom = Statement("t", "I work at Acme", speaker="Tom")
        >>> tom.about_another("Actually I work at Bosch now", "Ana")
        True
        >>> tom.about_another("Actually Tom works at Bosch now", "Ana")
        False
        >>> tom.about_another("Actually I work at Bosch now", "tom ")
        False
        """
        if self.assistant or self.speaker is None or speaker is None:
            return False
        mine, theirs = person_key(speaker), person_key(self.speaker)
        if not mine or not theirs or mine == theirs:
            return False
        if _of_self(text):
            return True
        if not _of_self(self.text):
            return False
        # what it names that the earlier one names too (its speaker, or the sister it
        # spoke of) says it is about the same one
        named = {person_key(m.group(0)) for m in finditer(_WORDS, text)}
        theirs_named = {person_key(m.group(0)) for m in finditer(_WORDS, theirs)}
        theirs_named |= {person_key(m.group(0)) for m in finditer(_CAPITALISED, self.text)}
        return not (named & (theirs_named - _SELF_WORDS))


#: The first person singular: who speaks, speaks of themselves ("i.e." is not "I") ...
_SELF_WORDS = frozenset({"i", "im", "ive", "my", "me", "mine", "myself"})
_SELF = re.compile(r"\b(?:i(?![.]e[.])|i['’](?:m|ve|d|ll)|"
                   + "|".join(sorted(_SELF_WORDS - {"i"})) + r")\b", re.IGNORECASE)
#: ... but not in an aside about the statement itself ("I think", "I checked", "my bad")
_ASIDE = re.compile(r"\b(?:i (?:think|thought|guess|believe|mean|meant|heard|checked|said"
                    r"|told you|was wrong|got it wrong|misspoke)|my (?:bad|mistake))\b",
                    re.IGNORECASE)
_WORDS = re.compile(r"[^\W\d_]+")
_CAPITALISED = re.compile(r"\b[A-Z][^\W\d_]+")


def _of_self(text: str) -> bool:
    """Whether ``text`` says something of its speaker (the first person singular, asides
    such as "I think" left out).

    >>> _of_self("I think the recital is on Friday"), _of_self("ive got a dog")
    (False, True)
    """
    at = 0
    for aside in finditer(_ASIDE, text):
        if search(_SELF, text[at:aside.start()]):
            return True
        at = aside.end()
    return bool(search(_SELF, text[at:]))


def person_key(name: str) -> str:
    """A speaker's name as compared: Unicode composed, spaces joined, case folded.

    >>> person_key(" Jos\u0065\u0301\u00a0Silva ") == person_key("josé silva")
    True
    """
    return " ".join(unicodedata.normalize("NFKC", name).split()).casefold()


#: What says that a message adds something forgotten, not that it takes anything back:
#: "oh wait, I forgot to say Ana's birthday is Friday", "hang on, one more thing".
_FORGOT = re.compile(r"\bi (?:(?:almost|nearly) )?forgot\b|\b(?:one more|another) thing\b"
                     r"|\bby the way\b|\bbtw\b", re.IGNORECASE)


def _takes_back(sentence: str) -> bool:
    """Whether one sentence says outright that something said was wrong.

    >>> _takes_back("oh wait, it's Tuesday"), _takes_back("oh wait, I forgot to say hi")
    (True, False)
    """
    return bool(search(_TAKE_BACK, sentence)) and not search(_FORGOT, sentence)


def takes_back(text: str) -> bool:
    """Whether a message says outright that something said was wrong ("scratch that",
    "I meant", "I got the date wrong"), which may correct a statement of the same message
    ("we meet at 3. scratch that, 4"); a value set against another ("3 days now not 2")
    or a change corrects what was said before the message.

    >>> takes_back("scratch that, it's Tuesday"), takes_back("so it's 3 days now not 2")
    (True, False)
    """
    return any(_takes_back(s) for s in sentences(text))


#: What an assistant says when it changes something it did: "I've moved your reminder to
#: Tuesday", "updated - the booking is now for 4".
_REDO = re.compile(
    r"\b(?:moved|changed|updated|rescheduled|pushed|switched|amended)\b[^.?!]{0,60}?"
    r"\b(?:to|until|for)\b|^\W*(?:updated|changed|done)\W+[^.?!]{0,60}\bnow\b",
    re.IGNORECASE)


def redoes(text: str) -> bool:
    """Whether an assistant's statement changes what it did before ("I have moved your
    reminder to Tuesday 17 February"), which replaces the assistant's earlier statement
    of it; advice ("brown rice instead of white") replaces nothing.

    >>> redoes("I have moved your reminder to Tuesday 17 February at 7pm")
    True
    >>> redoes("Try brown rice instead of white rice"), redoes("I set a reminder for Monday")
    (False, False)
    """
    return any(_takes_back(s) or search(_REDO, s) for s in sentences(text))


def is_correction(text: str) -> bool:
    """Whether a message takes back or changes something said before.

    >>> is_correction("scratch that, it's Tuesday"), is_correction("I meant the 21st, not the 14th")
    (True, True)
    >>> is_correction("We finally got the flat!")
    False
    """
    return any(_takes_back(s) or search(_CHANGE, s) or _value_not_value(s)
               for s in sentences(text))


def _value_not_value(sentence: str) -> bool:
    """"16 people not 14", "in Calgary, not Edmonton": a value, then "not" and a value
    (a number, a day or month, a name), within four words of each other; or "not" and a
    value and then the one that holds ("it is not Tuesday, it is Wednesday").

    >>> _value_not_value("it is not Tuesday, it is Wednesday the 18th")
    True
    >>> _value_not_value("it is not Tuesday yet"), _value_not_value("I'm not Canadian")
    (False, False)
    """
    for found in finditer(_NOT, sentence):
        if not starting_at(_VALUE_AFTER, sentence, found.end()):
            continue
        if starting_at(_BUT_VALUE, sentence, found.end()):
            return True
        before = sentence[max(0, found.start() - 60):found.start()].split()[-4:]
        if any(_VALUE_WORD.match(word.strip(",;:")) for word in before):
            return True
    return False


def says_now(text: str) -> bool:
    """Whether a statement says how things are now ("I've gone vegan now"), which may
    replace how they were, and not that it adds to them ("my dad's visiting now too").

    >>> says_now("down to 1 sugar now"), says_now("I quit the bakery job"), says_now("I cycle")
    (True, True, False)
    >>> says_now("also I dropped the saturday shift, too tired"), says_now("we're 20 weeks")
    (True, False)
    >>> says_now("Sam has a school play now too"), says_now("the next scan is on 14 April now")
    (False, False)
    >>> says_now("my flight is on 9 May now that I booked it"), says_now("I'm off next week now")
    (False, True)
    >>> says_now("we ended up taking the train"), says_now("I've decided on the blue one")
    (True, True)
    >>> says_now("my brother decided to go vegan"), says_now("I decided not to tell her")
    (False, False)
    >>> says_now("this Tuesday I swam instead"), says_now("I should have swum instead")
    (False, False)
    >>> says_now("we never ended up moving"), says_now("I didn't end up taking the job")
    (True, True)
    """
    return bool(search(_NOW, text) or (search(_OUTCOME, text) and not search(_ONE_OFF, text)
                                        and not search(_MIGHT, text))
                ) and not search(_ADDS, text)


def may_replace(text: str) -> bool:
    """Whether ``correction_target`` may find a statement that ``text`` (a user's) replaces:
    it corrects (``is_correction``) or says how things are now (``says_now``); for
    anything else it returns None, so what it compares is not worth computing.

    >>> may_replace("scratch that, it's Tuesday"), may_replace("I'm vegan now")
    (True, True)
    >>> may_replace("We went to the zoo")
    False
    """
    return is_correction(text) or says_now(text)


def _number(term: str) -> str:
    """An ordinal day ("18th") as the number it names ("18 April"); other terms as they
    are."""
    if 3 <= len(term) <= 4 and term[:-2].isdigit() and term[-2:] in ("st", "nd", "rd", "th"):
        return term[:-2]
    return term


def _terms(text: str) -> set[str]:
    """The words of ``text`` that say what it is about, an ordinal as its number (a
    correction's "not the 18th" takes back "it's on 18 April").

    >>> sorted(_terms("sorry, it's the 19th in Graz"))
    ['19', 'graz']
    """
    return {_number(t) for t in tokenize(text.replace("’", "'"))} - _MARKER_TERMS - _CONTRACTIONS


#: A day of a month written as a number beside the month ("sept 12", "12 September"): a
#: date, not a count ("3 days not 2").
_MONTH_DAY = re.compile(r"\b(?:" + _MONTHS + r")\.?\s+\d{1,2}\b|\b\d{1,2}\s+(?:" + _MONTHS + r")",
                        re.IGNORECASE)


def _slots(text: str) -> set[str]:
    """The kinds of value ``text`` holds.

    >>> sorted(_slots("we're going saturday sept 12")), sorted(_slots("3 days now not 2"))
    (['day', 'month', 'weekday'], ['number'])
    """
    out = {name for name, pattern in _SLOTS.items() if search(pattern, text)}
    if "number" in out:
        dates = [m.span() for m in finditer(_MONTH_DAY, text)]
        if dates:
            out.discard("number")
            out.add("day")
            # both in the text's order: one pass (a number against every date was
            # quadratic on "sept 1 sept 1 ...")
            at = 0
            for number in finditer(_SLOTS["number"], text):
                while at < len(dates) and dates[at][1] <= number.start():
                    at += 1
                if at == len(dates) or number.start() < dates[at][0]:
                    out.add("number")
                    break
    return out


def correction_target(text: str, recent: Sequence[Statement],
                      similarity: Mapping[str, float] | None = None, *,
                      about: str | None = None, redo: bool = False) -> str | None:
    """The statement (of ``recent``, most recent first) that ``text`` replaces, or None
    when none plausibly is: the first of ``correction_targets``."""
    found = correction_targets(text, recent, similarity, about=about, redo=redo)
    return found[0] if found else None


def correction_targets(text: str, recent: Sequence[Statement],
                       similarity: Mapping[str, float] | None = None, *,
                       about: str | None = None, redo: bool = False) -> tuple[str, ...]:
    """The statements (of ``recent``, most recent first) that ``text`` replaces: none
    when none plausibly is, else the one it corrects and, when the assistant repeated it
    (a sheet, a reminder, a draft that says the value taken back), that repetition too
    (``ECHO_MARGIN``). ``similarity``: the cosine of ``text`` with each statement (by
    id), when the caller has it (of the texts ``masked`` gives, when they share a name).

    A correction ("scratch that", "I meant", "not the 14th") replaces a statement that
    holds the value it negates ("not the 14th"), shares two or more content words with
    it, or one word and a kind of value (a weekday, a date, a time, a number, a name),
    where a name both spell with a capital counts only beside another word, or with a
    kind of value other than a name, unless the correction takes back outright;
    a short one ("scratch that, it's Tuesday") may also replace one of the last three
    statements that holds a weekday, a month, a day or a time as it does, and any may
    replace a statement whose cosine is at least ``NOW_SIMILAR``. The best overlap wins
    (being that close counts as two shared words: "small change from the vet: Dr.
    Lund put Milo's insulin up, so it's now 4 units ..." replaces the dose, not who the
    vet is), then the most recent. One that only says something changed ("we moved it to Friday",
    "it's now at 4") replaces what its speaker said, not the assistant's.
    A statement of how things are now ("I've gone vegan now")
    replaces only what it is close to: cosine at least ``NOW_SIMILAR`` and a shared
    word, or that much more without one. ``about``: the statement before a short
    correction in its message ("we added Mondays. so it's 3 days now not 2"), whose words
    say what the correction is about. ``redo``: ``text`` is an assistant changing what it
    did (``redoes``), a correction whatever its words.

    >>> recent = [Statement("b", "Dev takes the curry to work"),
    ...           Statement("a", "my dentist appointment moved to Monday")]
    >>> correction_target("scratch that, it's Tuesday", recent)
    'a'
    >>> correction_target("actually my sister lives in Graz, not Linz",
    ...                   [Statement("c", "my sister lives in Linz"), *recent])
    'c'
    >>> correction_target("actually I love it", recent) is None
    True
    >>> trips = [Statement("f", "the fishing trip is on Labor day, not the 12th"),
    ...          Statement("b", "she'll go to Bright Days on 2 days, tuesdays and thursdays")]
    >>> correction_target("so it's 3 days now not 2", trips,
    ...                   about="Bright Days is going great, we added mondays")
    'b'
    >>> correction_target("I've gone fully vegan now", [Statement("v", "I'm vegetarian")],
    ...                   {"v": 0.71})
    'v'
    >>> correction_target("doing the budget review now, like you reminded me",
    ...                   [Statement("r", "Reminder set: budget review", assistant=True)],
    ...                   {"r": 0.8}) is None
    True
    >>> sheet = [Statement("s", "Food: Renal only, 2 sachets a day", assistant=True),
    ...          Statement("u", "Pierogi is on a renal diet, 2 sachets a day")]
    >>> correction_targets("One correction: it's 3 sachets a day, not 2", sheet)
    ('u', 's')
    >>> correction_targets("My mistake.", sheet, about="it's 3 sachets a day, not 2")
    ()
    """
    if not recent:
        return ()
    similarity = similarity or {}
    if not redo and not is_correction(text):
        # "doing the review now, like you reminded me" does not undo the reminder: how
        # things are now replaces only what the same person said
        own = [s for s in recent if not s.assistant]
        if not says_now(text):
            return ()
        if not search(_NOW, text) and not search(_INSTEAD, text):
            own = [s for s in own if _planned(s.text)]
        closest = _closest_now(text, own, similarity)
        return (closest,) if closest else ()
    if bare_take_back(text):
        return ()  # "my mistake": what it takes back, the statement beside it says
    outright = takes_back(text)
    if not redo and not outright and not any(_value_not_value(s) for s in sentences(text)):
        # a change ("we moved it to Friday", "it's now at 4") changes what its speaker
        # said; what the assistant did or advised only an explicit one takes back
        recent = [s for s in recent if not s.assistant]
    terms, slots = _terms(text), _slots(text)
    negated = [_terms(m.group(1)) for m in finditer(_NEGATED, text)]
    negated += [_terms(m.group(1)) - _NOT_VALUES for m in finditer(_SAID, text)]
    short = len(terms) <= 4
    if short and about:
        terms |= _terms(about)
    scored: list[tuple[float, bool, Statement]] = []  # score, holds the negated value
    # who a statement is about counts as what it is about when the speaker says outright
    # that they take something back ("scratch that, Ana is seeing Mike")
    names = set() if outright else _names(text)
    for age, statement in enumerate(recent):
        theirs = _terms(statement.text)
        shared = len(terms & theirs)
        # a person's name shared alone says only who it is about, not what about them
        # ("Pedro moved to Lisbon" does not replace "Pedro is married to Sofia")
        said = shared - len(terms & theirs & names & _names(statement.text)) if names \
            else shared
        kinds = slots & _slots(statement.text)
        same_kind = len(kinds)
        holds_negated = any(n and n <= theirs for n in negated)
        same_date = len(kinds & _DATE_SLOTS)
        close = similarity.get(statement.id, 0.0) >= NOW_SIMILAR
        if not (holds_negated or (shared >= 2 and said) or (said and same_kind)
                or (shared and kinds - {"name"}) or (short and same_date and age < 3)
                or close):
            continue
        score = 3.0 * holds_negated + shared + same_kind + 2 * close + 0.5 / (1 + age)
        scored.append((score, holds_negated, statement))
    if not scored:
        return ()
    # the best overlap, then the most recent (``max`` keeps the first of equals)
    best = max(scored, key=lambda found: found[0])
    # The same thing said by the other side goes too (the assistant's echo of what the
    # user said, or the user's words the assistant's statement repeated; a user's
    # statement is the one corrected): as close to the correction or holding the value
    # taken back; mostly in the words of the statement corrected; naming whom the
    # correction and that statement name ("Tom's is on the 15th") and no one else ("a
    # reminder for Ana's appointment"); and no user's word when the correction is of what
    # the assistant did ("make the reminder January, not March" leaves "my passport
    # expires in March").
    corrected = _terms(best[2].text)
    whom = _names(text) & _names(best[2].text)
    named = _whose(best[2].text) | _whose(text) | _names(best[2].text) | _names(text)
    others = [found for found in scored if found[2].assistant is not best[2].assistant
              and (found[1] or found[0] >= best[0] - ECHO_MARGIN)
              and _share(_terms(found[2].text), corrected) >= ECHO_SHARE
              and whom <= _names(found[2].text) and _whose(found[2].text) <= named
              and not (best[2].assistant and search(_ITS_DOING, text))]
    if redo or not others:
        return (best[2].id,)
    echo = max(others, key=lambda found: found[0])
    pair = (echo, best) if best[2].assistant else (best, echo)
    return (pair[0][2].id, pair[1][2].id)


#: How much less a statement of the other side (the assistant's, the user's) may overlap
#: with a correction than the statement it corrects, and be replaced with it as its
#: echo; and how many of its words the statement corrected must say ("With 120 000 zł I'd
#: recommend a used MIWE oven ..." is advice from a budget, not the budget said again).
ECHO_MARGIN = 1.0
ECHO_SHARE = 0.4


_WHOSE = re.compile(r"\b(?-i:[A-Z])[^\W\d_]+(?=['’]s\b)", re.IGNORECASE)


def _whose(text: str) -> set[str]:
    """The names ``text`` says something is of ("Ana's appointment", "for Tom's")."""
    return {m.group(0).lower() for m in finditer(_WHOSE, text)}


def _share(terms: set[str], of: set[str]) -> float:
    return len(terms & of) / len(terms) if terms else 0.0


#: What the assistant did, named by a correction of it ("make the reminder 9am")
_ITS_DOING = re.compile(r"\b(?:reminders?|remind|alarms?|bookings?|booked|reservations?"
                        r"|calendar|invites?|notes?|drafts?|lists?|sheet)\b", re.IGNORECASE)


_ALSO_FIRST = re.compile(r"^\W*also\b", re.IGNORECASE)


def adds_news(text: str) -> bool:
    """Whether a statement says it adds what was forgotten or not said ("I forgot to
    mention ...", "... as well", "also ..."), not what it puts right: after a bare take-back
    ("Oops, my bad.") it is no correction.

    >>> adds_news("I forgot to mention Lily is allergic to peanuts")
    True
    >>> adds_news("Mia's parents' evening is on Tuesday as well"), adds_news("It's Tuesday")
    (True, False)
    """
    return bool(search(_FORGOT, text) or search(_ADDS, text) or search(_ALSO_FIRST, text))


def bare_take_back(text: str) -> bool:
    """Whether ``text`` only says that something said was wrong ("My mistake.", "Scratch
    that.", "oh wait, sorry"): no word or value of what; the statement beside it says.

    >>> bare_take_back("My mistake."), bare_take_back("scratch that, it's Tuesday")
    (True, False)
    """
    return not (_terms(text) - _ASIDE_TERMS) and not _slots(text) and is_correction(text)


def _closest_now(text: str, recent: Sequence[Statement], similarity: Mapping[str, float]
                 ) -> str | None:
    terms, kin = _terms(text), kin_of(text)
    best: tuple[float, str] | None = None
    for statement in recent:
        if kin - kin_of(statement.text):
            continue  # of another person: "my dad's dose went up to 40mg" keeps "I take 20mg"
        cosine = similarity.get(statement.id, 0.0)
        needed = NOW_SIMILAR if terms & _terms(statement.text) else NOW_SIMILAR + 0.15
        if cosine >= needed and (best is None or cosine > best[0]):
            best = (cosine, statement.id)
    return best[1] if best else None


#: What a decision or an outcome without "instead" replaces: a plan, an intention or a
#: choice still open ("I'm thinking of ...", "we might ...", "I'll probably ..."), not a
#: fact it names ("I didn't end up visiting my sister in Madrid" keeps "my sister lives in
#: Madrid")
_PLAN = re.compile(r"\b(?:think|thinking|considering|hoping|probably|plan|plans|planning"
                   r"|going to|gonna|torn|want|wants|would like|looking at|undecided"
                   r"|more interested)\b|['’]ll\b", re.IGNORECASE)


def _planned(text: str) -> bool:
    """Whether a statement says what its speaker plans, intends or has not settled: an
    intention or a tentative plan (``_PLAN``, dated or not) or a hedge (``is_hedge``).

    >>> _planned("We're thinking of getting a puppy"), _planned("My sister lives in Madrid")
    (True, False)
    """
    return bool(search(_PLAN, text)) or is_hedge(text)


#: Where a statement's clauses meet: a comma before a space (not "10,100"), a semicolon,
#: a dash or "&" between spaces, or a word that joins two clauses ("and", texting's "n",
#: "but", ...). One literal alternative at a time.
_JOINING = frozenset({"and", "n", "but", "so", "while", "whereas", "although", "though"})
_CLAUSE_BREAK = re.compile(r",\s|;|\s[-–—&]\s|\b(?:" + "|".join(sorted(_JOINING)) + r")\b",
                           re.IGNORECASE)
#: what a clause that stays true may not start with once cut out
_JOINERS = _JOINING | {"&", "also"}
#: a correction that calls the whole thing off, or puts another thing in its place
#: ("I got the green ones instead"), leaves nothing of it true
_CALLED_OFF = re.compile(r"\b(?:cancel\w*|called off|call(?:ing)? it off|no longer|never mind"
                         r"|nevermind|not happening|forget (?:it|that|about it)|quit\w*"
                         r"|stopped|gave up|given up|dropped out|no more|not any ?more"
                         r"|instead|fell through|sold|returned|moved out|switched|swapped"
                         r"|change of plans?)\b",
                         re.IGNORECASE)
#: words that say no more than that something follows ("last thing", "btw")
_ASIDE_TERMS = frozenset(tokenize("last thing btw also anyway haha lol update unrelated oh"))
#: the clauses of a corrected statement this much less close (cosine) to the correction
#: than the closest one are not what it corrects (``still_true``)
REMAIN_MARGIN = 0.15


def clause_spans(text: str) -> list[tuple[int, int]]:
    """The clauses of one statement as spans of ``text``, each with at least two words
    that say something (``tokenize``): a shorter piece joins the clause before it (the
    first, the one after it). One span when the statement has one clause.

    >>> text = "My wife walks him in the morning, I make the evening walk at 7."
    >>> [text[a:b] for a, b in clause_spans(text)]
    ['My wife walks him in the morning', ', I make the evening walk at 7.']
    >>> short = "Lunch at 1, ok"
    >>> [short[a:b] for a, b in clause_spans(short)]
    ['Lunch at 1, ok']
    """
    cuts = [0, *(m.start() for m in finditer(_CLAUSE_BREAK, text)), len(text)]
    spans: list[tuple[int, int]] = []
    words = 0  # in the last span: each piece is read once
    for start, end in itertools.pairwise(cuts):
        count = len(tokenize(text[start:end]))
        if spans and (count < 2 or words < 2):
            spans[-1] = (spans[-1][0], end)
            words += count
        elif end > start:
            spans.append((start, end))
            words = count
    return spans or [(0, len(text))]


def still_true(text: str, spans: Sequence[tuple[int, int]], correction: str,
               closeness: Sequence[float]) -> str | None:
    """What of the statement ``text`` a correction of it leaves true: its clauses
    (``spans``, from ``clause_spans``) whose cosine with the correction (``closeness``,
    one a clause) is ``REMAIN_MARGIN`` or more below the closest clause's and that name
    no value it names (``_values``) and no kind of value it holds (``_slots``: a
    weekday, a time, a number), in the person's own words (the runs of them joined by
    "…"); None when that is every clause or none, when what is left says fewer than
    two things, or when the correction calls it all off ("cancelled", "I quit", "fell
    through") or puts another thing in its place ("instead", "sold", a thing it names
    that the statement does not: ``_names_another``).

    >>> text = "My wife walks him in the morning, I make the evening walk at 7."
    >>> still_true(text, clause_spans(text), "I make the evening walk at 8 now", [0.3, 0.8])
    'My wife walks him in the morning'
    >>> still_true(text, clause_spans(text), "the walks are cancelled", [0.3, 0.8]) is None
    True
    """
    if len(spans) < 2 or len(closeness) != len(spans) or search(_CALLED_OFF, correction) \
            or _names_another(correction, text):
        return None
    best = max(closeness)
    values, kinds = _values(correction), _slots(correction) - {"name"}
    kept = [c < best - REMAIN_MARGIN and not values & _values(text[a:b])
            and not kinds & _slots(text[a:b]) for c, (a, b) in zip(closeness, spans, strict=True)]
    if all(kept) or not any(kept):
        return None
    runs: list[str] = []
    n = 0
    while n < len(spans):
        if not kept[n]:
            n += 1
            continue
        start = n
        while n < len(spans) and kept[n]:
            n += 1
        runs.append(_trimmed(text[spans[start][0]:spans[n - 1][1]]))
    left = " … ".join(r for r in runs if r)
    return left if len(set(tokenize(left)) - _ASIDE_TERMS) >= 2 else None


def _names_another(correction: str, text: str) -> bool:
    """Whether ``correction`` puts another named thing in the place of one ``text``
    names: it names one ``text`` does not (a day or a month aside: "we're buying on Birch
    Avenue now"), or says "not" before one ``text`` names ("I work at the library now,
    not the Rosebud"). What else ``text`` said was of the thing replaced.

    >>> _names_another("Mum moved to Beech House last week", "Her home is Willow Lodge")
    True
    >>> _names_another("it's Friday the 6th now", "Physio with Róisín on Thursday")
    False
    """
    def named(words: str) -> set[str]:
        # a capital inside a sentence: "Oh", "Since" or "Sorry" first names nothing
        return {t for m in finditer(_SLOTS["name"], words) for t in _terms(m.group(0))
                if not search(_SLOTS["weekday"], t) and not search(_SLOTS["month"], t)}

    said = _capital_terms(text)
    if named(correction) - said:
        return True
    return any(named(f"not {m.group(1)}") & said for m in finditer(_NEGATED, correction))


#: A number as written in digits (a thousands separator left out: "1,500" is 1500), or
#: in words up to twelve; a day or a month by its name or usual abbreviation ("May" with
#: its capital alone: "I may" is no month).
_DIGITS = re.compile(r"\d+(?:[,.]\d{3}(?!\d))*")
_NUMBER_WORDS = {w: str(n) for n, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve"))}
_CALENDAR_NAME = re.compile(
    r"\b(?:(?P<day>mon|tues|wednes|thurs|fri|satur|sun)days?"
    r"|(?-i:(?P<short>Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun))"
    r"|(?P<month>jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec)(?:uary|ruary|ch|il|e|y|ust"
    r"|t|tember|ober|ember)?|(?-i:(?P<may>May)))\b", re.IGNORECASE)
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)


def said_values(text: str) -> set[str]:
    """The numbers, days and months ``text`` says, however written ("5pm" and "5 pm",
    "two" and "2", "Wed" and "Wednesday" alike): two statements that differ in them say
    different things, however close in meaning.

    >>> sorted(said_values("The dentist is on Tuesdays at 9, not 10:30"))
    ['10', '30', '9', 'tue']
    >>> said_values("two cats, $1,500, Wed at 5pm") == said_values(
    ...     "2 cats, $1500, Wednesday at 5 pm")
    True
    >>> said_values("I may get married at the market in Marseille")
    set()
    """
    found = {m.group(0).replace(",", "").replace(".", "") for m in finditer(_DIGITS, text)}
    found |= {_NUMBER_WORDS[m.group(0).lower()] for m in finditer(_NUMBER_WORD, text)}
    for m in finditer(_CALENDAR_NAME, text):
        found.add((m.group("day") or m.group("short") or m.group("month") or "may")
                  .lower()[:3])
    return found


def _values(text: str) -> set[str]:
    """The terms of ``text`` that name a value: a number, or a word with a capital (a
    person, a place, a product).

    >>> sorted(_values("She lives in Irbid with her 2 kids"))
    ['2', 'irbid']
    """
    return {t for t in _terms(text) if any(c.isdigit() for c in t)} | _capital_terms(text)


def _capital_terms(text: str) -> set[str]:
    """The terms of the words of ``text`` that start with a capital (``_capitals``)."""
    return {t for word in _capitals(text) for t in word.terms}


def _trimmed(clause: str) -> str:
    """A clause cut out of its statement without the marks and the joining word it
    started or ended with."""
    words = clause.strip(CLAUSE_MARKS).split(" ")
    while words and words[0].casefold() in _JOINERS:
        words = words[1:]
    return " ".join(words).strip(CLAUSE_MARKS)
