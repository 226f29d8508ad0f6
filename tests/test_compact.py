"""Markdown dailies and the memory-compact sweep, every rule of memory-compact on a fixture tree."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from graphmem import MemoryStore, Status
from ingest.compact import main, sweep
from ingest.markdown import import_markdown

TODAY = "2026-06-02"

DAILY = """# Memory — 2026-05-21 (Thursday)
<!-- mc:item 2026-05-21T09:00 -->

## What Happened
- Paired with Nadia on the harvest calendar
- Fixed the flaky sync test
  - it was a race in the retry loop

## Decisions
- Host orchard on fly.io in jnb → see [wiki/orchard/hosting]
- Keep the standup at 11:30 WAT [keep]
- Try a darker palette for the dashboard
- Use PostgreSQL 16 -> see [wiki/orchard/database]

## Key Lessons
- Pin the clock in time-dependent tests → see [wiki/testing/clocks]
- Coffee after 14:00 is a bad idea

## Drift Incident System
- Phase 1 shipped
- Phase 2 shipped

## Carry Forward
- Finish the migration plan

## Reference
- skill-run: sr-20260521-a1
- https://github.com/nadia-okafor/orchard/pull/212
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "agent"
    memory = root / "workspace" / "memory"
    (memory / "dreaming").mkdir(parents=True)
    (memory / "cold-storage").mkdir()
    (memory / "2026-05-21.md").write_text(DAILY, encoding="utf-8")
    (memory / "2026-05-30.md").write_text("# Memory — 2026-05-30\n\n## Decisions\n- recent\n")
    (memory / "2026-05-10.md").write_text(
        "# Memory — 2026-05-10\n<!-- mc:v1 -->\n<!-- mc:compacted 2026-05-18 -->\n")
    (memory / "2026-05-15.md").write_text("# Memory — 2026-05-15\n\n## What Happened\n- x\n")
    (memory / "cold-storage" / "2026-05-15.md").write_text("the first backup, keep me\n")
    (memory / "dreaming" / "2026-05-01.md").write_text("## Decisions\n- a dream\n")
    (memory / "notes.md").write_text("not a daily file\n")
    dev = root / "workspace-dev" / "memory"
    dev.mkdir(parents=True)
    (dev / "2026-05-20.md").write_text("# Memory — 2026-05-20\n\n## Decisions\n- dev thing "
                                       "[keep]\n\n## What Happened\n- noise\n")
    return root


