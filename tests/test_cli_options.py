"""The command line as people type it: global options before or after the command,
--json on every command (its output parsed) and for errors, one error prefix, exit 2 for
every usage error, no store made by a mistyped --db, restore of a memory and of a backup
as two commands, and progress bars on a terminal only."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from graphmem import InvalidInputError, MemoryStore, StoreError
from graphmem.cli import cli
from ingest.ump import SAMPLE_PATH, import_ump

NOW = "2026-07-15T12:00:00Z"
ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, (args, result.output)
    return result


def _commands(group: Any = cli, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            out += _commands(command, (*prefix, name))
        else:
            out.append((*prefix, name))
    return sorted(out)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("options") / "sample"
    with MemoryStore(db, embedder="hashing") as store:
        import_ump(store, SAMPLE_PATH)
    return db


@pytest.mark.parametrize("command", _commands(), ids=" ".join)
def test_every_command_takes_the_global_options_after_it(command: tuple[str, ...]) -> None:
    helped = run(*command, "--help").output
    for option in ("--db", "--json", "--now", "--sidecar", "--token"):
        assert option in helped, (command, option)


@pytest.mark.parametrize("args", [
    ("stats",),
    ("show", "urn:ump:qiwl24cv2sejkhrndb56r6dvhz"),
    ("recall", "how do I deploy orchard", "-k", "3", "--no-record"),
    ("recall", "how do I deploy orchard", "-k", "3", "--no-record-access"),
    ("query", "most_referenced", "--param", "limit=3"),
    ("query", "MATCH (m:Memory) RETURN count(*) AS n"),
    ("lifecycle", "evaluate", "urn:ump:qiwl24cv2sejkhrndb56r6dvhz"),
    ("export", "--format", "ump"),
], ids=lambda a: a[0] + (" " + a[1] if a[0] in ("lifecycle", "query") else ""))
def test_options_in_both_positions_give_the_same_answer(sample: Path,
                                                        args: tuple[str, ...]) -> None:
    before = run("--db", str(sample), "--json", "--now", NOW, *args).stdout
    after = run(*args, "--db", str(sample), "--json", "--now", NOW).stdout
    mixed = run("--db", str(sample), *args, "--now", NOW, "--json").stdout
    assert json.loads(before) == json.loads(after) == json.loads(mixed)
    assert json.loads(before)  # an answer, not an empty one
    if args[0] != "export":  # an export is a JSON file either way
        plain = run(*args, "--db", str(sample), "--now", NOW).stdout
        assert not plain.startswith(("{", "["))  # without --json: for people


def test_an_option_after_the_command_overrides_the_one_before(sample: Path,
                                                              tmp_path: Path) -> None:
    stats = json.loads(run("--db", str(tmp_path / "elsewhere"), "stats", "--db", str(sample),
                           "--json").stdout)
    assert stats["memories"] == 301
    assert not (tmp_path / "elsewhere").exists()


def test_json_output_of_every_command(tmp_path: Path, sample: Path) -> None:
    """Each command once with --json; stdout parses as JSON. A new command must be added
    here (or, for a server, to SERVERS)."""
    db = tmp_path / "db"
    base = ["--db", str(db), "--now", NOW, "--embedder", "hashing", "--json"]

    def j(*args: str) -> Any:
        result = run(*base, *args)
        return json.loads(result.stdout)

    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(["I moved to Ibadan in March 2026 for lab work."]))
    daily = tmp_path / "notes" / "workspace-main" / "memory"
    daily.mkdir(parents=True)
    (daily / "2026-07-01.md").write_text("# 2026-07-01\n## Work\n- Rotated the deploy keys\n")
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps([{
        "sample_id": "conv-a", "qa": [],
        "conversation": {"speaker_a": "A", "speaker_b": "B",
                         "session_1_date_time": "1:56 pm on 1 May, 2023",
                         "session_1": [{"speaker": "A", "dia_id": "D1:1",
                                        "text": "I moved to Lagos in 2022."}]}}]))
    seen: dict[tuple[str, ...], Any] = {}
    seen["init",] = j("init")
    memory = j("add", "Demoed orchard to the lab", "--subject", "Demo")
    seen["add",] = memory
    other = j("add", "The standup moved to 11:30", "--kind", "note")["id"]
    seen["show",] = j("show", memory["id"])
    seen["history",] = j("history", memory["id"])
    seen["update",] = j("update", memory["id"], "--importance", "0.6")
    assert seen["update",]["importance"] == 0.6
    seen["import", "ump"] = j("import", "ump", str(SAMPLE_PATH))
    seen["import", "markdown"] = j("import", "markdown", str(tmp_path / "notes"))
    seen["import", "locomo"] = j("import", "locomo", str(locomo))
    seen["import", "conversation"] = j("import", "conversation", str(chat), "--session", "s1")
    seen["export",] = j("export", "--out", str(tmp_path / "out.json"))
    seen["query",] = j("query", "kinds_by_status")
    seen["stats",] = j("stats")
    seen["recall",] = j("recall", "orchard demo", "-k", "2")
    seen["feedback",] = j("feedback", memory["id"], "--useful")
    seen["learn",] = j("learn", "--status")
    assert seen["learn",]["ranker"] is None and seen["learn",]["notes"]
    seen["lifecycle", "evaluate"] = j("lifecycle", "evaluate", memory["id"])
    seen["lifecycle", "report"] = j("lifecycle", "report")
    seen["lifecycle", "run"] = j("lifecycle", "run")
    seen["promote",] = j("promote", memory["id"])
    seen["restore",] = j("restore", memory["id"])
    seen["archive",] = j("archive", memory["id"])
    seen["tombstone",] = j("tombstone", other)
    seen["forget",] = j("forget", other, "--yes")
    seen["draw",] = j("draw", memory["id"], "--out", str(tmp_path / "n.html"))
    seen["backup",] = j("backup", str(tmp_path / "backup"))
    seen["restore-backup",] = json.loads(run("--db", str(tmp_path / "copy"), "--json",
                                             "restore-backup", str(tmp_path / "backup")).stdout)
    seen["reembed",] = j("reembed", "--embedder", "hashing:64")
    seen["compact",] = j("compact", "--root", str(tmp_path / "notes"))
    seen["eval", "run"] = json.loads(run(
        "--json", "--embedder", "hashing", "eval", "run", "--corpus", "ump", str(SAMPLE_PATH),
        "--qrels", str(ROOT / "eval" / "qrels" / "sample.json"), "--presets", "fulltext",
        "--limit", "2", "--no-plots", "--out", str(tmp_path / "eval")).stdout)
    assert set(seen) | SERVERS == set(_commands())
    assert all(seen.values())
    assert seen["promote",]["new_type"] == "semantic"  # snake_case, as everywhere
    assert seen["forget",] == {"memory_id": other, "status": "forgotten"}
    assert seen["compact",]["files"][0]["file"] == "workspace-main/memory/2026-07-01.md"
    assert seen["compact",]["files"][0]["status"] == "planned"
    assert seen["compact",]["applied"] is False and seen["compact",]["exit_code"] == 0


#: Commands that serve until stopped: their output is a protocol or a log, not an answer.
SERVERS = {("serve",), ("mcp",), ("ui",)}


@pytest.mark.parametrize(("args", "code", "error"), [
    (["show", "urn:nope"], 1, "not_found"),
    (["query", "MATCH (m:Memory) DELETE m"], 1, "read_only"),
    (["add", "x", "--importance", "7"], 2, "usage"),
    (["feedback", "urn:ump:qiwl24cv2sejkhrndb56r6dvhz"], 2, "usage"),
    (["promote", "urn:ump:qiwl24cv2sejkhrndb56r6dvhz"], 1, "conflict"),
    (["recall"], 2, "usage"),
    (["stats", "--no-such-option"], 2, "usage"),
])
def test_errors_as_json(sample: Path, args: list[str], code: int, error: str) -> None:
    for where in (["--json", *args], [*args, "--json"]):
        result = run("--db", str(sample), *where, code=code)
        body = json.loads(result.stderr)
        assert body["error"] == error and body["detail"], body
        assert result.stdout == ""


@pytest.mark.parametrize("args", [
    ["add", "x", "--importance", "7"],
    ["add", "x", "--kind", "dream"],
    ["recall"],
    ["stats", "--nope"],
    ["nosuchcommand"],
    ["feedback", "urn:x"],
    ["forget", "urn:x"],
    ["query"],
    ["query", "hot_set", "--write"],
    ["query", "RETURN 1", "--param", "oops"],
    ["draw", "--out", "x.png"],
    ["draw", "urn:x", "--lifecycle", "--out", "x.png"],
    ["compact", "--max-age-days", "-1"],
    ["eval", "run", "--corpus", "longmemeval", "--ablation-groups", "nope"],
    ["eval", "run", "--corpus", "ump", "--presets", "nope"],
    ["lifecycle", "nope"],
    ["import", "conversation", "chat.json"],
])
def test_every_usage_error_exits_2_with_one_prefix(sample: Path, args: list[str]) -> None:
    result = run("--db", str(sample), *args, code=2)
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: ") and "Error:" not in result.stderr, result.stderr
    assert all(line.startswith(("error: ", "usage: ")) for line in lines), lines
    assert "Traceback" not in result.output


def test_a_mistyped_db_on_a_reading_command_makes_no_store(tmp_path: Path) -> None:
    typo = tmp_path / "graphmme.db"
    for args in (["stats"], ["show", "urn:x"], ["recall", "x"], ["query", "hot_set"],
                 ["query", "MATCH (m:Memory) RETURN m"], ["lifecycle", "report"],
                 ["export"], ["history", "urn:x"], ["backup", str(tmp_path / "b")],
                 ["draw", "urn:x", "--out", str(tmp_path / "x.png")]):
        result = run("--db", str(typo), *args, code=1)
        assert result.stderr == (f"error: no graphmem database at {typo}: create one with "
                                 f"`graphmem --db {typo} init` (or import into it), or check "
                                 "--db and $GRAPHMEM_DB\n"), args
    assert not typo.exists() and not (tmp_path / "b").exists()
    run("--db", str(typo), "--embedder", "hashing", "init")  # creating is explicit
    assert json.loads(run("--db", str(typo), "--json", "stats").stdout)["memories"] == 0


def test_db_is_read_without_the_spaces_around_it_as_graphmem_db_is(tmp_path: Path) -> None:
    db = tmp_path / "s1.db"
    run("--db", str(db), "--embedder", "hashing", "add", "a note")
    assert json.loads(run("--db", f" {db} ", "--json", "stats").stdout)["memories"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["s1.db"]


def test_a_directory_of_other_files_is_no_store_and_gets_none(tmp_path: Path) -> None:
    """--db pointed at a directory that holds other files (a notes folder): a reading
    command says there is no database there, a writing one refuses to put one beside
    them, and the directory is left as it was."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.md").write_text("buy milk\n", encoding="utf-8")
    # reading commands say so too (they advised `init`, which then refused)
    for args in (["stats"], ["recall", "x"], ["export"], ["init"], ["add", "a note"],
                 ["serve", "--port", "0"], ["mcp", "--embedded"]):
        result = run("--db", str(notes), "--embedder", "hashing", *args, code=1)
        assert result.stderr == (f"error: {notes} holds other files (todo.md) and no "
                                 "graphmem database: a new database goes into a new or empty "
                                 "directory; check --db and $GRAPHMEM_DB\n"), args
    assert [p.name for p in notes.iterdir()] == ["todo.md"]
    empty = tmp_path / "empty"
    empty.mkdir()
    run("--db", str(empty), "--embedder", "hashing", "init")  # an empty directory is fine
    (empty / "README.txt").write_text("the agent's memory\n", encoding="utf-8")
    run("--db", str(empty), "--embedder", "hashing", "add", "a note")  # a store: fine


