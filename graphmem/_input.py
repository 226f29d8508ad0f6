"""What callers hand the store: ``MemoryInput`` validates a new memory and names bad fields
(``parse_records`` a list of them), ``UpdateFields`` what ``update`` changes."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ._errors import InvalidInputError
from ._models import Kind, Status
from ._time import parse_iso, to_utc

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_SHORT",
    "MAX_TAG",
    "MAX_TAGS",
    "MAX_TEXT",
    "MEMORY_PAGE",
    "MemoryInput",
    "RecallWindow",
    "UpdateFields",
    "check_count",
    "check_owner",
    "check_reason",
    "check_tags",
    "check_text",
    "check_unicode",
    "check_unit",
    "check_validity",
    "json_depth",
    "lone_surrogate_at",
    "memory_id_list",
    "moment",
    "no_json_constant",
    "owner_problem",
    "parse_records",
    "recall_window",
    "stored_json_problem",
    "stored_owner_problem",
    "unicode_problem",
    "update_changes",
    "validation_message",
]

#: Longest memory text accepted (characters); longer input is an error, not a truncation.
MAX_TEXT = 200_000
#: Longest short field (owner, subject, project, session, id), in characters.
MAX_SHORT = 2_000
#: At most this many tags, of at most ``MAX_TAG`` characters each.
MAX_TAGS = 64
MAX_TAG = 200
#: At most this many entities, and ids a memory is superseded by.
MAX_LIST = 256
#: A visibility is a short label ("private", "team", ...).
MAX_VISIBILITY = 200
#: The most memories a page of the sidecar's memory list holds.
MEMORY_PAGE = 10_000


class UpdateFields(TypedDict, total=False):
    """The fields ``update`` changes, written once for the store, its client and the
    sidecar's PATCH body. A field left out stays as it is; so does one given as None,
    except ``subject``, ``project``, ``valid_from`` and ``valid_to``, which None clears."""

    text: str | None
    subject: str | None
    importance: float | None
    confidence: float | None
    tags: Sequence[str] | None
    kind: Kind | str | None
    project: str | None
    visibility: str | None
    #: a datetime or ISO 8601 text
    valid_from: datetime | str | None
    valid_to: datetime | str | None
    provenance: Mapping[str, Any] | None


#: The fields of ``UpdateFields`` that None clears (for the others None means unchanged).
_CLEARABLE = frozenset({"subject", "project", "valid_from", "valid_to"})


def update_changes(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The ``UpdateFields`` given that change something (None left out, except where it
    clears); a name that is not one of them is refused."""
    unknown = sorted(set(fields) - set(UpdateFields.__annotations__))
    if unknown:
        raise InvalidInputError(f"update has no field {unknown[0]!r}; it changes "
                                + ", ".join(UpdateFields.__annotations__), field=unknown[0])
    return {k: v for k, v in fields.items() if v is not None or k in _CLEARABLE}


