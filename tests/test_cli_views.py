"""Views that agree, through the command line: `lifecycle evaluate`, `lifecycle report`
and the archive_candidates query give one answer per memory before the first
`lifecycle run --apply`; the report's headers count every recommended memory; the
analyst's queries leave out stop words, fragments and tombstoned memories."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graphmem import MemoryStore, Settings
from graphmem._time import parse_iso
from graphmem.cli import cli
from ingest.ump import SAMPLE_PATH, import_ump

NOW = "2026-11-30T12:00:00Z"  # months after the sample: most of it has decayed


def j(db: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", str(db), "--now", NOW, "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("views") / "sample"
    with MemoryStore(db, embedder="hashing", clock=lambda: parse_iso(NOW)) as store:
        import_ump(store, SAMPLE_PATH)
    return db


def test_evaluate_report_and_archive_candidates_agree(sample: Path) -> None:
    evaluated = {e["memory_id"]: e for e in j(sample, "lifecycle", "evaluate")}
    report = j(sample, "lifecycle", "report")
    candidates = j(sample, "query", "archive_candidates")
    archive = {i for i, e in evaluated.items() if e["recommended_action"] == "archive"}
    assert len(archive) == report["counts"]["archive"] > 100
    assert {r["id"] for r in candidates} == archive
    for row in candidates:  # the same importance everywhere: today's, decayed
        assert row["importance"] == pytest.approx(evaluated[row["id"]]["metrics"]["importance"])
        assert row["importance"] < row["stored_importance"]
    for entry in report["evaluations"]:
        mine = evaluated[entry["memory_id"]]
        assert (entry["recommended_action"], entry["reasons"]) == (
            mine["recommended_action"], mine["reasons"])
        assert entry["metrics"]["importance"] == pytest.approx(mine["metrics"]["importance"])
    for action in ("promote", "review"):
        assert report["counts"][action] == sum(e["recommended_action"] == action
                                               for e in evaluated.values())
    one = next(iter(archive))
    [single] = j(sample, "lifecycle", "evaluate", one)
    assert single == evaluated[one]
    # imported importance 0.50 reads the same (decayed) value in all three
    first = candidates[0]
    assert evaluated[first["id"]]["metrics"]["importance"] == pytest.approx(first["importance"])


def test_what_the_report_predicts_is_what_apply_does(sample: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    j(sample, "backup", str(tmp_path / "b"))
    CliRunner().invoke(cli, ["--db", str(copy), "restore-backup", str(tmp_path / "b")])
    predicted = {e["memory_id"] for e in j(copy, "lifecycle", "evaluate")
                 if e["recommended_action"] == "archive"}
    with MemoryStore(sample, read_only=True) as original:
        before = {m.id for m in original.memories() if m.status.value == "archived"}
    with MemoryStore(copy, clock=lambda: parse_iso(NOW),
                     settings=Settings(auto_archive_enabled=True)) as store:
        store.run_lifecycle(apply=True)
        archived = {m.id for m in store.memories() if m.status.value == "archived"}
    assert archived - before == predicted


def test_report_headers_count_every_recommended_memory(sample: Path) -> None:
    report = j(sample, "lifecycle", "report")
    result = CliRunner().invoke(cli, ["--db", str(sample), "--now", NOW, "lifecycle",
                                      "report"])
    lines = result.stdout.splitlines()
    archives = report["counts"]["archive"]
    assert f"## Archives ({archives})" in lines
    assert f"... and {archives - 20} more" in lines
    assert f"## Manual Review Required ({report['counts']['review']})" in lines


STOP = {"a", "an", "the", "to", "of", "in", "on", "and", "or", "with", "without", "for"}


def test_top_entities_without_stop_words_or_fragments(sample: Path) -> None:
    rows = j(sample, "query", "top_entities", "--param", "limit=200")
    assert len(rows) >= 100
    for row in rows:
        words = row["entity"].split()
        assert words[0] not in STOP and words[-1] not in STOP, row
        assert not re.search(r"^[-./:]|[-./:]$", row["entity"]), row
        assert not {"the", "a", "an"} & set(words), row
        assert row["entity"] not in ("prof", "dr", "mr", "ms"), row  # a title alone
    names = {r["entity"] for r in rows}
    assert {"nadia", "orchard", "adeyemi", "fao-56"} <= names  # a title is no part of a name
    everything = j(sample, "query", "MATCH (m:Memory) UNWIND m.entities AS e RETURN DISTINCT "
                               "e AS entity")
    # a memory's entities are its knowledge graph's: no fragments to drop in the first place
    assert not {"to", "prof", "fao-", "greenhouse bed-", "updated the unifi"} & {
        r["entity"] for r in everything}


def test_tombstoned_memories_only_when_asked(sample: Path, tmp_path: Path) -> None:
    referenced = j(sample, "query", "most_referenced", "--param", "limit=500")
    assert referenced and "tombstoned" not in {r["status"] for r in referenced}
    everything = j(sample, "query", "most_referenced", "--param", "limit=500", "--param",
                   "include_tombstoned=true")
    assert "tombstoned" in {r["status"] for r in everything}
    # central_memories reads the centrality a lifecycle run stored: on a copy
    copy = tmp_path / "copy"
    j(sample, "backup", str(tmp_path / "b"))
    CliRunner().invoke(cli, ["--db", str(copy), "restore-backup", str(tmp_path / "b")])
    j(copy, "lifecycle", "run", "--apply")
    central = j(copy, "query", "central_memories", "--param", "limit=500")
    assert central and "tombstoned" not in {r["status"] for r in central}
    wide = j(copy, "query", "central_memories", "--param", "limit=500", "--param",
             "include_tombstoned=true")
    assert "tombstoned" in {r["status"] for r in wide} and len(wide) > len(central)
