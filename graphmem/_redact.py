"""What ``forget`` needs to leave no trace: finding a text wherever it was copied, and a
keyed digest in place of its hash.

A forgotten text can survive in its neighbours' indexing contexts and in other records'
metadata (archive summaries, audited Cypher), copied with other whitespace than the
memory's own (a message's doubled spaces or line breaks). ``Mentions`` matches a text
up to whitespace. A plain SHA-256 of a short text gives it back by brute force, so a
forgotten memory keeps only ``keyed_digest``: an HMAC under the store's own secret key
(kept out of every query, export and backup: ``_keys``), named in the digest by its
fingerprint, with which the store (and only the store) can still confirm what was deleted.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import re
import unicodedata
from collections.abc import Collection, Iterable, Iterator
from typing import Any

from ._text import CLAUSE_LEADS

__all__ = ["DIGEST_PREFIX", "SAID", "Mentions", "digest_key_id", "forgotten_holds",
           "keyed_digest", "said_form", "unmarked"]

DIGEST_PREFIX = "hmac-sha256:"
#: Where a forgotten memory keeps the keyed digests of its texts' ``said_form``: its
#: ``integrity`` map, under this key
SAID = "forgotten_said"
#: Shorter texts are removed only where they fill whole lines: "ok" must not be cut
#: out of every word that contains it.
_ANYWHERE = 12
#: What may close a sentence, and the apostrophes a statement may be written with (read
#: as one by ``said_form`` and by the sentence matcher alike)
_CLOSE = ".!?…"
#: What ends a clause (a statement without a closing mark of its own) in its sentence,
#: and the words that start the next one (the extractor cuts a clause off before them)
_CLAUSE_END = (",", ";", ":")
_NEXT_CLAUSE = frozenset({*CLAUSE_LEADS, "-", "–", "—"})
_APOSTROPHES = str.maketrans(dict.fromkeys("’`´‘′ʼ‛", "'"))
#: and the letters a case-insensitive regular expression reads as one beyond lower case
_FOLDED = {**_APOSTROPHES, **str.maketrans({
    "ς": "σ", "ı": "i", "ſ": "s", "µ": "μ", "ϐ": "β", "ϵ": "ε", "ϑ": "θ", "ϰ": "κ", "ϖ": "π",
    "ϱ": "ρ", "ϕ": "φ", "\u0345": "ι", "ẛ": "ṡ", "ﬅ": "ﬆ"})}
_SPACES = re.compile(r"\s+")
#: What ends a line (as ``str.splitlines`` reads it: a message typed on Windows ends its
#: lines with "\r\n")
_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def keyed_digest(key: str, text: str | None, *, key_id: str = "") -> str:
    """``hmac-sha256:<key id>:<hex>`` of ``text`` under ``key`` (the key's fingerprint
    says which key made it; digests made before v6 have none: ``hmac-sha256:<hex>``).

    >>> keyed_digest("k", "hello")[:24]
    'hmac-sha256:406e4b43f870'
    >>> keyed_digest("k", "hello", key_id="ab12")[:29]
    'hmac-sha256:ab12:406e4b43f870'
    """
    mac = hmac.new(key.encode("utf-8"), (text or "").encode("utf-8"), hashlib.sha256)
    return DIGEST_PREFIX + (f"{key_id}:" if key_id else "") + mac.hexdigest()


def digest_key_id(digest: str) -> str | None:
    """The fingerprint of the key that made ``digest`` (None for one made before v6).

    >>> digest_key_id("hmac-sha256:ab12:406e"), digest_key_id("hmac-sha256:406e")
    ('ab12', None)
    """
    parts = digest.removeprefix(DIGEST_PREFIX).split(":")
    return parts[0] if len(parts) == 2 else None


#: What ``said_form`` takes off a statement's ends
_STARTS = frozenset(" \t\n\r\f\v\u00a0\u200b\"'“”«»„‚‹›「」『』【】〝〞〟([{|*")
_ENDS = _STARTS | frozenset(".!?…,;:)]}。！？\\")
#: Characters that show nothing beyond the format ones (``Cf``): a combining grapheme
#: joiner, variation selectors, Khmer's inherent vowels, Mongolian's free variation
#: selectors
_BLANK = frozenset("\u034f\u17b4\u17b5\u180b\u180c\u180d\u180f"
                   + "".join(map(chr, [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])))
#: and those that show a blank as wide as a letter, read as a space: Hangul fillers, the
#: blank braille pattern
_BLANK_SPACES = str.maketrans(dict.fromkeys("\u115f\u1160\u3164\uffa0\u2800", " "))


def said_form(text: str) -> str:
    """A statement as it may come again in an old chat log, typed otherwise: NFKC, lower
    case ("İ" as "i"; "ß" stays: "Maßen" is not "Massen"), one apostrophe, spaces
    collapsed (a blank braille pattern or a Hangul filler read as one), no invisible
    characters (zero-width spaces, soft hyphens), without a line's label ("Nadia: ",
    "Update: ", "**Nadia:** ", "[10:32] Nadia: ", "<b>Nadia:</b> ", "<Nadia> "), and its ends
    without quotes, closing marks, markup (a list's bullet, a quote's or a heading's mark,
    emphasis, an HTML tag) or emoji. Nothing else inside it changes: another word, number,
    sign or mark makes another statement ("C++" and "C#", "A+" and "A-", "-5" and "5",
    "I don't drink." and "I don't drink coffee."). A forgotten statement keeps the keyed
    digest of this form (``SAID``), so that a sitting imported again does not bring it
    back. Linear in the text.

    >>> said_form(" “I’M  41 !!” ") == said_form("i'm 41") == "i'm 41"
    True
    >>> [said_form(t) for t in ("I'm HIV+.", "I'm HIV-.", "**Zorbo** 🐈", "x != 5")]
    ["i'm hiv+", "i'm hiv-", 'zorbo', 'x != 5']
    >>> [said_form(t) for t in ("- I'm 41.", "> _I'm 41_", "<b>I'm 41</b>", "Ana: I'm 41")]
    ["i'm 41", "i'm 41", "i'm 41", "i'm 41"]
    >>> [said_form(t) for t in ("-5 is cold", "#1 fan", "Update: I'm 41", "at 10:30 am")]
    ['-5 is cold', '#1 fan', "i'm 41", 'at 10:30 am']
    >>> [said_form(t) for t in ("Not true: I'm 41", "My sister said: I'm 41", "- [ ] I'm 41")]
    ["not true: i'm 41", "my sister said: i'm 41", "i'm 41"]
    >>> [said_form(t) for t in ("**Ana:** I'm 41", "[10:32] Ana: I'm 41", "I'm\u280041")]
    ["i'm 41", "i'm 41", "i'm 41"]
    >>> [said_form(t) for t in ("Ana：I'm 41", "ana#1234: I'm 41", "+44 7700 900123: I'm 41")]
    ["i'm 41", "i'm 41", "i'm 41"]
    """
    if "&" in text:
        text = html.unescape(text)  # "&nbsp;", "&#39;"
    text = _FOOTNOTE.sub("", text)  # "... 4071.[1]", "... 4071.¹"
    text = _unlabelled(text)  # "Nadia: ...", "Update: ...": a line's label
    folded = " ".join(unicodedata.normalize("NFKC", text.translate(_APOSTROPHES)).lower()
                      .replace("i\u0307", "i").translate(_BLANK_SPACES).split())
    folded = "".join(c for c in folded if c not in _BLANK and unicodedata.category(c) != "Cf"
                     ) if not folded.isascii() else folded
    start, end = 0, len(folded)
    while True:
        before = (start, end)
        start, end = _markup_off(folded, start, end)
        while start < end and _trimmed(folded[start], _STARTS):
            start += 1
        while end > start and _trimmed(folded[end - 1], _ENDS):
            end -= 1
        # a word of laughter at either end (looked for within _WORD_LONGEST characters:
        # a search from the end to the text's first space at each pass was quadratic)
        space = folded.rfind(" ", max(start, end - _WORD_LONGEST), end)
        if space > start and _afterthought(folded[space + 1:end]):
            end = space  # "... 4071 lol", "... 4071 :)"
        space = folded.find(" ", start, min(end, start + _WORD_LONGEST))
        if space > start and _afterthought(folded[start:space]):
            start = space + 1  # "lol my PIN is 4071"
        if (start, end) == before:
            return folded[start:end]


#: Laughter and emoticons at either end of a statement (as ``said_form`` reads them, lower-cased
#: and without their closing marks: ":)" is ":", "(lol)" is "(lol"): no other statement
_AFTERTHOUGHTS = frozenset({":", ":-", ";", ";-", ":d", ":-d", ":p", ":-p", ";p", ";d", "<3",
                            "<33", "</3", ":(", ":-(", ":'(", ":'d", "=", "=d", ":3", "^_^",
                            "^^", "^_", ":o", ":/", "-_-", "t_t", ":*", "rofl", "(lol", "(haha",
                            "[lol", "*lol*",
                            # and a chat's mark of an edited message
                            "(edited"})
#: Laughter as a word ("lolll", "lmaooo", "ahahaha", "hehe", "jajaja", "xDDD", "ㅋㅋㅋ"):
#: no other statement ("jk" is: it takes the statement back)
_LAUGHTER = re.compile(r"l+o+l+z*|lmf?a+o+|a?(?:h+[ae]+){2,}h*|h+[ae]+h+|h(?:e+h)+e*"
                       r"|(?:hi){2,}|(?:ja){2,}j?|x+d+|(?:rs){2,}|[ㅋᄏ]{2,}|哈{2,}")
#: A footnote's mark at a text's end, after its closing mark
_FOOTNOTE = re.compile(r"(?<=[.!?…])\s*(?:\[\d{1,3}\]|[¹²³⁰⁴-⁹]{1,3})\s*$")
#: A chat log's time: "10:32", "10:32:15 pm", "2024-05-01 10:32", "01/05/2024, 10:32",
#: "10:32, 12/03/2024"
_DATE = r"\d{1,4}[./-]\d{1,2}[./-]\d{1,4}"
_TIME = (rf"(?:{_DATE}(?:,?[ \t]+|T))?\d{{1,2}}:\d{{2}}(?::\d{{2}})?"
         rf"(?:\.\d{{1,6}})?(?:[ \t\u202f]?[ap]\.?[ \t\u202f]?m\.?|Z|[+-]\d{{2}}:?\d{{2}})?"
         rf"(?:,?[ \t]+{_DATE})?")
#: One to three words of a label
_WORDS = r"[^\W\d_][\w'’.-]{0,40}(?:[ \t][^\W\d_][\w'’.-]{0,40}){0,2}"
#: A line's label at its start: one to three words and a colon (or a full-width one)
#: before a space or a letter, perhaps after markup ("**Nadia:** ", "- Nadia: ") or a
#: reply's or a forward's mark ("Replying to Nadia: "), a number, a tag or a word in
#: brackets after them ("Speaker 1: ", "ann#1234: ", "Mom (Mobile): "), a chat log's time
#: before or after it ("[10:32] Nadia: ", "10:32 - Nadia: ", "Nadia (10:32): ", "[10:32]
#: ~ Nadia: "); a nick or a mention in angle brackets ("<Nadia> ", "<+nadia> ", "< nadia>
#: ", "<@U024BE7LH> ", "<@U024BE7LH|nadia>: ") or an international phone number ("+44 7700
#: 900123: "), KakaoTalk's "[Nadia] [10:32 PM] " or Zoom's "From Nadia to Everyone: " in
#: its place
_LABEL = re.compile(
    rf"(?:[\s*_~>#+•·–—-]|<[a-z]{{1,6}}>){{0,12}}"
    rf"(?:[\[(]?{_TIME}[\])]?[ \t]*(?:[-–—][ \t]*)?)?(?:~[ \t\u202f]?)?"
    r"(?:<[@+%~& ]?(?P<irc>[^\W\d_][\w'’.-]{0,40})(?:\|(?P<shown>[\w.-]{1,40}))?>:?[ \t]"
    rf"|\[(?P<kakao>{_WORDS})\][ \t]*\[(?:오전|오후)?[ \t]?\d{{1,2}}:\d{{2}}"
    r"(?:[ \t]?[ap]\.?[ \t]?m\.?)?\][ \t]"
    rf"|from[ \t]+(?P<zoom>{_WORDS})[ \t]+to[ \t]+(?:everyone|me)"
    r"(?:[ \t]*\((?:direct message|privately)\))?[ \t]*:[ \t]"
    r"|\+(?P<phone>\d[\d \t().-]{5,18}\d)[ \t]*[:：][ \t]"
    r"|(?:(?:replying|in reply|reply|forwarded|fwd|fw)(?:[ \t](?:to|from))?[ \t]+)?@?"
    rf"(?P<name>{_WORDS})"
    r"(?:#\d{4}|[ \t]\d{1,3})?"
    r"(?:[ \t]?\((?P<aside>[^\W\d_][\w'’. -]{0,20})\))?"
    rf"(?:[ \t]*[\[(]{_TIME}[\])])?[ \t]*(?:</?[a-z]{{1,6}}>|[*_]){{0,3}}[:：]"
    r"(?:</?[a-z]{1,6}>|[*_]){0,3}(?:\s|(?=[^\W\d_])))", re.IGNORECASE)
#: Words that make a line's label say the opposite of what follows ("Not true: ...")
_DENYING = frozenset({"not", "no", "never", "false", "wrong", "myth", "untrue", "fake",
                      "rumor", "rumour", "incorrect", "denied", "nope", "lie", "hoax",
                      "fiction", "ruled", "said", "says", "asked", "claims", "claimed",
                      "rumors", "rumours", "myths", "allegedly", "supposedly", "reportedly",
                      "hearsay", "debunked", "example", "examples", "quote", "quoting",
                      "nah", "claim", "apparently", "overheard", "alleged", "hypothetically",
                      "misinformation", "gossip", "scam", "maybe", "joke", "check",
                      "satire", "parody", "spam", "phishing", "unverified", "disputed",
                      "sarcasm", "sarcastic", "pretend", "pretending", "roleplay", "role-play",
                      "impostor", "imposter", "liar", "lying", "lies", "scammer", "troll",
                      "hypothesis", "dream", "joking", "kidding", "question", "q",
                      "hypothetical", "imagine", "imagined", "fantasy",
                      "nightmare", "theory", "speculation", "unconfirmed", "previously",
                      "formerly", "bullshit", "bs", "cap", "prank", "rumored", "rumoured",
                      "goal", "goals", "wish", "hope", "hoping", "prediction", "predicted",
                      "fools", "thinks", "think", "thought", "believes", "fears", "if",
                      "suppose", "supposing", "falso", "falsa", "mentira", "gerücht", "faux",
                      "fausse", "bugia", "nicht", "nein", "non", "fakenews", "not-true",
                      "not_true", "nottrue", "lol", "jk", "alt", "draft", "template",
                      "sample", "test", "was", "earlier", "before", "ex", "plan", "someday",
                      "wishlist", "manifesting", "typo", "misheard", "fib", "misconception",
                      "lyrics", "scenario", "character", "falsch", "lüge", "bulo",
                      "supuestamente", "suspects", "retracted", "unsent", "scheduled"})


_WORD_LONGEST = 40


def _afterthought(word: str) -> bool:
    """Whether a word at a statement's end or start is laughter or an emoticon."""
    return word in _AFTERTHOUGHTS or _LAUGHTER.fullmatch(word) is not None


