"""``memory_toolset`` driven by pydantic-ai's own agent loop with its scripted models (no
LLM): the tools write and read a real store, the owner comes from each run's
dependencies, one owner cannot read or forget another's memories, embedded and through
a sidecar."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from graphmem import MemoryStore, Settings, Status
from graphmem.client import connect
from graphmem.integrations.pydantic_ai import INSTRUCTIONS, memory_toolset, owner_of
from graphmem.sidecar import Tokens
from tests._servers import running_sidecar


@dataclass
class User:
    owner: str | None


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that turns "tool: argument" prompts into that tool call, then answers
    with what the tool returned (or the retry message it got)."""
    assert info.instructions is not None and INSTRUCTIONS in info.instructions
    assert {t.name for t in info.function_tools} == {"remember", "recall", "forget"}
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    for part in last.parts:
        if isinstance(part, ToolReturnPart) and part.outcome == "retried":
            return ModelResponse(parts=[TextPart(f"refused: {part.content}")])
        if isinstance(part, ToolReturnPart):
            return ModelResponse(parts=[TextPart(json.dumps(part.content, default=str))])
        if isinstance(part, UserPromptPart):
            tool, _, argument = str(part.content).partition(": ")
            name = {"remember": "text", "recall": "query", "forget": "memory_id",
                    "erase": "memory_id"}[tool]
            args: dict[str, Any] = {name: argument}
            if tool == "erase":
                tool, args["erase"] = "forget", True
            return ModelResponse(parts=[ToolCallPart(tool, args)])
    raise AssertionError(f"unexpected request {last}")


def _ask(agent: Agent[User, str], owner: str | None, prompt: str) -> Any:
    output = agent.run_sync(prompt, deps=User(owner)).output
    return output if output.startswith("refused") else json.loads(output)



def _owners_stay_apart(agent: Agent[User, str], memories: MemoryStore) -> None:
    """The scenario every path passes: remember, recall, forget, owner by owner."""
    saved = _ask(agent, "alice", "remember: Alice is allergic to peanuts")
    assert saved["owner"] == "alice" and saved["kind"] == "semantic"
    _ask(agent, "bob", "remember: Bob plays the cello on Sundays")
    hits = _ask(agent, "alice", "recall: what is Alice allergic to")
    assert [h["text"] for h in hits][:1] == ["Alice is allergic to peanuts"]
    assert hits[0]["why"][0].startswith("preset default")
    assert all(h["text"] != "Alice is allergic to peanuts"
               for h in _ask(agent, "bob", "recall: what is Alice allergic to"))
    # bob cannot forget alice's memory: the model is told it does not exist
    refused = _ask(agent, "bob", f"forget: {saved['id']}")
    assert refused.startswith("refused") and saved["id"] in refused
    assert memories.get(saved["id"]).status is Status.ACTIVE
    assert _ask(agent, "alice", f"forget: {saved['id']}")["status"] == "tombstoned"
    assert _ask(agent, "alice", "recall: peanuts") == []
    bob_hits = _ask(agent, "bob", "recall: cello")
    assert _ask(agent, "bob", f"erase: {bob_hits[0]['id']}")["status"] == "forgotten"
    assert memories.get(bob_hits[0]["id"]).text == ""


def test_the_tools_keep_each_runs_owner_apart(memories: MemoryStore) -> None:
    agent = Agent(FunctionModel(scripted), deps_type=User, output_type=str,
                  toolsets=[memory_toolset(memories)])
    _owners_stay_apart(agent, memories)


def test_through_a_sidecar_the_tools_answer_the_same(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing", settings=Settings()) as served, \
            running_sidecar(served) as url, connect(url) as client:
        agent = Agent(FunctionModel(scripted), deps_type=User, output_type=str,
                      toolsets=[memory_toolset(client)])
        _owners_stay_apart(agent, served)


def test_with_tokens_the_sidecar_decides_the_owner(tmp_path: Path) -> None:
    tokens = Tokens.from_mapping({
        "tok-alice-0123456789": {"owner": "alice", "scopes": ["read", "write"]},
        "tok-bob-0123456789ab": {"owner": "bob", "scopes": ["read", "write"]}})
    with MemoryStore(tmp_path / "db", embedder="hashing", settings=Settings()) as served, \
            running_sidecar(served, tokens) as url, \
            connect(url, token="tok-alice-0123456789") as alice, \
            connect(url, token="tok-bob-0123456789ab") as bob:
        as_alice = Agent(FunctionModel(scripted), deps_type=User, output_type=str,
                         toolsets=[memory_toolset(alice)])
        as_bob = Agent(FunctionModel(scripted), deps_type=User, output_type=str,
                       toolsets=[memory_toolset(bob)])
        saved = _ask(as_alice, None, "remember: Alice is allergic to peanuts")
        assert saved["owner"] == "alice"
        assert _ask(as_bob, None, "recall: peanuts") == []
        assert _ask(as_bob, None, f"forget: {saved['id']}").startswith("refused")
        # deps naming another owner than the token's is refused, not widened
        assert _ask(as_bob, "alice", "recall: peanuts").startswith("refused")
        assert served.get(saved["id"]).status is Status.ACTIVE


def test_pydantic_ais_test_model_calls_the_tools(memories: MemoryStore) -> None:
    agent = Agent(TestModel(call_tools=["remember", "recall"]), deps_type=User,
                  toolsets=[memory_toolset(memories, k=3)])
    result = agent.run_sync("hello", deps=User("carol"))
    assert "recall" in result.output and "remember" in result.output
    assert [m.owner for m in memories.memories()] == ["carol"]


def test_the_owner_is_read_from_the_dependencies() -> None:
    assert owner_of(User("alice")) == "alice"
    assert owner_of({"owner": "bob"}) == "bob" and owner_of("carol") == "carol"
    assert owner_of(None) is None and owner_of(object()) is None
