"""The command line: real processes for exit codes and output, CliRunner for the rest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.cli import cli
from tests.conftest import SAMPLE


def gm(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db),
                           "--embedder", "hashing", *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_round_trip_in_a_real_process(tmp_path: Path) -> None:
    db = tmp_path / "db"
    assert gm(db, "init").returncode == 0
    out = gm(db, "import", "ump", str(SAMPLE))
    assert out.returncode == 0 and "created 301" in out.stdout
    added = gm(db, "add", "Nadia moved standup to Wednesday", "--kind", "identity",
               "--tag", "schedule")
    memory_id = added.stdout.strip()
    assert memory_id.startswith("urn:graphmem:")
    shown = gm(db, "--json", "show", memory_id)
    assert json.loads(shown.stdout)["tags"] == ["schedule"]
    assert "created" in gm(db, "history", memory_id).stdout
    stats = json.loads(gm(db, "--json", "stats").stdout)
    assert stats["memories"] == 302
    target = tmp_path / "export.json"
    assert gm(db, "export", "--out", str(target)).returncode == 0
    assert len(json.loads(target.read_text())) == 302


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    db = tmp_path / "db"
    missing = gm(db, "show", "urn:nope")
    assert missing.returncode == 1
    assert missing.stderr.strip() == "error: no memory urn:nope"
    write = gm(db, "query", "MATCH (m:Memory) DELETE m")
    assert write.returncode == 1 and "read-only unless" in write.stderr
    bad = gm(db, "add", "x", "--importance", "7")
    assert bad.returncode == 2
    broken = tmp_path / "broken.json"
    broken.write_text('[{"kind": "note"}]')
    out = gm(db, "import", "ump", str(broken))
    assert out.returncode == 1 and "record 0, field id" in out.stderr
    for result in (missing, write, bad, out):
        assert "Traceback" not in result.stderr


def test_query_formats_and_params(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "db")
    base = ["--db", db, "--embedder", "hashing"]
    assert runner.invoke(cli, [*base, "add", "alpha", "--kind", "note"]).exit_code == 0
    query = "MATCH (m:Memory) WHERE m.kind = $k RETURN m.text AS text"
    for fmt, expected in (("table", "alpha"), ("csv", "text\nalpha"), ("json", '"alpha"')):
        result = runner.invoke(cli, [*base, "query", query, "--param", "k=note",
                                     "--format", fmt])
        assert result.exit_code == 0, result.output
        assert expected in result.output
    result = runner.invoke(cli, [*base, "query", query, "--param", "oops"])
    assert result.exit_code == 1 and "NAME=VALUE" in result.output


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_has_help(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output and len(result.output.splitlines()) > 3