def _unlabelled(line: str) -> str:
    """A line without its label (``_LABEL``, ``_is_label``)."""
    label = _LABEL.match(line)
    if label is None:
        return line
    who = label.group("irc") or label.group("kakao") or label.group("zoom") \
        or label.group("name")
    # a name, the name a mention shows and an aside may deny; a phone number (no name)
    # says nothing
    words = [w for w in (who, label.group("shown"), label.group("aside")) if w]
    if all(map(_is_label, words)):
        return line[label.end():]
    return line


def _is_label(label: str) -> bool:
    """Whether a line's opening "words:" is a label to read past: one word, or a name of
    two or three capitalised words, none of which denies or reports what follows
    ("Nadia", "Update", "Ana Lima"; not "Not true", "Myth", "My sister said"), and none
    in a script written without spaces, where one "word" may be a clause ("谣言" is
    "rumour")."""
    words = label.split()
    return not any(w.lower().strip("'’.-") in _DENYING for w in words) and (
        len(words) == 1 or all(w[0].isupper() for w in words)) and not _UNSPACED.search(label)


#: Han, kana, Hangul, Thai, Lao, Khmer, Myanmar: scripts whose words are not set apart
_UNSPACED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff"
                       "\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
                       "\uf900-\ufaff\uff66-\uff9f]")


