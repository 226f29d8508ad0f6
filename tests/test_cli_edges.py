"""What a new user trips over on the command line, each said plainly: an option without
its value, one memory's error, a file that is not JSON, two output formats at once,
--now where a sidecar keeps the clock, a sidecar that wants a token, a held store, and
where `serve` serves."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

import graphmem
from graphmem import InvalidInputError, MemoryStore
from graphmem.client import AccessDeniedError
from graphmem.sidecar import Tokens

from ._servers import running_sidecar

ENV = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing"}
NOW = "2026-07-15T18:00:00Z"


def gm(*args: str, code: int = 0, env: dict[str, str] | None = None
       ) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "graphmem", *args], capture_output=True,
                         text=True, env=env or ENV, timeout=120)
    assert out.returncode == code, (out.stdout, out.stderr)
    return out


def test_an_option_without_its_value_shows_the_usage() -> None:
    root = gm("--db", code=2).stderr.splitlines()
    assert root == ["error: Option '--db' requires an argument.",
                    "usage: graphmem [OPTIONS] COMMAND [ARGS]...  (see graphmem --help)"]
    nested = gm("lifecycle", "run", "--db", code=2).stderr.splitlines()
    assert nested[1] == ("usage: graphmem lifecycle run [OPTIONS]  (see graphmem lifecycle "
                         "run --help)")


def test_one_memorys_error_names_no_record_number(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert gm("--db", db, "add", "   ", code=1).stderr == "error: text: text is empty\n"
    with MemoryStore(":memory:", embedder="hashing") as store:
        with pytest.raises(InvalidInputError) as single:
            store.add("   ")
        assert str(single.value) == "text: text is empty"
        with pytest.raises(InvalidInputError, match=r"^record 1: text: text is empty"):
            store.add_many(["fine", "   "])  # among several, the index tells which


@pytest.mark.parametrize(("content", "says"), [
    ('{"a":', "not valid JSON: Expecting value at line 1 column 6"),
    ('{"id": "m1"}', "a UMP file is a JSON array of records; this one holds a JSON object"),
    ("", "the file is empty; a UMP file is a JSON array of records"),
])
def test_a_ump_file_that_is_not_an_array_says_what_it_is(tmp_path: Path, content: str,
                                                         says: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    out = gm("--db", str(tmp_path / "db"), "import", "ump", str(bad), code=1)
    assert out.stderr == f"error: {bad}: {says}\n"


def test_json_and_another_format_are_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    gm("--db", db, "add", "Orchard stores data in PostgreSQL 16")
    out = gm("--db", db, "--json", "query", "MATCH (m:Memory) RETURN m.text", "--format",
             "csv", code=2)
    assert json.loads(out.stderr)["detail"] == ("--json prints JSON and --format csv asks "
                                                "for CSV: give one of them")
    assert gm("--db", db, "query", "MATCH (m:Memory) RETURN m.text", "--format",
              "csv").stdout == "m.text\nOrchard stores data in PostgreSQL 16\n"


def test_now_is_refused_through_a_sidecar(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store, \
            running_sidecar(store) as url:
        out = gm("--sidecar", url, "--now", NOW, "add", "Nadia moved standup", code=2)
        assert f"the sidecar at {url}" in out.stderr and "keeps its own clock" in out.stderr
        assert "usage: graphmem add" in out.stderr
        assert store.stats().memories == 0  # nothing was added on the real clock
        gm("--sidecar", url, "add", "Nadia moved standup")  # without --now it works
        assert store.stats().memories == 1


def test_a_sidecar_that_wants_a_token_says_which_and_how(tmp_path: Path) -> None:
    tokens = Tokens.from_mapping({"tok-edge-alice-0123456": {"owner": "alice",
                                                             "scopes": ["read"]}})
    with MemoryStore(tmp_path / "db", embedder="hashing") as store, \
            running_sidecar(store, tokens) as url:
        out = gm("--sidecar", url, "stats", code=1)
        assert out.stderr.startswith(f"error: the graphmem sidecar at {url} needs a token")
        assert "--token TOKEN" in out.stderr and "GRAPHMEM_SIDECAR_TOKEN" in out.stderr
        with pytest.raises(AccessDeniedError, match=f"sidecar at {url}"):
            graphmem.connect(url).stats()


def _lines(process: subprocess.Popen[str], count: int, timeout_s: float = 60) -> list[str]:
    """The first ``count`` lines ``process`` writes to stderr, within ``timeout_s``."""
    assert process.stderr is not None
    stream = process.stderr
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    try:
        return [lines.get(timeout=timeout_s) for _ in range(count)]
    except queue.Empty:
        raise AssertionError(f"fewer than {count} lines within {timeout_s} s") from None


def test_serve_says_where_it_serves_and_a_held_store_names_it(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    gm("--db", db, "init")
    server = subprocess.Popen([sys.executable, "-m", "graphmem", "--db", db, "serve",
                               "--port", "0", "--log-level", "warning"], env=ENV,
                              stderr=subprocess.PIPE, text=True)
    try:
        first, second = _lines(server, 2)
        assert first.startswith(f"graphmem: serving {db} at http://127.0.0.1:"), first
        url = first.split(" at ", 1)[1].strip()
        assert second.strip() == (f"dashboard: {url}/ui/   API: {url}/v1   (Ctrl-C stops)")
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
        assert httpx.get(f"{url}/ui/", timeout=10).status_code == 200
        again = gm("--db", db, "serve", "--port", "0", code=1)  # the store is held
        assert f"the graphmem sidecar at {url}" in again.stderr
        taken = gm("--db", str(tmp_path / "other"), "serve", "--port",
                   url.rsplit(":", 1)[1], code=1)  # and so is the port
        assert "in use" in taken.stderr and "--port 0 takes a free port" in taken.stderr
    finally:
        server.terminate()
        server.wait(timeout=60)
    deadline = time.monotonic() + 10
    while (tmp_path / "db.sidecar.json").exists():
        assert time.monotonic() < deadline
        time.sleep(0.1)
