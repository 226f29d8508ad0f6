"""The rows recall's hits are made from: the memories recently recalled or written, kept
in a small cache that follows every commit (a commit that only set fields hands them
over); the others come from the index's row snapshot or are fetched from the store, two
at a time, while the hits are put together. A write starts from the row held here
(``held``) instead of reading it again."""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from .._context import Changed, StoreContext
from .._engine import memory_from_fields
from .._errors import StoreError
from .._models import Memory
from .._recall._index import RecallIndex
from .._records import patched_memory

__all__ = ["RowCache"]


class RowCache:
    """Memory rows for hits and writes, cached (least recently used first out) and never
    stale: a commit that only set fields sets them on the rows it changed, any other
    drops them, and a fetch that a commit overtook is not kept."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self._cache: collections.OrderedDict[str, Memory] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._inflight: dict[str, Future[Memory | None]] = {}
        self._epoch = 0
        self._bulk_epoch = 0
        self._changed_at: dict[str, int] = {}
        #: reads of a row under way (fetched in the pool or not)
        self._reading = 0
        ctx.on_change(self._on_change)

    def _on_change(self, change: Changed) -> None:
        with self._lock:
            self._epoch += 1
            if not self._reading:  # only reads under way need to know what changed
                self._changed_at.clear()
            patched = None if change.foreign or change.partial else change.patched
            for memory_id in change.ids:
                cached = self._cache.pop(memory_id, None)
                fields = None if patched is None else patched.get(memory_id)
                if cached is not None and fields is not None:
                    self._cache[memory_id] = patched_memory(cached, fields)
                self._changed_at[memory_id] = self._epoch
            if change.bulk:
                self._cache.clear()
                self._bulk_epoch = self._epoch

    def drop_caches(self) -> None:
        """Forget the cached rows of recalled memories (benchmarks measure cold recalls
        this way; the recall index itself stays)."""
        with self._lock:
            self._cache.clear()

    def prefetch(self, ids: Sequence[str], index: RecallIndex | None,
                 pool: ThreadPoolExecutor) -> None:
        """Start fetching, in parallel, the hits' rows that neither the index snapshot nor
        the cache holds and that are not on their way already."""
        if index is not None:
            ids = [i for i in ids if not index.has_row(index.pos.get(i, index.size))]
        with self._lock:
            wanted = [i for i in dict.fromkeys(ids)
                      if i not in self._cache and i not in self._inflight]
            for memory_id in wanted:
                self._inflight[memory_id] = pool.submit(self._fetch, memory_id)

    def from_snapshot(self, index: RecallIndex, positions: Sequence[int]
                      ) -> dict[int, Memory]:
        """The rows that neither the row cache holds nor a fetch brings, materialised
        from the index snapshot together, and cached unless a commit came meanwhile (a
        row materialised took ~0.16 ms a hit, and a conversation's questions find the
        same turns again and again)."""
        with self._lock:
            wanted = [p for p in positions if index.ids[p] not in self._cache
                      and index.ids[p] not in self._inflight]
            started = self._epoch
        found = {pos: memory_from_fields(row) for pos, row in index.rows_at(wanted).items()}
        with self._lock:
            if self._epoch == started:
                for memory in found.values():
                    self._keep(memory)
        return found

    def _keep(self, memory: Memory) -> None:
        """Cache ``memory`` (holding the lock), the least recently used out beyond the
        store's ``row_cache_size``."""
        self._cache[memory.id] = memory
        while len(self._cache) > self._ctx.settings.row_cache_size:
            self._cache.pop(next(iter(self._cache)))

    def get(self, memory_id: str, index: RecallIndex | None) -> Memory:
        """The row of a hit (``held``); a memory gone meanwhile is an error."""
        memory = self.held(memory_id, index)
        if memory is None:
            raise StoreError(f"memory {memory_id} vanished during recall")
        return memory

    def held(self, memory_id: str, index: RecallIndex | None) -> Memory | None:
        """The memory's row (None: no such memory): cached, on its way, in ``index``'s
        snapshot, or read now; kept in the cache, so that the commits after keep it
        current (a write starts from it instead of reading it again)."""
        with self._lock:
            memory = self._cache.get(memory_id)
            if memory is not None:
                self._cache.move_to_end(memory_id)
                return memory
            pending = self._inflight.get(memory_id)
        if pending is not None:
            return pending.result()
        pos = index.pos.get(memory_id) if index is not None else None
        if index is not None and pos is not None:
            found = self.from_snapshot(index, [pos]).get(pos)
            if found is not None:
                return found
        return self._fetch(memory_id)

    def _fetch(self, memory_id: str) -> Memory | None:
        with self._lock:
            started = self._epoch
            self._reading += 1
        memory: Memory | None = None
        try:
            memory = self._ctx.engine.get(memory_id)
        finally:
            with self._lock:
                # A change committed while this row was read makes the row stale: do
                # not cache it (what changed is remembered while any read is under way:
                # a read outside the pool that two commits overtook kept the old row).
                stale = max(self._changed_at.get(memory_id, 0), self._bulk_epoch) > started
                if memory is not None and not stale:
                    self._keep(memory)
                self._reading -= 1
                self._inflight.pop(memory_id, None)
        return memory
