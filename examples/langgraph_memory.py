"""A LangGraph graph whose node has long-term memory in graphmem, with no LLM: it
remembers what a user says ("remember ...") and answers other messages from what it
recalls about that user, across threads; one user never sees another's memories.

    python examples/langgraph_memory.py [--db PATH]
"""

from __future__ import annotations

import argparse
from typing import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphmem import MemoryStore
from graphmem.integrations.langgraph import GraphmemSearchItem, GraphmemStore


class State(TypedDict):
    user: str
    message: str
    reply: str


def respond(state: State, runtime: Runtime[None]) -> dict[str, str]:
    """Remember a "remember ..." message; answer any other from the best memory."""
    assert runtime.store is not None
    namespace = ("memories", state["user"])  # label 1 is the owner
    message = state["message"]
    if message.startswith("remember "):
        fact = message.removeprefix("remember ")
        runtime.store.put(namespace, f"fact-{abs(hash(fact))}", {"text": fact})
        return {"reply": "noted"}
    hits = runtime.store.search(namespace, query=message, limit=1)
    if not hits:
        return {"reply": "I know nothing about that"}
    hit = hits[0]
    why = hit.explanation.lines()[0] if isinstance(hit, GraphmemSearchItem) and \
        hit.explanation else ""
    return {"reply": f"{hit.value['text']}  ({why})"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=":memory:", help="a graphmem database directory")
    args = parser.parse_args()
    builder = StateGraph(State)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    with MemoryStore(args.db) as memories:
        graph = builder.compile(checkpointer=InMemorySaver(),
                                store=GraphmemStore(memories, owner_label=1))
        for user, thread, message in [
                ("alice", "monday", "remember Alice is allergic to peanuts"),
                ("alice", "monday", "remember Alice plays the cello on Sundays"),
                ("alice", "friday", "what is Alice allergic to?"),
                ("bob", "friday", "what is Alice allergic to?")]:
            state = graph.invoke({"user": user, "message": message, "reply": ""},
                                 {"configurable": {"thread_id": f"{user}-{thread}"}})
            print(f"{user} [{thread}] {message!r} -> {state['reply']}")


if __name__ == "__main__":
    main()