def check_text(value: Any, *, field: str, max_len: int = MAX_TEXT, allow_empty: bool = False
               ) -> str:
    """A string with no NUL characters, within ``max_len``; whitespace-only is empty."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string, got {type(value).__name__}",
                                field=field)
    if "\x00" in value:
        raise InvalidInputError(f"{field} contains a NUL character", field=field)
    check_unicode(value, field=field)
    if len(value) > max_len:
        raise InvalidInputError(
            f"{field} is {len(value)} characters long; the limit is {max_len}", field=field
        )
    if not allow_empty and not value.strip():
        raise InvalidInputError(f"{field} is empty", field=field)
    return value


def unicode_problem(value: str, *, of: str = "") -> str | None:
    """What makes ``value`` no text, or None: a lone surrogate, which no UTF-8 text holds
    (a JSON ``"\\ud800"`` escape, bytes that were not UTF-8 read with
    ``surrogateescape``) and nothing could store or hash. ``of`` follows the position.

    >>> unicode_problem("café"), unicode_problem("caf\\udce9", of=" of its JSON")[:39]
    (None, 'holds U+DCE9 at character 4 of its JSON')
    """
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"holds U+{ord(value[exc.start]):04X} at character {exc.start + 1}{of}, which "
                "is not text (a lone surrogate: bytes that were not UTF-8, or a \\u escape "
                "that encodes half a character)")
    return None


def lone_surrogate_at(value: Any, *, top: str = "value") -> tuple[str, str] | None:
    """Where and what: the path of the first string of a parsed JSON ``value`` (in
    document order; keys too, a key named by its object's path) that is no text
    (``unicode_problem``), dotted as the sidecar's 422 answers name fields
    (``memories.1.text``; ``top`` for the value itself), and the problem; else None.

    >>> lone_surrogate_at({"memories": [{"text": "ok"}, {"text": "x \\ud800"}]})[0]
    'memories.1.text'
    >>> lone_surrogate_at({"\\ud800": 1}, top="body")[0], lone_surrogate_at(["ok"])
    ('body', None)
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            problem = unicode_problem(item)
            if problem is not None:
                return path or top, problem
        elif isinstance(item, dict):
            stack.extend(reversed([
                pair for key, child in item.items()
                for pair in ((path, key), (f"{path}.{key}" if path else str(key), child))]))
        elif isinstance(item, list):
            stack.extend(reversed([(f"{path}.{i}" if path else str(i), child)
                                   for i, child in enumerate(item)]))
    return None


def check_unicode(value: str, *, field: str) -> str:
    """``value``, refused (naming ``field``) when it is no text (``unicode_problem``).

    >>> check_unicode("caf\\udce9", field="text")
    Traceback (most recent call last):
    ...
    graphmem._errors.InvalidInputError: text holds U+DCE9 at character 4, which is not text...
    """
    problem = unicode_problem(value)
    if problem is not None:
        raise InvalidInputError(f"{field} {problem}", field=field)
    return value


#: letters and marks that show nothing (Hangul fillers, the braille blank, the combining
#: grapheme joiner, Khmer's inherent vowels, Mongolian free variation selectors, the Khitan
#: filler, variation selectors): an owner holding one reads as another owner
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5\u180b"
                           "\u180c\u180d\u180f\U00016fe4"
                           + "".join(map(chr, range(0xFE00, 0xFE10)))
                           + "".join(map(chr, range(0xE0100, 0xE01F0))))
#: Unicode categories no owner holds: controls, format characters (U+200B), line and
#: paragraph separators, private use (unassigned characters are allowed: which are
#: unassigned depends on the Python's Unicode version)
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Co"})
#: joiners that spell words of Persian and of Indic scripts ("علی\u200cرضا") and emoji
#: ("👩\u200d💻"), allowed between two characters that are not ASCII
_JOINERS = frozenset("\u200c\u200d")
#: the emoji and text presentation selectors, allowed after a symbol ("❤️")
_PRESENTATION = frozenset("\ufe0e\ufe0f")


def _hidden_at(value: str) -> int | None:
    """Where ``value`` holds a character that shows nothing, or None (``owner_problem``)."""
    for n, ch in enumerate(value):
        if ch in _JOINERS and 0 < n < len(value) - 1 \
                and not value[n - 1].isascii() and not value[n + 1].isascii():
            continue
        if ch in _PRESENTATION and n and unicodedata.category(value[n - 1]) in ("So", "Sk"):
            continue
        if unicodedata.category(ch) in _HIDDEN or ch in _BLANK_LETTERS \
                or (ch.isspace() and ch != " "):
            return n
    return None


