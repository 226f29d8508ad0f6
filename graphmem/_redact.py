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
import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

__all__ = ["DIGEST_PREFIX", "SAID", "Mentions", "digest_key_id", "forgotten_holds",
           "keyed_digest", "said_form"]

DIGEST_PREFIX = "hmac-sha256:"
#: Where a forgotten memory keeps the keyed digests of its texts' ``said_form``: its
#: ``integrity`` map, under this key
SAID = "forgotten_said"
#: Shorter texts are removed only where they fill whole lines: "ok" must not be cut
#: out of every word that contains it.
_ANYWHERE = 12
#: What may close a sentence, and the apostrophes a sentence may be written with.
_CLOSE = ".!?…"
_APOS = "['’`]"


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


#: What ``said_form`` reads as one apostrophe, and takes off a statement's ends
_APOSTROPHES = str.maketrans(dict.fromkeys("’`´‘′", "'"))
_STARTS = frozenset(" \t\n\r\f\v\u00a0\u200b\"'“”«»„([*")
_ENDS = _STARTS | frozenset(".!?…,;:)]")


def said_form(text: str) -> str:
    """A statement as it may come again in an old chat log, typed otherwise: NFKC, lower
    case, one apostrophe, spaces collapsed, and its ends without quotes, closing marks,
    markup or emoji. Nothing inside it changes: another word, number, sign or mark makes
    another statement ("C++" and "C#", "A+" and "A-", "I don't drink." and "I don't drink
    coffee."). A forgotten statement keeps the keyed digest of this form (``SAID``), so
    that a sitting imported again does not bring it back. Linear in the text.

    >>> said_form(" “I’M  41 !!” ") == said_form("i'm 41") == "i'm 41"
    True
    >>> [said_form(t) for t in ("I'm HIV+.", "I'm HIV-.", "**Zorbo** 🐈", "x != 5")]
    ["i'm hiv+", "i'm hiv-", 'zorbo', 'x != 5']
    """
    folded = " ".join(unicodedata.normalize("NFKC", text.translate(_APOSTROPHES)).lower()
                      .split())
    start, end = 0, len(folded)
    while start < end and _trimmed(folded[start], _STARTS):
        start += 1
    while end > start and _trimmed(folded[end - 1], _ENDS):
        end -= 1
    return folded[start:end]


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
    a sitting's messages): in any case, with either apostrophe and any closing
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
    """

    def __init__(self, texts: Iterable[str | None], *, anywhere: bool = False) -> None:
        parts = []
        texts_seen: list[str] = []
        self._sentences = anywhere
        for text in texts:
            words = (text or "").split()
            if not words:
                continue
            texts_seen.append(text or "")
            body = r"\s+".join(re.escape(w) for w in words)
            if anywhere:
                bare = words[-1].rstrip(_CLOSE)
                clause = bare == words[-1]
                words[-1] = bare or words[-1]
                # a sentence ends at a closing mark before a space, or at a line's end; a
                # clause (no closing mark of its own: "My cat is called Zorbo, so ...")
                # also at a comma, semicolon or colon ("I live in Linz." is not the
                # start of "I live in Linz, Texas." nor of "I live in Linz with Ana.")
                end = (rf"[{re.escape(_CLOSE)}]+(?=\s|$)|(?=[ \t]*(?:\n|$))"
                       + (r"|[,;:](?=\s|$)" if clause else ""))
                parts.append(re.sub(_APOS, lambda _: _APOS,
                                    r"\s+".join(re.escape(w) for w in words)) + f"(?:{end})")
            elif len(" ".join(words)) >= _ANYWHERE:
                # whole words: not the "Ann is 34." of "LeeAnn is 34."
                before = r"(?<!\w)" if re.match(r"\w", words[0]) else ""
                after = r"(?!\w)" if re.search(r"\w$", words[-1]) else ""
                parts.append(f"{before}{body}{after}")
            else:
                parts.append(rf"(?:(?<=\n)|^)[ \t]*{body}[ \t]*(?=\n|$)")
        if anywhere and parts:
            # a sentence starts a text or a line, or follows a sentence's end (one cut
            # just before it took the space: "I'm 34. I live in Linz." both forgotten)
            self._pattern: re.Pattern[str] | None = re.compile(
                rf"(?P<pre>^|(?<=[.!?…])[\"')\]]*[ \t]+|(?<=[.!?…][ \t])|\n[ \t]*)"
                rf"(?:{'|'.join(parts)})[ \t]*", re.IGNORECASE)
        else:
            self._pattern = re.compile("|".join(parts)) if parts else None
        #: per text, its longest run of letters and digits: every copy of that text, in any
        #: whitespace and in JSON, contains it verbatim (a cheap pre-filter for the
        #: database); one per text, as a place may hold one text and not another (a reply
        #: indexed with one sentence of a forgotten message)
        self.probes = tuple(dict.fromkeys(
            max(runs, key=len) for runs in (
                [run for word in (text or "").split() for run in re.findall(r"\w+", word)]
                for text in texts_seen) if runs))

    def __bool__(self) -> bool:
        return self._pattern is not None

    def found_in(self, text: str | None) -> bool:
        return bool(self._pattern is not None and text and self._pattern.search(text))

    def scrub(self, text: str) -> str:
        """``text`` without the mentions; blank lines they leave are dropped."""
        if self._pattern is None:
            return text
        if self._sentences:
            cut = self._pattern.sub(lambda m: m.group("pre"), text)
            return cut.rstrip() if cut != text and not text[-1:].isspace() else cut
        cut = self._pattern.sub("", text)
        if cut == text:
            return text
        return "\n".join(line for line in cut.split("\n") if line.strip())

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
