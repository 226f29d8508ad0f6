"""Ingest commands: import markdown|locomo|conversation, and the compact sweep."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .._errors import InvalidInputError
from .._input import MAX_SHORT, owner_problem
from .._views import to_json
from ._app import Context, cli, echo_json, iso_time, pass_ctx, usage
from ._progress import bar, working

if TYPE_CHECKING:
    from ingest.compact import Plan
from ._core import echo_import, import_group


@import_group.command(name="markdown")
@click.argument("root", type=click.Path(file_okay=False))
@click.option("--workspace", default=None, help="Only this workspace.")
@click.option("--owner", default=None)
@pass_ctx
def import_markdown_cmd(ctx: Context, root: str, workspace: str | None,
                        owner: str | None) -> None:
    """Import the daily files of ROOT/workspace*/memory/ (idempotent)."""
    from ingest.markdown import import_markdown

    store = ctx.store()
    with working(f"importing {root}", enabled=ctx.progress):
        result = import_markdown(store, root, workspace=workspace, owner=owner)
    echo_import(ctx, root, result, edges="wiki")


@import_group.command(name="locomo")
@click.argument("file", type=click.Path(dir_okay=False), required=False)
@click.option("--conversation", "sample_ids", multiple=True,
              help="Only this conversation (sample_id, repeat).")
@pass_ctx
def import_locomo_cmd(ctx: Context, file: str | None, sample_ids: tuple[str, ...]) -> None:
    """Import LoCoMo conversations, one memory per turn, owner = sample_id."""
    from ingest.locomo import ingest_conversation, load_locomo, memory_id

    conversations = load_locomo(file)
    if sample_ids:
        known = [c.sample_id for c in conversations]
        unknown = [s for s in sample_ids if s not in known]
        if unknown:
            raise InvalidInputError(
                f"no conversation {', '.join(unknown)} in the LoCoMo file; its conversations "
                f"are {', '.join(known)}", field="conversation")
        conversations = [c for c in conversations if c.sample_id in sample_ids]
    for conversation in conversations:  # each is its owner: checked before any is written
        problem = owner_problem(conversation.sample_id)
        longest = max((memory_id(conversation, t.dia_id) for s in conversation.sessions
                       for t in s.turns), key=len, default="")
        if problem is None and len(longest) > MAX_SHORT:
            problem = (f"makes the memory id {longest[:60]!r}... {len(longest)} characters "
                       f"long; the limit is {MAX_SHORT}")
        if problem is not None:
            name = conversation.sample_id
            name = name if len(name) <= 60 else name[:60] + "..."
            raise InvalidInputError(
                f"{file}: conversation sample_id {name!r} is its memories' owner, and it "
                f"{problem}", field="sample_id")
    store = ctx.store()
    turns = sum(len(s.turns) for c in conversations for s in c.sessions)
    shown = bar(turns, "importing LoCoMo", enabled=ctx.progress, unit=" turns")
    total = 0
    for conversation in conversations:
        shown.set_postfix_str(conversation.sample_id)
        done = len(ingest_conversation(store, conversation, owner=conversation.sample_id))
        total += done
        shown.update(done)
    shown.close()
    if ctx.json:
        echo_json({"conversations": len(conversations), "turns": total})
    else:
        click.echo(f"{len(conversations)} conversations, {total} turns")


@import_group.command(name="conversation")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--session", "session_id", required=True, help="The session id.")
@click.option("--owner", default=None)
@click.option("--timestamp", callback=iso_time, default=None, metavar="ISO",
              help="When the conversation took place, for the messages without their own "
                   "timestamp (default: now).")
@pass_ctx
def import_conversation_cmd(ctx: Context, file: str, session_id: str,
                            owner: str | None, timestamp: datetime | None) -> None:
    """Remember a conversation: FILE is a JSON list of {speaker|role, text|content, timestamp?}."""
    try:
        messages = json.loads(Path(file).read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{file}: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{file}: not valid JSON: {exc.msg} at line {exc.lineno} "
                                f"column {exc.colno}") from None
    except ValueError as exc:  # a number of more than 4,300 digits
        raise InvalidInputError(f"{file}: not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidInputError(f"{file}: JSON nested too deeply to be a conversation "
                                "(a JSON array of messages)") from None
    if not isinstance(messages, list):
        from ingest.ump import json_type

        raise InvalidInputError(f"{file}: a conversation is a JSON array of messages "
                                "({speaker|role, text|content, timestamp?}); this one holds a JSON "
                                f"{json_type(messages)}")
    store = ctx.api(create=True)
    with working(f"remembering {Path(file).name}", enabled=ctx.progress):
        try:
            result = store.add_conversation(messages, session_id=session_id, owner=owner,
                                            timestamp=timestamp)
        except InvalidInputError as exc:  # which file the message or field is of
            option = {"session_id": "--session", "owner": "--owner"}.get(exc.field or "")
            if option is not None:  # not the file's: the option's
                raise InvalidInputError(f"{option}: {exc}", field=exc.field) from None
            raise InvalidInputError(f"{file}: {exc}", field=exc.field) from None
    if ctx.json:
        echo_json(to_json(result))
        return
    why = Counter(re.sub(r"\s*(?:of\s+)?\S*urn:\S+", "", reason).split(":")[0].strip()
                  for _, reason in result.dropped)
    click.echo(f"created {result.memories_created}, corrected "
               f"{len(result.corrected_ids)}, candidates "
               f"{result.pending_candidates_buffered}, reinforced "
               f"{len(result.reinforced_ids)}, dropped {len(result.dropped)}"
               + (f" ({', '.join(f'{n} {reason}' for reason, n in why.most_common())})"
                  if why else ""))
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)


@cli.command()
@click.option("--apply", "apply_", is_flag=True, help="Write changes (default: dry run).")
@click.option("--workspace", default=None, metavar="NAME", help="Only this workspace.")
@click.option("--max-age-days", type=click.IntRange(0), default=7, show_default=True)
@click.option("--include-recent", is_flag=True,
              help="DESTRUCTIVE: also compact files inside the window.")
@click.option("--verbose", "-v", is_flag=True, help="Preview each planned output.")
@click.option("--root", type=click.Path(file_okay=False), default=".", show_default=True,
              help="Where the workspace*/memory folders are.")
@click.pass_context
def compact(click_ctx: click.Context, apply_: bool, workspace: str | None, max_age_days: int,
            include_recent: bool, verbose: bool, root: str) -> None:
    """Compact daily memory files older than the window (memory-compact).

    With --db (or $GRAPHMEM_DB), the bullets dropped from each file are archived in the
    store with the cold-storage path in their provenance. Exit codes: 0 written (or a
    dry run), 1 every file failed, 2 bad arguments.
    """
    from ingest.compact import archive_in_store, check_arguments, sweep

    ctx: Context = click_ctx.obj
    base = Path(root)
    problem = check_arguments(base, workspace, max_age_days)
    if problem:
        usage(problem)
    # The store is touched only when one was named (--db or $GRAPHMEM_DB), not by default.
    named = ctx.db_named
    today = ctx.now.date() if ctx.now is not None else date.today()
    hook: Callable[[Plan], None] | None = None
    if apply_ and named:
        store = ctx.store()

        def hook(plan: Plan) -> None:
            archive_in_store(store, plan, base)

    if not ctx.json:
        click_ctx.exit(sweep(base, today=today, apply=apply_, workspace=workspace,
                             max_age_days=max_age_days, include_recent=include_recent,
                             verbose=verbose, on_written=hook))
    files: list[dict[str, Any]] = []
    code = sweep(base, today=today, apply=apply_, workspace=workspace,
                 max_age_days=max_age_days, include_recent=include_recent, verbose=verbose,
                 on_written=hook, out=io.StringIO(), err=io.StringIO(), files=files)
    count = Counter(f["status"] for f in files)
    echo_json({"applied": apply_, "exit_code": code, "files": files,
               "summary": {status: count.get(status, 0) for status in
                           ("planned", "written", "skipped", "failed", "refused")}})
    click_ctx.exit(code)