def owner_problem(value: Any) -> str | None:
    """What makes ``value`` no owner, or None: the one rule for the owner a memory is
    written with (``MemoryInput``) and the one a read or change is confined to
    (``check_owner``). An owner is a stored owner (``stored_owner_problem``) that reads as
    itself alone: in Unicode normal form NFC (so "jose" + U+0301 is not another "josé"),
    without fullwidth forms of ASCII ("ａlice"), without a character that shows nothing
    (U+200B, a control, a space other than U+0020, a Hangul filler; a joiner between two
    letters of Persian or an Indic script, or in an emoji, is no such character) and
    without space at either end. Letters that look alike (a Cyrillic "а", an Arabic tatweel)
    are not caught.

    >>> owner_problem("alice"), owner_problem(5), owner_problem(" ")[:22]
    (None, 'must be a string, got int', 'is empty: leave it out')
    >>> owner_problem("alice\u200b")
    'contains a character that shows nothing (U+200B at position 5)'
    >>> owner_problem("jose\u0301")
    "is not in Unicode normal form NFC: write it as 'josé'"
    >>> owner_problem("ana maria"), owner_problem("alice "), owner_problem("\uff41lice")
    (None, 'has space at an end', 'holds the fullwidth form of an ASCII character at position 0')
    >>> owner_problem("علی\u200cرضا"), owner_problem("สำราญ"), owner_problem("❤\ufe0f")
    (None, None, None)
    """
    problem = stored_owner_problem(value)
    if problem is not None:
        return problem
    hidden = _hidden_at(value)
    if hidden is not None:
        code = f"U+{ord(value[hidden]):04X} at position {hidden}"
        if value[hidden].isspace() and unicodedata.category(value[hidden]) == "Zs":
            return f"holds a space other than U+0020 ({code}): write a plain space"
        return f"contains a character that shows nothing ({code})"
    if value != value.strip():
        return "has space at an end"
    wide = next((n for n, ch in enumerate(value) if "\uff01" <= ch <= "\uff5e"), None)
    if wide is not None:
        return f"holds the fullwidth form of an ASCII character at position {wide}"
    normal = unicodedata.normalize("NFC", value)
    if normal != value:
        shown = normal if len(normal) <= 80 else normal[:80] + "..."
        return f"is not in Unicode normal form NFC: write it as {shown!r}"
    return None


def stored_owner_problem(value: Any) -> str | None:
    """What makes ``value`` no owner graphmem could have stored, or None: a string of at
    most ``MAX_SHORT`` characters, text (no NUL, no lone surrogate) and not blank. A
    backup is checked by this rule: stores written before ``owner_problem`` refused
    invisible characters may hold such owners.

    >>> stored_owner_problem("alice\u200b"), stored_owner_problem("")[:8]
    (None, 'is empty')
    """
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    problem = _short_problem(value)
    if problem is None and not value.strip():
        problem = ("is empty: leave it out (a memory of the local user's; on a read, every "
                   "owner's memories)")
    return problem


def _short_problem(value: str) -> str | None:
    """What makes ``value`` no short field (an id, a subject, an owner, a project, a
    session), or None: a NUL, more than ``MAX_SHORT`` characters, or no text."""
    if "\x00" in value:
        return "contains a NUL character"
    if len(value) > MAX_SHORT:
        return f"is {len(value)} characters long; the limit is {MAX_SHORT}"
    return unicode_problem(value)


def check_owner(value: Any) -> str | None:
    """The ``owner`` a call names, as given: None (left out), or an owner that
    ``owner_problem`` accepts; anything else is refused before the store is asked
    (a number or a list would reach the engine as a parameter of another type).

    >>> check_owner(None), check_owner("alice")
    (None, 'alice')
    >>> check_owner(5)
    Traceback (most recent call last):
    ...
    graphmem._errors.InvalidInputError: owner must be a string, got int
    """
    if value is None:
        return None
    problem = owner_problem(value)
    if problem is not None:
        raise InvalidInputError(f"owner {problem}", field="owner")
    return value