def test_a_db_that_is_a_file_is_named_as_such_by_every_command(tmp_path: Path) -> None:
    # stats advised `init`, which then failed; mcp started and failed on every tool call
    afile = tmp_path / "afile.txt"
    afile.write_text("hi\n", encoding="utf-8")
    said = (f"error: {afile} is a file, not a graphmem database directory; check --db and "
            "$GRAPHMEM_DB\n")
    for args in (["stats"], ["init"], ["add", "a note"], ["mcp"]):
        assert run("--db", str(afile), "--embedder", "hashing", *args, code=1).stderr == said
    assert [p.name for p in tmp_path.iterdir()] == ["afile.txt"]


def test_the_python_api_puts_no_store_beside_other_files_either(tmp_path: Path) -> None:
    # MemoryStore(path) wrote graph.kuzu and its keys into a notes folder the CLI refused
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.md").write_text("buy milk\n", encoding="utf-8")
    for read_only in (False, True):
        with pytest.raises(StoreError, match=r"holds other files \(todo\.md\) and no "):
            MemoryStore(notes, embedder="hashing", read_only=read_only)
    assert [p.name for p in notes.iterdir()] == ["todo.md"]
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / ".DS_Store").write_bytes(b"\0")  # what a Finder window leaves
    with MemoryStore(tmp_path / "new", embedder="hashing") as store:
        store.add("a note")
    (tmp_path / "new" / "README.txt").write_text("the agent's memory\n", encoding="utf-8")
    with MemoryStore(tmp_path / "new", embedder="hashing") as store:  # a store: fine
        assert store.stats().memories == 1