#: A line's opening mark before a space (a list's bullet, a quote, a heading: a run of at
#: most six, as a longer one is a line of its own, "-----"; a numbered or lettered list's
#: "1. ", "a) "; not "A. ", an initial: "A. Lee is my landlord") and a task list's box
_LINE_OPENING = re.compile(r"[ \t]*(?:[-+*•·–—>#]{1,6}[ \t]+|(?:\d{1,3}[.)]|[a-zA-Z]\))[ \t]+)?"
                           r"(?:\[[ xX]\][ \t]+)?")
_OPENING_LONGEST = 24
#: An HTML tag at a statement's end (``<b>``, ``</i>``, ``<br/>``), read lower-cased
_TAG = re.compile(r"</?[a-z][a-z0-9]{0,9}(?:\s+[^<>]{0,80})?\s*/?>")
_TAG_LONGEST = 100


def unmarked(line: str) -> str:
    """A line without its opening mark: what it says when one sentence is typed across
    the lines of a list.

    >>> unmarked("- [x] at the gym is 4071."), unmarked("> quoted"), unmarked("-5 is cold")
    ('at the gym is 4071.', 'quoted', '-5 is cold')
    >>> unmarked("2) at the gym"), unmarked("[10:33] Nadia: at the gym")
    ('at the gym', 'at the gym')
    """
    opening = _LINE_OPENING.match(line)
    return _unlabelled(line[opening.end():] if opening else line)