def check_count(value: Any, field: str) -> int:
    """A count argument (an offset, a limit): a whole number, 0 or more.

    >>> check_count(3, "limit")
    3
    >>> check_count(-1, "offset")
    Traceback (most recent call last):
    ...
    graphmem._errors.InvalidInputError: offset must be a whole number, 0 or more (got -1)
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{field} must be a whole number, 0 or more (got {value!r})",
                                field=field)
    return value


def check_flag(value: Any, field: str) -> bool:
    """A yes/no argument: ``True`` or ``False`` only ("no" is a true value in Python).

    >>> check_flag(False, "write")
    False
    >>> check_flag("no", "write")
    Traceback (most recent call last):
    ...
    graphmem._errors.InvalidInputError: write must be true or false, got 'no'
    """
    if not isinstance(value, bool):
        raise InvalidInputError(f"{field} must be true or false, got {value!r}", field=field)
    return value


def check_unit(value: Any, *, field: str) -> float:
    """A finite number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{field} must be a number in [0, 1], got {value!r}", field=field)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"{field} must be in [0, 1], got {value!r}", field=field)
    return float(value)


def check_tags(value: Any) -> list[str]:
    """A list of at most ``MAX_TAGS`` non-empty tags of at most ``MAX_TAG`` characters."""
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise InvalidInputError("tags must be a list of non-empty strings", field="tags")
    if len(value) > MAX_TAGS:
        raise InvalidInputError(f"{len(value)} tags; the limit is {MAX_TAGS}", field="tags")
    for tag in value:
        if not isinstance(tag, str) or not tag or "\x00" in tag or len(tag) > MAX_TAG:
            raise InvalidInputError(f"tags must be non-empty strings of at most {MAX_TAG} "
                                    "characters with no NUL", field="tags")
        check_unicode(tag, field="tags")
    return list(value)


def _check_visibility(value: Any) -> str:
    try:
        return check_text(value, field="visibility", max_len=MAX_VISIBILITY)
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from None


def check_validity(valid_from: datetime | None, valid_to: datetime | None) -> None:
    """``valid_from`` must not come after ``valid_to``."""
    if valid_from is not None and valid_to is not None and valid_from > valid_to:
        raise InvalidInputError(
            f"valid_from ({valid_from.isoformat()}) is after valid_to "
            f"({valid_to.isoformat()}): a memory cannot stop being valid before it starts",
            field="valid_to")


_ENTITY_KEYS = {"id", "name", "type", "aliases", "merges"}
_FACT_KEYS = {"id", "subject", "predicate", "object", "confidence", "valid_from", "valid_to",
              "recorded", "sources", "rule", "ended_by"}


def check_graph(value: dict[str, Any]) -> dict[str, Any]:
    """A memory's knowledge-graph section (``mentions`` and ``facts``), checked field by
    field; a ``ValueError`` names the entry and field that is wrong."""
    unknown = set(value) - {"mentions", "facts"}
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}; a graph section has mentions "
                         "and facts")

    def text(entry: Any, key: str, where: str, *, optional: bool = False) -> None:
        found = entry.get(key)
        if found is None and optional:
            return
        if not isinstance(found, str) or not found or "\x00" in found or len(found) > 2000:
            raise ValueError(f"{where}.{key} must be a non-empty string")

    from ._kg._entities import ENTITY_TYPES  # what the graph's rules know: only on import
    from ._kg._resolve import ROLE_WEIGHTS

    types, roles = tuple(ENTITY_TYPES), tuple(ROLE_WEIGHTS)
    mentions = value.get("mentions", [])
    if not isinstance(mentions, list) or len(mentions) > MAX_LIST:
        raise ValueError(f"mentions must be a list of at most {MAX_LIST}")
    for n, mention in enumerate(mentions):
        where = f"mentions[{n}]"
        if not isinstance(mention, dict) or not isinstance(mention.get("entity"), dict):
            raise ValueError(f"{where} must be an object with an entity")
        entity = mention["entity"]
        extra = sorted(set(entity) - _ENTITY_KEYS)
        if extra:
            raise ValueError(f"{where}.entity has unknown keys {extra}")
        for key in ("id", "name", "type"):
            text(entity, key, f"{where}.entity")
        if entity["type"] not in types:
            raise ValueError(f"{where}.entity.type {entity['type'][:40]!r} is not one of "
                             f"{', '.join(types)}")
        aliases = entity.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise ValueError(f"{where}.entity.aliases must be a list of strings")
        merges = entity.get("merges", [])
        if not isinstance(merges, list) or not all(
                isinstance(m, dict) and isinstance(m.get("alias"), str)
                and isinstance(m.get("rule"), str) for m in merges):
            raise ValueError(f"{where}.entity.merges must be a list of {{alias, rule}} objects")
        text(mention, "role", where)
        if mention["role"] not in roles:
            raise ValueError(f"{where}.role {mention['role'][:40]!r} is not one of "
                             f"{', '.join(roles)}")
        weight = mention.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, int | float) \
                or not math.isfinite(weight) or weight < 0:
            raise ValueError(f"{where}.weight must be a number >= 0")
    facts = value.get("facts", [])
    if not isinstance(facts, list) or len(facts) > MAX_LIST:
        raise ValueError(f"facts must be a list of at most {MAX_LIST}")
    for n, fact in enumerate(facts):
        where = f"facts[{n}]"
        if not isinstance(fact, dict) or set(fact) - _FACT_KEYS:
            raise ValueError(f"{where} must be an object with the keys {sorted(_FACT_KEYS)}")
        for key in ("id", "subject", "predicate", "object"):
            text(fact, key, where)
        text(fact, "ended_by", where, optional=True)
        confidence = fact.get("confidence", 1.0)
        if isinstance(confidence, bool) or not isinstance(confidence, int | float) \
                or not 0.0 <= confidence <= 1.0:
            raise ValueError(f"{where}.confidence must be a number in [0, 1]")
        for key in ("valid_from", "valid_to", "recorded"):
            if fact.get(key) is not None:
                _time(fact[key], f"{where}.{key}")
        if not isinstance(fact.get("sources", []), list):
            raise ValueError(f"{where}.sources must be a list of memory ids")
    return value