def test_a_db_that_is_a_dangling_link_is_named_as_such(tmp_path: Path) -> None:
    """--db at a symbolic link whose target is gone said "File exists"."""
    link = tmp_path / "db"
    link.symlink_to(tmp_path / "moved" / "db")
    result = run("--db", str(link), "--embedder", "hashing", "add", "a note", code=1)
    said = (f"error: {link} is a symbolic link to {tmp_path}/moved/db, which does not exist; "
            "create that directory, or choose another path\n")
    assert result.stderr == said
    assert run("--db", str(link), "stats", code=1).stderr == said  # not "create it with init"
    chain = tmp_path / "chain"  # a link to the link: the directory missing at its end named
    chain.symlink_to(link)
    assert run("--db", str(chain), "--embedder", "hashing", "init", code=1).stderr == (
        said.replace(str(link), str(chain), 1))
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")
    assert run("--db", str(loop), "stats", code=1).stderr == (
        f"error: {loop} is a loop of symbolic links; choose another path\n")
    assert link.is_symlink() and not (tmp_path / "moved").exists()
    (tmp_path / "moved" / "db").mkdir(parents=True)
    run("--db", str(link), "--embedder", "hashing", "add", "a note")  # a link to a directory
    assert (tmp_path / "moved" / "db" / "graph.kuzu").exists()