def run(root: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    options = {"apply": "--apply" in args, "verbose": "-v" in args,
               "include_recent": "--include-recent" in args}
    workspace = args[args.index("--workspace") + 1] if "--workspace" in args else None
    from datetime import date

    code = sweep(root, today=date.fromisoformat(TODAY), workspace=workspace, out=out, err=err,
                 **options)
    return code, out.getvalue(), err.getvalue()


def test_dry_run_prints_the_plan_and_changes_nothing(tree: Path) -> None:
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    code, out, _ = run(tree)
    assert code == 0
    lines = out.splitlines()
    assert lines == [
        "[PLAN] workspace/memory/2026-05-15.md  age=18d  lines 4→5 (+25%)  bullets kept=0 "
        "dropped=1",
        "[PLAN] workspace/memory/2026-05-21.md  age=12d  lines 28→17 (-39%)  bullets kept=6 "
        "dropped=7",
        "[PLAN] workspace-dev/memory/2026-05-20.md  age=13d  lines 7→8 (+14%)  bullets kept=1 "
        "dropped=1",
        "[memory-compact] dry run: would compact 3 files (lines 39→30), 0 failed; nothing "
        "written (--apply writes)",
    ]
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before


def test_verbose_previews_the_output(tree: Path) -> None:
    _, out, _ = run(tree, "-v", "--workspace", "workspace")
    assert "    <!-- mc:v1 -->" in out.splitlines()


def test_verbose_preview_is_capped_at_20_lines(tree: Path) -> None:
    memory = tree / "workspace-dev" / "memory"
    long = "# Memory — 2026-05-19\n\n## Decisions\n" + "".join(
        f"- decision {n} [keep]\n" for n in range(30)) + "\n## What Happened\n- gone\n"
    (memory / "2026-05-19.md").write_text(long)
    _, out, _ = run(tree, "-v", "--workspace", "workspace-dev")
    lines = out.splitlines()
    plans = [n for n, line in enumerate(lines) if line.startswith("[PLAN]")]
    assert [lines[n].split()[1] for n in plans] == ["workspace-dev/memory/2026-05-19.md",
                                                     "workspace-dev/memory/2026-05-20.md"]
    preview = lines[plans[0] + 1:plans[1]]
    assert len(preview) == 20  # the output has 37 lines; the preview stops at 20
    assert "lines 36→37" in lines[plans[0]]
    assert preview == ["    " + line for line in [
        "# Memory — 2026-05-19", "<!-- mc:v1 -->", "<!-- mc:compacted 2026-06-02 -->", "",
        "## Decisions", *(f"- decision {n} [keep]" for n in range(15))]]
    short = lines[plans[1] + 1:-1]  # an output shorter than the cap is shown whole
    assert len(short) == 8 and short[-1].startswith("    _Full original in cold storage")
    _, quiet, _ = run(tree, "--workspace", "workspace-dev")
    assert not [line for line in quiet.splitlines() if line.startswith("    ")]


SUB_BULLETS = """# Memory — 2026-05-18

## Decisions
- Move the cron to 23:45 [keep]
  - because the backup runs at 23:00
  - and takes 30 minutes
- Try the blue theme
  - nobody liked the red one
  - see the thread [keep]
- Rotate the API keys monthly
  - runbook → see [wiki/ops/keys]
- Drop the old staging box
    continued on a second line

## Key Lessons
- Flaky tests are bugs
  - even the ones that pass on retry
"""


def test_sub_bullets_travel_with_their_bullet(tree: Path, store: MemoryStore) -> None:
    memory = tree / "workspace-dev" / "memory"
    (memory / "2026-05-18.md").write_text(SUB_BULLETS)
    code, out, _ = run(tree, "--apply", "--workspace", "workspace-dev")
    assert code == 0 and "[PLAN] workspace-dev/memory/2026-05-18.md  age=15d  lines 17→15 " \
        "(-12%)  bullets kept=3 dropped=2" in out
    # A kept bullet keeps its sub-bullets; a [keep] or a wiki pointer inside a
    # sub-bullet keeps the whole bullet; a dropped bullet drops with its sub-bullets.
    assert (memory / "2026-05-18.md").read_text() == """# Memory — 2026-05-18
<!-- mc:v1 -->
<!-- mc:compacted 2026-06-02 -->

## Decisions
- Move the cron to 23:45 [keep]
  - because the backup runs at 23:00
  - and takes 30 minutes
- Try the blue theme
  - nobody liked the red one
  - see the thread [keep]
- Rotate the API keys monthly
  - runbook → see [wiki/ops/keys]

_Full original in cold storage: [cold-storage/2026-05-18.md](cold-storage/2026-05-18.md)_
"""
    assert (memory / "cold-storage" / "2026-05-18.md").read_text() == SUB_BULLETS
    import_markdown(store, tree, workspace="workspace-dev")
    texts = {m.text for m in store.memories() if "2026-05-18" in m.id}
    assert texts == {
        "Move the cron to 23:45 [keep]; because the backup runs at 23:00; and takes 30 "
        "minutes",
        "Try the blue theme; nobody liked the red one; see the thread [keep]",
        "Rotate the API keys monthly; runbook → see [wiki/ops/keys]",
    }


def test_apply_rewrites_with_markers_and_backs_up(tree: Path) -> None:
    code, out, _ = run(tree, "--apply")
    assert code == 0
    assert out.splitlines()[-1] == "[memory-compact] applied: written=3 failed=0"
    memory = tree / "workspace" / "memory"
    assert (memory / "cold-storage" / "2026-05-21.md").read_text() == DAILY
    assert (memory / "2026-05-21.md").read_text() == """# Memory — 2026-05-21 (Thursday)
<!-- mc:v1 -->
<!-- mc:compacted 2026-06-02 -->

## Decisions
- Host orchard on fly.io in jnb → see [wiki/orchard/hosting]
- Keep the standup at 11:30 WAT [keep]
- Use PostgreSQL 16 -> see [wiki/orchard/database]

## Key Lessons
- Pin the clock in time-dependent tests → see [wiki/testing/clocks]

## Reference
- skill-run: sr-20260521-a1
- https://github.com/nadia-okafor/orchard/pull/212

_Full original in cold storage: [cold-storage/2026-05-21.md](cold-storage/2026-05-21.md)_
"""
    # Sections with no surviving bullet are omitted; unknown ones drop.
    compacted = (memory / "2026-05-15.md").read_text()
    assert "## " not in compacted and "mc:compacted 2026-06-02" in compacted
    # An existing cold copy is never overwritten.
    assert (memory / "cold-storage" / "2026-05-15.md").read_text() == "the first backup, keep me\n"
    # Recent files, compacted files, subfolders and other files are untouched.
    assert (memory / "2026-05-30.md").read_text().endswith("- recent\n")
    assert (memory / "dreaming" / "2026-05-01.md").read_text() == "## Decisions\n- a dream\n"
    assert not (memory / "cold-storage" / "2026-05-10.md").exists()


def test_idempotent(tree: Path) -> None:
    run(tree, "--apply")
    snapshot = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    code, out, _ = run(tree, "--apply")
    assert code == 0 and out.splitlines() == ["[memory-compact] applied: written=0 failed=0"]
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == snapshot


def test_include_recent_and_max_age(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(tree, "--include-recent", "--workspace", "workspace")
    assert [line.split()[1] for line in out.splitlines() if line.startswith("[PLAN]")] == [
        "workspace/memory/2026-05-15.md", "workspace/memory/2026-05-21.md",
        "workspace/memory/2026-05-30.md"]  # the compacted 2026-05-10 stays skipped
    assert "2026-05-30.md  age=3d" in out

    def planned(*args: str) -> list[str]:
        capsys.readouterr()
        assert main(["--root", str(tree), "--today", TODAY, *args]) == 0
        return [line.split()[1].rsplit("/", 1)[1]
                for line in capsys.readouterr().out.splitlines() if line.startswith("[PLAN]")]

    assert planned("--max-age-days", "15") == ["2026-05-15.md"]
    # the window's edge: a file exactly N days old is due, one a day younger is not
    assert planned("--max-age-days", "12") == ["2026-05-15.md", "2026-05-21.md",
                                               "2026-05-20.md"]
    assert planned("--max-age-days", "13") == ["2026-05-15.md", "2026-05-20.md"]
    assert planned("--max-age-days", "19") == []
    assert planned("--max-age-days", "0") == ["2026-05-15.md", "2026-05-21.md",
                                              "2026-05-30.md", "2026-05-20.md"]
    assert planned() == planned("--max-age-days", "7")


def test_a_file_that_cannot_be_written(tree: Path) -> None:
    dev = tree / "workspace-dev" / "memory"
    (dev / "cold-storage").write_text("a file where the cold-storage folder should be\n")
    code, out, err = run(tree, "--apply")
    assert code == 0  # at least one written while another failed
    assert out.splitlines()[-1] == "[memory-compact] applied: written=2 failed=1"
    assert "failed: workspace-dev/memory/2026-05-20.md" in err
    assert "## What Happened" in (dev / "2026-05-20.md").read_text()  # left as it was
    code, out, _ = run(tree, "--apply", "--workspace", "workspace-dev")
    assert code == 1 and out.splitlines()[-1] == "[memory-compact] applied: written=0 failed=1"


def test_exit_codes_of_the_console_script(tree: Path) -> None:
    script = [sys.executable, "-m", "ingest.compact"]
    ok = subprocess.run([*script, "--root", str(tree), "--today", TODAY],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.startswith("[PLAN]")
    for bad in (["--max-age-days", "soon"], ["--workspace", "nope"], ["--frobnicate"],
                ["--today", "tomorrow"]):
        result = subprocess.run([*script, "--root", str(tree), *bad], capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 2, bad
        assert "error" in result.stderr and "Traceback" not in result.stderr
    missing = subprocess.run([*script, "--root", str(tree / "nope")], capture_output=True,
                             text=True, timeout=120)
    assert missing.returncode == 2 and "not a directory" in missing.stderr


def test_markdown_import(store: MemoryStore, tree: Path) -> None:
    result = import_markdown(store, tree)
    by_text = {m.text: m for m in store.memories()}
    hosting = by_text["Host orchard on fly.io in jnb → see [wiki/orchard/hosting]"]
    assert hosting.created.isoformat() == "2026-05-21T12:00:00+00:00"
    assert hosting.provenance["section"] == "Decisions"
    assert hosting.provenance["file"] == "workspace/memory/2026-05-21.md"
    assert by_text["Keep the standup at 11:30 WAT [keep]"].tags == ("keep",)
    assert "Fixed the flaky sync test; it was a race in the retry loop" in by_text
    wiki = store.get("urn:wiki:wiki/orchard/hosting")
    assert wiki.kind.value == "semantic" and wiki.subject == "wiki/orchard/hosting"
    assert any(x.other == wiki.id and x.kind == "references" for x in store.links(hosting.id))
    assert "a dream" not in by_text  # dreaming/ is not a daily file
    again = import_markdown(store, tree)
    assert again.created == [] and len(again.unchanged) == len(result.created)


def test_compact_with_a_store_archives_dropped_bullets(tree: Path, tmp_path: Path) -> None:
    db = tmp_path / "db"
    cli = [sys.executable, "-m", "graphmem", "--db", str(db), "--embedder", "hashing",
           "--now", f"{TODAY}T09:00:00Z"]
    subprocess.run([*cli, "import", "markdown", str(tree)], check=True, capture_output=True,
                   timeout=300)
    done = subprocess.run([*cli, "compact", "--root", str(tree), "--apply"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "written=3 failed=0" in done.stdout
    with MemoryStore(db) as store:
        by_text = {m.text: m for m in store.memories()}
        dropped = by_text["Try a darker palette for the dashboard"]
        assert dropped.status is Status.ARCHIVED
        assert dropped.provenance["cold_storage"] == "workspace/memory/cold-storage/2026-05-21.md"
        kept = by_text["Host orchard on fly.io in jnb → see [wiki/orchard/hosting]"]
        assert kept.status is Status.ACTIVE
        assert any(x.kind == "references" for x in store.links(kept.id))
        assert by_text["Phase 1 shipped"].status is Status.ARCHIVED


def test_a_wrong_or_flat_root_is_an_error_on_both_faces(tree: Path) -> None:
    """As `import markdown` does: a root without workspace*/memory folders is a mistake
    (exit 2), not "nothing to compact"."""
    flat = tree / "workspace" / "memory"  # the daily files' own folder
    empty = tree / "workspace" / "memory" / "dreaming"
    script = [sys.executable, "-m", "ingest.compact"]
    for root, says in ((flat, "holds daily files itself"),
                       (empty, "no workspace*/memory folder under --root")):
        result = subprocess.run([*script, "--root", str(root), "--now", TODAY],
                                capture_output=True, text=True, timeout=120)
        assert (result.returncode, result.stdout) == (2, ""), result.stderr
        assert says in result.stderr
        cli = subprocess.run([sys.executable, "-m", "graphmem", "--now", TODAY, "compact",
                              "--root", str(root)], capture_output=True, text=True,
                             timeout=120)
        assert cli.returncode == 2 and says in cli.stderr and "usage:" in cli.stderr


def test_now_names_the_day_on_both_faces(tree: Path) -> None:
    """`--now` as everywhere in graphmem (a date or a time); `--today` still works."""
    script = [sys.executable, "-m", "ingest.compact", "--root", str(tree)]
    outs = [subprocess.run([*script, *flag], capture_output=True, text=True, timeout=120)
            for flag in (["--now", TODAY], ["--now", f"{TODAY}T23:00:00Z"],
                         ["--today", TODAY])]
    assert all(out.returncode == 0 for out in outs)
    assert outs[0].stdout == outs[1].stdout == outs[2].stdout
    assert "2026-05-21.md  age=12d" in outs[0].stdout
    cli = subprocess.run([sys.executable, "-m", "graphmem", "--now", TODAY, "compact",
                          "--root", str(tree)], capture_output=True, text=True, timeout=120)
    assert cli.stdout == outs[0].stdout


def test_a_file_compacting_would_only_lengthen_stays(tree: Path) -> None:
    memory = tree / "workspace" / "memory"
    kept = "# Memory — 2026-05-12\n\n## Decisions\n- Use uv for installs [keep]\n"
    (memory / "2026-05-12.md").write_text(kept, encoding="utf-8")
    code, out, _ = run(tree, "--apply", "--workspace", "workspace")
    assert code == 0
    assert ("[SKIP] workspace/memory/2026-05-12.md  lines 4→8: nothing would go, so it "
            "stays as it is") in out.splitlines()
    assert (memory / "2026-05-12.md").read_text(encoding="utf-8") == kept
    assert not (memory / "cold-storage" / "2026-05-12.md").exists()
    # a short file that loses a bullet is compacted, even if the markers lengthen it
    assert "[PLAN] workspace/memory/2026-05-15.md  age=18d  lines 4→5" in out


def test_json_compact_gives_each_file_as_data(tree: Path) -> None:
    import json

    out = subprocess.run([sys.executable, "-m", "graphmem", "--json", "--now", TODAY,
                          "compact", "--root", str(tree)], capture_output=True, text=True,
                         timeout=120)
    body = json.loads(out.stdout)
    assert body["applied"] is False and body["exit_code"] == 0
    assert body["summary"] == {"planned": 3, "written": 0, "skipped": 0, "failed": 0,
                               "refused": 0}
    assert body["files"][1] == {"file": "workspace/memory/2026-05-21.md", "age_days": 12,
                                "lines_before": 28, "lines_after": 17, "bullets_kept": 6,
                                "bullets_dropped": 7, "status": "planned"}
    assert "[PLAN]" not in out.stdout