def _markup_off(text: str, start: int, end: int) -> tuple[int, int]:
    """``text[start:end]`` without a line's opening mark (``_LINE_OPENING``), emphasis
    around it (``_`` or ``~`` at both ends) or an HTML tag at either end: a few characters
    looked at."""
    mark = _LINE_OPENING.match(text, start, min(end, start + _OPENING_LONGEST))
    if mark is not None and mark.end() > start:
        return mark.end(), end  # "- ", "1. ", "a) ", "- [ ] ", "[x] "
    if end - start > 1 and text[start] in "_~" and text[end - 1] == text[start]:
        return start + 1, end - 1  # emphasis around it: "_...", "~~...~~" ("@ann_" stays)
    tag = _TAG.match(text, start, min(end, start + _TAG_LONGEST))
    if tag is not None:
        return tag.end(), end
    if end > start and text[end - 1] == ">":
        opening = text.rfind("<", max(start, end - _TAG_LONGEST), end)
        if opening >= 0 and _TAG.fullmatch(text, opening, end):
            return start, opening
    return start, end


def _trimmed(char: str, marks: frozenset[str]) -> bool:
    """Whether ``said_form`` takes ``char`` off a statement's start or end (``marks``: a
    quote, markup, a space, and at the end a closing mark), as it does a symbol (emoji,
    dingbats)."""
    return char in marks or unicodedata.category(char) in ("So", "Sk", "Cf", "Mn")


