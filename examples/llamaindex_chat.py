"""A LlamaIndex chat whose long-term memory is graphmem, with LlamaIndex's MockLLM (it
answers with the prompt it was given, so the output shows what memory put there): the
turns of a first session are remembered through add_conversation, a later session
recalls them, and a retriever returns them with their explanation.

    python examples/llamaindex_chat.py [--db PATH]
"""

from __future__ import annotations

import argparse

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.memory import Memory

from graphmem import MemoryStore
from graphmem.integrations.llamaindex import GraphmemMemoryBlock, GraphmemRetriever


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=":memory:", help="a graphmem database directory")
    args = parser.parse_args()
    with MemoryStore(args.db) as memories:
        # a small short-term queue, so the older turns flush into graphmem
        first = Memory.from_defaults(
            session_id="monday", token_limit=60, chat_history_token_ratio=0.5,
            memory_blocks=[GraphmemMemoryBlock(store=memories, owner="alice")])
        first.put_messages([
            ChatMessage(role="user", content="I am allergic to peanuts and I live in Lisbon."),
            ChatMessage(role="assistant", content="Noted."),
            ChatMessage(role="user", content="My sister Ana is a nurse in Porto."),
            ChatMessage(role="assistant", content="Thanks."),
            ChatMessage(role="user", content="Maybe I'll try baking bread someday."),
            ChatMessage(role="assistant", content="Thanks."),
            ChatMessage(role="user", content="What should I cook tonight?")])
        # a hedge is kept as a candidate: recalled once a later session or feedback
        # confirms it
        for memory in sorted(memories.memories(owner="alice"), key=lambda m: m.text):
            print(f"remembered: {memory.text} ({memory.status.value})")
        later = Memory.from_defaults(
            session_id="friday",
            memory_blocks=[GraphmemMemoryBlock(store=memories, owner="alice")])
        engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=later)
        print("prompt the model got:")
        print(engine.chat("Do I have any food allergies?"))
        for node in GraphmemRetriever(memories, owner="alice", k=1).retrieve("Where do I live?"):
            print(f"retrieved: {node.node.get_content()}  ({node.node.metadata['why'][0]})")


if __name__ == "__main__":
    main()
