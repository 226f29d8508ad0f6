"""graphmem as a pydantic-ai agent's memory: ``memory_toolset(store)`` is a toolset of
three tools, ``remember``, ``recall`` (explained hits) and ``forget``, registered with
``Agent(..., toolsets=[memory_toolset(store)])``. Each run's dependencies name the owner
(``deps.owner`` by default), so one agent serves many users, each seeing only their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._errors import GraphmemError
from .._facade import MemoryStore
from .._views import to_json
from ..mcpserver._backends import compact_hit, compact_memory
from ._common import Memories, missing_extra

try:
    from pydantic_ai import FunctionToolset, ModelRetry, RunContext
except ImportError as exc:  # pragma: no cover - exercised with the package hidden
    raise missing_extra("pydantic_ai", "pydantic-ai", exc) from exc

__all__ = ["INSTRUCTIONS", "memory_toolset", "owner_of"]

INSTRUCTIONS = (
    "You have a long-term memory of the user. Call `recall` before answering questions "
    "about the user, past work or decisions; call `remember` for durable facts, "
    "preferences and decisions (one fact per call, in a full sentence); call `forget` with "
    "a recalled memory's id when the user asks you to forget it.")


def owner_of(deps: Any) -> str | None:
    """The owner a run's dependencies name: ``deps.owner``, ``deps["owner"]``, or deps
    itself when it is a string (None: the store's local user, or a sidecar token's)."""
    if deps is None or isinstance(deps, str):
        return deps
    found = deps.get("owner") if isinstance(deps, dict) else getattr(deps, "owner", None)
    return None if found is None else str(found)


def memory_toolset(store: Memories, *, owner: Callable[[Any], str | None] = owner_of,
                   k: int = 5, preset: str = "default",
                   instructions: str | None = INSTRUCTIONS) -> FunctionToolset[Any]:
    """The tools ``remember``, ``recall`` and ``forget`` over ``store``.

    Parameters
    ----------
    store : MemoryStore or Client
        An embedded store, or ``graphmem.connect(url, token=...)``.
    owner : callable
        Reads the owner from a run's dependencies (``owner_of``: ``deps.owner``).
    k : int
        How many memories ``recall`` returns unless the model asks for another number.
    preset : str
        The recall preset.
    instructions : str, optional
        What the agent is told about its memory (None: nothing).

    A graphmem error (an unknown or another owner's id, a bad kind ...) goes back to the
    model as a retry with the error's message, so it can correct the call.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from pydantic_ai import Agent
    >>> from pydantic_ai.models.test import TestModel
    >>> from graphmem import MemoryStore
    >>> from graphmem.integrations.pydantic_ai import memory_toolset
    >>> @dataclass
    ... class User:
    ...     owner: str
    >>> memories = MemoryStore(":memory:", embedder="hashing")
    >>> agent = Agent(TestModel(call_tools=["remember"]), deps_type=User,
    ...               toolsets=[memory_toolset(memories)])
    >>> _ = agent.run_sync("Remember that I like tea", deps=User("alice"))
    >>> [m.owner for m in memories.memories()]
    ['alice']
    >>> memories.close()
    """
    embedded = isinstance(store, MemoryStore)

    def call(operation: Callable[[], Any]) -> Any:
        try:
            return operation()
        except GraphmemError as exc:
            raise ModelRetry(str(exc)) from None

    def remember(ctx: RunContext[Any], text: str, kind: str = "semantic",
                 subject: str | None = None, importance: float = 0.5,
                 tags: list[str] | None = None) -> dict[str, Any]:
        """Store one durable memory about the user and return it.

        Args:
            text: The fact, preference, decision or event, in one full sentence.
            kind: episodic (an event), semantic (a fact or preference), procedural (how
                to do something), identity, working or note.
            subject: What the memory is about, in a few words.
            importance: How much it matters, from 0 to 1.
            tags: Labels to find it by.
        """
        fields: dict[str, Any] = {"kind": kind, "importance": importance,
                                  "tags": tags or [], "subject": subject}
        who = owner(ctx.deps)
        if who is not None:
            fields["owner"] = who
        memory = call(lambda: store.add(text, **fields))
        return compact_memory(to_json(memory))

    def recall(ctx: RunContext[Any], query: str, limit: int = k) -> list[dict[str, Any]]:
        """The user's memories that best answer the query, best first, each with its id
        and why it came back.

        Args:
            query: What to look for, in words the memory would use.
            limit: How many memories to return.
        """
        hits = call(lambda: store.recall(query, k=limit, preset=preset,
                                         owner=owner(ctx.deps)))
        return [compact_hit(h, explain=True) for h in hits]

    def forget(ctx: RunContext[Any], memory_id: str, erase: bool = False) -> dict[str, Any]:
        """Forget one of the user's memories: it is no longer recalled (reversible), or
        with erase its text is deleted everywhere for good.

        Args:
            memory_id: The id of a memory that recall returned.
            erase: Delete the text for good instead.
        """
        who = owner(ctx.deps)
        # the owner's own memory or none: another owner's id is not found
        call(lambda: store.get(memory_id, owner=who))
        scoped: dict[str, Any] = {"owner": who} if embedded else {}
        if erase:
            call(lambda: store.forget(memory_id, confirm=True, reason="forget tool",
                                      **scoped))
            return {"memory_id": memory_id, "status": "forgotten"}
        memory = call(lambda: store.tombstone(memory_id, reason="forget tool", **scoped))
        return {"memory_id": memory_id, "status": memory.status.value}

    return FunctionToolset([remember, recall, forget], instructions=instructions,
                           id="graphmem")
