"""A pydantic-ai agent with graphmem's remember / recall / forget tools, driven by a
scripted FunctionModel instead of an LLM: the owner comes from each run's
dependencies, so one agent keeps two users' memories apart.

    python examples/pydantic_ai_agent.py [--db PATH]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from pydantic_ai import Agent, messages
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from graphmem import MemoryStore
from graphmem.integrations.pydantic_ai import memory_toolset


@dataclass
class User:
    owner: str


def scripted_model(history: list[messages.ModelMessage], info: AgentInfo) -> ModelResponse:
    """"remember X" calls remember; anything else calls recall, then answers with the
    best memory (what an LLM would do with these tools)."""
    request = history[-1]
    assert isinstance(request, messages.ModelRequest)
    for part in request.parts:
        if isinstance(part, messages.ToolReturnPart) and part.tool_name == "remember":
            return ModelResponse(parts=[TextPart("noted")])
        if isinstance(part, messages.ToolReturnPart):
            hits = part.content
            assert isinstance(hits, list)
            answer = f"{hits[0]['text']}  ({hits[0]['why'][0]})" if hits else \
                "I know nothing about that"
            return ModelResponse(parts=[TextPart(answer)])
        if isinstance(part, messages.UserPromptPart):
            prompt = str(part.content)
            if prompt.startswith("remember "):
                return ModelResponse(parts=[ToolCallPart(
                    "remember", json.dumps({"text": prompt.removeprefix("remember ")}))])
            return ModelResponse(parts=[ToolCallPart("recall", {"query": prompt,
                                                                "limit": 1})])
    raise ValueError("nothing to answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=":memory:", help="a graphmem database directory")
    args = parser.parse_args()
    with MemoryStore(args.db) as memories:
        agent = Agent(FunctionModel(scripted_model), deps_type=User,
                      toolsets=[memory_toolset(memories)])
        for owner, prompt in [("alice", "remember Alice is allergic to peanuts"),
                              ("bob", "remember Bob plays the cello on Sundays"),
                              ("alice", "what is Alice allergic to?"),
                              ("bob", "what is Alice allergic to?")]:
            answer = agent.run_sync(prompt, deps=User(owner)).output
            print(f"{owner} {prompt!r} -> {answer}")


if __name__ == "__main__":
    main()