def _time(value: Any, field: str | None) -> datetime | None:
    """A time from a datetime or an ISO 8601 string; ValueError names ``field`` (None:
    the caller's message names it, as pydantic's does)."""
    named = "" if field is None else f"{field}: "
    if value is None:
        return None
    try:
        if isinstance(value, datetime):
            return to_utc(value)
        if isinstance(value, str):
            return parse_iso(value)
    except ValueError as exc:
        raise ValueError(f"{named}{exc}") from None
    raise ValueError(f"{named}must be a datetime or an ISO 8601 string")


#: a recall's time range: ``since`` (inclusive) and ``until`` (exclusive), each optional
RecallWindow = tuple[datetime | None, datetime | None]


def recall_window(since: Any, until: Any) -> RecallWindow:
    """A recall's time range from datetimes or ISO 8601 strings (either may be None),
    refused with the field named when a time is not one or ``until`` is not after
    ``since``."""
    start, end = moment(since, "since"), moment(until, "until")
    if start is not None and end is not None and end <= start:
        raise InvalidInputError(f"until ({end.isoformat()}) must be after since "
                                f"({start.isoformat()})", field="until")
    return start, end


def moment(value: Any, name: str) -> datetime | None:
    """A time argument (a datetime or an ISO 8601 string, or None) in UTC, refused as
    ``InvalidInputError`` with ``name`` as its field when it is not one, or falls outside
    the years 1-9999 in UTC."""
    try:
        return _time(value, name)
    except ValueError as exc:
        raise InvalidInputError(f"{exc} (e.g. 2026-05-01 or 2026-05-01T09:30:00Z)",
                                field=name) from None


#: How deep a JSON field (``extra``, ``provenance``) may nest: graphmem's JSON output
#: (export, ``--json``) holds it inside a memory, and its serializer stops at 254 levels.
MAX_JSON_DEPTH = 100


def json_depth(value: Any) -> int:
    """How deep a parsed JSON value nests (a scalar 0, ``{"a": [1]}`` 2).

    >>> json_depth({"a": [1]}), json_depth(3)
    (2, 0)
    """
    deepest, todo = 0, [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict):
            todo += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            todo += [(v, depth + 1) for v in item]
        else:
            deepest = max(deepest, depth)
            continue
        deepest = max(deepest, depth + 1)
    return deepest


