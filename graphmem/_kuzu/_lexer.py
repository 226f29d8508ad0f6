"""Cypher read as Kuzu 0.11.3 reads it: the one lexer of user Cypher, shared by the
guard (``_guard``) and the parameter check (``_db.query_parameters``).

It follows the lexer rules of Kuzu's grammar (``src/antlr4/Cypher.g4`` at v0.11.2, which
0.11.3 ships; each rule below was checked against 0.11.3 itself):

* a string is ``'...'`` or ``"..."``; a backslash escapes only ``\\ \\' \\" \\b \\f \\n \\r \\t``
  (either case) and ``\\uXXXX`` / ``\\uXXXXXXXX``; any other backslash (``\\x41``, ``\\a``)
  leaves the quote unmatched and the statement does not parse;
* a backquoted name is ```...``` with no escape at all (a backslash is an ordinary
  character); adjacent backquoted parts are one name (```a``b``` is the name ``a``b``,
  Kuzu keeps both backquotes);
* ``/* ... */`` does not nest and ends at the first ``*/`` reached after an even run of
  ``*`` (``/* **/ x */`` is one comment, ``/* a **/`` is none); ``//`` runs to LF, CR LF
  or the end, and a lone CR inside it (not followed by LF) makes it no comment;
* whitespace is Kuzu's list (ASCII space, tab, LF, VT, FF, CR, FS GS RS US, NBSP, the
  U+2000 block, U+2028/2029, U+3000 ...), not Python's ``isspace``;
* names start with ID_Start or Pc and go on with ID_Continue or Sc (so ``a$b`` is one
  name); keywords are ASCII case-insensitive;
* a parameter is ``$`` directly followed by a name, a backquoted name (whose backquotes
  belong to the parameter's name) or an integer.

Text that Kuzu cannot lex (an unmatched quote or backquote, a comment that does not
close, a character no token starts with) is refused here with the position.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

from .._errors import InvalidInputError

__all__ = ["Token", "canonical", "lex", "parameter_names"]


class Token(NamedTuple):
    """One token: ``kind`` is word, name (backquoted), string, number, param or symbol;
    ``text`` is as written; ``spaced`` says whitespace or a comment came before it."""

    kind: str
    text: str
    start: int
    spaced: bool

    @property
    def value(self) -> str:
        """A word as written, a backquoted name without its outer backquotes, a
        parameter's name, a symbol with Kuzu's Unicode arrows and dashes folded to
        ``<``, ``>`` and ``-``."""
        if self.kind == "name":
            return self.text[1:-1]
        if self.kind == "param":
            return self.text[1:]
        if self.kind == "symbol":
            return _FOLDED.get(self.text, self.text)
        return self.text


_WHITESPACE = frozenset(
    " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u205f\u3000\u00a0\u202f")
_SPACE = re.compile("[" + "".join(sorted(_WHITESPACE)) + "]+")
# Alternatives that never overlap, so the match is the one Kuzu's longest match takes and
# a failing attempt costs one pass (possessive: no backtracking into the loop).
_BLOCK_COMMENT = re.compile(r"/\*(?:[^*]|\*[^/])*+\*/")
_LINE_COMMENT = re.compile(r"//[^\n\r]*+(?:\r?\n|\r?\Z)")
_ESCAPE = r"\\(?:[\\'\"bBfFnNrRtT]|[uU][0-9a-fA-F]{4}(?:[0-9a-fA-F]{4})?)"
_STRING = {quote: re.compile(f"{quote}(?:[^{quote}\\\\]|{_ESCAPE})*+{quote}") for quote in "'\""}
_BACKQUOTED = re.compile(r"(?:`[^`]*+`)++")
_NUMBERS = (
    re.compile(r"(?:[0-9]+\.[0-9]+|[0-9]+|\.[0-9]+)[eE]-?[0-9]+"),  # ExponentDecimalReal
    re.compile(r"[0-9]*\.[0-9]+"),  # RegularDecimalReal
    re.compile(r"0|[1-9][0-9]*"),  # DecimalInteger
)
_INTEGER = _NUMBERS[2]
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_ASCII_PART = re.compile(r"[A-Za-z0-9_$]*")
_PAIRS = frozenset({"<>", "<=", ">=", "=~", "..", "!=", "<<", ">>"})
_LEFT_ARROWS = "\u27e8\u3008\ufe64\uff1c"
_RIGHT_ARROWS = "\u27e9\u3009\ufe65\uff1e"
_DASHES = "\u00ad\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_SINGLES = frozenset("(),:=][.-*}|{><;^/+&%$!" + _LEFT_ARROWS + _RIGHT_ARROWS + _DASHES)
_FOLDED = {**dict.fromkeys(_LEFT_ARROWS, "<"), **dict.fromkeys(_RIGHT_ARROWS, ">"),
           **dict.fromkeys(_DASHES, "-")}
# Unicode's ID_Start / ID_Continue (UAX #31), from the general categories.
_START_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nl"})
_PART_CATEGORIES = _START_CATEGORIES | {"Mn", "Mc", "Nd", "Pc", "Sc"}
_OTHER_ID_START = frozenset("\u1885\u1886\u2118\u212e\u309b\u309c")
_OTHER_ID_CONTINUE = frozenset("\u00b7\u0387\u1369\u136a\u136b\u136c\u136d\u136e\u136f"
                               "\u1370\u1371\u19da")
_PATTERN_SYNTAX_LETTERS = frozenset("\u2e2f")


def _starts_name(ch: str) -> bool:
    category = unicodedata.category(ch)
    return (category in _START_CATEGORIES or category == "Pc" or ch in _OTHER_ID_START) \
        and ch not in _PATTERN_SYNTAX_LETTERS


def _continues_name(ch: str) -> bool:
    return (unicodedata.category(ch) in _PART_CATEGORIES or ch in _OTHER_ID_START
            or ch in _OTHER_ID_CONTINUE) and ch not in _PATTERN_SYNTAX_LETTERS


def _refuse(message: str, query: str, at: int) -> InvalidInputError:
    line = query.count("\n", 0, at) + 1
    column = at - (query.rfind("\n", 0, at) + 1) + 1
    return InvalidInputError(f"{message} (line {line}, column {column}); Kuzu cannot read "
                             "this query", field="query")


def _skip_space(query: str, i: int) -> int:
    """The end of the whitespace and comments that start at ``i``."""
    n = len(query)
    while i < n:
        ch = query[i]
        if ch in _WHITESPACE:
            i = _SPACE.match(query, i).end()  # type: ignore[union-attr]
        elif query.startswith("/*", i):
            match = _BLOCK_COMMENT.match(query, i)
            if match is None:
                raise _refuse("a /* comment does not close (Kuzu ends one at a */ that "
                              "follows an even run of *)", query, i)
            i = match.end()
        elif query.startswith("//", i):
            match = _LINE_COMMENT.match(query, i)
            if match is None:
                raise _refuse("a // comment holds a carriage return that no line feed "
                              "follows", query, i)
            i = match.end()
        else:
            break
    return i


def _name_end(query: str, i: int) -> int:
    """The end of the unquoted name that starts at ``i``, or ``i`` if none does."""
    match = _ASCII_NAME.match(query, i)
    if match is None:
        if not _starts_name(query[i]):
            return i
        end = i + 1
    else:
        end = match.end()
    n = len(query)
    while end < n:
        end = _ASCII_PART.match(query, end).end()  # type: ignore[union-attr]
        if end < n and not query[end].isascii() and _continues_name(query[end]):
            end += 1
        else:
            break
    return end


def _number_end(query: str, i: int) -> int:
    """The end of the longest number at ``i``, or ``i`` if none starts there."""
    return max((m.end() for p in _NUMBERS if (m := p.match(query, i))), default=i)


def _word_end(query: str, i: int) -> int:
    """The end of the name, backquoted name or integer token at ``i`` (what ``$`` takes
    to make a parameter), or ``i`` if another token starts there."""
    if query.startswith("`", i):
        match = _BACKQUOTED.match(query, i)
        return match.end() if match else i
    integer = _INTEGER.match(query, i)
    if integer:
        return integer.end() if _number_end(query, i) == integer.end() else i
    return _name_end(query, i) if i < len(query) else i


def _token(query: str, i: int) -> tuple[str, int]:
    """The kind and end of the token at ``i`` (longest match, as Kuzu's lexer takes)."""
    ch = query[i]
    if ch in _STRING:
        match = _STRING[ch].match(query, i)
        if match is None:
            raise _refuse(f"a {ch}-quoted string does not close (a backslash escapes only "
                          "\\\\ \\' \\\" \\b \\f \\n \\r \\t and \\u with 4 or 8 hex digits)",
                          query, i)
        return "string", match.end()
    if ch == "`":
        match = _BACKQUOTED.match(query, i)
        if match is None:
            raise _refuse("a backquoted name does not close (a backslash does not escape a "
                          "backquote; write `` for one)", query, i)
        if match.end() - i == 2:
            raise _refuse("an empty backquoted name", query, i)
        return "name", match.end()
    if ch == "$":
        end = _word_end(query, i + 1)
        return ("param", end) if end > i + 1 else ("symbol", i + 1)
    if "0" <= ch <= "9" or ch == ".":
        end = _number_end(query, i)
        if end > i:
            return "number", end
    end = _name_end(query, i)
    if end > i:
        return "word", end
    if query[i:i + 2] in _PAIRS:
        return "symbol", i + 2
    if ch in _SINGLES:
        return "symbol", i + 1
    raise _refuse(f"{ch!r} starts no Cypher token", query, i)


def lex(query: str, *, most: int | None = None) -> list[Token]:
    """The tokens of ``query`` as Kuzu's lexer sees them, whitespace and comments left
    out; an ``InvalidInputError`` where Kuzu's lexer would not accept the text. With
    ``most``, lexing stops after ``most + 1`` tokens."""
    if not query.isascii():
        try:
            query.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _refuse("the query holds a lone surrogate, which is not text", query,
                          exc.start) from None
    out: list[Token] = []
    i, n = 0, len(query)
    while True:
        start = _skip_space(query, i)
        if start >= n or (most is not None and len(out) > most):
            return out
        kind, end = _token(query, start)
        out.append(Token(kind, query[start:end], start, start > i))
        i = end


def canonical(tokens: list[Token]) -> str:
    """The tokens put back together with one space for each run of whitespace and
    comments: the same statement to Kuzu (a check of the lexer, used by its tests)."""
    return "".join((" " if t.spaced and n else "") + t.text for n, t in enumerate(tokens))


def parameter_names(query: str) -> frozenset[str]:
    """The names Kuzu binds the query's ``$parameters`` to (a backquoted one keeps its
    backquotes, as Kuzu's does)."""
    if len(query) <= _CACHED_LENGTH:
        return _cached_names(query)
    return _names(query)


def _names(query: str) -> frozenset[str]:
    return frozenset(t.value for t in lex(query) if t.kind == "param")


#: graphmem's own statements are checked on every run: their names are kept (4 MB at most).
_CACHED_LENGTH = 4096
_cached_names = lru_cache(maxsize=1024)(_names)