def forgotten_holds(text_sha256: str | None, integrity: str | dict[str, Any] | None
                    ) -> set[str]:
    """The keyed digests a forgotten memory holds of what it said: its text's, and its
    texts' ``said_form`` ones (kept in its ``integrity`` under ``SAID``; stored as JSON
    text or read as a map)."""
    held = {text_sha256} if text_sha256 else set()
    found = json.loads(integrity) if isinstance(integrity, str) and integrity else integrity
    said = found.get(SAID) if isinstance(found, dict) else None
    return held | ({str(d) for d in said} if isinstance(said, list) else set())


class Mentions:
    """Where any of some texts occurs in another text, whatever the whitespace.

    >>> found = Mentions(["My PIN is  4071\\nat the bank"])
    >>> found.scrub("before\\nMy PIN is 4071 at  the bank\\nafter")
    'before\\nafter'
    >>> found.scrub("ok")
    'ok'

    ``anywhere``: sentences, however short, wherever a sentence starts (the sentences of
    a sitting's messages): in any case, with any apostrophe and any closing
    punctuation, as the duplicates of a conversation are; nothing else of the text
    changes:

    >>> said = Mentions(["I'm 34."], anywhere=True)
    >>> said.scrub("I’M 34! My cat is ginger.\\n\\n  code:  a = 1")
    'My cat is ginger.\\n\\n  code:  a = 1'
    >>> said.scrub("LeeAnn said I'm 34. I'm 34.5 years old.")
    "LeeAnn said I'm 34. I'm 34.5 years old."
    >>> Mentions(["My cat is Zorbo"], anywhere=True).scrub("My cat is Zorbo, so he eats.")
    'so he eats.'
    >>> both = Mentions(["I'm 34.", "I live in Linz."], anywhere=True)
    >>> both.scrub("I'm 34. I live in Linz. I live in Linz, Texas. I'm 34 weeks along.")
    "I live in Linz, Texas. I'm 34 weeks along."

    Linear in the text and the texts sought, whatever they hold: a text of several words
    is found word by word (a prefix table over its words, as Knuth-Morris-Pratt over
    characters), not by a regular expression that tries it again at every place a
    sentence or word may start.
    """

    def __init__(self, texts: Iterable[str | None], *, anywhere: bool = False,
                 whole: Collection[str] = ()) -> None:
        """``whole``: those of ``texts`` without a closing mark that were said as a
        sentence of their own (``said_whole``), not as a clause: they end at a closing
        mark or a line's end, never at a comma ("I live in Linz" said alone is not the
        start of "I live in Linz, Texas")."""
        self._sentences = anywhere
        #: (the text's place among ``texts``, how it is sought)
        self._sought: list[tuple[int, _Sought]] = []
        self._short: list[tuple[int, re.Pattern[str]]] = []
        texts_seen: list[str] = []
        for text in dict.fromkeys(texts):  # a text given twice is sought once
            words = (text or "").split()
            if not words:
                continue
            order = len(texts_seen)
            texts_seen.append(text or "")
            if anywhere:
                said_alone = text in whole
                words = [_said_word(w) for w in words]
                apart = False  # closing marks typed as a word of their own ("Linz !")
                while len(words) > 1 and _closing(words[-1]):
                    words.pop()
                    apart = True
                bare = words[-1].rstrip(_CLOSE)
                # a sentence ends at a closing mark before a space, or at a line's end; a
                # clause (no closing mark of its own: "My cat is called Zorbo, so ...")
                # also at a comma, semicolon or colon ("I live in Linz." is not the
                # start of "I live in Linz, Texas." nor of "I live in Linz with Ana.")
                self._sought.append((order, _Sought(
                    None, words[:-1], bare or words[-1],
                    clause=bare == words[-1] and not said_alone and not apart)))
            elif len(" ".join(words)) < _ANYWHERE:
                # short texts, anchored at a line's start: a regular expression that
                # cannot try more than ``_ANYWHERE`` characters at a place
                body = r"\s+".join(re.escape(w) for w in words)
                self._short.append((order, re.compile(
                    rf"(?:(?<=\n)|^)[ \t]*{body}[ \t]*(?=\n|$)")))
            elif len(words) == 1:
                # whole words: not the "Ann is 34." of "LeeAnn is 34."
                self._short.append((order, re.compile(
                    (r"(?<!\w)" if re.match(r"\w", words[0]) else "") + re.escape(words[0])
                    + (r"(?!\w)" if re.search(r"\w$", words[0]) else ""))))
            else:
                self._sought.append((order, _Sought(words[0], words[1:-1], words[-1],
                                                    clause=False)))
        #: per text, its longest run of letters and digits: every copy of that text, in any
        #: whitespace and in JSON, contains it verbatim (a cheap pre-filter for the
        #: database); one per text, as a place may hold one text and not another (a reply
        #: indexed with one sentence of a forgotten message)
        runs_of = [[run for word in text.split() for run in re.findall(r"\w+", word)]
                   for text in texts_seen]
        self.probes = tuple(dict.fromkeys(max(runs, key=len) for runs in runs_of if runs))
        #: the same, for a text in hand: none of them in it, none of the texts either
        #: (only when every text has one)
        self._filter = (() if not all(runs_of) else
                        tuple(_said_word(p) for p in self.probes) if anywhere else self.probes)

    def __bool__(self) -> bool:
        return bool(self._sought or self._short)

    def found_in(self, text: str | None) -> bool:
        return bool(text) and bool(self._spans(text or "", first=True))

    def scrub(self, text: str) -> str:
        """``text`` without the mentions; blank lines they leave are dropped."""
        spans = self._spans(text)
        if not spans:
            return text
        cut = "".join(text[a:b] for a, b in zip(
            [0, *(e for _, e in spans)], [*(s for s, _ in spans), len(text)], strict=True))
        if self._sentences:
            return cut if text[-1:].isspace() else cut.rstrip()
        return "\n".join(line for line in cut.split("\n") if line.strip())

    def _spans(self, text: str, *, first: bool = False) -> list[tuple[int, int]]:
        """Where the texts sought occur in ``text``, left to right, overlapping ones joined
        ("My cat is Zorbo, so he eats tuna." forgotten with "My cat is Zorbo" goes
        whole)."""
        if not self or not text:
            return []
        held = _said_word(text) if self._sentences else text
        if self._filter and not any(probe in held for probe in self._filter):
            return []
        found: list[tuple[int, int, int, bool]] = []
        for order, pattern in self._short:
            found.extend((m.start(), order, m.end(), True) for m in pattern.finditer(text)
                         if m.end() > m.start())
        if self._sought:
            if len(held) != len(text):  # a letter whose lower case is longer
                held = text
            words = held.split()
            if held is text and self._sentences:
                words = [_said_word(w) for w in words]
            joined = " ".join(words)
            # a cheap necessary condition: the words it holds, whole and in order
            sought_here = [(n, s) for n, s in self._sought if s.joined in joined]
            tokens = [m.span() for m in re.finditer(r"\S+", text)] if sought_here else []
            place = _sentence if self._sentences else _whole
            for order, sought in sought_here:
                for i in sought.places(words):
                    span = place(text, tokens, words, i, sought)
                    if span is not None:
                        if first and span[2]:
                            return [span[:2]]
                        found.append((span[0], order, span[1], span[2]))
        # left to right, none overlapping; a sentence that starts where a cut ended (past
        # the spaces after it) starts a sentence once that is cut ("My cat is Zorbo, I live
        # in Linz." with both forgotten; "My cat is Zorbo, my cat is Zorbo, so he eats.")
        # Where two overlap, both go (every word of either is a forgotten text's).
        spans: list[tuple[int, int]] = []
        reach = -1  # where the text goes on after the last cut and the spaces after it
        for start, _, end, starts in sorted(found):
            if spans and start < spans[-1][1]:
                if not starts or end <= spans[-1][1]:
                    continue
                spans[-1] = (spans[-1][0], end)
            elif starts or start == reach:
                spans.append((start, end))
            else:
                continue
            space = _SPACES.match(text, end)
            reach = space.end() if space else end
        return spans

    def scrub_json(self, value: Any) -> tuple[Any, list[str]]:
        """``value`` (JSON data) with every string that mentions the texts replaced by
        None; the dotted paths of what was replaced."""
        redacted: list[str] = []

        def walk(node: Any, path: str) -> Any:
            if isinstance(node, str):
                if self.found_in(node):
                    redacted.append(path or "$")
                    return None
                return node
            if isinstance(node, dict):
                return {k: walk(v, f"{path}.{k}" if path else k) for k, v in node.items()}
            if isinstance(node, list):
                return [walk(v, f"{path}[{i}]") for i, v in enumerate(node)]
            return node

        out = walk(json.loads(json.dumps(value)), "")
        return out, redacted