def _json_safe(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{field} must be an object")
    try:
        # Stored as JSON, so kept as JSON gives it back: what is returned is what was stored.
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
        normal: dict[str, Any] = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"{field} must be JSON (finite numbers, string keys): {exc}") from None
    problem = stored_json_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return normal


def no_json_constant(name: str) -> Any:
    """``json.loads``' ``parse_constant``: NaN and the infinities are not JSON numbers."""
    raise ValueError(f"{name} is not a JSON number")


def stored_json_problem(text: str) -> str | None:
    """What makes ``text`` (a JSON column as stored) one graphmem cannot read back and
    write out again, or None: not a JSON object of finite numbers, nested deeper than
    ``MAX_JSON_DEPTH``, or holding half a character (a lone surrogate).

    >>> stored_json_problem('{"a": [1]}') is None, stored_json_problem('[1]')
    (True, 'must be a JSON object (or null)')
    >>> stored_json_problem('{"a": NaN}'), stored_json_problem('{"a": "\\ud800"}')[:20]
    ('must be JSON of finite numbers', 'holds U+D800 at char')
    """
    try:
        value = json.loads(text, parse_constant=no_json_constant)
    except (TypeError, RecursionError):
        return "must be a JSON object (or null)"
    except ValueError as exc:
        return ("must be JSON of finite numbers" if "JSON number" in str(exc)
                else "must be a JSON object (or null)")
    if not isinstance(value, dict):
        return "must be a JSON object (or null)"
    if json_depth(value) > MAX_JSON_DEPTH:
        return f"must nest at most {MAX_JSON_DEPTH} levels deep"
    return unicode_problem(json.dumps(value, ensure_ascii=False), of=" of its JSON")


