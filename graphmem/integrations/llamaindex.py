"""graphmem as a LlamaIndex agent's memory. ``GraphmemMemoryBlock`` is a long-term block
of ``llama_index.core.memory.Memory``: the turns that leave the short-term queue are
remembered through ``add_conversation`` (which keeps the informative statements), and
each ``get`` recalls what the latest messages are about. ``GraphmemRetriever`` recalls
into ``NodeWithScore`` nodes, each with its explanation in ``node.metadata["why"]``,
for query engines and context chat engines.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .._recall import Hit
from ._common import Memories, missing_extra

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.llms.types import ChatMessage, TextBlock
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.memory.memory import BaseMemoryBlock
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - exercised with the package hidden
    raise missing_extra("llamaindex", "llamaindex", exc) from exc

__all__ = ["GraphmemMemoryBlock", "GraphmemRetriever", "hit_node"]

#: Node metadata kept from the model's prompt and from embeddings: bookkeeping only.
_HIDDEN = ["memory_id", "owner", "score", "rank", "why", "explanation", "created"]


def hit_node(hit: Hit) -> NodeWithScore:
    """A recalled memory as a LlamaIndex node: its id is the memory's, its text the
    memory's text, its score the recall score; the metadata holds kind, subject and
    tags (shown to the model) and the owner, rank, creation time and the explanation
    (``why``, one line per term, and ``explanation``, the full record)."""
    memory = hit.memory
    metadata: dict[str, Any] = {
        "kind": memory.kind.value, "subject": memory.subject, "tags": list(memory.tags),
        "memory_id": memory.id, "owner": memory.owner, "created": memory.created.isoformat(),
        "score": hit.score, "rank": hit.rank, "why": hit.explanation.lines(),
        "explanation": hit.explanation.model_dump(mode="json")}
    node = TextNode(id_=memory.id, text=memory.text,
                    metadata={k: v for k, v in metadata.items() if v is not None},
                    excluded_llm_metadata_keys=_HIDDEN, excluded_embed_metadata_keys=_HIDDEN)
    return NodeWithScore(node=node, score=hit.score)


class GraphmemRetriever(BaseRetriever):
    """Recall as a LlamaIndex retriever.

    Parameters
    ----------
    store : MemoryStore or Client
        An embedded store, or ``graphmem.connect(url, token=...)``.
    owner : str, optional
        Whose memories are recalled (None: the store's local user, or a token's owner).
    k : int
        How many nodes a query returns.
    preset : str
        The recall preset.

    Examples
    --------
    >>> from graphmem import MemoryStore
    >>> from graphmem.integrations.llamaindex import GraphmemRetriever
    >>> memories = MemoryStore(":memory:", embedder="hashing")
    >>> _ = memories.add("Alice drinks green tea", owner="alice")
    >>> nodes = GraphmemRetriever(memories, owner="alice").retrieve("green tea")
    >>> nodes[0].node.get_content(), nodes[0].node.metadata["why"][0][:14]
    ('Alice drinks green tea', 'preset default')
    >>> memories.close()
    """

    def __init__(self, store: Memories, *, owner: str | None = None, k: int = 5,
                 preset: str = "default", **kwargs: Any) -> None:
        self.store, self.owner, self.k, self.preset = store, owner, k, preset
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.store.recall(query_bundle.query_str, k=self.k, preset=self.preset,
                                 owner=self.owner)
        return [hit_node(h) for h in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)


class GraphmemMemoryBlock(BaseMemoryBlock[str]):
    """A long-term memory block of ``llama_index.core.memory.Memory`` backed by graphmem.

    Turns flushed from the short-term queue (or put directly) are remembered through
    ``add_conversation`` under the memory's session id: the user's informative
    statements become memories of ``owner``, greetings, filler and the assistant's
    replies do not. ``get`` recalls, from the text of the last ``context_window``
    messages, the ``k`` best memories, one per line.

    Examples
    --------
    >>> from llama_index.core.llms import ChatMessage
    >>> from llama_index.core.memory import Memory
    >>> from graphmem import MemoryStore
    >>> from graphmem.integrations.llamaindex import GraphmemMemoryBlock
    >>> memories = MemoryStore(":memory:", embedder="hashing")
    >>> memory = Memory.from_defaults(session_id="s1", token_limit=20,
    ...     chat_history_token_ratio=0.5,
    ...     memory_blocks=[GraphmemMemoryBlock(store=memories, owner="alice")])
    >>> memory.put_messages([
    ...     ChatMessage(role="user", content="I am allergic to peanuts."),
    ...     ChatMessage(role="assistant", content="Noted, no peanuts for you."),
    ...     ChatMessage(role="user", content="What should I cook tonight?")])
    >>> [(m.text, m.owner) for m in memories.memories()]
    [('I am allergic to peanuts.', 'alice')]
    >>> print(memory.get(input="any allergies?")[0].content)
    <memory>
    <graphmem>
    - I am allergic to peanuts.
    </graphmem>
    </memory>
    >>> memories.close()
    """

    name: str = Field(default="graphmem", description="The name of the memory block.")
    store: Any = Field(description="A graphmem MemoryStore, or a sidecar's Client.")
    owner: str | None = Field(default=None, description="Whose memories these are.")
    k: int = Field(default=5, description="How many memories a get recalls.")
    preset: str = Field(default="default", description="The recall preset.")
    context_window: int = Field(default=5, description="How many of the latest "
                                "messages a get recalls from.")
    session_id: str = Field(default="llamaindex", description="The session of turns put "
                            "without one (Memory passes its own).")

    def recall(self, messages: list[ChatMessage] | None) -> list[Hit]:
        """The memories the latest messages are about, best first."""
        query = " ".join(_text(m) for m in (messages or [])[-self.context_window:]).strip()
        if not query:
            return []
        hits: list[Hit] = self.store.recall(query, k=self.k, preset=self.preset,
                                            owner=self.owner)
        return hits

    async def _aget(self, messages: list[ChatMessage] | None = None,
                    **block_kwargs: Any) -> str:
        hits = await asyncio.to_thread(self.recall, messages)
        return "\n".join(f"- {h.memory.text}" for h in hits)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        turns = [{"role": m.role.value, "text": _text(m)} for m in messages if _text(m)]
        if not turns:
            return
        session = next((str(m.additional_kwargs["session_id"]) for m in messages
                        if m.additional_kwargs.get("session_id")), self.session_id)
        await asyncio.to_thread(self.store.add_conversation, turns, session_id=session,
                                owner=self.owner)


def _text(message: ChatMessage) -> str:
    return " ".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()
