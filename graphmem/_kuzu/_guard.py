"""The gate in front of Cypher that graphmem did not write itself (``store.cypher``, named
queries): one statement of bounded size, and only the clauses its mode allows.

Kuzu's ``READ ONLY`` transaction is not a sandbox: a second statement after ``COMMIT``
runs outside it, and ``COPY ... TO``, ``LOAD FROM``, ``EXPORT``/``IMPORT DATABASE``,
``ATTACH``, ``LOAD EXTENSION`` (native code) and ``CALL <setting>=...`` all run inside it
(each tried against 0.11.3). So the text is checked first, by an allowlist over the
tokens Kuzu's own lexical grammar makes of it (``_lexer``); then Kuzu's plan of the
statement is checked (``_plan``), and a read runs in a read-only transaction on its own
connection.

Read mode: one statement made of reading clauses (MATCH, OPTIONAL MATCH, WHERE, WITH,
UNWIND, RETURN, ORDER BY, SKIP, LIMIT, UNION) and ``CALL`` of the catalogue and index
functions in ``READ_FUNCTIONS``. Write mode adds CREATE, MERGE, SET, REMOVE on the data
tables; never DELETE, DDL, file I/O, extensions, attached databases, settings,
transaction control, or a write to the append-only logs (``Version``, ``LifecycleEvent``).

Kuzu's parser recurses once per nesting level and backtracks over nested lists, maps and
CASE: measured on 0.11.3 (8 MB stack, CPU time to prepare), 11,000-12,000 NOTs in a row,
1,500-3,000 nested parentheses, 700-1,000 nested calls or 7,000-10,000 ``^`` crash the
process; 300 nested lists take 16 s, 300 nested COUNT subqueries 7 s, 18 nested CASEs
1.2 s (each level doubles it), 3,000 ``+`` in a row 1 s. ``LIMITS`` bounds the tokens
well below that, before Kuzu parses anything: the worst statements measured at the limits
(3,000 tokens of ``+``, of patterns or of UNWIND; nests of 16 maps side by side) prepare
in 0.15-0.2 s of CPU.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import InvalidInputError, ReadOnlyStoreError
from ._functions import FUNCTIONS, KEYWORDS
from ._lexer import Token, lex
from ._plan import LOG_TABLES, READ_FUNCTIONS, PlanCheck

__all__ = ["GENERATED", "LIMITS", "LOG_TABLES", "PER_ELEMENT", "READ_FUNCTIONS", "CheckedQuery",
           "Limits", "check_generated", "check_user_query", "holds_large_constant"]


@dataclass(frozen=True)
class Limits:
    """The size of a user statement (each far below where Kuzu's parser crashes or
    slows down, far above the named queries' largest)."""

    chars: int = 100_000
    tokens: int = 3_000
    #: open ``(``, ``[``, ``{`` and CASE at any point
    depth: int = 16
    #: open CASE at any point (each level doubles the parser's work)
    case_depth: int = 8
    #: NOT and unary minus in a row
    prefix_run: int = 16


LIMITS = Limits()

_WRITE_CLAUSES = frozenset({"create", "merge", "set", "delete", "detach", "remove"})
#: Words that never pass, in either mode (file I/O, extensions, databases, settings,
#: transactions, schema changes).
_NEVER = frozenset({
    "copy", "load", "export", "import", "attach", "use", "install", "uninstall",
    "commit", "rollback", "begin", "checkpoint", "drop", "alter", "transaction",
    "extension", "database", "macro", "sequence", "profile", "explain",
})
_DDL_AFTER_CREATE = frozenset({"node", "rel", "relationship", "macro", "sequence", "type",
                               "graph"})
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset(_OPENERS.values())
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

Key = tuple[str, str]


@dataclass(frozen=True)
class CheckedQuery:
    """A user query that passed the gate: its text, whether it writes, and the checks
    its plan must pass (``_plan``)."""

    text: str
    writes: bool
    plan: PlanCheck
    #: whether the text names NULL (``_bindcheck``: an untyped NULL can crash Kuzu)
    names_null: bool = False


def _refuse(message: str) -> InvalidInputError:
    return InvalidInputError(message, field="query")


def _key(token: Token) -> Key:
    """What the checks compare: keywords ASCII case-insensitive as Kuzu's are, symbols
    with Kuzu's Unicode arrows and dashes folded; strings and numbers are literals."""
    if token.kind == "word":
        return "word", token.text.translate(_ASCII_LOWER)
    if token.kind == "symbol":
        return "punct", token.value
    if token.kind in ("string", "number"):
        return "lit", ""
    return token.kind, token.value


def _name(key: Key) -> str | None:
    """A word or backquoted name as a table or function name (Kuzu folds ASCII case)."""
    return key[1].translate(_ASCII_LOWER) if key[0] in ("word", "name") else None


def check_bounds(tokens: list[Token], *, limits: Limits = LIMITS) -> None:
    """Refuse a statement past ``limits``: a clear error instead of a crashed or stalled
    process."""
    if len(tokens) > limits.tokens:
        raise _refuse(f"the query has more than {limits.tokens:,} tokens (pass long lists as "
                      "a $parameter)")
    stack: list[str] = []
    cases = run = 0
    for n, token in enumerate(tokens):
        key = _key(token)
        after_dot = n > 0 and _key(tokens[n - 1]) == ("punct", ".")
        run = run + 1 if key == ("word", "not") or token.text == "-" else 0
        if run > limits.prefix_run:
            raise _refuse(f"more than {limits.prefix_run} NOT or unary minus in a row")
        if key[0] == "punct" and key[1] in _OPENERS:
            stack.append(_OPENERS[key[1]])
        elif key == ("word", "case") and not after_dot:
            stack.append("end")
            cases += 1
        elif (key[0] == "punct" and key[1] in _CLOSERS) or (
                key == ("word", "end") and not after_dot and "end" in stack):
            if not stack or stack[-1] != key[1]:
                raise _refuse(f"an unmatched {token.text!r} at offset {token.start}")
            cases -= stack.pop() == "end"
        if len(stack) > limits.depth:
            raise _refuse(f"the query nests brackets and CASE more than {limits.depth} deep")
        if cases > limits.case_depth:
            raise _refuse(f"the query nests CASE more than {limits.case_depth} deep")


def check_user_query(query: str, *, write: bool) -> CheckedQuery:
    """Check one user query against the size limits and the mode's allowlist; a clear
    ``InvalidInputError`` names what is refused and why."""
    if len(query) > LIMITS.chars:
        raise _refuse(f"the query has {len(query):,} characters; the most is "
                      f"{LIMITS.chars:,}")
    tokens = lex(query, most=LIMITS.tokens)
    check_bounds(tokens)
    keys = [_key(t) for t in tokens]
    while keys and keys[-1] == ("punct", ";"):
        keys.pop()
    if not keys:
        raise _refuse("the query is empty")
    if ("punct", ";") in keys:
        raise _refuse("one statement per query: remove the ';' and what follows it")
    writes = False
    sets: list[int] = []  # where each SET clause starts
    for n, (kind, value) in enumerate(keys):
        if kind != "word":
            continue
        before = keys[n - 1] if n else ("", "")
        after = keys[n + 1] if n + 1 < len(keys) else ("", "")
        if before in (("punct", "."), ("punct", ":")) or after == ("punct", ":"):
            continue  # a property, a label or a map key: a name, not a clause
        if value in _NEVER:
            raise _refuse(f"{value.upper()} is not allowed here: ad-hoc Cypher may not touch "
                          "files, extensions, other databases, settings, transactions or "
                          "the schema")
        if value == "call":
            name = _name(after) or ""
            if name not in READ_FUNCTIONS:
                raise _refuse(f"CALL {name or '...'} is not allowed; the functions a query "
                              f"may call are {', '.join(sorted(READ_FUNCTIONS))}")
            if keys[n + 2:n + 3] != [("punct", "(")]:
                raise _refuse(f"CALL {name} must be called with parentheses")
        if value in _WRITE_CLAUSES:
            writes |= _check_write_clause(value, after, write=write)
        if value == "set":
            sets.append(n)
    if writes:
        _check_write_targets(keys)
        _check_set_properties(keys, sets)
    return CheckedQuery(text=query, writes=writes, plan=PlanCheck(query, writes),
                        names_null=_null_value(keys))


#: Functions that make a value far larger than their arguments: the argument that is its
#: size in characters (None, ``range``: the span of the first two, by the third).
_GENERATORS: dict[str, int | None] = {"range": None, "repeat": 1, "lpad": 1, "rpad": 1}
#: The most that one generator call may make (elements or characters): a call in a
#: projection runs once a row, and Kuzu builds a batch of 2,048 rows before it checks
#: the time limit (a cross product of two ranges streams, and the limit stops it).
GENERATED = 100_000
#: ... and inside a lambda or a list comprehension, which runs it once an element of a
#: list of up to ``GENERATED`` (or a column's values collected): never in two nested.
PER_ELEMENT = 100
#: Functions whose text can be many times their input's (each match replaced by more).
_REPLACES = frozenset({"regexp_replace"})  # Kuzu 0.11.3 has no replace()
#: Calls that put their first argument, a separator, between every two elements
_JOINS = frozenset({"list_to_string", "array_to_string", "concat_ws"})
#: the calls whose text may be many times their input's, a replace's or a join's
_LENGTHENING = _REPLACES | _JOINS
#: The longest replacement text a replace may insert: each match (an empty pattern
#: matches between every two characters) puts one in, so a replacement of 40,000
#: characters made a 100,000-character text 4 GB in one value.
REPLACEMENT = 100
#: Functions that recurse once a level of the JSON they read: in Kuzu 0.11.3 about
#: 20,000 levels (a text of 40,000 brackets) overflow the stack and end the process.
_DEEP_JSON = frozenset({"json_structure", "json_merge_patch", "json_contains", "json_array",
                        "json_object", "to_json", "row_to_json", "array_to_json"})
#: The longest regular expression a statement may match with (``=~`` and the ``regexp_``
#: functions take one written out or a parameter): RE2's work grows with the text times
#: the pattern, and a 50,000-character pattern over a 100,000-character text ran 100 s.
PATTERN = 200
#: ... of which these take a group as their third argument
_GROUPS = frozenset({"regexp_extract", "regexp_extract_all"})
_REGEXPS = frozenset({"regexp_matches", "regexp_replace", "regexp_extract",
                      "regexp_extract_all", "regexp_split_to_array", "regexp_full_match"})
#: Functions whose work is the product of their arguments' lengths (``levenshtein`` of
#: two 100,000-character texts: 15 s of CPU in one value, past any time limit).
_PAIRWISE = frozenset({"levenshtein", "list_has_all"})
#: ... one of which must then be written out or a parameter of at most this size.
PAIRWISE_SMALL = 64
#: Reductions whose step could double its accumulator ("(x, y) -> x + x": 2**n).
_REDUCTIONS = frozenset({"list_reduce", "reduce", "array_reduce"})
_GROWING = frozenset({"+", "||", "["})
_GROWING_CALLS = frozenset({"list_concat", "list_cat", "array_concat", "array_cat", "concat",
                            "list_append", "array_append", "list_prepend", "array_prepend",
                            "repeat", "lpad", "rpad", "list_creation"})


def check_generated(query: str, params: Mapping[str, Any]) -> None:
    """Refuse a generator call (``range``, ``repeat``, ``lpad``, ``rpad``) that would
    make more than ``GENERATED`` elements or characters (``PER_ELEMENT`` inside a lambda
    or a list comprehension, which runs it once an element), whose sizes are not numbers
    or parameters (``repeat``'s text too: a text or a parameter), checked before it
    runs, or that stands in two nested lambdas; a replace inserting more than
    ``REPLACEMENT`` characters, or one that can make its text longer (``_may_grow``) in a
    statement that holds another such or a generator; a ``_PAIRWISE``
    call without a short argument (``_check_pairwise``); a ``_DEEP_JSON`` call; a
    reduction whose step calls a generator or uses its accumulator twice in a growing
    expression; a call of a function outside ``FUNCTIONS`` (``_functions``); or a
    regular expression's group that is not a whole number of 0 or more. Kuzu checks
    its time limit between batches of rows, never while it builds one value: ``UNWIND
    range(1, 10000000)`` took 23 s and 8.5 GB with a limit of 1 s, ``range(1,
    1000000000)`` filled the machine, and a reduction doubling a string 34 times makes
    16 GB."""
    tokens = lex(query, most=LIMITS.tokens)
    _check_patterns(tokens, params)
    _check_closures(tokens, params)
    each = _per_element(tokens)
    growing: list[str] = []  # the calls whose text can be longer than their input's
    # whether each replace among them works on a stored property, a literal or a parameter
    stored: list[bool] = []
    matched: set[str] | None = None  # the variables of MATCH patterns alone
    # what range() and the text generators make in one item of a clause (its value),
    # outside and once an element in lambdas; separate items make separate values
    made: dict[tuple[bool, bool], int] = {}
    parent, _ = _brackets(tokens)
    for n, token in enumerate(tokens):
        if _ends_item(token, parent[n]):
            made = {}
        if token.kind == "symbol" and token.text == "!":
            raise _refuse("the factorial operator ! is not run here: Kuzu works it out "
                          "inside one value, past any time limit (6000000000! held a core "
                          "27 s under a limit of 10 s)")
        # a name before "(" is a call wherever it stands: after a map key's or a slice's
        # ":" too ({a: f(x)}, [0:f(x)]), and a property is never followed by "("
        if token.kind not in ("word", "name") or n + 1 >= len(tokens) \
                or tokens[n + 1].text != "(":
            continue
        name = token.value.translate(_ASCII_LOWER)
        if n and tokens[n - 1].kind == "word" \
                and tokens[n - 1].value.translate(_ASCII_LOWER) == "call":
            continue  # a table function (``check_user_query`` names those a read may call)
        if token.kind == "word" and name in KEYWORDS and name not in FUNCTIONS:
            continue  # "MATCH (", "WHERE (", "WSHORTEST(weight)": grammar, not a call
        args = _arguments(tokens, n + 1)
        if name in _REDUCTIONS:
            _check_reduction(name, args)
        if name in _DEEP_JSON:
            raise _refuse(f"{name}() is not run here: on deeply nested JSON it overflows "
                          "Kuzu's stack, which ends the process")
        if name not in FUNCTIONS:
            raise _refuse(f"{name}() is not among the functions ad-hoc Cypher may call "
                          "(docs/security.md lists them): some of Kuzu's functions end the "
                          "process or run past any time limit on arguments a query can give")
        group = _constant(args[2], params) if name in _GROUPS and len(args) > 2 else 0
        if group is None or group < 0:
            raise _refuse(f"{name}() takes a group written out or given as a parameter, a "
                          "whole number of 0 or more, here (Kuzu reads outside its buffer "
                          "for a negative one)")
        if name in _PAIRWISE:
            _check_pairwise(name, args, params)
        if name in _REGEXPS and len(args) > 1:
            _check_pattern(f"{name}()", [args[1]], params)
        if name in _REPLACES and len(args) > 2:
            replacement = _text_constant(args[2], params)
            if replacement is None or len(replacement) > REPLACEMENT:
                raise _refuse(f"{name}() takes a replacement written out or given as a "
                              f"parameter, of at most {REPLACEMENT} characters, here")
        if name in _JOINS and args:
            separator = _text_constant(args[0], params)
            if separator is None or len(separator) > REPLACEMENT:
                raise _refuse(f"{name}() takes a separator written out or given as a "
                              f"parameter, of at most {REPLACEMENT} characters, here (it "
                              "stands between every two elements)")
            growing.append(name)  # a text as long as its list and its separators
            if matched is None:
                matched = _pattern_variables(tokens)
            stored.append(len(args) > 1 and all(_stored_input(a, matched) for a in args[1:]))
        if name in _REPLACES and _may_grow(args, params):
            growing.append(name)
            if matched is None:
                matched = _pattern_variables(tokens)
            stored.append(_stored_input(args[0] if args else [], matched))
        if name not in _GENERATORS:
            continue
        growing.append(name)
        if each[n] > 1:
            raise _refuse(f"{name}() may not stand in a lambda inside another lambda or "
                          "list comprehension here (what it makes would multiply)")
        size = _generated(name, args, params)
        most = PER_ELEMENT if each[n] else GENERATED
        kind = (name == "range", bool(each[n]))
        made[kind] = made.get(kind, 0) + size
        if size > most:
            where = " inside a lambda or a list comprehension" if each[n] else ""
            raise _refuse(f"{name}() may make at most {most:,} elements or characters "
                          f"here{where}; this one asks for {size:,}")
        if made[kind] > most:
            # Kuzu works out constant calls while it plans, before any time limit runs:
            # fifteen range(1, 100000) added up held a core 19 s under a limit of 10 s,
            # 25 lists split from repeat('a,', 50000) 33 s
            what = "range() calls" if kind[0] else "repeat(), lpad() and rpad() calls"
            raise _refuse(f"the {what} of one expression may make at most {most:,} "
                          f"elements or characters together here; these ask for "
                          f"{made[kind]:,} so far")
    lengthening = bool(_LENGTHENING.intersection(growing))
    _check_reuse(tokens, REUSES_GROWING if lengthening else REUSES)
    _check_self_growth(tokens)
    if len(growing) > 1 and lengthening and not (len(stored) == len(growing) and all(stored)):
        # each replace multiplies what it works on, and a value passed on (WITH ... AS t)
        # carries what one made to the next: 100 times a step, 10 GB in three. Replaces
        # that each work on a stored property (m.text), a literal or a parameter make
        # nothing of what another made.
        raise _refuse(f"{'(), '.join(sorted(set(growing)))}(): a statement may hold one "
                      "replace that makes its text longer (a replacement longer than what "
                      "it replaces) or one join (list_to_string, concat_ws) only with no "
                      "range, repeat, lpad or rpad, and other replaces "
                      "only when each works on a stored property (m.text), a literal or a "
                      "parameter: each multiplies what the one before made")


def _may_grow(args: list[list[Token]], params: Mapping[str, Any]) -> bool:
    """Whether a ``regexp_replace`` can make its text longer than its input: its
    replacement is longer than one character, or one character where the pattern may
    match nothing (between every two characters)."""
    replacement = _text_constant(args[2], params) if len(args) > 2 else None
    pattern = _text_constant(args[1], params) if len(args) > 1 else None
    if replacement is None or pattern is None:
        return True
    if len(replacement) > 1:
        return True
    try:
        return bool(replacement) and re.fullmatch(pattern, "") is not None
    except (re.error, RecursionError, OverflowError):
        return bool(replacement)


#: How often a statement may name a variable it binds with ``AS``: each use of a value
#: another made from it may copy it ("WITH t + t AS t" twenty times: 2**20 times the work
#: of one, past any time limit; a replace's text named 100 times in a concat(): 50 MB
#: from 5 KB); fewer where a replace or a join makes a longer text
REUSES, REUSES_GROWING = 24, 6


def _check_reuse(tokens: list[Token], most: int) -> None:
    """Refuse a statement that names a variable it binds with ``AS`` more than ``most``
    times (its binding included; a property or a map key of the same name is not it)."""
    bound = _aliases(tokens)
    if not bound:
        return
    uses: dict[str, int] = {}
    for n, token in enumerate(tokens):
        if token.kind not in ("word", "name") or token.value.casefold() not in bound:
            continue
        if (n and tokens[n - 1].text == ".") or (n + 1 < len(tokens)
                                                  and tokens[n + 1].text == ":"):
            continue
        uses[token.value.casefold()] = uses.get(token.value.casefold(), 0) + 1
    worst = max(uses, key=lambda k: uses[k], default=None)
    if worst is not None and uses[worst] > most:
        raise _refuse(f"{worst} is named {uses[worst]} times here: a statement may name a "
                      f"variable it binds with AS at most {REUSES} times ({REUSES_GROWING} "
                      "where a replace or a join makes a longer text): each use of a value "
                      "made from another may copy it, past any time limit (WITH t + t AS t "
                      "twenty times is 2**20 times the work)")


#: Where one item of a clause ends (outside brackets), for ``_check_self_growth``: a
#: CASE's branches are items of their own (one of them is the value), and so is a
#: lambda's body (from its arrow on).
_ITEM_ENDS = frozenset({",", "as", "with", "return", "unwind", "where", "order", "by",
                        "and", "or", "xor", "skip", "limit", "match", "optional", "call",
                        "yield", "union", "when", "then", "else", "end"})
#: What in an item can make a copy of a value it names: adding, concatenating, a list or
#: a map written out, a call that concatenates, appends or packs its arguments.
_COPYING = frozenset({"+", "||", "[", "{"})
_COPYING_CALLS = _GROWING_CALLS | {"array_value", "struct_pack", "map", "union_value"}
#: How many times over a value the statement binds may hold what it was made from
#: (``a + a + a``: three; bound and added to itself again: nine), and how many times one
#: item may name a stored property again where it copies (m.text + m.text: once).
COPIES, PROPERTY_COPIES = 8, 4


def _check_self_growth(tokens: list[Token]) -> None:
    """Refuse a statement that copies what it binds (with ``AS``, a lambda or a list
    comprehension) more than ``COPIES`` times over: an item of a clause (outside
    brackets, between commas and clause words; a lambda's body) that can copy what it
    names (``a + b``, ``[t, t]``, ``list_concat(l, l)``, ``struct_pack(a := l)``) holds
    the sum of what its names hold, and the name it is bound to (or a lambda's variable
    over it) holds that on (``WITH v0 + v0 AS v1 WITH v1 + v1 AS v2 ...`` 27 times took
    1.2 GB past a time limit of 10 s, a lambda adding a list of 100,000 to itself 30
    times 870 MB, four names of one list added, and again, 1 GB); or one that names a
    stored property more than ``PROPERTY_COPIES`` times again where it copies (a
    200,000-character text added to itself 100 times: 1.1 GB in one row); or a variable
    named like a keyword (Kuzu takes ``WITH l AS skip``, which the guard reads as a
    clause word)."""
    parent, match = _brackets(tokens)
    places = {**_alias_places(tokens), **_bound_in_place(tokens, match)}
    bound, binders = set(places.values()), set(places)  # the names, where they are bound
    for n in binders:
        word = tokens[n].value.translate(_ASCII_LOWER) if n < len(tokens) else ""
        if n < len(tokens) and tokens[n].kind == "word" and (
                word in KEYWORDS or word == "contains") and not _cast_type(tokens, n, parent):
            raise _refuse(f"{tokens[n].value} is a word of Cypher's grammar: name the "
                          "variable otherwise (or in backquotes)")
    # how many times over each bound value may hold what the statement started from: an
    # item that copies holds the sum of what it names, one that does not the largest
    weight: dict[str, int] = {}
    named: list[str] = []
    properties: dict[str, int] = {}
    copies = False
    for n in range(len(tokens) + 1):
        at = tokens[n] if n < len(tokens) else None
        # a lambda's body is an item of its own: its variables hold what came before it
        if at is None or _arrow_at(tokens, n) or _ends_item(at, parent[n]):
            held = [weight.get(name, 1) for name in named]
            made = max(sum(held) if copies else max(held, default=1), 1)
            again = sum(k - 1 for k in properties.values()) if copies else 0
            if made > COPIES or again > PROPERTY_COPIES:
                raise _refuse(
                    "a statement may copy what it binds (a + b, [t, t], list_concat(l, l), "
                    f"a value made so bound again) at most {COPIES} times over, and a stored "
                    f"property at most {PROPERTY_COPIES} times again in one expression: "
                    "each copy multiplies what it works on, past any time limit")
            if at is not None and _arrow_at(tokens, n):
                for variable in _lambda_names(tokens, n - 1, match)[0]:
                    weight[variable.casefold()] = made
            elif at is not None and at.text.translate(_ASCII_LOWER) == "as" \
                    and n + 1 < len(tokens):
                weight[tokens[n + 1].value.casefold()] = made
            named, properties, copies = [], {}, False
            continue
        if (at.kind == "symbol" and at.text in _COPYING and not _indexes(tokens, n)) or (
                at.kind in ("word", "name") and n + 1 < len(tokens)
                and tokens[n + 1].text == "("
                and at.value.translate(_ASCII_LOWER) in _COPYING_CALLS):
            copies = True
        elif at.kind in ("word", "name") and n + 2 < len(tokens) \
                and tokens[n + 1].text == "." and tokens[n + 2].kind in ("word", "name"):
            key = f"{at.value.casefold()}.{tokens[n + 2].value.casefold()}"
            properties[key] = properties.get(key, 0) + 1
        elif at.kind in ("word", "name") and at.value.casefold() in bound \
                and n not in binders and not (n and tokens[n - 1].text == ".") \
                and (n + 1 >= len(tokens) or tokens[n + 1].text not in (":", "(")):
            named.append(at.value.casefold())


def _cast_type(tokens: list[Token], n: int, parent: list[int]) -> bool:
    """Whether the word at ``n`` (after ``AS``) is a CAST's type: ``CAST(x AS STRING)``."""
    opening = parent[n]
    return opening > 0 and tokens[opening - 1].value.translate(_ASCII_LOWER) == "cast"


def _indexes(tokens: list[Token], n: int) -> bool:
    """Whether the ``[`` at ``n`` takes an element or a slice (``words[1]``, ``f(x)[0]``)
    rather than opening a list."""
    before = tokens[n - 1] if n else None
    return tokens[n].text == "[" and before is not None and (
        (before.kind == "word" and before.value.translate(_ASCII_LOWER) not in KEYWORDS)
        or before.kind in ("name", "param") or before.text in (")", "]"))


def _aliases(tokens: list[Token]) -> set[str]:
    """The names (case folded: Kuzu reads a variable's name in any case) a statement
    binds with ``AS``."""
    return set(_alias_places(tokens).values())


def _alias_places(tokens: list[Token]) -> dict[int, str]:
    """The names a statement binds with ``AS`` (case folded), by their places."""
    return {n + 1: tokens[n + 1].value.casefold() for n in range(len(tokens) - 1)
            if tokens[n].kind == "word" and tokens[n].value.translate(_ASCII_LOWER) == "as"
            and tokens[n + 1].kind in ("word", "name")}


def _ends_item(token: Token, parent: int) -> bool:
    """Whether ``token``, whose innermost open bracket is at ``parent`` (-1: none,
    ``_brackets``), ends an item of a clause (``_ITEM_ENDS``)."""
    return parent < 0 and token.text.translate(_ASCII_LOWER) in _ITEM_ENDS


_REBINDING = frozenset({"yield", *_WRITE_CLAUSES})


def _pattern_variables(tokens: list[Token]) -> set[str]:
    """The variables (case folded) a statement binds in its patterns alone (``(m:Memory)``, ``(m)``,
    ``[r:MENTIONS]``): none that it also names after ``AS``, binds in a lambda or a list
    comprehension, or may take from ``YIELD``; none in a statement that writes (a
    property set from a replace is another's input)."""
    if any(t.kind == "word" and t.value.translate(_ASCII_LOWER) in _REBINDING for t in tokens):
        return set()
    _, match = _brackets(tokens)
    found: set[str] = set()
    # Kuzu reads a variable's name in any case ("WITH ... AS M" is m): folded
    rebound = _aliases(tokens) | set(_bound_in_place(tokens, match).values())
    for n, token in enumerate(tokens):
        if token.kind not in ("word", "name") or not n:
            continue
        before = tokens[n - 1].text
        after = tokens[n + 1].text if n + 1 < len(tokens) else ""
        if (before == "(" and after in (":", ")", "{")) or (before == "[" and after == ":"):
            found.add(token.value.casefold())
    return found - rebound


def _bound_in_place(tokens: list[Token], match: Mapping[int, int]) -> dict[int, str]:
    """The variables (case folded) a statement binds where they are used, by the place
    of the token that binds each: a lambda's (``x -> ...``, ``(acc, y) -> ...``) and a
    list comprehension's or a quantifier's (``[x IN l | ...]``, ``any(x IN l WHERE
    ...)``; any name before ``IN``, which may take one)."""
    found: dict[int, str] = {}
    for n, token in enumerate(tokens):
        if _arrow_at(tokens, n):
            _, places = _lambda_names(tokens, n - 1, match)
            found.update((k, tokens[k].value.casefold()) for k in places)
        elif token.kind == "word" and token.value.translate(_ASCII_LOWER) == "in" and n \
                and tokens[n - 1].kind in ("word", "name"):
            found[n - 1] = tokens[n - 1].value.casefold()
    return found


def _stored_input(arg: list[Token], matched: Collection[str]) -> bool:
    """Whether a call's argument is a stored property of a pattern's variable
    (``m.text``), a literal text or a parameter: nothing another call made."""
    if len(arg) == 1:
        return arg[0].kind in ("string", "param")
    return len(arg) == 3 and arg[0].kind in ("word", "name") \
        and arg[0].value.casefold() in matched and arg[1].text == "." \
        and arg[2].kind in ("word", "name")


def _generated(name: str, args: list[list[Token]], params: Mapping[str, Any]) -> int:
    """How many elements or characters a generator call makes, from its arguments."""
    which = _GENERATORS[name]
    wanted = [0, 1, 2][:max(2, len(args))] if which is None else [which]
    numbers = [_constant(arg, params) for arg in args]
    known = [numbers[i] for i in wanted if i < len(numbers)]
    if len(known) < len(wanted) or None in known:
        raise _refuse(f"{name}() takes sizes written as numbers or given as parameters "
                      "here, so that what it makes can be checked before it runs")
    values = [v for v in known if v is not None]
    if which is None:
        step = values[2] if len(values) > 2 else 1
        return 0 if step == 0 else max(0, (values[1] - values[0]) // step + 1)
    if name != "repeat":
        return max(0, values[0])  # a pad makes a text of exactly its length
    text = _text_constant(args[0], params) if args else None
    if text is None:
        raise _refuse("repeat() takes a text written out or given as a parameter here, so "
                      "that what it makes can be checked before it runs")
    return len(text) * max(0, values[0])


#: What may follow an operand that ends there (a keyword too: AND, AS, THEN ...).
_ENDS_OPERAND = frozenset({")", ",", "]", "}", ";"})


def _names_one(tokens: list[Token], names: Collection[str]) -> bool:
    """Whether a word of ``tokens`` (any case, backquoted too) is one of ``names``."""
    return any(t.kind in ("word", "name") and t.value.translate(_ASCII_LOWER) in names
               for t in tokens)


#: A text written out or given as a parameter longer than this is a large constant.
_LARGE_TEXT = 1_000


def holds_large_constant(query: str, params: Mapping[str, Any]) -> bool:
    """Whether ``query`` calls a generator or holds a text (written out, or given as a
    parameter) of more than ``_LARGE_TEXT`` characters: a value Kuzu keeps once while a
    result made whole (through Arrow) repeats it on every row.

    >>> holds_large_constant("RETURN repeat('x', 10)", {}), holds_large_constant(
    ...     "RETURN $t", {"t": "x" * 2000}), holds_large_constant("RETURN 'x'", {})
    (True, True, False)
    """
    tokens = lex(query, most=LIMITS.tokens)
    return _names_one(tokens, _GENERATORS) \
        or any(t.kind == "string" and len(t.text) > _LARGE_TEXT for t in tokens) \
        or any(isinstance(v, str) and len(v) > _LARGE_TEXT for v in _leaves(params.values()))


def _leaves(values: Iterable[Any]) -> Iterator[Any]:
    """The values inside ``values`` (lists, tuples and dicts opened, without recursion)."""
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
        else:
            yield value


def _check_patterns(tokens: list[Token], params: Mapping[str, Any]) -> None:
    """Refuse a ``=~`` whose pattern is not one text written out or a parameter."""
    for n, token in enumerate(tokens):
        if token.kind == "symbol" and token.text == "=~":
            after = tokens[n + 2] if n + 2 < len(tokens) else None
            alone = after is None or after.kind == "word" or after.text in _ENDS_OPERAND
            _check_pattern("=~", [tokens[n + 1:n + 2] if alone else []], params)


def _check_pattern(what: str, args: list[list[Token]], params: Mapping[str, Any]) -> None:
    pattern = _text_constant(args[0], params) if args and args[0] else None
    if pattern is None or len(pattern) > PATTERN:
        raise _refuse(f"{what} takes a pattern written out or given as a parameter, of at "
                      f"most {PATTERN} characters, here")


def _check_pairwise(name: str, args: list[list[Token]], params: Mapping[str, Any]) -> None:
    """Refuse a call whose work is the product of its arguments' lengths unless one of
    them is written out or a parameter of at most ``PAIRWISE_SMALL`` characters or
    elements and neither calls a generator."""
    sizes = [_size_constant(arg, params, texts=name == "levenshtein") for arg in args]
    if any(_names_one(arg, _GENERATORS) for arg in args) \
            or not any(size is not None and size <= PAIRWISE_SMALL for size in sizes):
        raise _refuse(f"{name}() takes, here, one argument written out or given as a "
                      f"parameter of at most {PAIRWISE_SMALL} characters or elements, and "
                      "no range, repeat, lpad or rpad (its work is the product of the two "
                      "lengths)")


def _size_constant(arg: list[Token], params: Mapping[str, Any], *, texts: bool = False
                   ) -> int | None:
    """The length of an argument written out (a text, or a list of values written out)
    or given as a parameter (a text or a list), else None; with ``texts``, of a text
    alone (Kuzu makes a text of a list: ``levenshtein($a, ['bbb...'])``)."""
    if len(arg) == 1 and arg[0].kind == "param":
        value = params.get(arg[0].value)
        kinds = (str,) if texts else (str, list, tuple)
        return len(value) if isinstance(value, kinds) else None
    text = _text_constant(arg, params)
    if text is not None:
        return len(text)
    if not texts and len(arg) >= 2 and arg[0].text == "[" and arg[-1].text == "]" and all(
            t.kind in ("number", "string") or t.text in ("-", ",") for t in arg[1:-1]):
        return sum(t.text == "," for t in arg) + 1
    return None


def _text_constant(arg: list[Token], params: Mapping[str, Any]) -> str | None:
    if len(arg) != 1:
        return None
    if arg[0].kind == "string":
        return arg[0].text[1:-1]
    if arg[0].kind == "param":
        value = params.get(arg[0].value)
        return value if isinstance(value, str) else None
    return None


#: What a per-element expression may compare another value with
_COMPARED = frozenset({"=", "<>", "!=", "<", ">", "<=", ">="})
#: Words a per-element expression may hold besides its own variables
_LITERAL_WORDS = frozenset({"true", "false", "null"})


def _check_closures(tokens: list[Token], params: Mapping[str, Any]) -> None:
    """Refuse a per-element expression (a lambda's body, a list comprehension's
    projection, a quantifier's predicate) that names a variable it does not bind itself,
    other than for a property (``m.name``) or in a comparison (``x.owner <> owner``), or a
    parameter longer than ``PER_ELEMENT``:
    it works on that value once an element (``WITH range(1, 10000) AS l RETURN
    list_transform(l, x -> list_append(l, x))`` built 10**8 elements in 4.6 s and 1.9
    GB; 100,000 went past 4 GB in one value, where no time limit stops it)."""
    parent, match = _brackets(tokens)
    # per bracket: where each per-element part in it starts, and the names it binds
    scopes: dict[int, list[tuple[int, set[str]]]] = {}
    binders: set[int] = set()  # the tokens that name those variables
    for n, token in enumerate(tokens):
        if _arrow_at(tokens, n):
            names, at = _lambda_names(tokens, n - 1, match)
            scopes.setdefault(parent[n], []).append((n + 1, names))
            binders.update(at)
        elif token.kind == "word" and token.value.translate(_ASCII_LOWER) == "in" \
                and n >= 2 and tokens[n - 2].text in ("[", "(") \
                and tokens[n - 1].kind in ("word", "name"):
            binders.add(n - 1)
            scopes.setdefault(n - 2, []).append((-1, {tokens[n - 1].value}))
        elif parent[n] in scopes and (
                (token.kind == "symbol" and token.text == "|") or (
                token.kind == "word" and token.value.translate(_ASCII_LOWER) == "where")):
            # a comprehension's or a quantifier's per-element part starts here
            scopes[parent[n]] = [(n + 1 if first < 0 else first, names)
                                 for first, names in scopes[parent[n]]]
    for n, token in enumerate(tokens):
        bound: set[str] | None = None
        bracket = parent[n]
        while bracket >= 0:
            for first, names in scopes.get(bracket, ()):
                if 0 <= first <= n:
                    bound = (bound or set()) | names
            bracket = parent[bracket]
        if bound is None or n in binders:
            continue
        if token.kind == "param":
            value = params.get(token.value)
            if isinstance(value, str | bytes | list | tuple | Mapping) \
                    and len(value) > PER_ELEMENT:
                raise _refuse(f"${token.value} (of {len(value):,} elements or characters) may "
                              "not stand in a lambda or a list comprehension, which runs it "
                              f"once an element, here (at most {PER_ELEMENT})")
            continue
        if token.kind == "string" and len(token.text) - 2 > PER_ELEMENT:
            raise _refuse(f"a text of {len(token.text) - 2:,} characters may not stand in a "
                          "lambda or a list comprehension, which makes it once an element, "
                          f"here (at most {PER_ELEMENT})")
        if token.kind not in ("word", "name"):
            continue
        word = token.value.translate(_ASCII_LOWER)
        after = tokens[n + 1].text if n + 1 < len(tokens) else ""
        before = tokens[n - 1].text if n else ""
        if token.kind == "word" and (word in KEYWORDS or word in _LITERAL_WORDS or (
                word == "contains" and after != "(")
                or before.translate(_ASCII_LOWER) == "as"):
            continue  # an operator, or a CAST's type (CAST(x AS STRING))
        compared = before in _COMPARED and not _arrow_at(tokens, n - 1)
        if after == "." and token.value not in bound and not compared and not (
                n + 3 < len(tokens) and tokens[n + 3].text in _COMPARED):
            # another value's property whole (x -> m.text): that text once an element
            raise _refuse(f"{token.value}.{tokens[n + 2].text if n + 2 < len(tokens) else ''} "
                          "is a property of a value the lambda or list comprehension it "
                          "stands in does not bind: it may only compare with it (x -> x.owner "
                          "= m.owner), as it would make it once an element")
        if after in ("(", ".", ":") or before in (".", ":"):
            continue  # a call, a property (x.name) or its owner, a map's key, a label
        if token.value in bound or after in _COMPARED or compared:
            continue  # its own, or compared with (x -> x.owner <> owner)
        raise _refuse(f"{token.value} is not a variable of the lambda or list comprehension "
                      "it stands in: one may use its own variables, properties and other "
                      "values compared with (x -> x.name, x -> x.owner = owner) but not "
                      "another value whole, which it would work on once an element")


def _arrow_at(tokens: list[Token], n: int) -> bool:
    """Whether token ``n`` is the ``>`` of a lambda's ``->`` (two symbols to the lexer)."""
    return n > 0 and tokens[n].kind == "symbol" and tokens[n].text == ">" \
        and tokens[n - 1].text == "-"


def _brackets(tokens: list[Token]) -> tuple[list[int], dict[int, int]]:
    """Each token's innermost open bracket (-1: none), and each opening bracket -> its
    closing one."""
    parent: list[int] = []
    match: dict[int, int] = {}
    stack: list[int] = []
    for n, token in enumerate(tokens):
        text = token.text if token.kind == "symbol" else ""
        if text in _CLOSERS and stack:
            match[stack.pop()] = n
        parent.append(stack[-1] if stack else -1)
        if text in _OPENERS:
            stack.append(n)
    return parent, match


def _lambda_names(tokens: list[Token], dash: int, match: Mapping[int, int]
                  ) -> tuple[set[str], list[int]]:
    """The variables of the lambda whose ``->`` starts at ``dash`` (``x ->``, ``(acc, y)
    ->``), and their tokens."""
    before = dash - 1
    if before >= 0 and tokens[before].kind in ("word", "name"):
        return {tokens[before].value}, [before]
    if before >= 0 and tokens[before].text == ")":
        opening = next((o for o, c in match.items() if c == before), None)
        if opening is not None:
            at = [k for k in range(opening + 1, before) if tokens[k].kind in ("word", "name")]
            return {tokens[k].value for k in at}, at
    return set(), []


def _per_element(tokens: list[Token]) -> list[int]:
    """For each token, in how many places that run an expression once an element it
    stands: a lambda's body (after ``->``, to the end of the call that holds it) or a
    list comprehension's projection (after ``|``, to its ``]``)."""
    out: list[int] = []
    marked: list[bool] = []  # per open bracket: whether what follows in it runs per element
    for n, token in enumerate(tokens):
        text = token.text if token.kind == "symbol" else ""
        if text in _CLOSERS and marked:
            marked.pop()
        out.append(sum(marked))
        if text in _OPENERS:
            marked.append(False)
        elif marked and (text == "|" or _arrow_at(tokens, n)):
            marked[-1] = True
    return out


def _arguments(tokens: list[Token], opening: int) -> list[list[Token]]:
    """The arguments of the call whose ``(`` is at ``opening``: tokens between
    top-level commas."""
    args: list[list[Token]] = [[]]
    depth = 0
    for token in tokens[opening + 1:]:
        text = token.text if token.kind == "symbol" else ""
        if text in _OPENERS:
            depth += 1
        elif text in _CLOSERS:
            if depth == 0:
                break
            depth -= 1
        elif text == "," and depth == 0:
            args.append([])
            continue
        args[-1].append(token)
    return [a for a in args if a]


def _constant(arg: list[Token], params: Mapping[str, Any]) -> int | None:
    """An argument's value when it is an integer written out (with a sign) or an
    integer parameter, else None."""
    sign = 1
    if len(arg) == 2 and arg[0].text in ("-", "+"):
        sign, arg = (-1 if arg[0].text == "-" else 1), arg[1:]
    if len(arg) != 1:
        return None
    token = arg[0]
    if token.kind == "number":
        try:
            return sign * int(token.text)
        except ValueError:
            return None
    if token.kind == "param":
        value = params.get(token.value)
        if isinstance(value, int) and not isinstance(value, bool):
            return sign * value
    return None


def _check_reduction(name: str, args: list[list[Token]]) -> None:
    """Refuse a reduction whose step ("(x, y) -> ...") calls a generator or a replace, or
    names its accumulator twice in an expression that grows (a concatenation, a list)."""
    if len(args) < 2:
        return
    step = args[1]
    arrow = next((i for i in range(len(step) - 1) if _arrow_at(step, i + 1)), None)
    if arrow is None:
        return
    names = [t.value for t in step[:arrow] if t.kind in ("word", "name")]
    body = step[arrow + 2:]
    if not names:
        return
    if _names_one(body, _GENERATORS):
        raise _refuse(f"{name}() may not call {', '.join(sorted(_GENERATORS))} in its step "
                      "(what it builds could multiply at each element)")
    if _names_one(body, _REPLACES):
        # "(acc, y) -> regexp_replace(acc, 'a', 'aa', 'g')" doubles it at each element
        raise _refuse(f"{name}() may not call {' or '.join(sorted(_REPLACES))} in its step "
                      "(what it builds could multiply at each element)")
    uses = sum(1 for t in body if t.kind in ("word", "name") and t.value == names[0])
    grows = any(t.text in _GROWING or t.value.translate(_ASCII_LOWER) in _GROWING_CALLS
                for t in body)
    if uses > 1 and grows:
        raise _refuse(f"{name}() may not use its accumulator twice in a step that "
                      "concatenates (it could double what it builds at each element)")


def _null_value(keys: list[Key]) -> bool:
    """Whether the statement writes NULL as a value anywhere: ``x IS [NOT] NULL`` tests a
    value and gives none (``_bindcheck``)."""
    for n, key in enumerate(keys):
        if key != ("word", "null"):
            continue
        before = keys[max(0, n - 2):n]
        if before[-1:] != [("word", "is")] and before != [("word", "is"), ("word", "not")]:
            return True
    return False


def _check_write_clause(value: str, after: Key, *, write: bool) -> bool:
    if value == "create" and _name(after) in _DDL_AFTER_CREATE:
        raise _refuse("CREATE of tables, macros or sequences is not allowed: the "
                      "schema belongs to graphmem's migrations")
    if value in ("detach", "delete") and write:
        raise _refuse(f"{value.upper()} is not allowed in ad-hoc writes: forget "
                      "(hard delete) and tombstone remove memories with their "
                      "history, and a deleted relationship corrupts Kuzu 0.11.3's "
                      "storage")
    if not write:
        reason = f"{value.upper()} writes, and ad-hoc Cypher is read-only"
        raise ReadOnlyStoreError(
            f"{reason} unless you ask for a write (write=True, or --write on the command "
            "line): a write bypasses the version history and is recorded as an audit event",
            reason=reason)
    return True


#: Properties an ad-hoc write may not set: what graphmem derives from a memory's text
#: (its vectors, full-text terms, entities and facts would be left describing the old
#: one), and what its lifecycle and history own (a memory marked forgotten kept its
#: text; ``update``, ``supersede`` and the transitions write these with a version row).
_DERIVED = frozenset({
    "text", "subject", "id", "status", "prev_status", "context", "entities",
    "text_sha256", "version", "superseded_by", "payload", "payload_hash", "times_from",
    "times_to",
})
#: Words that end a SET clause's list of assignments.
_CLAUSE_WORDS = frozenset({
    "where", "return", "with", "set", "match", "optional", "unwind", "create", "merge",
    "delete", "detach", "remove", "call", "union", "order", "skip", "limit", "on",
})


def _check_set_properties(keys: list[Key], sets: Iterable[int]) -> None:
    """Refuse a SET (at each of ``sets``, where ``check_user_query`` found the clause)
    whose assignment targets (``x.name =``: what stands before an ``=`` at the clause's
    top level) name a property of ``_DERIVED``; what the values read (``SET
    m.importance = size(m.text)``) is not a target."""
    for n in sets:
        depth, target = 0, True
        for m in range(n + 1, len(keys)):
            kind, value = keys[m]
            if kind == "punct" and value in _OPENERS:
                depth += 1
            elif kind == "punct" and value in _CLOSERS:
                depth -= 1
                if depth < 0:
                    break
            elif depth:
                continue
            elif kind == "word" and value in _CLAUSE_WORDS and not (
                    value == "with" and keys[m - 1] in (("word", "starts"), ("word", "ends"))):
                break  # (the WITH of STARTS WITH and ENDS WITH is an operator's)
            elif value == ",":
                target = True
            elif value == "=":
                target = False
            elif target and value == "." and m + 1 < len(keys) \
                    and _name(keys[m + 1]) in _DERIVED:
                prop = _name(keys[m + 1])
                raise _refuse(
                    f"an ad-hoc write may not set {prop}: graphmem derives vectors, "
                    "full-text terms, entities and facts from a memory's text, and its "
                    "lifecycle and history own its state; use update(), supersede() or a "
                    "transition (graphmem update / promote / archive / tombstone / forget)")


_PATTERN_START = frozenset({"match", "create", "merge"})
_LABEL_SEPARATORS = frozenset({("punct", ":"), ("punct", "|")})


def _is_log_table(key: Key) -> bool:
    name = _name(key)
    return name is not None and (name in LOG_TABLES or key[1].casefold() in LOG_TABLES)


def _check_write_targets(keys: list[Key]) -> None:
    """A write names every table it matches, and none of the log tables: an unlabelled
    ``(n)`` or ``-[r]-`` matches every table, the append-only ones too."""
    for n, (kind, value) in enumerate(keys):
        before = keys[n - 1] if n else ("", "")
        if _is_log_table((kind, value)) and before in _LABEL_SEPARATORS:
            raise _refuse(f"{value} is graphmem's append-only history or its own "
                          "bookkeeping; ad-hoc writes may not touch it")
        path = before == ("punct", "=") and n > 2 and keys[n - 3][1] in _PATTERN_START
        node = value == "(" and (before[1] in _PATTERN_START or path or before in (
            ("punct", ","), ("punct", "-"), ("punct", ">"), ("punct", "<")))
        rel = value == "[" and before in (("punct", "-"), ("punct", "<"))
        if kind != "punct" or not (node or rel):
            continue
        rest = keys[n + 1:n + 3]
        if rest and rest[0][0] in ("word", "name"):
            rest = rest[1:]
        if not rest or rest[0] != ("punct", ":"):
            raise _refuse("a write query must label every node and relationship it matches "
                          "(e.g. (m:Memory), -[r:REFERENCES]->), so that it cannot reach "
                          "the version history or the audit log")
