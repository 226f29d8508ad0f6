"""Files stay where they belong: the compact sweep and the Markdown import never read or
write outside their root through a symbolic link.

Links are planted where a workspace, ``memory/``, ``cold-storage/``, a daily file, its cold
copy or the sweep's temporary file should be; pointing outside the root, at another daily,
or nowhere; before planning and between planning and writing (a race). Every case checks
that the tree outside the root is byte for byte as it was, that the refused file is
reported by name, that the exit code follows the sweep's rules, and that the import
refuses without changing the store.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import MemoryStore, RecordError
from ingest.compact import archive_in_store, plan_files, sweep, write
from ingest.markdown import UnsafePathError, import_markdown

EXAMPLES = int(os.environ.get("GRAPHMEM_HOSTILE_EXAMPLES", "40"))
FAST = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
TODAY = date(2026, 6, 2)
DAYS = ("2026-05-01.md", "2026-05-02.md")
SECRET = "OUTSIDE-SECRET"


def daily(day: str, words: str = "inside") -> str:
    return (f"# Memory — {day[:10]}\n\n## What Happened\n- {words} happened on {day[:10]}\n\n"
            f"## Decisions\n- {words} decision [keep]\n")


def snapshot(top: Path) -> dict[str, Any]:
    """Every entry under ``top`` without following links: bytes, link targets, types."""
    out: dict[str, Any] = {}
    for folder, dirs, files in os.walk(top, followlinks=False):
        for name in dirs + files:
            path = Path(folder) / name
            rel = str(path.relative_to(top))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_fifo():
                out[rel] = ("fifo",)
            elif path.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", path.read_bytes())
    return out


def make_outside(base: Path) -> Path:
    """A tree outside the root shaped like the inside, so that a followed link would
    find daily files to compact and folders to write into."""
    out = base / "outside"
    for sub in ("workspace/memory", "memory", "cold"):
        (out / sub).mkdir(parents=True)
    for day in DAYS:
        for sub in ("workspace/memory", "memory"):
            (out / sub / day).write_text(daily(day, SECRET), encoding="utf-8")
        (out / "cold" / day).write_text(f"an outside cold copy {SECRET}\n")
    (out / "secret.md").write_text(daily("2026-05-01", SECRET), encoding="utf-8")
    (out / "victim.txt").write_text("must never change\n")
    return out


def run(root: Path, *, apply: bool = True, **options: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = sweep(root, today=TODAY, apply=apply, out=out, err=err, **options)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """``root`` with one workspace and two old dailies, and the outside tree."""
    outside = make_outside(tmp_path)
    root = tmp_path / "agent"
    memory = root / "workspace" / "memory"
    memory.mkdir(parents=True)
    for day in DAYS:
        (memory / day).write_text(daily(day), encoding="utf-8")
    return root, outside


# -- one class at a time ---------------------------------------------------------------
@pytest.mark.parametrize("target", ["outside", "other daily", "dangling"])
def test_a_linked_daily_is_refused_and_never_followed(world: tuple[Path, Path],
                                                      target: str) -> None:
    root, outside = world
    memory = root / "workspace" / "memory"
    link = memory / "2026-05-03.md"
    link.symlink_to({"outside": outside / "secret.md", "other daily": memory / DAYS[0],
                     "dangling": outside / "nothing-here.md"}[target])
    before = snapshot(outside)
    code, out, err = run(root)
    assert code == 0  # the two real files were written
    assert out.splitlines()[-1] == "[memory-compact] applied: written=2 failed=1"
    assert err.splitlines() == [
        "[memory-compact] refused: workspace/memory/2026-05-03.md: is a symbolic link (to "
        f"{os.readlink(link)!r}); links under the root are never followed: replace the link "
        "with the real file or folder"]
    assert snapshot(outside) == before
    assert link.is_symlink() and os.readlink(link) == err.split("(to '")[1].split("'")[0]
    assert not (memory / "cold-storage" / "2026-05-03.md").exists()
    for day in DAYS:  # the real files are compacted and backed up as usual
        assert (memory / "cold-storage" / day).read_text() == daily(day)
        assert "<!-- mc:compacted 2026-06-02 -->" in (memory / day).read_text()


@pytest.mark.parametrize("target", ["outside", "dangling"])
def test_a_linked_cold_storage_folder_is_refused(world: tuple[Path, Path], target: str
                                                 ) -> None:
    root, outside = world
    memory = root / "workspace" / "memory"
    (memory / "cold-storage").symlink_to(outside / ("cold" if target == "outside" else "nope"))
    before, inside = snapshot(outside), snapshot(root)
    code, out, err = run(root)
    assert code == 1  # every targeted file failed
    assert out.splitlines()[-1] == "[memory-compact] applied: written=0 failed=2"
    assert [line.split(": is a symbolic link")[0] for line in err.splitlines()] == [
        f"[memory-compact] refused: workspace/memory/{day}: workspace/memory/cold-storage"
        for day in DAYS]
    assert snapshot(outside) == before
    assert snapshot(root) == inside  # refused: nothing changed inside either


@pytest.mark.parametrize("target", ["outside", "dangling", "other cold copy"])
def test_a_linked_cold_copy_is_refused(world: tuple[Path, Path], target: str) -> None:
    root, outside = world
    cold = root / "workspace" / "memory" / "cold-storage"
    cold.mkdir()
    (cold / "kept.md").write_text("another cold copy\n")
    (cold / DAYS[0]).symlink_to({"outside": outside / "victim.txt",
                                 "dangling": outside / "nothing-here",
                                 "other cold copy": cold / "kept.md"}[target])
    before, inside = snapshot(outside), snapshot(root)
    code, out, err = run(root)
    assert code == 0 and out.splitlines()[-1] == \
        "[memory-compact] applied: written=1 failed=1"
    assert err.startswith(f"[memory-compact] refused: workspace/memory/{DAYS[0]}: "
                          f"workspace/memory/cold-storage/{DAYS[0]}: is a symbolic link")
    assert snapshot(outside) == before
    after = snapshot(root)
    for rel in (f"workspace/memory/{DAYS[0]}", f"workspace/memory/cold-storage/{DAYS[0]}",
                "workspace/memory/cold-storage/kept.md"):
        assert after[rel] == inside[rel]  # the refused daily is left as it was


def test_a_planted_temporary_link_is_removed_not_written_through(world: tuple[Path, Path]
                                                                ) -> None:
    root, outside = world
    memory = root / "workspace" / "memory"
    (memory / "cold-storage").mkdir()
    for day in DAYS:  # the names the sweep writes its temporary files under
        (memory / f".{day}.tmp").symlink_to(outside / "victim.txt")
        (memory / "cold-storage" / f".{day}.tmp").symlink_to(outside / "victim.txt")
    before = snapshot(outside)
    code, out, _ = run(root)
    assert code == 0 and "written=2 failed=0" in out
    assert snapshot(outside) == before
    assert sorted(p.name for p in memory.iterdir()) == [*DAYS, "cold-storage"]
    assert sorted(p.name for p in (memory / "cold-storage").iterdir()) == list(DAYS)


@pytest.mark.parametrize("where", ["workspace", "memory"])
@pytest.mark.parametrize("target", ["outside", "other workspace"])
def test_a_linked_workspace_or_memory_folder_is_refused(world: tuple[Path, Path], where: str,
                                                        target: str) -> None:
    root, outside = world
    if where == "workspace":
        link = root / "workspace-linked"
        link.symlink_to(outside / "workspace" if target == "outside" else root / "workspace")
        shown = "workspace-linked"
    else:
        (root / "workspace-linked").mkdir()
        link = root / "workspace-linked" / "memory"
        link.symlink_to(outside / "memory" if target == "outside"
                        else root / "workspace" / "memory")
        shown = "workspace-linked/memory"
    before = snapshot(outside)
    code, out, err = run(root)
    assert (code, out.splitlines()[-1]) == (0, "[memory-compact] applied: written=2 failed=1")
    assert err.startswith(f"[memory-compact] refused: {shown}: is a symbolic link")
    assert snapshot(outside) == before
    # Named on its own, the linked workspace is a failed target (1), not a bad argument (2).
    code, out, err = run(root, workspace="workspace-linked")
    assert code == 1 and "written=0 failed=1" in out and "refused: " + shown in err
    assert snapshot(outside) == before


def test_a_fifo_named_like_a_daily_is_refused_without_hanging(world: tuple[Path, Path],
                                                              store: MemoryStore) -> None:
    root, _ = world
    os.mkfifo(root / "workspace" / "memory" / "2026-05-03.md")
    code, out, err = run(root)
    assert (code, out.splitlines()[-1]) == (0, "[memory-compact] applied: written=2 failed=1")
    assert "refused: workspace/memory/2026-05-03.md: is not a regular file" in err
    with pytest.raises(UnsafePathError, match=r"2026-05-03\.md: is not a regular file"):
        import_markdown(store, root)


def test_the_dry_run_reports_refusals_too(world: tuple[Path, Path]) -> None:
    root, outside = world
    (root / "workspace" / "memory" / "2026-05-03.md").symlink_to(outside / "secret.md")
    before = snapshot(root)
    code, out, err = run(root, apply=False)
    assert code == 0  # a dry run writes nothing, so nothing failed
    assert [line[:40] for line in out.splitlines()][:-1] == [
        f"[PLAN] workspace/memory/{day}  age=3"[:40] for day in DAYS]
    assert out.splitlines()[-1].endswith(", 1 failed; nothing written (--apply writes)")
    assert "refused: workspace/memory/2026-05-03.md: is a symbolic link" in err
    assert snapshot(root) == before


# -- links swapped in after planning (the race between the check and the write) ---------
def _swap(path: Path, target: Path) -> None:
    """Replace ``path`` by a link to ``target`` atomically (as an attacker would)."""
    tmp = path.with_name(path.name + ".swap")
    tmp.symlink_to(target)
    if path.is_dir() and not path.is_symlink():
        path.rename(path.with_name(path.name + ".moved"))
    os.replace(tmp, path)


@pytest.mark.parametrize("what", ["daily", "memory", "workspace", "cold-storage", "cold copy"])
def test_a_link_swapped_in_after_planning_is_not_followed(world: tuple[Path, Path],
                                                          what: str) -> None:
    root, outside = world
    memory = root / "workspace" / "memory"
    (memory / "cold-storage").mkdir()
    plans, problems = plan_files(root, today=TODAY)
    assert problems == [] and len(plans) == 2
    victim = {"daily": (memory / DAYS[0], outside / "secret.md"),
              "memory": (memory, outside / "memory"),
              "workspace": (root / "workspace", outside / "workspace"),
              "cold-storage": (memory / "cold-storage", outside / "cold"),
              "cold copy": (memory / "cold-storage" / DAYS[0], outside / "victim.txt")}[what]
    _swap(*victim)
    before = snapshot(outside)
    with pytest.raises(UnsafePathError, match="is a symbolic link"):
        write(plans[0])
    assert snapshot(outside) == before


def test_a_daily_changed_after_planning_is_not_overwritten(world: tuple[Path, Path]) -> None:
    root, _ = world
    plans, _ = plan_files(root, today=TODAY)
    path = root / "workspace" / "memory" / DAYS[0]
    path.write_text(daily(DAYS[0]) + "- a late bullet\n")
    with pytest.raises(RecordError, match="changed since it was planned"):
        write(plans[0])
    assert path.read_text().endswith("- a late bullet\n")
    assert not (path.parent / "cold-storage" / DAYS[0]).exists()


def test_a_link_flipping_during_sweeps_never_leads_outside(tmp_path: Path) -> None:
    """An attacker swaps ``cold-storage`` between a folder and a link to the outside as
    fast as it can while sweeps run: whatever the interleaving, nothing outside changes
    and every file is either written or reported."""
    outside = make_outside(tmp_path)
    root = tmp_path / "agent"
    memory = root / "workspace" / "memory"
    memory.mkdir(parents=True)
    before = snapshot(outside)
    stop = threading.Event()
    cold = memory / "cold-storage"

    def flip() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            with contextlib.suppress(OSError):
                if cold.is_dir() and not cold.is_symlink():
                    cold.rename(memory / f"moved-{n}")  # the sweep may hold it open
            with contextlib.suppress(OSError):
                # a link left by a replace that failed (the sweep had made the folder
                # again) would stop every later flip: start from none
                (memory / "flip").unlink(missing_ok=True)
                (memory / "flip").symlink_to(outside / "cold")
                os.replace(memory / "flip", cold)
            time.sleep(0.001)
            with contextlib.suppress(OSError):
                cold.unlink()  # the sweep makes a real one again
            time.sleep(0.001)

    flipper = threading.Thread(target=flip, daemon=True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads trade the interpreter often, so sweeps interleave
    flipper.start()
    written = refused = 0
    try:
        # at least 40 sweeps, and on until both outcomes were seen (a slow machine may
        # need more rounds before the link is in place at the moment a sweep looks)
        for n in range(1000):
            if n >= 40 and written and refused:
                break
            for day in DAYS:
                (memory / day).write_text(daily(day, f"round {n}"), encoding="utf-8")
            code, out, err = run(root)
            assert "Traceback" not in err and code in (0, 1)
            assert len(err.splitlines()) == int(out.split("failed=")[1])
            written += int(out.split("written=")[1].split()[0])
            refused += err.count("refused: ")
    finally:
        stop.set()
        flipper.join(timeout=10)
        sys.setswitchinterval(interval)
    assert snapshot(outside) == before
    assert written and refused  # the race was run both ways


# -- the store's follow-up and the console script ---------------------------------------
def test_a_linked_cold_copy_of_a_compacted_file_is_not_imported(
        world: tuple[Path, Path], store: MemoryStore) -> None:
    """A sweep with a store re-reads the cold copy of files compacted before: a link
    planted there is refused and nothing of its target reaches the store."""
    root, outside = world
    assert run(root)[0] == 0
    cold = root / "workspace" / "memory" / "cold-storage" / DAYS[0]
    cold.unlink()
    cold.symlink_to(outside / "secret.md")
    code, out, err = run(root, on_written=lambda plan: archive_in_store(store, plan, root))
    assert code == 1 and "written=0 failed=1" in out
    assert f"refused: workspace/memory/{DAYS[0]}: workspace/memory/cold-storage/" in err
    # the other file's follow-up ran; nothing came from the refused one or the outside
    assert {m.provenance["file"] for m in store.memories()} == {
        f"workspace/memory/cold-storage/{DAYS[1]}"}
    assert SECRET not in json.dumps(store.export(), default=str)


def test_the_console_script_reports_a_refusal_with_exit_code_1(world: tuple[Path, Path]
                                                              ) -> None:
    root, outside = world
    for day in DAYS:
        (root / "workspace" / "memory" / day).unlink()
        (root / "workspace" / "memory" / day).symlink_to(outside / "secret.md")
    result = subprocess.run([sys.executable, "-m", "ingest.compact", "--root", str(root),
                             "--today", TODAY.isoformat(), "--apply"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[-1] == "[memory-compact] applied: written=0 failed=2"
    assert result.stderr.count("[memory-compact] refused: workspace/memory/") == 2
    assert "Traceback" not in result.stderr
    assert (outside / "secret.md").read_text() == daily("2026-05-01", SECRET)


# -- the Markdown import -------------------------------------------------------------------
@pytest.mark.parametrize("where", ["daily", "memory", "workspace", "given memory dir"])
def test_markdown_import_refuses_links_and_reads_nothing_outside(
        world: tuple[Path, Path], store: MemoryStore, where: str) -> None:
    root, outside = world
    memory = root / "workspace" / "memory"
    source = root
    if where == "daily":
        (memory / "2026-05-03.md").symlink_to(outside / "secret.md")
    elif where == "memory":
        (root / "workspace-b").mkdir()
        (root / "workspace-b" / "memory").symlink_to(outside / "memory")
    elif where == "workspace":
        (root / "workspace-b").symlink_to(outside / "workspace")
    else:
        (memory / "2026-05-03.md").symlink_to(outside / "secret.md")
        source = memory
    store.add("already here")
    before = json.dumps({**store.export(), "generated": None}, sort_keys=True, default=str)
    with pytest.raises(UnsafePathError, match="is a symbolic link") as caught:
        import_markdown(store, source)
    assert caught.value.source is None or SECRET not in str(caught.value)
    after = json.dumps({**store.export(), "generated": None}, sort_keys=True, default=str)
    assert after == before and SECRET not in after


def test_markdown_import_of_a_clean_tree_still_works(world: tuple[Path, Path],
                                                     store: MemoryStore) -> None:
    root, _ = world
    result = import_markdown(store, root)
    assert len(result.created) == 4
    assert sorted(m.text for m in store.memories()) == [
        "inside decision [keep]", "inside decision [keep]",
        *(f"inside happened on {d[:10]}" for d in DAYS)]
    # a memory dir given directly names its workspace after its parent
    with MemoryStore(":memory:", embedder="hashing") as other:
        import_markdown(other, root / "workspace" / "memory")
        assert {m.provenance["file"] for m in other.memories()} == {
            f"memory/{d}" for d in DAYS}


# -- property: any layout of links ---------------------------------------------------------
WS = st.sampled_from(["real", "link-out", "link-in"])
MEM = st.sampled_from(["real", "link-out"])
COLD_DIR = st.sampled_from(["absent", "real", "link-out", "dangling", "file"])
DAILY_MODE = st.sampled_from(["real", "link-out", "link-in", "dangling", "fifo"])
COPY = st.sampled_from(["absent", "real", "link-out", "dangling"])
TMP = st.sampled_from(["absent", "link-out"])
WORKSPACE = st.fixed_dictionaries({
    "ws": WS, "mem": MEM, "cold": COLD_DIR,
    "days": st.tuples(*[st.fixed_dictionaries({"mode": DAILY_MODE, "copy": COPY, "tmp": TMP})
                        for _ in DAYS]),
})
LAYOUT = st.tuples(WORKSPACE, WORKSPACE)
NAMES = ("workspace-a", "workspace-b")


def plant(path: Path, mode: str, outside: Path, *, folder: bool) -> None:
    """Put at ``path`` nothing, the real thing, a link outside, a dangling link or a file."""
    if mode == "real":
        path.mkdir() if folder else path.write_text("an earlier backup\n")
    elif mode == "link-out":
        path.symlink_to(outside)
    elif mode == "dangling":
        path.symlink_to(outside.parent / "gone")
    elif mode == "file":
        path.write_text("a file, not a folder\n")


def build(base: Path, layout: tuple[dict[str, Any], ...]) -> tuple[Path, Path]:
    outside = make_outside(base)
    root = base / "agent"
    root.mkdir()
    for n, (name, spec) in enumerate(zip(NAMES, layout, strict=True)):
        workspace = root / name
        if spec["ws"] != "real":
            other = NAMES[1 - n]
            workspace.symlink_to(outside / "workspace" if spec["ws"] == "link-out"
                                 else root / other)
            continue
        workspace.mkdir()
        memory = workspace / "memory"
        if spec["mem"] == "link-out":
            memory.symlink_to(outside / "memory")
            continue
        memory.mkdir()
        cold = memory / "cold-storage"
        plant(cold, spec["cold"], outside / "cold", folder=True)
        for i, (day, entry) in enumerate(zip(DAYS, spec["days"], strict=True)):
            path = memory / day
            mode = entry["mode"]
            if mode == "real":
                path.write_text(daily(day, name), encoding="utf-8")
            elif mode == "fifo":
                os.mkfifo(path)
            else:
                path.symlink_to({"link-out": outside / "secret.md",
                                 "link-in": memory / DAYS[1 - i],
                                 "dangling": outside / "gone.md"}[mode])
            if spec["cold"] == "real":
                plant(cold / day, entry["copy"], outside / "victim.txt", folder=False)
            if entry["tmp"] == "link-out":
                (memory / f".{day}.tmp").symlink_to(outside / "victim.txt")
    return root, outside


def expected(layout: tuple[dict[str, Any], ...]) -> tuple[set[str], set[str]]:
    """The oracle: the dailies written, and the paths reported (refused or failed)."""
    written: set[str] = set()
    reported: set[str] = set()
    for name, spec in zip(NAMES, layout, strict=True):
        if spec["ws"] != "real":
            reported.add(name)
            continue
        if spec["mem"] != "real":
            reported.add(f"{name}/memory")
            continue
        for day, entry in zip(DAYS, spec["days"], strict=True):
            shown = f"{name}/memory/{day}"
            cold_ok = spec["cold"] == "absent" or (
                spec["cold"] == "real" and entry["copy"] in ("absent", "real"))
            if entry["mode"] == "real" and cold_ok:
                written.add(shown)
            else:
                reported.add(shown)
    return written, reported


@FAST
@given(layout=LAYOUT)
def test_any_layout_of_links_stays_inside_the_root(layout: tuple[dict[str, Any], ...]
                                                    ) -> None:
    base = Path(tempfile.mkdtemp(prefix="graphmem-links-"))
    try:
        root, outside = build(base, layout)
        before_out, before_in = snapshot(outside), snapshot(root)
        linked = any(s["ws"] != "real" or s["mem"] != "real" or
                     any(e["mode"] != "real" for e in s["days"]) for s in layout)
        with MemoryStore(":memory:", embedder="hashing") as store:
            if linked:
                with pytest.raises(UnsafePathError):
                    import_markdown(store, root)
                assert store.memories() == []
            else:
                import_markdown(store, root)
                assert len(store.memories()) == 2 * len(DAYS) * len(NAMES)
            assert SECRET not in json.dumps(store.export(), default=str)
        assert (snapshot(outside), snapshot(root)) == (before_out, before_in)
        code, out, err = run(root)
        written, reported = expected(layout)
        assert snapshot(outside) == before_out, "a file outside the root changed"
        assert out.splitlines()[-1] == (f"[memory-compact] applied: written={len(written)} "
                                        f"failed={len(reported)}")
        assert code == (1 if reported and not written else 0)
        lines = err.splitlines()
        assert len(lines) == len(reported) and "Traceback" not in err
        assert {line.split(": ")[1] for line in lines} == reported
        after = snapshot(root)
        for rel, entry in before_in.items():
            if rel in written:
                text = after[rel][1].decode()
                assert "<!-- mc:compacted 2026-06-02 -->" in text, rel
                cold = rel.replace("/memory/", "/memory/cold-storage/")
                assert after[cold] == before_in.get(cold, entry), rel
            elif not rel.endswith(".tmp"):  # a planted temporary link may be removed
                assert after.get(rel) == entry, f"{rel} changed but was not written"
    finally:
        shutil.rmtree(base, ignore_errors=True)
