"""LangGraph's long-term memory in graphmem: ``GraphmemStore`` is a ``BaseStore``, so
``graph.compile(store=GraphmemStore(...))`` gives every node ``store.put/get/search``.

One item is one memory: its text is what the value says (the strings at ``fields``), its
namespace, key and value ride in ``extra["langgraph"]``, and one namespace label (or a
fixed name) is the memory's owner, so one user's items are invisible to another's scope.
A put that changes an item supersedes its memory (the old value stays in the history);
a delete tombstones it, or with ``erase=True`` forgets it for good. A search with a query
is graphmem's recall (explained hits); without one, a scan ordered newest first.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._errors import InvalidInputError, NotFoundError
from .._facade import MemoryStore
from .._models import Memory, Status
from .._recall import Explanation
from .._time import format_iso, parse_iso
from ._common import HELD, Memories, held_memories, missing_extra

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base.embed import get_text_at_path, tokenize_path
except ImportError as exc:  # pragma: no cover - exercised in a subprocess
    raise missing_extra("langgraph", "langgraph", exc) from exc

__all__ = ["GraphmemSearchItem", "GraphmemStore"]

#: The tag every item's memory carries, and its key in ``Memory.extra``.
TAG = "langgraph"
#: Recall is asked for this many times the hits a search wants, then for four times
#: more while filters drop too many (other namespaces, other memories of the owner).
_OVERFETCH = 3
_MAX_RECALL = 10_000


class GraphmemSearchItem(SearchItem):
    """A search result that also says which memory it is and why recall returned it
    (``explanation`` is None for a search without a query)."""

    __slots__ = ("explanation", "memory_id")

    def __init__(self, item: Item, *, memory_id: str, score: float | None = None,
                 explanation: Explanation | None = None) -> None:
        super().__init__(item.namespace, item.key, item.value, item.created_at,
                         item.updated_at, score)
        self.memory_id = memory_id
        self.explanation = explanation


class GraphmemStore(BaseStore):
    """A LangGraph store whose items are graphmem memories.

    Parameters
    ----------
    store : MemoryStore or Client
        An embedded store, or ``graphmem.connect(url, token=...)`` for a served one (a
        token's owner then bounds everything this store sees).
    owner_label : int, optional
        Which namespace label names the owner: with 1, ``("memories", "alice")`` holds
        alice's memories, and a search or listing whose prefix names an owner sees only
        that owner's. Without it every item belongs to ``owner``.
    owner : str, optional
        The owner of every item when ``owner_label`` is not given (None: the store's
        local user).
    fields : sequence of str, optional
        JSON paths of the value whose text is the memory's text (LangGraph's syntax:
        ``"text"``, ``"facts[*]"``); by default every string in the value. A value with
        no text at those paths is stored as its JSON.
    kind : str
        The graphmem kind of new memories ("semantic": facts and preferences).
    preset : str
        The recall preset a search with a query uses.
    erase : bool
        Delete forgets the memory (its text is erased everywhere) instead of
        tombstoning it (reversible, kept for audit).
    record_access : bool
        A search with a query counts as a use of what it returns (graphmem's recall:
        used memories rank higher later). Off by default, as in graphmem: repeated
        searches, and so the pages of one search, rank alike.

    Examples
    --------
    >>> from graphmem import MemoryStore
    >>> from graphmem.integrations.langgraph import GraphmemStore
    >>> memories = MemoryStore(":memory:", embedder="hashing")
    >>> store = GraphmemStore(memories, owner_label=1)
    >>> store.put(("prefs", "alice"), "drink", {"text": "Alice drinks green tea"})
    >>> store.get(("prefs", "alice"), "drink").value
    {'text': 'Alice drinks green tea'}
    >>> [hit.key for hit in store.search(("prefs", "bob"), query="tea")]
    []
    >>> memories.close()
    """

    supports_ttl = False

    def __init__(self, store: Memories, *, owner_label: int | None = None,
                 owner: str | None = None, fields: Sequence[str] | None = None,
                 kind: str = "semantic", preset: str = "default", erase: bool = False,
                 record_access: bool = False) -> None:
        if owner_label is not None and (isinstance(owner_label, bool)
                                        or not isinstance(owner_label, int) or owner_label < 0):
            raise InvalidInputError(f"owner_label must be a label index >= 0, got "
                                    f"{owner_label!r}", field="owner_label")
        if owner_label is not None and owner is not None:
            raise InvalidInputError("give owner_label (the owner is a namespace label) or "
                                    "owner (one owner for every item), not both",
                                    field="owner")
        self.memories = store
        self.owner_label, self.owner = owner_label, owner
        self.fields = [tokenize_path(f) for f in fields] if fields is not None else None
        self.kind, self.preset, self.erase = kind, preset, erase
        self.record_access = record_access
        # one batch at a time: a put reads the item's memory, then replaces it
        self._lock = threading.RLock()
        self._turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = \
            weakref.WeakKeyDictionary()
        self._turns_lock = threading.Lock()
        #: (namespace, key) -> the id last seen at the end of the item's chain
        self._tips: dict[tuple[tuple[str, ...], str], str] = {}

    # -- BaseStore ---------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Reads see the store as it was before the batch; then its puts and deletes
        run in order, the last one for an item winning (LangGraph's batch semantics).
        Every put is checked before the first is written."""
        ops = list(ops)
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                # a delete where no item can be is nothing to do, as in LangGraph
                _check_labels(op.namespace, self._needed_labels() if op.value else 0)
                if op.value is not None:
                    _json_value(op.value)
                if op.ttl is not None:
                    raise NotImplementedError(
                        "GraphmemStore keeps items until they are deleted (graphmem's "
                        "lifecycle archives unused memories); pass ttl=None")
                writes.pop((op.namespace, op.key), None)  # keep the order of the last
                writes[(op.namespace, op.key)] = op
            elif not isinstance(op, GetOp | SearchOp | ListNamespacesOp):
                raise InvalidInputError(f"unknown store operation {type(op).__name__}",
                                        field="ops")
        with self._lock:
            results = [self._read(op) for op in ops]
            for op in writes.values():
                self._put(op)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread (the store's calls block). Concurrent calls of
        one event loop run one at a time, in the order they were made."""
        loop = asyncio.get_running_loop()
        with self._turns_lock:
            turn = self._turns.setdefault(loop, asyncio.Lock())
        async with turn:
            return await asyncio.to_thread(self.batch, list(ops))

    # -- the operations ----------------------------------------------------------------
    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            tip = self._tip(op.namespace, op.key)[0]
            return _item(tip) if tip is not None and _held(tip) else None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        return None

    def _put(self, op: PutOp) -> None:
        tip, fresh_id = self._tip(op.namespace, op.key)
        held = tip is not None and _held(tip)
        if op.value is None:
            if tip is not None and held:
                self._delete(op.namespace, op.key, tip)
            return
        value = _json_value(op.value)
        if tip is not None and held and _entry(tip).get("value") == value:
            return
        fields = [tokenize_path(f) for f in op.index] if op.index else self.fields
        entry = {"namespace": list(op.namespace), "key": op.key, "value": value,
                 "indexed": op.index is not False}
        if tip is not None and held:  # the item was created with its first memory
            entry["created_at"] = format_iso(_item(tip).created_at)
        text, scope = _text(value, fields), self._owner_of(op.namespace)
        fields_of: dict[str, Any] = {"kind": self.kind, "tags": [TAG],
                                     "project": "/".join(op.namespace), "extra": {TAG: entry}}
        if tip is not None and isinstance(self.memories, MemoryStore):
            # a new value, or the item put again after its delete: one transaction
            memory = self.memories.supersede(tip.id, text, reason="update", **scope,
                                             **fields_of)
        else:
            new = {"id": fresh_id} if fresh_id is not None else {}
            memory = self.memories.add(text, **fields_of, **new, **scope)
            if tip is not None:  # a sidecar takes no fields with a supersede: two calls
                self.memories.supersede(tip.id, memory, reason="update")
        self._tips[(op.namespace, op.key)] = memory.id

    def _delete(self, namespace: tuple[str, ...], key: str, tip: Memory) -> None:
        """Tombstone the item's memory, or with ``erase`` forget every memory it had
        (its older values too): the next put starts the next generation."""
        if not self.erase:
            self.memories.tombstone(tip.id, reason="delete")
            return
        for memory_id in self._chain(tip):
            self.memories.forget(memory_id, confirm=True, reason="delete")
        self._tips.pop((namespace, key), None)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        want = op.offset + op.limit
        if not op.query:
            return [GraphmemSearchItem(_item(m), memory_id=m.id)
                    for m in self._listed(op)[op.offset:want]]
        if want <= 0:
            return []
        ask = max(want * _OVERFETCH, 10)
        while True:
            hits = self.memories.recall(op.query, k=ask, preset=self.preset,
                                        include_archived=True,
                                        record_access=self.record_access,
                                        owner=self._scope(op.namespace_prefix))
            kept = [h for h in hits if self._is_item(h.memory, op.namespace_prefix)
                    and _entry(h.memory).get("indexed", True)
                    and _matches(_entry(h.memory)["value"], op.filter)]
            if len(kept) >= want or len(hits) < ask or ask >= _MAX_RECALL:
                break
            ask = min(ask * 4, _MAX_RECALL)
        found: list[SearchItem] = [
            GraphmemSearchItem(_item(h.memory), memory_id=h.memory.id, score=h.score,
                               explanation=h.explanation) for h in kept[op.offset:want]]
        if len(found) < op.limit:
            # as LangGraph's own stores do, unindexed items fill a short page, unscored
            unindexed = [m for m in self._listed(op) if not _entry(m).get("indexed", True)]
            found += [GraphmemSearchItem(_item(m), memory_id=m.id)
                      for m in unindexed[:op.limit - len(found)]]
        return found

    def _listed(self, op: SearchOp) -> list[Memory]:
        """The items under the search's prefix that pass its filter, newest first."""
        found = [m for m in self._scan(op.namespace_prefix)
                 if _matches(_entry(m)["value"], op.filter)]
        return sorted(found, key=lambda m: (m.created, m.id), reverse=True)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        prefix = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), ())
        namespaces = {tuple(_entry(m)["namespace"]) for m in self._scan(prefix)}
        namespaces = {ns for ns in namespaces if all(_path_matches(c, ns) for c in conditions)}
        if op.max_depth is not None:
            namespaces = {ns[:op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset:op.offset + op.limit]

    # -- items and owners --------------------------------------------------------------
    def _needed_labels(self) -> int:
        return 1 if self.owner_label is None else self.owner_label + 1

    def _owner_of(self, namespace: tuple[str, ...]) -> dict[str, str]:
        """The owner a new item of ``namespace`` gets (nothing: the store decides)."""
        owner = self.owner if self.owner_label is None else namespace[self.owner_label]
        return {} if owner is None else {"owner": owner}

    def _scope(self, prefix: Sequence[str]) -> str | None:
        """The owner a read under ``prefix`` is confined to: the one the prefix names,
        or the fixed owner (None: every owner the store lets this caller see)."""
        if self.owner_label is None:
            return self.owner
        if len(prefix) > self.owner_label and prefix[self.owner_label] != "*":
            return prefix[self.owner_label]
        return None

    def _owner_in_scope(self, memory: Memory, prefix: Sequence[str]) -> bool:
        owner = self._scope(prefix)
        return owner is None or memory.owner == owner

    def _scan(self, prefix: Sequence[str]) -> list[Memory]:
        return [m for m in held_memories(self.memories, self._scope(prefix))
                if self._is_item(m, prefix)]

    def _is_item(self, memory: Memory, prefix: Sequence[str]) -> bool:
        entry = memory.extra.get(TAG)
        if (not isinstance(entry, dict) or TAG not in memory.tags
                or memory.status not in HELD or memory.superseded_by):
            return False
        namespace = entry.get("namespace") or []
        return (self._owner_in_scope(memory, prefix)
                and all(p == "*" or p == n for p, n in zip(prefix, namespace, strict=False))
                and len(namespace) >= len(prefix))

    # -- where an item lives --------------------------------------------------------
    # Each new value of an item (or a put after its delete) supersedes its last memory,
    # so the item is the end of a chain. On an embedded store the chain's first memory
    # has an id made from the owner, namespace and key, and the item is found by ids
    # alone; a delete with ``erase`` forgets the chain, whose ids stay taken, so the
    # next put starts generation 2. A sidecar chooses its own ids: there the item is
    # found by a scan of the owner's memories.
    def _base_id(self, namespace: tuple[str, ...], key: str, generation: int) -> str:
        owner = self._owner_of(namespace).get("owner")
        digest = hashlib.sha256(json.dumps([owner, list(namespace), key]).encode())
        suffix = "" if generation == 1 else f"-{generation}"
        return f"{TAG}:{digest.hexdigest()[:32]}{suffix}"

    def _lookup(self, memory_id: str, namespace: tuple[str, ...]) -> Memory | None:
        try:
            return self.memories.get(memory_id, **self._owner_of(namespace))
        except NotFoundError:
            return None

    def _tip(self, namespace: tuple[str, ...], key: str) -> tuple[Memory | None, str | None]:
        """The last memory of the item's chain (held, tombstoned, or None when the item
        was never put or was erased), and the id a new chain would start with."""
        if len(namespace) < self._needed_labels():
            return None, None  # no item can be there: it would have no owner
        if not isinstance(self.memories, MemoryStore):
            items = [m for m in self._scan(namespace) if _entry(m)["key"] == key
                     and tuple(_entry(m)["namespace"]) == tuple(namespace)]
            return max(items, key=lambda m: (m.created, m.id)) if items else None, None
        cached = self._tips.get((namespace, key))
        found = self._lookup(cached, namespace) if cached else None
        generation = 1
        while found is None or found.status is Status.FORGOTTEN:
            if found is not None:
                generation += 1
            base = self._base_id(namespace, key, generation)
            found = self._lookup(base, namespace)
            if found is None:
                return None, base
        while found.superseded_by:
            newer = self._lookup(found.superseded_by[-1], namespace)
            if newer is None or TAG not in newer.extra:
                break  # replaced by a memory that is no item (a correction): gone
            found = newer
        self._tips[(namespace, key)] = found.id
        return found, None

    def _chain(self, tip: Memory) -> list[str]:
        """The ids of the item's memories, newest first: its tip, then what each one
        supersedes (SUPERSEDES edges point from the newer memory)."""
        ids, current = [tip.id], tip.id
        while older := [link.other for link in self.memories.links(current)
                        if link.kind == "supersedes" and link.direction == "out"
                        and link.other not in ids]:
            current = older[0]
            ids.append(current)
        return ids

    def __repr__(self) -> str:
        return f"GraphmemStore({self.memories!r})"


# -- values ----------------------------------------------------------------------------
def _held(memory: Memory) -> bool:
    return memory.status in HELD and not memory.superseded_by


def _entry(memory: Memory) -> dict[str, Any]:
    entry: dict[str, Any] = memory.extra[TAG]
    return entry


def _item(memory: Memory) -> Item:
    entry = _entry(memory)
    created = entry.get("created_at")
    return Item(value=entry["value"], key=entry["key"], namespace=tuple(entry["namespace"]),
                created_at=parse_iso(created) if created else memory.created,
                updated_at=memory.created)


def _json_value(value: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"an item's value must be a dict, got {type(value).__name__}",
                                field="value")
    try:
        plain: dict[str, Any] = json.loads(json.dumps(dict(value), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"an item's value must be JSON data: {exc}",
                                field="value") from None
    return plain


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _text(value: dict[str, Any], fields: list[list[str]] | None) -> str:
    """What the item says: the strings at ``fields`` (every string by default), one per
    line; its JSON when there are none."""
    if fields is None:
        texts = _strings(value)
    else:
        texts = [t for path in fields for t in get_text_at_path(value, path) if t.strip()]
    return "\n".join(texts) or json.dumps(value, sort_keys=True)


def _check_labels(namespace: tuple[str, ...], needed: int) -> None:
    """What every write's namespace must be: enough labels to name the owner, each a
    non-empty string with no '.' or NUL."""
    if len(namespace) < needed:
        raise InvalidNamespaceError(
            f"namespace {namespace} has {len(namespace)} label(s); this store reads the "
            f"owner from label {needed - 1}, so it needs at least {needed}")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(f"namespace labels are non-empty strings with no "
                                        f"'.' or NUL, got {label!r} in {namespace}")


def _path_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path, strict=False) if condition.match_type == "prefix" else \
        zip(reversed(namespace), reversed(path), strict=False)
    return all(p == "*" or p == n for n, p in pairs)


_OPERATORS = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: float(a) > float(b),
    "$gte": lambda a, b: float(a) >= float(b),
    "$lt": lambda a, b: float(a) < float(b),
    "$lte": lambda a, b: float(a) <= float(b),
}


def _matches(value: dict[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter: every key equals (nested dicts and lists compared part by
    part), or passes its operators ($eq, $ne, $gt, $gte, $lt, $lte)."""
    return not filter or all(_compare(value.get(k), f) for k, f in filter.items())


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            unknown = sorted(set(wanted) - set(_OPERATORS))
            if unknown:
                raise InvalidInputError(f"unknown filter operator {unknown[0]}; use one of "
                                        + ", ".join(_OPERATORS), field="filter")
            try:
                return all(_OPERATORS[k](value, w) for k, w in wanted.items())
            except (TypeError, ValueError):
                return False
        return isinstance(value, Mapping) and all(_compare(value.get(k), w)
                                                  for k, w in wanted.items())
    if isinstance(wanted, list | tuple):
        return (isinstance(value, list | tuple) and len(value) == len(wanted)
                and all(_compare(v, w) for v, w in zip(value, wanted, strict=True)))
    return bool(value == wanted)