def test_a_misspelled_named_query_lists_the_names(sample: Path) -> None:
    result = run("--db", str(sample), "query", "most_refrenced", code=1)
    assert result.stderr.startswith("error: no named query 'most_refrenced'; did you mean "
                                    "most_referenced? the named queries are archive_candidates")
    assert "Parser exception" not in result.stderr and "grammar" not in result.stderr.lower()


def test_restore_of_a_memory_and_of_a_backup_are_two_commands(tmp_path: Path) -> None:
    db = tmp_path / "db"
    memory = run("--db", str(db), "--embedder", "hashing", "--now", NOW, "add",
                 "Demoed orchard").stdout.strip()
    run("--db", str(db), "--now", NOW, "archive", memory)
    assert run("--db", str(db), "--now", NOW, "restore", memory).stdout == (
        f"restored {memory}: undid its archive (archived -> active)\n")
    run("--db", str(db), "backup", str(tmp_path / "backup"))
    done = run("--db", str(tmp_path / "copy"), "restore-backup", str(tmp_path / "backup"))
    assert done.stdout.startswith(f"restored {tmp_path / 'backup'} into {tmp_path / 'copy'}: "
                                  "1 memories")
    # the old spelling still works, and says what to type instead
    old = run("--db", str(tmp_path / "copy2"), "restore", str(tmp_path / "backup"))
    assert old.stderr.startswith(f"note: `graphmem restore {tmp_path / 'backup'}` restores a "
                                 "backup only for a while; use `graphmem --db")
    assert "restore-backup" in old.stderr and (tmp_path / "copy2").is_dir()


