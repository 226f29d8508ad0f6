"""Docs that cannot drift: README examples run, every command is documented, __all__ is exact."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import graphmem
from graphmem.cli import cli
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_starts_with_the_two_commands() -> None:
    block = re.search(r"```console\n(.*?)```", README, re.S)
    assert block is not None and README.index(block.group(0)) < README.index("\n## ")
    lines = [line.split("#")[0].strip() for line in block.group(1).strip().splitlines()]
    assert lines == ["make demo", "make test"]


def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ingest").symlink_to(ROOT / "ingest")
    monkeypatch.setenv("GRAPHMEM_EMBEDDER", "hashing")
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) >= 2
    for n, block in enumerate(blocks):
        exec(compile(block, f"README.md block {n}", "exec"), {})


def _commands(group, prefix=""):  # type: ignore[no-untyped-def]
    for name, command in group.commands.items():
        yield f"{prefix}{name}"
        if hasattr(command, "commands"):
            yield from _commands(command, f"{prefix}{name} ")


@pytest.mark.parametrize("command", sorted(_commands(cli)))
def test_every_command_is_in_the_readme(command: str) -> None:
    assert f"graphmem {command}" in README, f"`graphmem {command}` is not documented"


def test_public_names_are_exactly_all() -> None:
    public = {name for name in dir(graphmem) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(graphmem, name)).__name__ == "module"}
    assert public - modules - {"annotations"} == set(graphmem.__all__)


def test_import_has_no_side_effects() -> None:
    code = ("import os, sys, logging; before = dict(os.environ); import graphmem, ingest, "
            "queries, eval; assert dict(os.environ) == before; "
            "assert 'torch' not in sys.modules and 'kuzu' in sys.modules; "
            "assert logging.getLogger().handlers == []")
    assert os.system(f'{os.sys.executable} -c "{code}"') == 0  # type: ignore[attr-defined]