class MemoryInput(BaseModel):
    """A memory to add. Only ``text`` is required; everything else has a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    id: str | None = None
    kind: Kind = Kind.EPISODIC
    status: Status = Status.ACTIVE
    subject: str | None = None
    importance: float = Field(default=0.5, allow_inf_nan=False)
    confidence: float = Field(default=1.0, allow_inf_nan=False)
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    owner: str | None = None
    project: str | None = None
    visibility: str = "private"
    created: datetime | None = None
    modified: datetime | None = None
    observed: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: tuple[str, ...] = ()
    session: str | None = None
    context: str | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
    integrity: dict[str, Any] = Field(default_factory=dict)
    payload: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    #: what the knowledge graph holds of this memory, as a UMP file carries it (the
    #: entities it mentions and the facts it states); None: extract it from the text
    graph: dict[str, Any] | None = None

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        try:
            return check_text(value, field="text")
        except InvalidInputError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("id", "subject", "project", "session")
    @classmethod
    def _short(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = _short_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("owner", mode="before")
    @classmethod
    def _owner(cls, value: Any) -> Any:
        problem = None if value is None else owner_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or value != value.strip()):
            raise ValueError("must be non-empty with no surrounding whitespace")
        return value

    @field_validator("status")
    @classmethod
    def _status(cls, value: Status) -> Status:
        if value is Status.FORGOTTEN:
            raise ValueError("a new memory cannot be forgotten")
        return value

    @field_validator("importance", "confidence")
    @classmethod
    def _unit(cls, value: float) -> float:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"must be in [0, 1], got {value}")
        return value

    @field_validator("tags", "superseded_by", "entities")
    @classmethod
    def _strings(cls, value: tuple[str, ...], info: Any) -> tuple[str, ...]:
        most, longest = (MAX_TAGS, MAX_TAG) if info.field_name == "tags" \
            else (MAX_LIST, MAX_SHORT)
        if len(value) > most:
            raise ValueError(f"has {len(value)} entries; the limit is {most}")
        for item in value:
            if not item or "\x00" in item or len(item) > longest:
                raise ValueError(f"bad entry {item[:40]!r} (non-empty, no NUL, at most "
                                 f"{longest} characters)")
            problem = unicode_problem(item)
            if problem is not None:
                raise ValueError(f"an entry {problem}")
        return value

    @field_validator("visibility")
    @classmethod
    def _visibility(cls, value: str) -> str:
        return _check_visibility(value)

    @model_validator(mode="after")
    def _validity(self) -> MemoryInput:
        try:
            check_validity(self.valid_from, self.valid_to)
        except InvalidInputError as exc:
            raise ValueError(f"{exc.field}: {exc}") from None
        return self

    @field_validator("created", "modified", "observed", "valid_from", "valid_to", mode="before")
    @classmethod
    def _times(cls, value: Any, info: Any) -> datetime | None:
        return _time(value, None)

    @field_validator("provenance", "integrity", "extra", mode="before")
    @classmethod
    def _json(cls, value: Any, info: Any) -> dict[str, Any]:
        return _json_safe(value, info.field_name)

    @field_validator("context")
    @classmethod
    def _context(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if "\x00" in value or len(value) > MAX_TEXT:
            raise ValueError(f"has a NUL character or is longer than {MAX_TEXT} characters")
        return value

    @field_validator("graph", mode="before")
    @classmethod
    def _graph(cls, value: Any) -> dict[str, Any] | None:
        if value is None:
            return None
        return check_graph(_json_safe(value, "graph"))

    @field_validator("payload")
    @classmethod
    def _payload(cls, value: str | None) -> str | None:
        if value is not None and len(value) > 10 * MAX_TEXT:
            raise ValueError("payload is too large")
        return value

    @classmethod
    def parse(cls, data: Any, *, where: str = "") -> MemoryInput:
        """Validate a dict (or pass a ``MemoryInput`` through); errors name the field."""
        if isinstance(data, MemoryInput):
            return data
        if isinstance(data, str):
            data = {"text": data}
        if not isinstance(data, Mapping):
            raise InvalidInputError(
                f"{where}a memory must be a mapping with at least 'text', "
                f"got {type(data).__name__}"
            )
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            field, message = validation_message(exc)
            raise InvalidInputError(f"{where}{field}: {message}", field=field) from None


def parse_records(records: Iterable[MemoryInput | Mapping[str, Any] | str]
                  ) -> list[MemoryInput]:
    """Every record checked, an error naming its index when there are several (a single
    memory's error names the field alone: "record 0" would only puzzle)."""
    if isinstance(records, str | bytes | Mapping | MemoryInput) or \
            not isinstance(records, Iterable):
        raise InvalidInputError("records must be a list of memories (texts, mappings or "
                                f"MemoryInput), got {type(records).__name__}",
                                field="records")
    listed = list(records)
    label = (lambda i: f"record {i}: ") if len(listed) > 1 else (lambda i: "")
    return [MemoryInput.parse(r, where=label(i)) for i, r in enumerate(listed)]


def validation_message(exc: ValidationError) -> tuple[str, str]:
    """The first error of a pydantic ``ValidationError`` as (dotted field, message)."""
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or "record"
    message = str(first.get("msg", "invalid value"))
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    named = re.match(r"([a-z_]+): ", message)
    if field == "record" and named:  # a check across fields names the field it blames
        field, message = named.group(1), message[named.end():]
    return field, message


def check_reason(reason: Any) -> str:
    """A change's ``reason``: text (``InvalidInputError`` naming ``reason`` otherwise)."""
    if not isinstance(reason, str):
        raise InvalidInputError("reason must be a string", field="reason")
    return check_unicode(reason, field="reason")


def memory_id_list(memory_ids: Any) -> list[str]:
    """``memory_ids`` (any iterable of ids, read once) as a list; ``InvalidInputError``
    for one string, a value that is no iterable, or an id that is no string."""
    if isinstance(memory_ids, str | bytes) or not isinstance(memory_ids, Iterable):
        raise InvalidInputError("memory_ids must be a list of memory ids, not "
                                f"{type(memory_ids).__name__}", field="memory_ids")
    ids = list(memory_ids)
    if not all(isinstance(i, str) for i in ids):
        raise InvalidInputError("memory_ids must be a list of memory ids (strings)",
                                field="memory_ids")
    return ids