def test_progress_bars_on_a_terminal_only(tmp_path: Path) -> None:
    """stderr on a terminal shows the bars; a pipe, a log or --json gets none."""
    db = tmp_path / "db"
    env = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing", "COLUMNS": "100"}
    command = [sys.executable, "-m", "graphmem", "--db", str(db), "import", "ump",
               str(SAMPLE_PATH)]
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    chunks: list[bytes] = []

    def read() -> None:  # drain the terminal while the command runs (its buffer is small)
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=terminal, env=env,
                              timeout=300, text=True)
    finally:
        os.close(terminal)
        reader.join(timeout=10)
        os.close(controller)
    shown = b"".join(chunks)
    assert done.returncode == 0 and done.stdout.startswith(f"{SAMPLE_PATH}: created 301")
    # each phase counts records; the import's bar knows the total, so it shows the time left
    assert b"checking agent_memories.ump.json: " in shown and b" records [" in shown
    assert re.search(rb"importing agent_memories\.ump\.json: +\d+%\|.*\| (0|301)/301 "
                     rb"\[\d\d:\d\d<[0-9?:]+", shown), shown[-2000:]
    piped = subprocess.run([*command[:4], str(tmp_path / "db2"), *command[5:]],
                           capture_output=True, env=env, timeout=300, text=True)
    assert piped.returncode == 0 and piped.stderr == ""


def test_eval_run_draws_no_bars_into_a_pipe(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "graphmem", "--embedder", "hashing", "eval", "run",
         "--corpus", "ump", str(SAMPLE_PATH), "--qrels",
         str(ROOT / "eval" / "qrels" / "sample.json"), "--presets", "fulltext", "--limit",
         "3", "--no-plots", "--out", str(tmp_path / "eval")],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and "q/s" not in out.stderr and "it/s" not in out.stderr


@pytest.mark.parametrize(("args", "kwargs", "field"), [
    ((5,), {}, "path"),
    ((":memory:",), {"settings": "x"}, "settings"),
    ((":memory:",), {"embedder": 5}, "embedder"),
    ((":memory:",), {"read_only": "yes"}, "read_only"),
    ((":memory:",), {"clock": 3}, "clock"),
])
def test_the_store_refuses_arguments_of_the_wrong_type_by_name(
        args: tuple[object, ...], kwargs: dict[str, object], field: str) -> None:
    # a TypeError from Kuzu's constructor or an AttributeError, not a GraphmemError
    with pytest.raises(InvalidInputError) as refused:
        MemoryStore(*args, **kwargs)  # type: ignore[arg-type]
    assert refused.value.field == field


def test_an_error_names_the_option_or_the_record_field_the_user_gave(tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text('[{"role": "user", "content": "I live in Oslo"}]', encoding="utf-8")
    db = str(tmp_path / "db")
    empty = run("--db", db, "--embedder", "hashing", "import", "conversation", str(chat),
                "--session", "", code=1)
    assert empty.stderr.startswith("error: --session: session_id must be a non-empty")
    blank = run("--db", db, "--embedder", "hashing", "import", "conversation", str(chat),
                "--session", "s1", "--owner", "", code=1)
    assert blank.stderr.startswith("error: --owner: owner is empty")
    records = tmp_path / "records.json"
    records.write_text('[{"id": 123, "text": "a note"}]', encoding="utf-8")
    typed = run("--db", db, "--embedder", "hashing", "import", "ump", str(records), code=1)
    assert "id must be a string, got int" in typed.stderr, typed.stderr
