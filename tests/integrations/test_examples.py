"""The example scripts in ``examples/`` run (in this process, on the hashing embedder)
and print what their docstrings promise."""

from __future__ import annotations

import runpy
import sys

import pytest

from tests.conftest import ROOT

EXPECTED = {
    "langgraph_memory.py": [
        "alice [friday] 'what is Alice allergic to?' -> Alice is allergic to peanuts  (preset",
        "bob [friday] 'what is Alice allergic to?' -> I know nothing about that"],
    "llamaindex_chat.py": [
        "remembered: I am allergic to peanuts and I live in Lisbon. (active)",
        "remembered: Maybe I'll try baking bread someday. (candidate)",
        "remembered: My sister Ana is a nurse in Porto. (active)",
        "<graphmem>\n- I am allergic to peanuts and I live in Lisbon.\n"
        "- My sister Ana is a nurse in Porto.\n</graphmem>",
        "retrieved: I am allergic to peanuts and I live in Lisbon.  (preset"],
    "pydantic_ai_agent.py": [
        "alice 'what is Alice allergic to?' -> Alice is allergic to peanuts  (preset",
        "bob 'what is Alice allergic to?' -> Bob plays the cello on Sundays  (preset"],
}


def test_every_example_is_checked() -> None:
    assert sorted(p.name for p in (ROOT / "examples").glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GRAPHMEM_EMBEDDER", "hashing")
    monkeypatch.setattr(sys, "argv", [name])  # an in-memory store
    runpy.run_path(str(ROOT / "examples" / name), run_name="__main__")
    out = capsys.readouterr().out
    for expected in EXPECTED[name]:
        assert expected in out, f"{name} did not print {expected!r}:\n{out}"
