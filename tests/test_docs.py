"""Docs that cannot drift: README examples run, every command is documented, __all__ is exact."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import sys
import tokenize
from pathlib import Path

import pytest

import graphmem
from graphmem.cli import cli
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
#: The pages under docs/, which the README links for what it leaves out.
DOCS = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted((ROOT / "docs").glob("*.md"))}


def test_readme_starts_with_the_two_commands() -> None:
    block = re.search(r"```console\n(.*?)```", README, re.S)
    assert block is not None and README.index(block.group(0)) < README.index("\n## ")
    lines = [line.split("#")[0].strip() for line in block.group(1).strip().splitlines()]
    assert lines == ["make demo", "make test"]


#: Comments on README print lines that describe the output instead of showing it.
PROSE = {"channel ranks, fused score, ACT-R"}


def _printed_comments(block: str) -> dict[tuple[int, int], str]:
    """(first line, last line) of every print statement with a trailing comment -> the
    comment, which shows what it prints (a quoted comment shows a string)."""
    comments = {tok.start[0]: tok.string.lstrip("#").strip()
                for tok in tokenize.generate_tokens(io.StringIO(block).readline)
                if tok.type == tokenize.COMMENT}
    out = {}
    for node in ast.walk(ast.parse(block)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "print"):
            end = node.end_lineno or node.lineno
            if end in comments:
                out[(node.lineno, end)] = comments[end]
    return out


def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block of the README and then of docs/ runs, in order, from a directory that
    is not the repository (no relative paths into it), and every print shows what its
    comment says."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRAPHMEM_EMBEDDER", "hashing")
    blocks = [(f"{page} block {n}", block)
              for page, text in {"README.md": README, **DOCS}.items()
              for n, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S))]
    assert len([name for name, _ in blocks if name.startswith("README.md")]) >= 2
    assert any(name.startswith("docs/agent-frameworks.md") for name, _ in blocks)
    checked = []
    for name, block in blocks:
        printed: list[tuple[int, str]] = []

        def record(*args: object, sep: str = " ", _out: list[tuple[int, str]] = printed,
                   _name: str = name, **_: object) -> None:
            frame = sys._getframe(1)
            while frame.f_code.co_filename != _name:
                frame = frame.f_back  # type: ignore[assignment]
            _out.append((frame.f_lineno, sep.join(str(a) for a in args)))

        exec(compile(block, name, "exec"), {"print": record, "__name__": "__readme__"})
        for (first, last), comment in _printed_comments(block).items():
            shown = [text for line, text in printed if first <= line <= last]
            assert shown, f"{name}, line {first}: the print never ran"
            if comment in PROSE:
                continue
            expected = comment[1:-1] if comment[:1] == comment[-1:] == '"' else comment
            assert shown == [expected], f"{name}, line {first}: the README says {comment}"
            checked.append(expected)
    assert {"2 1", "promote", "# Archivist Lifecycle Report",
            "['created', 'importance_boost']", "True"} <= set(checked)
    assert not list(tmp_path.glob("ingest")) and (tmp_path / "roundtrip.json").is_file()


def test_readme_client_example_runs_against_a_sidecar(tmp_path: Path) -> None:
    """The ``py`` block that connects to a sidecar, run against a real one with the
    README's own token (its URL swapped for the test server's)."""
    from graphmem import MemoryStore
    from graphmem.sidecar import Tokens
    from tests._servers import running_sidecar

    [block] = [b for b in re.findall(r"```py\n(.*?)```", README, re.S)
               if "graphmem.connect(" in b]
    url, token = re.search(r'connect\("([^"]+)", token="([^"]+)"\)', block).groups()  # type: ignore[union-attr]
    tokens = Tokens.from_mapping({token: {"owner": "alice", "scopes": ["read", "write"]}})
    with MemoryStore(tmp_path / "db", embedder="hashing") as store, \
            running_sidecar(store, tokens) as served:
        names: dict[str, object] = {}
        exec(compile(block.replace(url, served), "README.md client block", "exec"), names)
        memory, hits = names["memory"], names["hits"]
        assert memory.owner == "alice"  # type: ignore[attr-defined]
        assert store.history(memory.id)[0].actor == "alice"  # type: ignore[attr-defined]
        assert [h.memory.id for h in hits] == [memory.id]  # type: ignore[attr-defined]
        names["store"].close()  # type: ignore[attr-defined]


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


#: The command-line examples of the README that read the demo store (`make demo`: the
#: sample corpus): `graphmem [--db graphmem.db] query NAME --param k=v ...`, a quoted
#: Cypher query with its parameters, and `draw --entities --about NAME`.
_QUERY_EXAMPLE = re.compile(r"graphmem (?:--db graphmem\.db )?query\s+"
                            r"(?P<query>[a-z_]+|\"[^\"]+\")(?P<params>(?:\s+--param\s+[^\s`]+)+)")
_DRAW_EXAMPLE = re.compile(r"graphmem draw --entities --about (?P<name>\w+) --out")


def _example_params(text: str) -> list[str]:
    return [f"--param={p}" for p in re.findall(r"--param\s+([^\s`]+)", text)]


def test_readme_examples_answer_on_the_demo_store(tmp_path: Path) -> None:
    """Each query example returns rows and each drawing finds its entity on the store
    `make demo` builds, so a newcomer who types them sees something."""
    import subprocess

    from ingest.ump import SAMPLE_PATH, import_ump

    db = tmp_path / "graphmem.db"
    with graphmem.MemoryStore(db, embedder="hashing") as store:
        import_ump(store, SAMPLE_PATH)
    queries = [(m.group("query").strip('"').replace("\\$", "$"),
                _example_params(m.group("params"))) for m in _QUERY_EXAMPLE.finditer(README)]
    drawings = [m.group("name") for m in _DRAW_EXAMPLE.finditer(README)]
    assert len(queries) >= 3 and drawings  # the examples are still found
    env = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing"}
    for query, params in queries:
        out = subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db), "--json",
                              "query", query, *params], capture_output=True, text=True,
                             env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout), f"README: `graphmem query {query}` finds nothing"
    for name in drawings:
        out = subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db), "draw",
                              "--entities", "--about", name, "--out",
                              str(tmp_path / "kg.html")], capture_output=True, text=True,
                             env=env, timeout=120)
        assert out.returncode == 0, f"README: draw --about {name}: {out.stderr}"


def test_the_readme_counts_the_default_presets_channels() -> None:
    words = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
    said = re.search(r"Recall fuses (\w+) channels \(([^)]*)\)", README)
    assert said is not None, "the tour no longer says how many channels recall fuses"
    channels = [c for c, w in graphmem.PRESETS["default"].weights.items() if w > 0]
    assert words[said.group(1)] == len(channels) == len(re.split(r", | and ", said.group(2)))


def _configuration_table() -> set[str]:
    section = README.split("## Configuration\n", 1)[1].split("\n## ", 1)[0]
    return {name for row in section.splitlines() if row.startswith("| `")
            for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])}


def test_the_configuration_table_names_every_variable_and_no_other() -> None:
    """One reference for every setting: each variable the code reads is a row, and each
    row is a variable the code reads."""
    from graphmem._settings import _ENV

    read = set(_ENV) | {"GRAPHMEM_DB", "GRAPHMEM_SIDECAR_TOKEN", "OLLAMA_HOST",
                        "GRAPHMEM_LOCOMO", "GRAPHMEM_LONGMEMEVAL"}
    code = "\n".join(p.read_text(encoding="utf-8") for folder in ("graphmem", "ingest")
                     for p in (ROOT / folder).rglob("*.py"))
    assert set(re.findall(r"\"(GRAPHMEM_[A-Z0-9_]+)\"", code)) <= read
    assert _configuration_table() == read


def test_the_contents_list_every_section() -> None:
    contents = README.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    linked = re.findall(r"\[([^]]+)\]\(#([a-z0-9-]+)\)", contents)
    headings = [h for h in re.findall(r"^## (.+)$", README, re.M) if h != "Contents"]
    assert [title for title, _ in linked] == headings
    assert all(anchor == re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
               for title, anchor in linked)


def _anchors(text: str) -> set[str]:
    """GitHub's anchors for the headings of a Markdown text (code blocks left out)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#{1,6} (.+)$", prose, re.M)}


@pytest.mark.parametrize("page", ["README.md", *DOCS])
def test_relative_links_resolve(page: str) -> None:
    """Every relative link of the README and of docs/ names a file or folder that exists,
    and every #anchor a heading of the page it points into."""
    text = README if page == "README.md" else DOCS[page]
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    links = re.findall(r"\]\(([^)\s]+)\)", prose)
    assert links
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (ROOT / page).parent / path if path else ROOT / page
        assert target.exists(), f"{page}: {link} does not exist"
        if anchor:
            assert anchor in _anchors(target.read_text(encoding="utf-8")), \
                f"{page}: {link} names no heading of {target.relative_to(ROOT)}"
