"""``GraphmemMemoryBlock`` and ``GraphmemRetriever`` inside LlamaIndex's own memory and
chat engines, with its ``MockLLM`` (which answers with the prompt it got, so what
memory put into the prompt can be read back) and graphmem's hashing embedder: turns go
in through ``add_conversation``, recall comes back explained, owners stay apart,
embedded and through a sidecar."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core.chat_engine import ContextChatEngine, SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.memory import Memory
from llama_index.core.schema import MetadataMode

from graphmem import Explanation, MemoryStore, Settings
from graphmem.client import connect
from graphmem.integrations._common import Memories
from graphmem.integrations.llamaindex import GraphmemMemoryBlock, GraphmemRetriever
from tests._servers import running_sidecar

TURNS = [("user", "I am allergic to peanuts and I live in Lisbon."),
         ("assistant", "Noted: no peanuts, and Lisbon it is."),
         ("user", "Hello!"),
         ("assistant", "Hi again."),
         ("user", "What should I cook tonight?")]



def _memory(store: Memories, owner: str, session: str) -> Memory:
    """A LlamaIndex memory whose short-term queue holds ~30 tokens, so older turns
    flush into graphmem."""
    return Memory.from_defaults(session_id=session, token_limit=60,
                                chat_history_token_ratio=0.5, token_flush_size=20,
                                memory_blocks=[GraphmemMemoryBlock(store=store, owner=owner)])


def _converse(store: Memories, owner: str, session: str) -> Memory:
    memory = _memory(store, owner, session)
    memory.put_messages([ChatMessage(role=role, content=text) for role, text in TURNS])
    return memory


def _turns_become_memories_and_reach_the_prompt(store: Memories,
                                                 served: MemoryStore) -> None:
    alice = _converse(store, "alice", "chat-1")
    held = served.memories()
    # the user's informative statement was kept, greetings and the assistant were not
    assert [(m.text, m.owner, m.session) for m in held] == [
        ("I am allergic to peanuts and I live in Lisbon.", "alice", "chat-1")]
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=alice)
    prompt = str(engine.chat("Do I have any food allergies?"))
    assert "<graphmem>\n- I am allergic to peanuts and I live in Lisbon.\n</graphmem>" in prompt
    # bob's memory, on the same store, recalls nothing of alice's
    bob = _memory(store, "bob", "chat-2")
    bob.put_messages([ChatMessage(role="user", content="What should I cook tonight?")])
    prompt = str(SimpleChatEngine.from_defaults(llm=MockLLM(), memory=bob)
                 .chat("Do I have any food allergies?"))
    assert "peanuts" not in prompt and "<graphmem>" not in prompt


def test_turns_flushed_from_the_queue_are_remembered_and_recalled(
        memories: MemoryStore) -> None:
    _turns_become_memories_and_reach_the_prompt(memories, memories)


def test_the_block_works_the_same_through_a_sidecar(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing", settings=Settings()) as served, \
            running_sidecar(served) as url, connect(url) as client:
        _turns_become_memories_and_reach_the_prompt(client, served)


def test_the_retriever_returns_explained_nodes(memories: MemoryStore) -> None:
    tea = memories.add("Alice drinks green tea every morning", owner="alice",
                       kind="semantic", tags=["drink"])
    memories.add("Alice writes TypeScript at work", owner="alice")
    memories.add("Bob drinks green tea too", owner="bob")
    nodes = GraphmemRetriever(memories, owner="alice", k=2).retrieve("green tea")
    assert [n.node.node_id for n in nodes][:1] == [tea.id]
    assert {n.node.metadata["owner"] for n in nodes} == {"alice"}
    top = nodes[0]
    assert top.score == pytest.approx(top.node.metadata["score"])
    assert top.node.metadata["why"][0].startswith("preset default")
    explanation = Explanation.model_validate(top.node.metadata["explanation"])
    assert explanation.final == pytest.approx(top.score)
    # the model sees the text, kind and tags, not the bookkeeping
    shown = top.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "Alice drinks green tea every morning" in shown and "drink" in shown
    assert "preset" not in shown and tea.id not in shown
    assert [n.node.node_id for n in asyncio.run(
        GraphmemRetriever(memories, owner="bob").aretrieve("green tea"))] \
        == [m.id for m in memories.memories(owner="bob")]


def test_a_context_chat_engine_answers_from_recalled_memories(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing", settings=Settings()) as served, \
            running_sidecar(served) as url, connect(url) as client:
        client.add("Alice's flight to Osaka leaves on 3 May", owner="alice")
        client.add("Bob's flight to Oslo leaves on 9 June", owner="bob")
        engine = ContextChatEngine.from_defaults(
            retriever=GraphmemRetriever(client, owner="alice"), llm=MockLLM())
        prompt = str(engine.chat("When does my flight leave?"))
        assert "Osaka leaves on 3 May" in prompt and "Oslo" not in prompt
