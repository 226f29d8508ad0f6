"""A structural check that a regular expression runs in time linear in the span it is given,
and a finder of every pattern the extraction modules compile and of how each is used.

Python's backtracking engine is super-linear in three shapes, each found here on the parsed
pattern (``re._parser``), over a sample alphabet of characters:

- **retried runs**: an unbounded repeat, after which the attempt can still fail, entered at a
  place where the run it reads may have begun before the attempt did. Every attempt that
  starts inside that run reads it to its end again: ``[.!?]+\\s`` on 30,000 "!" (n^2/2 steps).
  A repeat is safe when something on every path since the attempt began cannot be in its run
  (a literal, a ``(?<![...])`` or ``\\b`` guard, the start of the text). Only for patterns
  that scan a span; one tried at a single position (``starting_at``) or within a bounded
  window (``ending_at``) is not retried from a long run's every character.
- **give-back**: a greedy unbounded repeat followed by characters it could have taken, when
  a later unbounded repeat reads the same characters: each character given back restarts the
  later one (``\\s*,?\\s+x`` on spaces). Possessive repeats and atomic groups give nothing back.
- **ambiguous iterations**: a repeated group whose iterations can be cut in several places
  (its first and last characters overlap, ``(?:-?\\w+)*``), or alternatives inside a repeat
  that match the same text: exponential on a near miss (``a1`` and 30 digits and ``_``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as P  # type: ignore[attr-defined]
from typing import Any

ALPHABET = frozenset(chr(i) for i in range(128)) | frozenset(
    "’‘“”–—éÉßñçüÜ€£•→\u00a0\u2009\u3000中日")
_WORD = frozenset(c for c in ALPHABET if re.fullmatch(r"\w", c))
_SPACE = frozenset(c for c in ALPHABET if re.fullmatch(r"\s", c))
_DIGIT = frozenset(c for c in ALPHABET if re.fullmatch(r"\d", c))
_CATEGORIES = {C.CATEGORY_WORD: _WORD, C.CATEGORY_NOT_WORD: ALPHABET - _WORD,
               C.CATEGORY_SPACE: _SPACE, C.CATEGORY_NOT_SPACE: ALPHABET - _SPACE,
               C.CATEGORY_DIGIT: _DIGIT, C.CATEGORY_NOT_DIGIT: ALPHABET - _DIGIT}
_SINGLE = (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN)
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)
_EMPTY: frozenset[str] = frozenset()
#: A bounded repeat longer than this counts as unbounded.
LONG = 200

Seq = list[tuple[Any, Any]]


def problems(pattern: re.Pattern[str], *, scanning: bool = True) -> list[str]:
    """What makes ``pattern`` super-linear, in words (empty: linear).

    >>> problems(re.compile(r"[.!?]+\\s+"))
    ['retried run: [!.?] unbounded, entered where its run may have begun earlier']
    >>> problems(re.compile(r"(?<![.!?])[.!?]+\\s+")), problems(re.compile(r"\\bwas\\s+at\\b"))
    ([], [])
    """
    tree = P.parse(pattern.pattern, pattern.flags)
    flags = tree.state.flags
    found: list[str] = []
    _Determinism(found).seq(list(tree.data), flags, _EMPTY, _EMPTY)
    if scanning:
        for target, chars in _unbounded(list(tree.data), flags):
            walk = _Runs(target, chars)
            walk.seq(list(tree.data), flags, True, tail_fails=False)
            if walk.open_and_failable:
                found.append(f"retried run: {_show(chars)} unbounded, entered where its run "
                             "may have begun earlier")
    return found


def _show(chars: frozenset[str]) -> str:
    text = "".join(sorted(chars))
    return f"[{text[:16]}{'…' if len(text) > 16 else ''}]".replace("\n", "\\n")


def _fold(chars: set[str] | frozenset[str], flags: int) -> frozenset[str]:
    if not flags & re.IGNORECASE:
        return frozenset(chars)
    return frozenset(x for c in chars for x in (c, c.lower(), c.upper()) if x in ALPHABET)


def charset(op: Any, av: Any, flags: int) -> frozenset[str]:
    """The characters one single-character node matches."""
    if op == C.LITERAL:
        return _fold({chr(av)}, flags)
    if op == C.NOT_LITERAL:
        return ALPHABET - _fold({chr(av)}, flags)
    if op == C.ANY:
        return ALPHABET if flags & re.DOTALL else ALPHABET - {"\n"}
    chars: set[str] = set()
    negate = False
    for item_op, item in av:
        if item_op == C.NEGATE:
            negate = True
        elif item_op == C.LITERAL:
            chars.add(chr(item))
        elif item_op == C.RANGE:
            chars |= {c for c in ALPHABET if item[0] <= ord(c) <= item[1]}
        elif item_op == C.CATEGORY:
            chars |= _CATEGORIES[item]
        else:
            raise ValueError(f"unknown set item {item_op}")
    folded = _fold(chars, flags)
    return ALPHABET - folded if negate else folded


def _inner(op: Any, av: Any, flags: int) -> tuple[Seq, int] | None:
    """The sequence inside a group node and its flags."""
    if op == C.SUBPATTERN:
        return list(av[3]), (flags | av[1]) & ~av[2]
    if op == C.ATOMIC_GROUP:
        return list(av), flags
    return None


@dataclass(frozen=True)
class _Info:
    first: frozenset[str]
    last: frozenset[str]
    nullable: bool
    fails: bool          # whether matching it can fail (a character, an assertion)


def info(seq: Seq, flags: int) -> _Info:
    first: set[str] = set()
    last: set[str] = set()
    nullable, fails = True, False
    for op, av in seq:
        one = _node_info(op, av, flags)
        if nullable:
            first |= one.first
        last = set(one.last) | (last if one.nullable else set())
        nullable = nullable and one.nullable
        fails = fails or one.fails
    return _Info(frozenset(first), frozenset(last), nullable, fails)


def _node_info(op: Any, av: Any, flags: int) -> _Info:
    if op in _SINGLE:
        chars = charset(op, av, flags)
        return _Info(chars, chars, False, True)
    if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
        return _Info(_EMPTY, _EMPTY, True, True)
    inner = _inner(op, av, flags)
    if inner is not None:
        return info(*inner)
    if op == C.BRANCH:
        parts = [info(list(alt), flags) for alt in av[1]]
        return _Info(frozenset().union(*(p.first for p in parts)),
                     frozenset().union(*(p.last for p in parts)),
                     any(p.nullable for p in parts), all(p.fails for p in parts))
    if op in _REPEATS:
        low, _, item = av
        one = info(list(item), flags)
        return _Info(one.first, one.last, one.nullable or low == 0, low > 0 and one.fails)
    raise ValueError(f"unsupported regex node {op}")


def consumed(seq: Seq, flags: int) -> frozenset[str]:
    """Every character ``seq`` can consume (lookarounds left out)."""
    out: set[str] = set()
    for op, av in seq:
        if op in _SINGLE:
            out |= charset(op, av, flags)
        elif (inner := _inner(op, av, flags)) is not None:
            out |= consumed(*inner)
        elif op == C.BRANCH:
            for alt in av[1]:
                out |= consumed(list(alt), flags)
        elif op in _REPEATS:
            out |= consumed(list(av[2]), flags)
    return frozenset(out)


def _width(item: Seq) -> tuple[int, int]:
    sub = P.SubPattern(P.State(), item)
    low, high = sub.getwidth()
    return int(low), int(high)


def _unbounded(seq: Seq, flags: int) -> Iterator[tuple[Any, frozenset[str]]]:
    """Each unbounded repeat node (lookbehinds left out) with the characters it reads."""
    for node in seq:
        op, av = node
        if op in _REPEATS:
            if av[1] == C.MAXREPEAT or av[1] > LONG:
                yield node, consumed(list(av[2]), flags)
            yield from _unbounded(list(av[2]), flags)
        elif (inner := _inner(op, av, flags)) is not None:
            yield from _unbounded(*inner)
        elif op == C.BRANCH:
            for alt in av[1]:
                yield from _unbounded(list(alt), flags)
        elif op in (C.ASSERT, C.ASSERT_NOT) and av[0] == 1:
            yield from _unbounded(list(av[1]), flags)


class _Runs:
    """Whether some path reaches ``target`` with every character consumed since the attempt
    began inside ``chars`` and nothing excluding that the run began before the attempt did
    ("open"), with a failable continuation."""

    def __init__(self, target: Any, chars: frozenset[str]) -> None:
        self.target, self.chars = target, chars
        self.word_run = chars <= _WORD
        self.open_and_failable = False

    def seq(self, seq: Seq, flags: int, state: bool, *, tail_fails: bool) -> bool:
        for i, (op, av) in enumerate(seq):
            fails_after = tail_fails or info(seq[i + 1:], flags).fails
            state = self.node(op, av, flags, state, fails_after)
        return state

    def node(self, op: Any, av: Any, flags: int, state: bool, fails_after: bool) -> bool:
        if op in _REPEATS and av is self.target[1] and state and fails_after:
            self.open_and_failable = True
        if op in _SINGLE:
            return state and bool(charset(op, av, flags) & self.chars)
        if op == C.AT:
            if av in (C.AT_BEGINNING_STRING,) or (av == C.AT_BEGINNING
                                                  and not flags & re.MULTILINE):
                return False
            if av == C.AT_BEGINNING:
                return state and "\n" in self.chars
            if av == C.AT_BOUNDARY and self.word_run:
                return False  # the next character read is in a word run: the run starts here
            return state
        if op in (C.ASSERT, C.ASSERT_NOT):
            direction, body = av
            if direction == -1:
                body = list(body)
                width = _width(body)
                if width == (1, 1):
                    guard = info(body, flags).first
                    if op == C.ASSERT_NOT and self.chars <= guard:
                        return False
                    if op == C.ASSERT and not guard & self.chars:
                        return False
                return state
            self.seq(list(body), flags, state, tail_fails=True)
            return state
        inner = _inner(op, av, flags)
        if inner is not None:
            return self.seq(*inner, state, tail_fails=fails_after)
        if op == C.BRANCH:
            results = [self.seq(list(alt), flags, state, tail_fails=fails_after)
                       for alt in av[1]]
            return any(results)
        if op in _REPEATS:
            low, high, item = av
            item = list(item)
            after_one = self.seq(item, flags, state, tail_fails=fails_after)
            result = after_one
            if high > 1:
                result = after_one or self.seq(item, flags, state or after_one,
                                               tail_fails=fails_after)
            return result or (state if low == 0 else False)
        raise ValueError(f"unsupported regex node {op}")


class _Determinism:
    """Give-back and ambiguous iterations, with what may follow each node (``follow``: its
    first characters; ``later``: what unbounded repeats after it read), within the atomic
    scope it belongs to."""

    def __init__(self, found: list[str]) -> None:
        self.found = found

    def seq(self, seq: Seq, flags: int, follow: frozenset[str],
            later: frozenset[str]) -> None:
        for i, (op, av) in enumerate(seq):
            rest = seq[i + 1:]
            rest_info = info(rest, flags)
            node_follow = rest_info.first | (follow if rest_info.nullable else _EMPTY)
            node_later = later | self._reads(rest, flags)
            self.node(op, av, flags, node_follow, node_later)

    def _reads(self, seq: Seq, flags: int) -> frozenset[str]:
        return frozenset().union(*(chars for _, chars in _unbounded(seq, flags)))

    def node(self, op: Any, av: Any, flags: int, follow: frozenset[str],
             later: frozenset[str]) -> None:
        if op in (C.ASSERT, C.ASSERT_NOT):
            if av[0] == 1:
                self.seq(list(av[1]), flags, _EMPTY, _EMPTY)
            return
        if op == C.ATOMIC_GROUP:
            self.seq(list(av), flags, _EMPTY, _EMPTY)  # nothing is given back into it
            return
        if op == C.SUBPATTERN:
            self.seq(list(av[3]), (flags | av[1]) & ~av[2], follow, later)
            return
        if op == C.BRANCH:
            for alt in av[1]:
                self.seq(list(alt), flags, follow, later)
            return
        if op not in _REPEATS:
            return
        _, high, item = av
        item = list(item)
        one = info(item, flags)
        possessive = op == C.POSSESSIVE_REPEAT
        if high > 1 and not possessive:
            if _width(item)[1] > 1 and one.first & one.last:
                self.found.append(f"ambiguous iterations: a repeated group starts with "
                                  f"{_show(one.first & one.last)} that it can also end with")
            self._overlapping_alternatives(item, flags)
        if (high == C.MAXREPEAT or high > LONG) and not possessive:
            chars = consumed(item, flags)
            if follow & chars and later & chars and not self._stops(item, flags, later):
                self.found.append(f"give-back: {_show(chars)} repeated, followed by "
                                  f"{_show(follow & chars)}, before another repeat over them")
        if possessive:
            self.seq(item, flags, _EMPTY, _EMPTY)
        else:
            self.seq(item, flags, follow | one.first if high > 1 else follow,
                     later | (consumed(item, flags) if high > 1 else _EMPTY))

    @staticmethod
    def _stops(item: Seq, flags: int, later: frozenset[str]) -> bool:
        """Whether every iteration of a group holds a character the later repeats cannot
        read: then each iteration given back is re-read only up to that character."""
        return _width(item)[1] > 1 and any(
            not _node_info(op, av, flags).nullable and not consumed([(op, av)], flags) & later
            for op, av in item)

    def _overlapping_alternatives(self, item: Seq, flags: int) -> None:
        """Alternatives inside a repeated group that match the same one character, or that
        can both match nothing: each iteration can then be matched two ways."""
        for op, av in item:
            if op == C.BRANCH:
                alternatives = [(list(alt), info(list(alt), flags)) for alt in av[1]]
                for i, (a, a_info) in enumerate(alternatives):
                    for b, b_info in alternatives[i + 1:]:
                        one_char = _width(a) == _width(b) == (1, 1) and \
                            bool(a_info.first & b_info.first)
                        if one_char or (a_info.nullable and b_info.nullable):
                            self.found.append("ambiguous iterations: two alternatives inside "
                                              "a repeat match the same text")
                            return
                for alt in av[1]:
                    self._overlapping_alternatives(list(alt), flags)
            elif (inner := _inner(op, av, flags)) is not None:
                self._overlapping_alternatives(*inner)
            elif op in _REPEATS:
                self._overlapping_alternatives(list(av[2]), flags)


# -- the patterns of the extraction modules --------------------------------------------------

#: Where a pattern is only tried at one position or within a window of ``CONTEXT``.
ANCHORED_CALLS = {"starting_at", "ending_at"}
ANCHORED_METHODS = {"match", "fullmatch"}


@dataclass(frozen=True)
class Compiled:
    """One pattern a module compiles: where (``module.name`` or with an index), and whether
    every use tries it at one position or in a bounded window."""

    where: str
    pattern: re.Pattern[str]
    scanning: bool


def module_patterns(names: list[str]) -> list[Compiled]:
    """Every compiled pattern held by the modules (globals, and lists, tuples and dicts of
    them), marked ``scanning`` unless each reference to its name in these modules is an
    anchored use."""
    modules = [importlib.import_module(n) for n in names]
    uses = name_uses([ast.parse(inspect.getsource(m)) for m in modules])
    out: list[Compiled] = []
    for module in modules:
        for name, value in vars(module).items():
            for where, pattern in _held(value, f"{module.__name__}.{name}"):
                anchored = where == f"{module.__name__}.{name}" and name in uses and \
                    uses[name] == {"anchored"}
                out.append(Compiled(where, pattern, not anchored))
    return out


def _held(value: Any, where: str) -> Iterator[tuple[str, re.Pattern[str]]]:
    if isinstance(value, re.Pattern):
        yield where, value
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _held(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _held(item, f"{where}[{key!r}]")


def name_uses(trees: list[ast.Module]) -> dict[str, set[str]]:
    """For each name: how it is referenced ("anchored" or "other"), over all the modules."""
    anchored: set[int] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in ANCHORED_CALLS and node.args and \
                    isinstance(node.args[0], ast.Name):
                anchored.add(id(node.args[0]))
            elif isinstance(func, ast.Attribute) and func.attr in ANCHORED_METHODS and \
                    isinstance(func.value, ast.Name):
                anchored.add(id(func.value))
    uses: dict[str, set[str]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                uses.setdefault(node.id, set()).add(
                    "anchored" if id(node) in anchored else "other")
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                uses.setdefault(node.attr, set()).add("other")
    return uses


_METHODS = {"search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"}


def direct_calls(names: list[str]) -> set[tuple[str, str, str]]:
    """(module, pattern name or ``re``, method) of each regex call the modules make on a
    compiled pattern of theirs, or through the ``re`` module, rather than through
    ``graphmem._kg._scan`` (whose meter would count it)."""
    found: set[tuple[str, str, str]] = set()
    for name in names:
        module = importlib.import_module(name)
        patterns = {k for k, v in vars(module).items() if isinstance(v, re.Pattern)} | {"re"}
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in _METHODS and isinstance(node.func.value, ast.Name) and \
                    node.func.value.id in patterns:
                found.add((name.removeprefix("graphmem."), node.func.value.id, node.func.attr))
    return found