def said_whole(text: str, message: str | None) -> bool:
    """Whether ``text``, a statement without a closing mark of its own, was said in
    ``message`` as a sentence of its own (where it occurs there, it ends a line or the
    message), not as a clause before a comma, semicolon or colon. False when ``message``
    does not hold it as a sentence.

    >>> said_whole("I live in Linz", "Hi!\\nI live in Linz\\nBye"), said_whole(
    ...     "My cat is Zorbo", "My cat is Zorbo, so he eats.")
    (True, False)
    >>> said_whole("My PIN is 4071", "My PIN is 4071 but maybe I'll change it")
    False
    """
    said = message or ""
    spans = Mentions([text], anywhere=True)._spans(said)  # whole ones and clauses

    def next_word(at: int) -> str:  # the word after a span (its spaces are the span's)
        found = said[at:at + 8].split(maxsplit=1)
        return _said_word(found[0]) if found else ""

    return bool(spans) and not any(
        said[start:end].rstrip(" \t")[-1:] in _CLAUSE_END or next_word(end) in _NEXT_CLAUSE
        for start, end in spans)


class _Sought:
    """One text of several words, sought word by word: ``first`` (matched at the end of
    a word; None: matched whole, as ``middle``), ``middle`` (whole words) and ``last``
    (matched at the start of a word), with the prefix table of the words matched whole."""

    def __init__(self, first: str | None, middle: list[str], last: str, *,
                 clause: bool) -> None:
        self.first, self.middle, self.last, self.clause = first, middle, last, clause
        #: what every text holding this one holds, its words joined by one space
        self.joined = " ".join(middle) if middle else last
        self._table = [0] * len(middle)
        k = 0
        for n in range(1, len(middle)):
            while k and middle[n] != middle[k]:
                k = self._table[k - 1]
            if middle[n] == middle[k]:
                k += 1
            self._table[n] = k

    def places(self, words: list[str]) -> Iterator[int]:
        """Each index at which the text may start in ``words``: where ``middle`` occurs
        whole, with a word before it for ``first`` and one after it for ``last``. Linear
        in ``words`` (Knuth-Morris-Pratt over words)."""
        middle, size = self.middle, len(self.middle)
        lead = 0 if self.first is None else 1
        if not size:
            yield from range(len(words) - lead)
            return
        k = 0
        for n in range(lead, len(words) - 1):
            word = words[n]
            while k and word != middle[k]:
                k = self._table[k - 1]
            if word == middle[k]:
                k += 1
            if k == size:
                yield n - size + 1 - lead
                k = self._table[k - 1]


