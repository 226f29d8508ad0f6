"""The command line: real processes for exit codes and output, CliRunner for the rest."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphmem import MemoryStore
from graphmem._time import parse_iso
from graphmem.cli import cli
from ingest.ump import import_ump
from tests.conftest import ROOT, SAMPLE


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
    # a memory is edited from the command line; its history keeps what it said
    edited = gm(db, "--json", "update", memory_id, "--text", "Nadia moved standup to Thursday",
                "--importance", "0.8", "--subject", "")
    assert edited.returncode == 0, edited.stderr
    assert json.loads(edited.stdout)["text"] == "Nadia moved standup to Thursday"
    assert json.loads(edited.stdout)["importance"] == 0.8
    history = gm(db, "history", memory_id).stdout
    assert "Wednesday" in history and "Thursday" in history
    nothing = gm(db, "update", memory_id)
    assert nothing.returncode == 2 and nothing.stderr.startswith("error: nothing to change")
    # one empty --tag clears the tags, as '' clears --subject
    cleared = gm(db, "--json", "update", memory_id, "--tag", "")
    assert cleared.returncode == 0 and json.loads(cleared.stdout)["tags"] == []
    assert gm(db, "update", "urn:nope", "--importance", "0.2").returncode == 1
    stats = json.loads(gm(db, "--json", "stats").stdout)
    assert stats["memories"] == 302
    target = tmp_path / "exports" / "today" / "export.json"  # its directory made
    assert gm(db, "export", "--out", str(target)).returncode == 0
    # a file where a directory would go, and no file, are named
    (tmp_path / "a_file").write_text("x")
    blocked = gm(db, "export", "--out", str(tmp_path / "a_file" / "x.json"))
    assert blocked.returncode == 1 and blocked.stderr.startswith(
        "error: a file, not a directory, in the path of --out: ")
    assert gm(db, "export", "--out", "").returncode == 2
    assert gm(db, "recall", "  ").stderr.startswith("error: QUERY is empty")
    assert len(json.loads(target.read_text())) == 302
    # "--out -" is standard output, as for other tools (it wrote a file named "-")
    dashed = subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db), "--embedder",
                             "hashing", "export", "--out", "-"], capture_output=True,
                            text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert dashed.returncode == 0 and len(json.loads(dashed.stdout)) == 302
    assert not (tmp_path / "-").exists()
    # the export imported again after a forget: the forgotten record is said, not revived
    assert gm(db, "forget", memory_id, "--yes").returncode == 0
    again = gm(db, "import", "ump", str(target))
    assert again.returncode == 0 and again.stdout.rstrip().endswith(
        "forgotten 1 (not brought back)"), again.stdout
    summary = json.loads(gm(db, "--json", "import", "ump", str(target)).stdout)
    assert summary["forgotten"] == 1 and summary["created"] == 0


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    db = tmp_path / "db"
    nowhere = gm(db, "show", "urn:nope")
    assert nowhere.returncode == 1 and nowhere.stderr.startswith(f"error: no graphmem database "
                                                                 f"at {db}: create one")
    assert not db.exists()  # a reading command made no store
    assert gm(db, "init").returncode == 0
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
    assert result.exit_code == 2 and "NAME=VALUE" in result.output
    # $k as the query spells it; a name given twice is an error, not the last one
    assert "alpha" in runner.invoke(cli, [*base, "query", query, "--param", "$k=note"]).stdout
    result = runner.invoke(cli, [*base, "query", query, "--param", "k=note", "--param", "k=x"])
    assert result.exit_code == 2 and "k is given twice" in result.stderr
    result = runner.invoke(cli, [*base, "--json", "query", "RETURN $v AS v", "--param", "v=NaN"])
    assert json.loads(result.stdout) == [{"v": "NaN"}]  # a string: JSON has no NaN
    # strict JSON: what is not a number is null, as the sidecar answers it
    result = runner.invoke(cli, [*base, "--json", "query",
                                 "RETURN 0.0/0.0 AS v, 1.0/0.0 AS w, [1.5, -1.0/0.0] AS l"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout, parse_constant=pytest.fail) == [
        {"v": None, "w": None, "l": [1.5, None]}]
    # a bad value is the parameter's error, on one line
    result = runner.invoke(cli, [*base, "query", query.replace("m.kind = $k", "m.importance > "
                                                               "$k"), "--param", "k=[1,\"a\"]"])
    assert result.exit_code == 1
    assert result.stderr == ("error: parameter $k: a list holds both a number and a string: "
                             "one type per list\n")


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_has_help(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output and len(result.output.splitlines()) > 3


# -- every command on a real database, in process -------------------------------------------
NOW = "2026-07-15T12:00:00Z"


def cli_run(db: Path, *args: str, code: int = 0) -> Result:
    """Run one command (``--now`` pinned) and check its exit code."""
    result = CliRunner().invoke(cli, ["--db", str(db), "--now", NOW, *args])
    assert result.exit_code == code, (args, result.output)
    return result


@pytest.fixture
def sample_db(tmp_path: Path) -> Path:
    db = tmp_path / "sample"
    with MemoryStore(db, embedder="hashing", clock=lambda: parse_iso(NOW)) as store:
        import_ump(store, SAMPLE)
    return db


def test_recall_command(sample_db: Path) -> None:
    query = "how do I deploy orchard"
    hits = json.loads(cli_run(sample_db, "--json", "recall", query, "-k", "3",
                              "--no-record").stdout)
    with MemoryStore(sample_db, clock=lambda: parse_iso(NOW)) as store:
        expected = store.recall(query, k=3, record_access=False)
    assert [h["memory"]["id"] for h in hits] == [h.memory.id for h in expected]
    assert [h["rank"] for h in hits] == [1, 2, 3]
    lines = cli_run(sample_db, "recall", query, "-k", "3", "--no-record").stdout.splitlines()
    assert lines[0].split() == ["#", "score", "kind", "when", "id", "text"] and len(lines) == 5
    assert [line.split()[4] for line in lines[2:]] == [h.memory.id for h in expected]
    assert [line.split()[3] for line in lines[2:]] == [f"{h.when:%Y-%m-%d}" for h in expected]
    explained = cli_run(sample_db, "recall", "which database does orchard use", "-k", "2",
                        "--explain", "--no-record").stdout.splitlines()
    header = explained[0].split()
    assert header[:3] == ["#", "fulltext", "vector"] and header[-6:] == [
        "fused", "act-r", "A", "formula", "final", "text"]
    assert set(header[1:-6]) <= {"fulltext", "vector", "graph", "time", "facts", "entities"}
    assert any(re.fullmatch(r"#\d current version of urn:ump:\w+(, urn:ump:\w+)*", line)
               for line in explained[4:])
    procedural = json.loads(cli_run(sample_db, "--json", "recall", "orchard", "--kind",
                                    "procedural", "--no-record").stdout)
    assert procedural and {h["memory"]["kind"] for h in procedural} == {"procedural"}
    tomas = "did:key:z6MkwrenTomasRuiz2p8d4m"
    owned = json.loads(cli_run(sample_db, "--json", "recall", "tests", "--owner", tomas,
                               "--no-record").stdout)
    assert owned and {h["memory"]["owner"] for h in owned} == {tomas}
    assert cli_run(sample_db, "recall", "zzzz qqqq", "--preset", "fulltext").stdout == (
        "(no memories)\n")
    assert "not an ISO 8601" in cli_run(sample_db, "recall", "x", "--as-of", "soon",
                                        code=2).output
    [used] = json.loads(cli_run(sample_db, "--json", "recall", query, "-k", "1").stdout)
    shown = json.loads(cli_run(sample_db, "--json", "show", used["memory"]["id"]).stdout)
    assert shown["access_count"] == 0  # a recall changes nothing ...
    cli_run(sample_db, "--json", "recall", query, "-k", "1", "--record-access")
    shown = json.loads(cli_run(sample_db, "--json", "show", used["memory"]["id"]).stdout)
    assert shown["access_count"] == 1  # ... unless asked to record an access


def test_feedback_command(sample_db: Path) -> None:
    query = "how do I deploy orchard"
    first, second = (h["memory"] for h in json.loads(
        cli_run(sample_db, "--json", "recall", query, "-k", "2").stdout))
    out = cli_run(sample_db, "feedback", first["id"], "--useful", "--query", query).stdout
    assert out == (f"{first['id']}: useful 1, ignored 0, importance "
                   f"{min(1.0, first['importance'] + 0.05):.2f}\n")
    ignored = json.loads(cli_run(sample_db, "--json", "feedback", second["id"],
                                 "--ignored").stdout)
    assert (ignored["ignored_count"], ignored["useful_count"]) == (1, 0)
    changes = json.loads(cli_run(sample_db, "--json", "history", first["id"]).stdout)
    assert changes[-1]["change_type"] == "importance_boost"
    missing = cli_run(sample_db, "feedback", "urn:nope", "--useful", code=1)
    assert missing.stderr == "error: no memory urn:nope\n"
    # the recall ran in another command: the feedback still carries what `learn` needs
    with MemoryStore(sample_db) as store:
        feedback = [e for e in store.events(first["id"]) if e.event_type.value == "feedback"]
    assert feedback[-1].metadata["query"] == query
    assert feedback[-1].metadata["features"]["rows"]


def test_feedback_without_useful_or_ignored_is_a_usage_error(tmp_path: Path) -> None:
    db = tmp_path / "db"
    memory = cli_run(db, "--embedder", "hashing", "add", "something useful").stdout.strip()
    result = cli_run(db, "feedback", memory, code=2)
    assert "--useful" in result.output
    both = cli_run(db, "feedback", memory, "--useful", "--ignored", code=2)  # not the last
    assert both.stderr.startswith("error: --useful and --ignored contradict each other")
    assert json.loads(cli_run(db, "--json", "show", memory).stdout)["useful_count"] == 0


def test_transition_commands(tmp_path: Path) -> None:
    db = tmp_path / "db"
    base = ["--embedder", "hashing"]
    episode = cli_run(db, *base, "add", "Demoed orchard to the lab").stdout.strip()
    note = cli_run(db, *base, "add", "Moved the standup to 11:30. Everyone agreed.",
                   "--subject", "Standup").stdout.strip()
    promoted = cli_run(db, "promote", episode, "--reason", "high_access").stdout.strip()
    assert promoted == f"promoted {episode} from episodic to semantic (reason: high_access)"
    again = cli_run(db, "promote", episode, code=1)
    assert again.stderr == (f"error: {episode}: only active episodic memories are promoted; "
                            "this one is active semantic\n")
    assert "Invalid value for '--reason'" in cli_run(db, "promote", episode, "--reason",
                                                     "because", code=2).output
    archived = json.loads(cli_run(db, "--json", "archive", note, "--summary").stdout)
    assert (archived["success"], archived["new_type"], archived["summary"]) == (
        True, "archival", "Standup: Moved the standup to 11:30.")
    restored = cli_run(db, "restore", note).stdout
    assert restored == f"restored {note}: undid its archive (archived -> active)\n"
    assert cli_run(db, "tombstone", note).stdout == f"{note}: tombstoned\n"
    assert f"memory {note} is already tombstoned" in cli_run(db, "tombstone", note,
                                                             code=1).stderr
    hits = json.loads(cli_run(db, "--json", "recall", "standup 11:30").stdout)
    assert [h["memory"]["id"] for h in hits] == [episode]  # never the tombstoned one
    refused = cli_run(db, "forget", note, code=2)
    assert "add --yes to confirm" in refused.output
    assert json.loads(cli_run(db, "--json", "show", note).stdout)["text"].startswith("Moved")
    assert cli_run(db, "forget", note, "--yes").stdout == f"{note}: forgotten\n"
    gone = json.loads(cli_run(db, "--json", "show", note).stdout)
    assert (gone["status"], gone["text"], gone["subject"]) == ("forgotten", "", None)
    assert "standup" not in cli_run(db, "--json", "export").stdout.lower()
    kinds = [e["event_type"] for e in json.loads(cli_run(db, "--json", "export", "--format",
                                                          "gdpr").stdout)["events"]]
    assert kinds == ["promote", "archive", "restore", "tombstone", "delete"]


def test_lifecycle_commands(tmp_path: Path) -> None:
    from tests.conftest import Clock
    from tests.test_lifecycle import _populate

    db = tmp_path / "db"
    clock = Clock(parse_iso(NOW))
    with MemoryStore(db, embedder="hashing", clock=clock) as store:
        ids = _populate(store, clock)
        before = store.export()
    evaluated = cli_run(db, "lifecycle", "evaluate", ids["used"], ids["old_unused"]).stdout
    rows = evaluated.splitlines()[2:]
    assert [(r.split()[0], r.split()[2]) for r in rows] == [("promote", ids["used"]),
                                                            ("archive", ids["old_unused"])]
    every = json.loads(cli_run(db, "--json", "lifecycle", "evaluate").stdout)
    assert {e["memory_id"]: e["recommended_action"] for e in every} == {
        ids["used"]: "promote", ids["critical"]: "promote", ids["old_unused"]: "archive",
        ids["stale"]: "maintain", ids["payload"]: "maintain", ids["identity"]: "maintain"}
    report = cli_run(db, "lifecycle", "report").stdout.splitlines()
    assert report[0] == "# Archivist Lifecycle Report"
    assert "**Mode:** dry run (nothing changed)" in report
    assert "| Promote to Semantic | 2 | 33.3% |" in report
    out = tmp_path / "report.md"
    written = cli_run(db, "lifecycle", "report", "--out", str(out)).stdout
    assert written == f"wrote {out} (6 memories evaluated, dry run)\n"
    assert out.read_text(encoding="utf-8").splitlines() == report
    plan = cli_run(db, "lifecycle", "run").stdout
    assert "**Mode:** dry run (nothing changed)" in plan
    with MemoryStore(db) as store:
        after = store.export()
    before.pop("generated"), after.pop("generated")
    assert after == before  # reports and plans change nothing
    applied = json.loads(cli_run(db, "--json", "lifecycle", "run", "--apply").stdout)
    assert applied["applied"] is True
    assert (applied["jobs"]["promoted"], applied["jobs"]["candidates_expired"]) == (2, 1)
    assert json.loads(cli_run(db, "--json", "show", ids["used"]).stdout)["kind"] == "semantic"
    again = json.loads(cli_run(db, "--json", "lifecycle", "run", "--apply").stdout)["jobs"]
    assert {k: v for k, v in again.items() if k not in ("centrality_computed",
                                                        "archive_for_review")} == {
        "decayed": 0, "recomputed": 0, "promoted": 0, "archived": 0, "hot_added": 0,
        "hot_removed": 0, "candidates_expired": 0, "payloads_redacted": 0}


def test_reembed_command(tmp_path: Path) -> None:
    db = tmp_path / "db"
    for text in ("Biscuit the cat sleeps on the keyboard", "Orchard deploys with fly",
                 "The greenhouse pump runs at dawn"):
        cli_run(db, "--embedder", "hashing", "add", text)
    assert cli_run(db, "reembed", "--embedder", "hashing:128").stdout == (
        "re-embedded 3 memories with hashing-128\n")
    assert json.loads(cli_run(db, "--json", "stats").stdout)["embedder"] == "hashing-128"
    refused = cli_run(db, "--embedder", "hashing", "recall", "cat", code=1)
    assert "reembed --embedder hashing" in refused.stderr
    [hit] = json.loads(cli_run(db, "--json", "recall", "cat keyboard", "-k", "1",
                               "--preset", "vector").stdout)
    assert hit["memory"]["text"].startswith("Biscuit")


def test_import_conversation_command(tmp_path: Path) -> None:
    db = tmp_path / "db"
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([
        {"speaker": "Nadia", "text": "Hi!"},
        {"speaker": "Nadia", "text": "I moved to Ibadan in March 2026 for lab work."},
        {"speaker": "Nadia", "text": "I might try oat milk sometime."}]), encoding="utf-8")
    out = cli_run(db, "--embedder", "hashing", "import", "conversation", str(chat),
                  "--session", "s1", "--owner", "nadia").stdout
    assert out == ("created 1, corrected 0, candidates 1, reinforced 0, dropped 1 (1 "
                   "greeting or filler)\n")
    later = tmp_path / "later.json"
    later.write_text(json.dumps(["I might try oat milk sometime."]), encoding="utf-8")
    result = json.loads(cli_run(db, "--json", "import", "conversation", str(later),
                                "--session", "s2", "--owner", "nadia").stdout)
    # said again later: the candidate itself becomes active (no second memory)
    assert (result["memories_created"], len(result["reinforced_ids"])) == (0, 1)
    memories = json.loads(cli_run(db, "--json", "export", "--format", "gdpr",
                                  "--owner", "nadia").stdout)["memories"]
    assert {m["session"] for m in memories} == {"s1"}
    assert {m["status"] for m in memories} == {"active"}
    # a sitting's time for its messages without their own
    dated = tmp_path / "dated.json"
    dated.write_text(json.dumps(["My sister Ifeoma teaches maths in Abuja."]),
                     encoding="utf-8")
    cli_run(db, "import", "conversation", str(dated), "--session", "s3", "--owner", "nadia",
            "--timestamp", "2026-02-14T18:30:00+00:00")
    memories = json.loads(cli_run(db, "--json", "export", "--format", "gdpr",
                                  "--owner", "nadia").stdout)["memories"]
    [said] = [m for m in memories if m["session"] == "s3"]
    assert said["created"].startswith("2026-02-14T18:30")
    refused = cli_run(db, "import", "conversation", str(dated), "--session", "s4",
                      "--timestamp", "yesterday-ish", code=2).stderr
    assert "Invalid value for '--timestamp'" in refused
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    assert "broken.json: not valid JSON: Expecting property name enclosed in double quotes " \
        "at line 1 column 3" in cli_run(db, "import", "conversation", str(broken),
                                        "--session", "s3", code=1).stderr
    broken.write_text('{"speaker": "Nadia", "text": "hi"}', encoding="utf-8")
    said = cli_run(db, "import", "conversation", str(broken), "--session", "s3", code=1).stderr
    assert "a conversation is a JSON array of messages ({speaker|role, text|content, " \
        "timestamp?}); this one holds a JSON object" in said
    assert "Missing option '--session'" in cli_run(db, "import", "conversation", str(chat),
                                                   code=2).output


def _locomo_file(path: Path) -> Path:
    def conversation(sample: str, turns: list[list[str]]) -> dict[str, object]:
        sessions: dict[str, object] = {"speaker_a": "Caroline", "speaker_b": "Melanie"}
        for n, texts in enumerate(turns, start=1):
            sessions[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
            sessions[f"session_{n}"] = [
                {"speaker": ("Caroline", "Melanie")[i % 2], "dia_id": f"D{n}:{i + 1}",
                 "text": text} for i, text in enumerate(texts)]
        return {"sample_id": sample, "conversation": sessions,
                "qa": [{"question": "Where?", "answer": "Lagos", "evidence": ["D1:1"],
                        "category": 4}]}

    path.write_text(json.dumps([
        conversation("conv-a", [["I moved to Lagos in 2022.", "Lagos is lovely."],
                                ["My dog Biscuit turned three."]]),
        conversation("conv-b", [["I paint landscapes.", "Show me one!"]])]),
        encoding="utf-8")
    return path


def test_import_locomo_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _locomo_file(tmp_path / "locomo.json")
    db = tmp_path / "db"
    out = cli_run(db, "--embedder", "hashing", "import", "locomo", str(source),
                  "--conversation", "conv-a").stdout
    assert out == "1 conversations, 3 turns\n"
    memory = json.loads(cli_run(db, "--json", "show", "urn:locomo:conv-a:D1:1").stdout)
    assert (memory["text"], memory["owner"], memory["created"]) == (
        "Caroline: I moved to Lagos in 2022.", "conv-a", "2023-05-01T13:56:00Z")
    assert cli_run(db, "import", "locomo", str(source), "--conversation", "conv-a").stdout \
        == out  # again: nothing new
    monkeypatch.setenv("GRAPHMEM_LOCOMO", str(source))  # the default file
    assert cli_run(db, "import", "locomo").stdout == "2 conversations, 5 turns\n"
    assert json.loads(cli_run(db, "--json", "stats").stdout)["memories"] == 5
    monkeypatch.setenv("GRAPHMEM_LOCOMO", str(tmp_path / "missing.json"))
    assert "snap-research/locomo" in cli_run(db, "import", "locomo", code=1).stderr
    assert cli_run(db, "import", "locomo", str(source), "--conversation", "conv-a",
                   "--conversation", "conv-z", code=1).stderr == (
        "error: no conversation conv-z in the LoCoMo file; its conversations are conv-a, "
        "conv-b\n")  # a misspelled id imports nothing, and says so
    # a sample_id is its memories' owner: one no call may name imports nothing
    raw = json.loads(source.read_text(encoding="utf-8"))
    raw[1]["sample_id"] = "conv-c\u200b"
    source.write_text(json.dumps(raw), encoding="utf-8")
    fresh = tmp_path / "fresh"
    assert "sample_id 'conv-c\\u200b' is its memories' owner, and it contains a character " \
        "that shows nothing" in cli_run(fresh, "--embedder", "hashing", "import", "locomo",
                                        str(source), code=1).stderr
    assert not fresh.exists()
    raw[1]["sample_id"] = "x" * 1995  # an owner, but its memory ids are over the limit
    source.write_text(json.dumps(raw), encoding="utf-8")
    assert "characters long; the limit is 2000" in cli_run(
        fresh, "--embedder", "hashing", "import", "locomo", str(source), code=1).stderr
    assert not fresh.exists()  # conv-a, checked first, was not written either


# -- make demo ------------------------------------------------------------------------------
DEMO_STEPS = [
    "import the sample corpus (all or nothing; a second run changes nothing)",
    "what is there",
    "a supersede chain: every version is kept; recall answers with the newest active one "
    "(the PostgreSQL 16 candidate waits for confirmation)",
    "a few procedural memories",
    *["recall: full text + vectors + graph walk, fused by RRF, re-ranked by ACT-R"] * 3,
    "simulate use: the agent recalls its deploy procedure and marks it useful",
    "the lifecycle report (a dry run: nothing changes until `lifecycle run --apply`)",
]


def _demo(db: Path) -> str:
    result = subprocess.run([sys.executable, "-m", "graphmem.demo", "--db", str(db),
                             "--embedder", "hashing"], capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    return result.stdout


def _shown(lines: list[str], command: str) -> list[str]:
    """What the demo printed under ``command``: up to the next step."""
    after = lines[lines.index(command) + 1:]
    end = next((n for n, line in enumerate(after) if line.startswith(("== ", "done in "))),
               len(after))
    while end and not after[end - 1]:
        end -= 1
    return after[:end]


def test_make_demo(tmp_path: Path) -> None:
    """What `make demo` runs (with the hashing embedder), and what it prints: each command
    as a shell takes it, followed by what that command prints."""
    db = tmp_path / "demo.db"
    out = _demo(db)
    lines = out.splitlines()
    assert [line[3:] for line in lines if line.startswith("== ")] == DEMO_STEPS
    commands = [line for line in lines if line.startswith("$ ")]
    assert len(commands) == len(DEMO_STEPS) - 1 and all(f"--db {db} " in c for c in commands)
    assert commands[0].endswith("--embedder hashing import ump "
                                "ingest/samples/agent_memories.ump.json")
    assert _shown(lines, commands[0]) == ["ingest/samples/agent_memories.ump.json: created "
                                          "301, updated 0, unchanged 0, supersede edges 11"]
    chain = _shown(lines, commands[2])
    assert [re.sub(r"\s+", " ", c.strip()) for c in chain[2:]] == [
        "2026-05-01 13:38 active Orchard stores data in PostgreSQL 14 on a single fly.io "
        "volume.",
        "2026-05-10 05:37 active Orchard stores data in PostgreSQL 15 with a read replica.",
        "2026-06-09 14:03 candidate Orchard stores data in PostgreSQL 16 with pgvector 0.7 "
        "and a read replica."]
    database = _shown(lines, commands[5])  # recall answers with the newest active version
    assert "PostgreSQL 15" in database[2] and "PostgreSQL 16" not in "".join(database)
    assert "To deploy orchard run make release then fly…" in _shown(lines, commands[4])[2]
    assert "12 recalls with useful feedback recorded" in lines
    with MemoryStore(db) as store:
        assert [m.useful_count for m in store.memories() if m.useful_count] == [12]
    report = _shown(lines, commands[7])
    assert report[:5] == ["# Archivist Lifecycle Report", "",
                          "**Generated:** 2026-07-15T18:00:00Z",
                          "**Memories Evaluated:** 162", "**Mode:** dry run (nothing changed)"]
    assert re.fullmatch(rf"done in [\d.]+ s; explore with `.*graphmem --db {db} "
                        r"--now 2026-07-15T18:00:00Z --help`", lines[-1])
    # copied into a shell, each command prints what the demo showed under it, as far as
    # the demo's later steps left it so (recalls record accesses, feedback adds versions)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout, whatever the script's
    for command, same in ((commands[1], 4), (commands[2], None), (commands[3], None),
                          (commands[7], None), (commands[4], 1), (commands[5], 1),
                          (commands[6], 1)):
        typed = subprocess.run(["bash", "-c", command[2:]], capture_output=True, text=True,
                               cwd=ROOT, timeout=120, env=env)
        assert typed.returncode == 0, (command, typed.stderr)
        got = typed.stdout.rstrip("\n").splitlines()[:same]
        shown = _shown(lines, command)[:same]
        if same == 1:  # a recall: the same columns (their widths follow the data)
            got, shown = got[0].split(), shown[0].split()
        assert got == shown, command
    again = _demo(db).splitlines()  # a second `make demo` on the same database
    [imported] = [line for line in again if line.startswith("ingest/samples/")]
    assert re.fullmatch(r"ingest/samples/agent_memories\.ump\.json: created 0, updated \d, "
                        r"unchanged \d+, supersede edges 0", imported)


@pytest.mark.parametrize(("command", "blocked", "extra"), [
    (["serve"], "fastapi", "server"), (["ui"], "uvicorn", "server"), (["mcp"], "mcp", "mcp")])
def test_a_face_without_its_extra_says_what_to_install(tmp_path: Path, command: list[str],
                                                       blocked: str, extra: str) -> None:
    """The sidecar, the dashboard and the MCP server are extras: without them the command
    names the one to install instead of failing on an import."""
    script = (f"import sys; sys.modules[{blocked!r}] = None; "
              "from graphmem.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", script, "--db", str(tmp_path / "db"),
                           *command], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert f"pip install 'graphmem[{extra}]'" in done.stderr and "Traceback" not in done.stderr


def test_a_failed_command_leaves_no_store_where_there_was_none(tmp_path: Path) -> None:
    records = json.loads(SAMPLE.read_text())[:2]
    records[1]["body"]["text"] = 5  # record 0 is fine, record 1 is not
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    new, empty = tmp_path / "new", tmp_path / "empty"
    empty.mkdir()
    for db in (new, empty):
        failed = gm(db, "import", "ump", str(bad))
        assert failed.returncode == 1 and "record 1" in failed.stderr, failed.stderr
    assert not new.exists()  # it made a store there before, empty, and said it failed
    assert empty.is_dir() and not list(empty.iterdir())
    kept = tmp_path / "kept"
    assert gm(kept, "import", "ump", str(SAMPLE)).returncode == 0
    assert gm(kept, "import", "ump", str(bad)).returncode == 1
    with MemoryStore(kept, read_only=True) as store:  # a store that was there stays
        assert store.stats().memories == len(json.loads(SAMPLE.read_text()))
    keys = tmp_path / "keys"  # a store's own file, without the store: never touched
    keys.mkdir()
    (keys / "graphmem.keys").write_text("{}")
    assert gm(keys, "import", "ump", str(bad)).returncode == 1
    assert [p.name for p in keys.iterdir()] == ["graphmem.keys"]
    try:  # in this process, while another exception is handled: the command succeeds
        raise KeyError("elsewhere")
    except KeyError:
        done = CliRunner().invoke(cli, ["--db", str(tmp_path / "quiet"), "--embedder",
                                        "hashing", "add", "kept"])
    assert done.exit_code == 0
    with MemoryStore(tmp_path / "quiet", read_only=True) as store:
        assert [m.text for m in store.memories()] == ["kept"]


def test_forget_takes_several_ids_and_checks_them_all_first(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        a, b, c = (store.add(t).id for t in ("My locker code is 4071", "The PIN is 9921",
                                             "Standup moved to Wednesday"))
    refused = cli_run(db, "forget", a, "urn:graphmem:nope", "--yes", code=1)
    assert "urn:graphmem:nope" in refused.stderr
    assert json.loads(cli_run(db, "--json", "show", a).stdout)["status"] == "active"
    assert "their text for good" in cli_run(db, "forget", a, b, code=2).output
    done = json.loads(cli_run(db, "--json", "forget", a, b, "--yes").stdout)
    assert done == [{"memory_id": a, "status": "forgotten"},
                    {"memory_id": b, "status": "forgotten"}]
    assert [json.loads(cli_run(db, "--json", "show", i).stdout)["status"]
            for i in (a, b, c)] == ["forgotten", "forgotten", "active"]


def test_stats_says_that_superseded_memories_keep_their_status(tmp_path: Path) -> None:
    db = tmp_path / "db"

    def stats() -> str:
        result = CliRunner().invoke(cli, ["--db", str(db), "--embedder", "hashing", "stats"])
        assert result.exit_code == 0, result.output
        return result.output

    with MemoryStore(db, embedder="hashing") as store:
        old = store.add("The cabinets are sage green")
    before = stats()
    assert "superseded 0," in before and "recall returns" not in before
    with MemoryStore(db, embedder="hashing") as store:
        store.supersede(old.id, store.add("The cabinets are navy now"))
    out = stats()
    assert "superseded 1," in out and "active 2" in out
    assert "(1 superseded: counted by status below, recall returns what replaced them)" in out


def test_add_dash_reads_the_text_from_standard_input(tmp_path: Path) -> None:
    db = tmp_path / "db"

    def add(given: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db),
                               "--embedder", "hashing", "add", "-"], input=given,
                              capture_output=True, text=True, timeout=300)

    added = add("Ana's flat in Porto has a balcony\n")
    assert added.returncode == 0, added.stderr
    assert json.loads(gm(db, "--json", "show", added.stdout.strip()).stdout)["text"] == \
        "Ana's flat in Porto has a balcony"
    # as 'add ""' is refused, so is empty input; bytes that are not UTF-8 are named
    empty = add("  \n")
    assert empty.returncode == 1 and "text is empty" in empty.stderr
    broken = subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db), "--embedder",
                             "hashing", "add", "-"], input=b"\xef\xbb\xbfok \xff",
                            capture_output=True, timeout=300)
    assert broken.returncode == 2 and b"standard input is not UTF-8 text (byte 7" \
        in broken.stderr
    assert json.loads(gm(db, "--json", "stats").stdout)["memories"] == 1
    # 'update --text -' reads it too, a byte order mark left out
    memory_id = added.stdout.strip()
    edited = subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db), "--embedder",
                             "hashing", "--json", "update", memory_id, "--text", "-"],
                            input="\ufeffAna's flat in Faro has a garden\n",
                            capture_output=True, text=True, timeout=300)
    assert json.loads(edited.stdout)["text"] == "Ana's flat in Faro has a garden"
    # Windows line ends are line ends; a closed standard input is said to be one
    crlf = subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db), "--embedder",
                           "hashing", "--json", "add", "-"], input=b"one line\r\ntwo\r\n",
                          capture_output=True, timeout=300)
    assert json.loads(crlf.stdout)["text"] == "one line\ntwo"
    closed = subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db), "--embedder",
                             "hashing", "add", "-"], stdin=subprocess.DEVNULL,
                            capture_output=True, timeout=300, preexec_fn=lambda: os.close(0))
    assert closed.returncode == 2 and b"standard input, which is closed" in closed.stderr


def test_an_edit_of_fields_a_version_does_not_hold_keeps_their_old_values(
        tmp_path: Path) -> None:
    """A version row holds text, subject, importance, status and kind; an update of the
    tags, project or confidence says their old values in its reason, which history shows;
    the same tags again are no change (a list given for the tuple held wrote a version)."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        memory = store.add("Standup moved online", tags=["alpha", "beta"], project="p1",
                           confidence=0.9)
        store.update(memory.id, tags=["gamma"], project="p2", confidence=0.3)
        again = store.update(memory.id, tags=["gamma"])
        assert again.version == 2
        [_, edit] = store.history(memory.id)
        assert edit.reason == ("manual_edit: confidence 0.9 -> 0.3; tags [alpha, beta] -> "
                               "[gamma]; project p1 -> p2")
        store.forget(memory.id, confirm=True)
        assert all(v.reason is None for v in store.history(memory.id))


def test_restore_backup_refuses_a_model_other_than_its_backups(tmp_path: Path) -> None:
    db = tmp_path / "db"
    assert gm(db, "add", "Ana's flat in Porto has a balcony").returncode == 0
    assert gm(db, "backup", str(tmp_path / "bk")).returncode == 0

    def restore(target: str, spec: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "graphmem", "--db",
                               str(tmp_path / target), "--embedder", spec, "restore-backup",
                               str(tmp_path / "bk")], capture_output=True, text=True,
                              timeout=300)

    other = restore("other", "hashing:128")  # it restored with the backup's model
    assert other.returncode == 1 and "was embedded with hashing-384" in other.stderr
    bogus = restore("bogus", "bogus")
    assert bogus.returncode == 1 and "unknown embedder 'bogus'" in bogus.stderr
    assert not (tmp_path / "other").exists() and not (tmp_path / "bogus").exists()
    assert restore("same", "hashing").returncode == 0
