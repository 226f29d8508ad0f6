"""Deterministic extraction: which sentences of a message are worth remembering, and the
entities they name (the knowledge graph's). Plain rules, no model, the same answer every time."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .._kg._entities import Mention, extract_mentions
from .._kg._facts import Fact, entity_names
from .._kg._patterns import extract_facts
from .._kg._scan import finditer, search, starting_at
from .._kg._text import initial_at, person_speaker
from .._kg._time import parse_times
from .._text import CLAUSE_LEADS, CLAUSE_MARKS, STOPWORDS

__all__ = ["DUPLICATE", "Extracted", "RuleExtractor", "announces_questions",
           "assistant_statements", "entities_of", "extract_entities", "is_filler", "is_hedge",
           "is_question", "list_lead_ins", "needs_context", "reference_keys", "sentences",
           "signal_strength"]

#: Cosine above which an extracted memory is the same as an existing one.
DUPLICATE = 0.95

#: Where a sentence ends: after ".", "!", "?" or "…" and before a space (the text's
#: whitespace is single spaces when it is split).
#: Not after a title or a Latin abbreviation ("Mr. Dupont", "e.g. basil").
_SENTENCE_END = re.compile(r"(?:(?<=[.!?…])(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bDr\.)"
                           r"(?<!\bSt\.)(?<!\bProf\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)"
                           r"(?<!\betc\.)|(?<=[.!?…][\"')\]»”’])|(?<=[.!?…]\*\*)) ")
#: Where forget's finer reading (``sentences(finer=True)``) also ends a sentence: after
#: an emoji (or another pictograph, a keycap, a flag) before a word, after an ideographic
#: or full-width full stop, after a closing mark inside emphasis ("_... 4071._ My dog")
#: or before a capital letter without a space ("4071.I live"), at an HTML break, after a
#: semicolon, at a dash between spaces, between a table's cells and after an emoticon
#: before a word ("4071 :) My dog") (a sentence's spaces are single ones: ``_lines``)
_FINER_END = re.compile(
    "(?<=[\u20e3\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff]) "
    "(?=\\w)|(?<=[。！？．｡‼⁉؟]) ?|(?<=[.!?…][_*~]) |(?<=[.!?…][_*~]{2}) "
    "|(?<=[a-z0-9][.!?])(?=[A-Z])| ?<(?:br|/?p|/?div|/?li) ?/?> ?"
    "|(?<=;) | [-–—] | \\| |(?<=[:;=][)(DPpd3]) (?=\\w)|(?<=[:;]-[)(DPp]) (?=\\w)"
    "|(?<=\\)\\)) (?=\\w)|(?<=<3) (?=\\w)|(?<=\\^\\^) (?=\\w)|(?<= [xX][dD]) (?=\\w)"
    "|(?<= [xX][dD]{2}) (?=\\w)|(?<= [xX][dD]{3}) (?=\\w)")
#: A word: letters of any script, with the marks some scripts write inside a word (the
#: vowel signs of Devanagari and its neighbours, Thai's, Arabic's and Hebrew's points,
#: Latin's combining accents), or a number.
_MARKS = "\u0300-\u036f\u0591-\u05c7\u064b-\u065f\u0670\u0900-\u0dff\u0e00-\u0eff\u1000-\u109f"
_WORD = re.compile(rf"[^\W\d_](?:[^\W\d_]|['’{_MARKS}-])*|\d+(?:[.,:/]\d+)*")
#: Four letters of a script written without spaces (Chinese, Japanese, Thai) in one
#: "word": a phrase that says something ("我住在北京"), unless it is one of the greetings
#: and thanks of ``_UNSPACED_FILLER``.
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f]{4}")
_UNSPACED_FILLER = frozenset({
    "ありがとう", "ありがとうございます", "ありがとうございました", "こんにちは", "こんばんは",
    "おはよう", "おはようございます", "おやすみなさい", "すみません", "よろしくお願いします",
    "どうもありがとう", "さようなら", "了解です", "わかりました",
    "谢谢", "谢谢你", "谢谢您", "非常感谢", "多谢", "你好", "你好呀", "您好", "好的", "好的谢谢",
    "哈哈", "哈哈哈", "哈哈哈哈", "再见", "晚安", "早上好", "晚上好", "没问题", "不客气",
    "สวัสดี", "สวัสดีครับ", "สวัสดีค่ะ", "ขอบคุณ", "ขอบคุณครับ", "ขอบคุณค่ะ", "ขอบคุณมาก",
})
#: A number ends where a word character does not follow (what a final \b said), checked after
#: each part, so a run of parts is read once and never given back.
_NUMBER = re.compile(r"\b\d++(?!\w)(?:[.,:/-]\d++(?!\w))*+")
#: Codes mixing letters and digits: bed-18, v1.9.0, r51, p95, ISO-8601.
#: Each part is the whole run of letters and digits after a separator: parts that could be cut
#: anywhere ("(?:[.-]?[A-Za-z0-9]+)*") made "a1", 24 digits and "_" take 4 s, and each two
#: more digits four times as long.
_CODE = re.compile(r"\b[A-Za-z]+-?\d++[A-Za-z0-9]*+(?!\w)(?:[.-][A-Za-z0-9]++(?!\w))*+")
_MONTH = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b",
                    re.IGNORECASE)
_WIKI = re.compile(r"\[(wiki/[^\[\]\s]+)\]")
_URN = re.compile(r"\burn:[a-z0-9-]+:[A-Za-z0-9:._-]+", re.IGNORECASE)
_FIRST_PERSON = {"i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine", "we", "we're", "our",
                 "us", "myself"}
#: Words by which a question still says something about its asker ("can our app ...?").
_DISCLOSING = {"my", "our", "mine", "ours", "i'm", "i've", "we're", "we've", "myself"}
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
           "really", "appreciate", "care", "take", "maybe", "perhaps", "probably", "please",
           "wait", "ooh", "omg", "anyway", "btw", "that's", "it's", "you're", "helpful",
           "lifesaver", "amazing", "perfect", "brilliant", "lovely", "fantastic", "excellent",
           "wonderful", "super", "sweet", "fab", "cheers", "ta", "legend", "hero", "idea",
           "makes", "sense", "noted", "got", "will", "do", "done", "pls", "plz", "ty",
           "lot", "lots", "mil", "million", "bunch", "again", "everything", "glad", "happy",
           "idk", "dunno", "idc"}

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
    content = [w for w in words if w not in _FILLER and w not in STOPWORDS
               and w not in _UNSPACED_FILLER]
    # "I PASSED", "cat, 6 years old": one content word still says something about a
    # person when they speak of themselves or give a number
    says_something = any(w in _FIRST_PERSON for w in words) or bool(search(_NUMBER, text)) \
        or any(_UNSPACED.search(w) for w in content)
    return not content or (len(content) < 2 and not says_something)


def _acknowledges(sentence: str) -> bool:
    """A sentence that only acknowledges ("good list.", "ok thanks for everything this
    month"): filler with a word of filler in it, unlike a bare answer ("a dog.").

    >>> _acknowledges("good list."), _acknowledges("a dog."), _acknowledges("I PASSED")
    (True, False, False)
    """
    return is_filler(sentence) and any(w in _FILLER for w in _words(sentence))


#: What a sentence that only says questions are coming is made of ("hi, back with more
#: Japan questions", "ok another quick question:", "got a few more qs for you"): words that
#: say so, of which one at least says more are coming (``_MORE``), at most one word of what
#: about, then the word for questions and perhaps whom they are for.
_QUESTIONS = frozenset({"question", "questions", "q", "qs"})
_MORE = frozenset({"more", "another", "other", "quick", "small", "last", "follow-up",
                   "followup", "random", "silly", "few", "couple", "back"})
_ANNOUNCING = _MORE | frozenset({
    "hi", "hiya", "hello", "hey", "ok", "okay", "so", "right", "morning", "again", "also",
    "i'm", "im", "i", "am", "i've", "ive", "have", "got", "here", "with", "a", "an", "one",
    "two", "three", "some", "of"})
_FOR_YOU = (["for", "you"], ["for", "u"], ["for", "ya"])


def announces_questions(sentence: str) -> bool:
    """Whether a sentence only says that questions are coming: nothing to remember.

    >>> [announces_questions(s) for s in ("Hi, back with more Japan questions",
    ...  "ok another quick question:", "Got a few more qs for you!", "one more question")]
    [True, True, True, True]
    >>> [announces_questions(s) for s in ("The exam has 40 questions",
    ...  "failed two questions on the theory test", "I have questions about my visa",
    ...  "my son asks so many questions", "more questions")]
    [False, False, False, False, True]
    """
    words = _words(sentence)
    if words[-2:] in _FOR_YOU:
        words = words[:-2]
    if not words or words[-1] not in _QUESTIONS:
        return False
    before = words[:-1]
    other = [w for w in before if w not in _ANNOUNCING]
    return len(other) <= 1 and any(w in _MORE for w in before)


def extract_entities(text: str, *, speaker: str | None = None,
                     now: datetime | None = None) -> tuple[str, ...]:
    """A text's entities as its knowledge graph names them (``entity_names``: its speaker
    when a person, names of people, places, organisations, products and events, never a
    date), then the keys by which it points at other memories (``reference_keys``). What
    a memory written with this text and ``speaker`` holds as ``Memory.entities``.

    >>> extract_entities("Alice's cat is called Miso")
    ('alice', 'miso')
    >>> extract_entities("Bob's manager is Carol. Carol works at Acme")
    ('bob', 'carol', 'acme')
    >>> extract_entities("Great, thanks! I moved to Lagos in May 2023", speaker="Nadia")
    ('nadia', 'lagos')
    >>> extract_entities("2026-04-01: moved bed-18 to 14% after v1.9.0, see [wiki/ops]")
    ('wiki/ops', 'bed-18', 'v1.9.0')
    """
    times = parse_times(text, now)
    mentions = extract_mentions(text, now=now, times=times)
    facts = extract_facts(text, speaker=person_speaker(speaker), now=now, mentions=mentions,
                          times=times)
    return entities_of(text, mentions, facts, speaker)


def entities_of(text: str, mentions: Sequence[Mention], facts: Sequence[Fact],
                speaker: str | None) -> tuple[str, ...]:
    """``extract_entities`` of a text whose mentions and facts are already extracted."""
    return tuple(dict.fromkeys((*entity_names(mentions, facts, speaker),
                                *reference_keys(text))))


def reference_keys(text: str) -> tuple[str, ...]:
    """What a text names that is no entity but links memories: memory ids (a memory that
    names another's id references it), wiki pages, and codes that mix letters and digits
    (bed-18, v1.9.0, INC-4411), lowercased. Dates, times and bare numbers are not keys: a
    memory keeps its times apart, and sharing a day or a number is no cross-reference.

    >>> reference_keys("see urn:ump:mem:7 and [wiki/Ops]; bed-18 at 9:30 on 2026-04-01")
    ('urn:ump:mem:7', 'wiki/ops', 'bed-18')
    """
    out = [m.group(0) for m in finditer(_URN, text)]
    out += [m.group(1).lower() for m in finditer(_WIKI, text)]
    out += [m.group(0).lower() for m in finditer(_CODE, text)]
    return tuple(dict.fromkeys(out))


#: Hedges and hypotheticals: what a person may do, not what is (a candidate, not a fact).
#: "maybe 2 hours", "perhaps $300" are estimates, not hedges.
_HEDGE = re.compile(
    r"\b(?:(?:maybe|perhaps|possibly)(?!\s+(?:about\s+|around\s+)?[$£€]?\d)|might"
    r"|someday|some day|one day|i wish|if only|i'?d love to|i would love to|not sure"
    r"|i wonder|we'?ll see|i guess|if i (?:had|could|were|ever)|if we (?:had|could|were|ever)"
    r"|in theory)\b", re.IGNORECASE)
#: Tentative plans: a hedge unless they name a date or a time ("thinking of flying out
#: on 2 October" is a plan).
_TENTATIVE = re.compile(r"\b(?:thinking (?:of|about)|considering|hoping to|probably)\b",
                        re.IGNORECASE)
_WHEN = re.compile(r"\b(?:\d+|mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug"
                   r"|sep|oct|nov|dec|tomorrow|tonight|next|this (?:week|weekend|month))",
                   re.IGNORECASE)
#: Where a clause ends: a comma, semicolon or colon, a dash between spaces, or before a
#: word that joins a new clause ("jess is allergic tho so maybe a sphynx??").
_CLAUSE = re.compile(rf"[,;:](?= )| [-–—](?= )| (?=(?:{'|'.join(CLAUSE_LEADS)}) )",
                     re.IGNORECASE)
#: What the assistant did or proposed that its user may ask about later.
_ASSISTANT_ACT = re.compile(
    r"\b(?:i'?ve|i have|i'?ll|i will|i just) (?:also )?(?:set|booked|added|put|scheduled"
    r"|remind(?:ed)?|ping(?:ed)?|text(?:ed)?"
    r"|saved|noted|created|sent|reserved|moved|updated|cancell?ed|emailed|drafted|made"
    r"|blocked|ordered|logged)\b"
    r"|\breminder (?:is )?set\b|\b(?:booked|reserved|scheduled) (?:for|at|on)\b"
    r"|\b(?:i'?d|i would|i) (?:strongly )?(?:recommend|suggest)\b"
    r"|\bmy (?:pick|recommendation|suggestion|top (?:pick|choice)|vote|advice|tip)\b"
    # "what helps most people: ...", "the best thing is to ...", "the easiest fix: ..."
    r"|\bwhat (?:helps|works)\b[\w ]{0,30}?(?::|\bis\b|\bare\b)"
    r"|\bthe (?:best|easiest|simplest|quickest) (?:thing|way|fix|cure|remedy|trick)\b"
    r"|\b(?:i'?d|i would) (?:go with|pick|choose|start with|begin with)\b"
    # advice in the words people give it: "a good first one: ...", "you could try ...",
    # "start with ...", "X would be a good fit"
    r"|\b(?:a|the|your) (?:good|great|solid|safe|easy) (?:first (?:one|step|song|book|pick)"
    r"|choice|option|bet|pick|place to start|starting point|fit)\b"
    r"|\b(?:would|could|might) be (?:a )?(?:good|great|perfect|ideal) (?:fit|choice|option"
    r"|start|match)\b"
    r"|\byou (?:could|might|should|can) (?:try|consider|start with|go with|look at)\b"
    r"|^\W*(?:start with|try|consider|go with|stick with)\b", re.IGNORECASE)
#: A line of a bulleted or numbered list, and Markdown emphasis.
_LIST_ITEM = re.compile(r"(?:[-*•]|\d{1,3}[.)]) ")
_MARKUP = re.compile(r"\*\*|__|`")
#: Words that point back at what was said before ("she", "that", "yes").
_POINTING = frozenset({"she", "he", "it", "they", "that", "this", "those", "these", "her",
                       "his", "their", "them", "there", "yes", "yeah", "yep", "no", "nope",
                       "sure", "ok", "okay", "she's", "he's", "it's", "they're", "that's",
                       "both", "neither", "either", "same", "also", "too", "which"})

#: words that open a new point of a message ("also, I got a job"), not pointing back
_OPENING = frozenset({"also", "and", "plus", "btw", "oh"})


def sentences(text: str, *, finer: bool = False) -> list[str]:
    r"""A message cut into sentences: at ``.``, ``!``, ``?`` or ``…`` before a space (chat
    text often starts sentences in lower case) and at line breaks. ``finer``: also where
    an emoji may stand for a full stop, after an ideographic full stop and after a
    closing mark inside emphasis (``_FINER_END``: forget's reading, which may cut a
    sentence too often; the extractor keeps "I ❤️ Paris" one statement).

    >>> sentences("hiya. we got the flat!! moving on the 14th\nBiscuit hates it")
    ['hiya.', 'we got the flat!!', 'moving on the 14th', 'Biscuit hates it']
    >>> sentences("the south bed gets shade from Mr. Dupont's shed. Dr. Ali agrees")
    ["the south bed gets shade from Mr. Dupont's shed.", 'Dr. Ali agrees']
    >>> sentences("Booked it 🎉 It starts in May ⏰ so soon。Yay _done._ Bye", finer=True)
    ['Booked it 🎉', 'It starts in May ⏰', 'so soon。', 'Yay _done._', 'Bye']
    >>> sentences("I met J. Lee of the U.S. team. I got an A. It was fine")
    ['I met J. Lee of the U.S. team.', 'I got an A.', 'It was fine']
    """
    parts = [part for line in _lines(text) for part in _cut(line) if part]
    return [p for part in parts for p in _FINER_END.split(part) if p] if finer else parts


def _cut(line: str) -> list[str]:
    """A line cut at each end of a sentence (``_SENTENCE_END``), but after an initial
    (``initial_at``: "J. Lee", "U.S. team")."""
    cuts = [m.start() for m in _SENTENCE_END.finditer(line)
            if not (line[m.start() - 1] == "." and initial_at(line, m.start() - 1))]
    return [line[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(line)], strict=True)]


def _lines(text: str) -> list[str]:
    """The non-blank lines of a text, each with single spaces between its words."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def is_hedge(sentence: str) -> bool:
    """A hedge or a hypothetical: it says what may be, not what is.

    >>> is_hedge("Maybe I'll try climbing someday"), is_hedge("I climb on Tuesdays")
    (True, False)
    >>> is_hedge("I've got maybe 2 hours on Sundays"), is_hedge("thinking of flying on 2 May")
    (False, False)
    """
    if search(_HEDGE, sentence):
        return True
    return bool(search(_TENTATIVE, sentence)) and not search(_WHEN, sentence)


#: words that set what follows against what came before
_CONTRASTS = frozenset({"but", "though", "tho", "although", "however", "yet"})


def _clauses(sentence: str) -> tuple[str, str]:
    """A sentence cut before its first hedged or questioning clause: ("my girlfriend
    climbs", "maybe I'll join her"), or, when it starts with a hedge, before a clause
    that sets what is against it; the second part is empty when there is no cut.

    >>> _clauses("jess is allergic tho so maybe a sphynx??")
    ('jess is allergic tho', 'so maybe a sphynx??')
    >>> _clauses("we might get a dog, but our lease says no pets")
    ('we might get a dog', 'our lease says no pets')
    >>> _clauses("I'm so tired"), _clauses("I love sushi but not tonight")
    (("I'm so tired", ''), ('I love sushi but not tonight', ''))
    """
    cuts = [m.end() for m in finditer(_CLAUSE, sentence)]
    if not cuts:
        return sentence, ""
    # whether the text before a cut is a hedge (``is_hedge``), read from the first match
    # of each pattern in the whole sentence: one pass, not one per cut (quadratic on
    # "... maybe, maybe, maybe ...")
    hedge, tentative, when = (search(p, sentence) for p in (_HEDGE, _TENTATIVE, _WHEN))

    def hedged_before(cut: int) -> bool:
        if hedge is not None and hedge.end() <= cut:
            return True
        return tentative is not None and tentative.end() <= cut and not (
            when is not None and when.end() <= cut)

    for n, cut in enumerate(cuts):
        last = n + 1 == len(cuts)
        clause = sentence[cut:] if last else sentence[cut:cuts[n + 1]]
        if (is_hedge(clause) or (last and is_question(clause))) and not hedged_before(cut):
            return sentence[:cut].rstrip(CLAUSE_MARKS), sentence[cut:].strip()
    # a hedge first, then what is, after a contrast ("we're thinking about a dog, but our
    # lease says no pets"): the rest is said as it is (its first such cut alone: one pass)
    if hedged_before(cuts[0]):
        # a window after each cut, not the rest of the sentence: one read of each part
        after = next((c for c in cuts
                      if (pair := sentence[c:c + 40].lstrip(CLAUSE_MARKS).casefold()
                          .split(" ", 2))[0] in _CONTRASTS
                      and pair[1:2] not in (["another"], ["again"], ["more"])), None)
        before = "" if after is None else sentence[:after].rstrip()
        rest = "" if after is None else sentence[after:].lstrip(CLAUSE_MARKS).split(" ", 1)[-1]
        if before.endswith(tuple(CLAUSE_MARKS.strip())) and _says_as_it_is(rest):
            return before.rstrip(CLAUSE_MARKS), rest.strip()
    return sentence, ""


#: words by which what follows a contrast still guesses, doubts or sets a condition
_GUESSING = frozenset({"would", "could", "likely", "doubt", "unless", "depends", "if",
                       "know", "knows", "sure", "yet", "maybe", "probably"})


def _says_as_it_is(clause: str) -> bool:
    """Whether a clause after a contrast says what is on its own: no hedge, question,
    guess or condition ("I doubt it", "who knows", "he'd say no", "unless ..."), and no
    word pointing back at what it was set against ("that's a lot of work").

    >>> _says_as_it_is("my job is at the Leeds infirmary")
    True
    >>> _says_as_it_is("I'd need a charger"), _says_as_it_is("they sell out fast")
    (False, False)
    """
    words = [w.strip(".,;:!?\"'()") for w in clause.casefold().replace("’", "'").split()]
    return bool(words) and not is_hedge(clause) and not is_question(clause) \
        and not _GUESSING.intersection(words) and not any(w.endswith("'d") for w in words) \
        and not needs_context(clause)


#: how a chat message asks without a "?": "what were those ideas again", "how do u make
#: it", "can you send it", after an opener ("also", "oh", "btw")
_ASKS = re.compile(
    r"^\W*(?:(?:also|and|so|oh|ok|okay|btw|hey|um|hmm|wait|sorry)\W+)*(?:"
    r"(?:what|how|where|when|which|who|why)\s+(?:is|are|was|were|do|does|did|should|can"
    r"|could|would|will|u|you)\b|(?:can|could|would|will|do|does|did|should)\s+(?:you|u)\b)",
    re.IGNORECASE)


def is_question(sentence: str) -> bool:
    """Whether a sentence asks: a "?" after its last letter or digit, or, ending without
    a stop, the words a question starts with.

    >>> is_question("any ideas? 🙏"), is_question("I asked why?! no idea")
    (True, False)
    >>> is_question("also what were those dessert ideas again"), is_question("how do u make it")
    (True, True)
    >>> is_question("what I need is a holiday"), is_question("how are you doing it.")
    (False, False)
    """
    end = len(sentence)
    while end and not sentence[end - 1].isalnum():
        end -= 1
    tail = sentence[end:]
    return "?" in tail or (not any(c in tail for c in ".!") and bool(search(_ASKS, sentence)))


#: A user asking for advice or a choice ("what food should we get?", "any tips?", "which
#: one do you recommend?"), whose answer's first statement is the assistant's advice.
_ADVICE_ASK = re.compile(
    r"\b(?:should|shld|shall|recommend|suggest|advi[cs]e|tips?|ideas?|which|best"
    r"|what (?:do|would) (?:you|u) (?:think|do))\b", re.IGNORECASE)


def assistant_statements(text: str, asked: str | None = None) -> list[Extracted]:
    r"""What an assistant message says that its user may ask about later: what it did
    (a reminder set, a booking), what it recommended or advised ("I'd suggest ...", "a good
    first one: ...", "you could try ..."), and the items of a plan or a list
    it proposed ("Here's a plan: - Sunday: a mock exam ..."), each a statement of its
    own. Its other sentences (explanations, pleasantries) are not memories.

    >>> [found] = assistant_statements("Great question! I've set a reminder for Friday "
    ...                                "at 9. Anything else?")
    >>> found.text, found.reasons
    ("I've set a reminder for Friday at 9.", ('assistant: did or recommended',))
    >>> [item.text for item in assistant_statements(
    ...     "Here's a plan:\n- **Monday**: a long run\n- Tuesday: rest")]
    ['Monday: a long run', 'Tuesday: rest']
    >>> assistant_statements("Sure, happy to help, Tom!")
    []

    ``asked``: the user's message it answers. When that asks for advice or a choice and
    the reply neither lists nor says it recommends, the reply's first statement is its
    advice ("Keep her on the same food for two weeks - a new home is stressful enough").

    >>> [found.text for found in assistant_statements(
    ...     "Great question! Keep her on the same food for two weeks. Cats hate change.",
    ...     asked="what food should we get her?")]
    ['Keep her on the same food for two weeks.']
    >>> assistant_statements("Keep her on the same food for two weeks.", asked="she's shy")
    []
    """
    out = []
    for line in _lines(text):
        item = starting_at(_LIST_ITEM, line, 0)
        if item:
            body = _MARKUP.sub("", line[item.end():]).strip()
            if len(_words(body)) >= 2:
                out.append(Extracted(body, 0.7, extract_entities(body),
                                     ("assistant: proposed",)))
            continue
        kept = [s for s in sentences(line)
                if search(_ASSISTANT_ACT, s) and not is_question(s)]
        out += [Extracted(_MARKUP.sub("", s), 0.7, extract_entities(s),
                          ("assistant: did or recommended",)) for s in kept]
    if not out and asked and any(is_question(s) and search(_ADVICE_ASK, s)
                                 for s in sentences(asked)):
        answer = next((s for line in _lines(text) for s in sentences(line)
                       if not is_question(s) and not is_filler(s) and len(_words(s)) >= 5),
                      None)
        if answer is not None:
            body = _MARKUP.sub("", answer)
            out.append(Extracted(body, 0.7, extract_entities(body), ("assistant: advised",)))
    return out


@functools.lru_cache(maxsize=16)
def list_lead_ins(text: str) -> dict[str, str]:
    r"""The items of the lists in ``text`` (an assistant message), each with the line
    before its list, without Markdown: what the list is of. One pass over the text,
    kept for the message's other items.

    >>> list_lead_ins("What fun! Some ideas:\n1. **Brimham Rocks** - rocks\n2. York\nOk?")
    {'Brimham Rocks - rocks': 'What fun! Some ideas:', 'York': 'What fun! Some ideas:'}
    """
    leads: dict[str, str] = {}
    lead = None
    for line in _lines(text):
        found = starting_at(_LIST_ITEM, line, 0)
        if not found:
            lead = line
        elif lead:
            leads.setdefault(_MARKUP.sub("", line[found.end():]).strip(), _MARKUP.sub("", lead))
    return leads


#: pronouns that stand for one person named before ("she's a pharmacist"), by gender
_SHE = frozenset({"she", "her", "she's", "she'd", "she'll", "hers"})
_HE = frozenset({"he", "him", "his", "he's", "he'd", "he'll"})
_KIN_SHE = ("mom mum mother mam ma sister wife girlfriend daughter grandma granny "
            "grandmother aunt auntie niece")
_KIN_HE = "dad father da pa brother husband boyfriend son grandpa grandad grandfather uncle nephew"
_KIN_ANY = ("partner boss manager friend cousin neighbour neighbor roommate flatmate colleague "
            "coworker teacher doctor therapist landlord landlady kid child baby")
_KIN = re.compile(r"\b(?:my|our)\s+(?:(?:little|big|older|younger|best|new|old)\s+)?("
                  + "|".join((_KIN_SHE + " " + _KIN_HE + " " + _KIN_ANY).split())
                  + r")\b", re.IGNORECASE)


def kin_of(text: str) -> set[str]:
    """The people of the speaker's own ``text`` names by their relation ("my dad's",
    "our son"), lower case.

    >>> sorted(kin_of("my dad's pills went up to 40mg, our son is fine"))
    ['dad', 'son']
    """
    return {m.group(1).casefold() for m in finditer(_KIN, text)}


def antecedent(sentence: str, before: Sequence[str]) -> str | None:
    """Whom a statement that starts with "she" or "he" speaks of: the last person named,
    or the last "my mum" / "my boss" that can be a she or a he, in ``before`` (the texts
    said before it, most recent first), or None.

    >>> antecedent("she's a nurse", ["I'll ask her.", "my sister Ana moved to Graz"])
    'Ana'
    >>> antecedent("she was a seamstress", ["my dad and my mom moved in"])
    'my mom'
    >>> antecedent("the blue one", ["my sister Ana moved to Graz"]) is None
    True
    """
    words = _words(sentence)
    if not words or words[0] not in _SHE | _HE:
        return None
    unfit = set((_KIN_HE if words[0] in _SHE else _KIN_SHE).split())
    for text in before:
        found = [(m.start, m.surface) for m in extract_mentions(text) if m.type == "person"]
        found += [(m.start(), m.group(0)) for m in finditer(_KIN, text)
                  if m.group(1).lower() not in unfit]
        if found:
            return max(found)[1]
    return None


def needs_context(sentence: str) -> bool:
    """Whether a statement says what it is about only with the words around it: it
    starts by pointing back ("she's 9", "that one", "yes, since 2019") or is a few words.

    >>> needs_context("she's 9, her name is Esi"), needs_context("the blue one")
    (True, True)
    >>> needs_context("race is on 7 june")
    False
    >>> needs_context("My sister Mia is a nurse in Graz")
    False

    A word that opens a new point ("also", "and", "oh") is passed over: the next word
    says whether the statement points back.

    >>> needs_context("also unrelated but i got a job at a cafe!!")
    False
    >>> needs_context("oh and she's 9"), needs_context("also the blue one")
    (True, True)
    """
    words = _words(sentence)
    if not words:
        return False
    while len(words) > 1 and words[0] in _OPENING:
        words = words[1:]
    content = [w for w in words if w not in STOPWORDS and w not in _FILLER]
    return words[0] in _POINTING or len(content) <= 2


def signal_strength(sentence: str, entities: Sequence[str] | None = None
                    ) -> tuple[float, tuple[str, ...]]:
    """How memorable a sentence is, in [0, 1], and why. A statement with content is
    worth keeping (0.6, more with first person, cues, names, numbers); a hedge or
    hypothetical is weak (0.45); a question that says nothing about its asker, and
    filler, are not memories (0). ``entities``: the sentence's (``extract_entities``), when
    already found.

    >>> strength, reasons = signal_strength("I moved to Ibadan in March 2026 for lab work.")
    >>> round(strength, 3), reasons
    (1.0, ('first person', 'preference, plan or event', 'names', 'numbers or dates'))
    >>> signal_strength("Should we move the standup?")
    (0.0, ('a question',))
    >>> signal_strength("cat, a very dramatic 6 year old tabby")
    (0.7, ('numbers or dates',))
    >>> signal_strength("I might try oat milk sometime.")
    (0.45, ('a hedge',))
    """
    words = _words(sentence)
    content = [w for w in words if w not in STOPWORDS and w not in _FILLER]
    first_person = any(w in _FIRST_PERSON for w in words)
    if not content:
        return 0.0, ("filler",)
    if is_question(sentence) and not (any(w in _DISCLOSING for w in words)
                                      and len(content) >= 2):
        return 0.0, ("a question",)
    if is_hedge(sentence):
        return 0.45, ("a hedge",)
    reasons: list[str] = []
    score = 0.6
    if first_person:
        score += 0.1
        reasons.append("first person")
    if any(w in _CUES for w in words):
        score += 0.1
        reasons.append("preference, plan or event")
    if extract_entities(sentence) if entities is None else entities:
        score += 0.1
        reasons.append("names")
    if search(_NUMBER, sentence) or search(_MONTH, sentence):
        score += 0.1
        reasons.append("numbers or dates")
    return round(min(score, 1.0), 3), tuple(reasons) or ("a statement",)


class RuleExtractor:
    """The informative sentences of a message: statements about the speaker and their
    world (active), hedges and hypotheticals (candidates); greetings, filler and
    questions that say nothing about the asker are dropped.

    ``strong``: at or above this strength a sentence becomes an active memory;
    ``weak``: at or above this, a candidate; below, it is not kept.

    Examples
    --------
    >>> for found in RuleExtractor().extract(
    ...         "Hi! I moved to Ibadan in March 2026. my sister is a nurse. maybe I'll visit her"):
    ...     print(found.strength, found.text)
    1.0 I moved to Ibadan in March 2026.
    0.7 my sister is a nurse.
    0.45 maybe I'll visit her
    >>> [found] = RuleExtractor(split=False).extract("I moved to Ibadan. My sister is a nurse.")
    >>> found.text
    'I moved to Ibadan. My sister is a nurse.'
    >>> RuleExtractor().extract("Thanks so much, see you later!")
    []
    """

    name = "rules"

    def __init__(self, *, strong: float = 0.55, weak: float = 0.35,
                 split: bool = True) -> None:
        self.strong = strong
        self.weak = weak
        #: one memory per statement (a correction then replaces only what it corrects),
        #: or one per message (its statements joined)
        self.split = split

    def extract(self, text: str) -> list[Extracted]:
        if is_filler(text):
            return []
        kept, weak = [], []
        for whole in sentences(text):
            for sentence in _clauses(whole):
                if not sentence or _acknowledges(sentence) or announces_questions(sentence):
                    continue
                entities = extract_entities(sentence)
                strength, reasons = signal_strength(sentence, entities)
                found = Extracted(sentence, strength, entities, reasons)
                if strength >= self.strong:
                    kept.append(found)
                elif strength >= self.weak:
                    weak.append(found)
        if self.split:
            return kept + weak
        return [merged for merged in (_merge(kept), _merge(weak)) if merged is not None]


def _merge(parts: list[Extracted]) -> Extracted | None:
    """One memory of a message's kept sentences, at the strength of the strongest."""
    if len(parts) <= 1:
        return parts[0] if parts else None
    entities = tuple(dict.fromkeys(e for p in parts for e in p.entities))
    reasons = tuple(dict.fromkeys(r for p in parts for r in p.reasons))
    return Extracted(" ".join(p.text for p in parts), max(p.strength for p in parts),
                     entities, reasons)