def _closing(word: str) -> bool:
    """Whether ``word`` is closing marks alone ("!", "...")."""
    return bool(word) and all(c in _CLOSE for c in word)


def _said_word(word: str) -> str:
    """A word as a sentence sought ``anywhere`` compares it: lower case (one sigma, a
    dotted or dotless i, a long s read as s, as a regular expression's case-insensitive
    match reads them), one apostrophe."""
    return word.lower().translate(_FOLDED).replace("i\u0307", "i")


def _sentence(text: str, tokens: list[tuple[int, int]], words: list[str], i: int,
              sought: _Sought) -> tuple[int, int, bool] | None:
    """The span of the sentence ``sought`` from word ``i``, with the spaces after it, if
    it ends there as a sentence: at closing marks, at its line's end, or (a clause) at one
    comma, semicolon or colon; and whether it starts one there: at the text's or a line's
    start, or after a sentence's end (a closing mark, then quotes or brackets, then spaces
    or tabs). One that does not may still follow a cut (``Mentions._spans``)."""
    last = i + len(sought.middle)
    if not words[last].startswith(sought.last):
        return None
    rest, end = words[last][len(sought.last):], tokens[last][1]
    if not rest and last + 1 < len(words) and _closing(words[last + 1]) \
            and not _BREAK.search(text, end, tokens[last + 1][0]):
        end = tokens[last + 1][1]  # its closing marks typed apart ("Linz !", "Linz\u00a0.")
        rest = words[last + 1]
    after = end
    while after < len(text) and text[after] in " \t":
        after += 1
    if not (_closing(rest)
            or (not rest and (after == len(text) or _BREAK.match(text, after)))
            or (sought.clause and rest in _CLAUSE_END)
            or (sought.clause and not rest and last + 1 < len(words)
                and words[last + 1] in _NEXT_CLAUSE)):
        return None
    starts = True
    if i:
        gap = text[tokens[i - 1][1]:tokens[i][0]]
        if _BREAK.search(gap):
            starts = not _BREAK.split(gap)[-1].strip(" \t")
        else:
            before = text[tokens[i - 1][0]:tokens[i - 1][1]].rstrip("\"')]")
            starts = not gap.strip(" \t") and bool(before) and before[-1] in _CLOSE
    return tokens[i][0], after, starts


def _whole(text: str, tokens: list[tuple[int, int]], words: list[str], i: int,
           sought: _Sought) -> tuple[int, int, bool] | None:
    """The span of ``sought`` as whole words from word ``i``: its first word may end a
    word after a mark ("(My PIN ..."), its last may start one before a mark ("... bank)")."""
    first, last = sought.first or "", i + 1 + len(sought.middle)
    if not words[i].endswith(first) or not words[last].startswith(sought.last):
        return None
    start = tokens[i][1] - len(first)
    if re.match(r"\w", first) and start > tokens[i][0] and re.match(r"\w", text[start - 1]):
        return None
    end = tokens[last][0] + len(sought.last)
    if re.search(r"\w$", sought.last) and end < tokens[last][1] and re.match(r"\w", text[end]):
        return None
    return start, end, True
