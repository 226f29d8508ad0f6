"""Lifecycle commands: lifecycle evaluate|report|run, promote, archive, restore, tombstone,
forget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .._errors import ConflictError
from .._lifecycle import (
    ARCHIVE_REASONS,
    PROMOTE_REASONS,
    ArchiveResult,
    LifecycleReport,
    PromoteResult,
    RestoreResult,
)
from .._views import to_json
from ._app import Context, cli, echo_json, pass_ctx, table, usage
from ._progress import working


@cli.group()
def lifecycle() -> None:
    """The archivist's evaluations and the lifecycle manager."""


@lifecycle.command()
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--owner", default=None, help="Only this owner's memories.")
@pass_ctx
def evaluate(ctx: Context, ids: tuple[str, ...], owner: str | None) -> None:
    """Recommend promote / archive / maintain / review (every active memory without IDs),
    with today's importance: decayed as `lifecycle run` would decay it first."""
    store = ctx.api()
    results = ([store.evaluate(i, owner=owner) for i in ids] if ids
               else store.batch_evaluate(owner=owner))
    if ctx.json:
        echo_json([to_json(r) for r in results])
        return
    # the forecast of need beside the rule, when the store has a validated one (``learn``)
    need = any(r.forecast is not None for r in results)
    click.echo(table([(r.recommended_action, f"{r.confidence:.2f}", r.memory_id,
                       r.metrics.access_count, f"{r.metrics.importance:.2f}",
                       f"{r.metrics.age_in_days:.0f}", r.metrics.cross_reference_count,
                       *([f"{r.forecast:.0%}" if r.forecast is not None else "-"]
                         if need else []),
                       "; ".join(r.reasons)) for r in results],
                     ["action", "conf", "id", "uses", "imp", "age d", "xrefs",
                      *(["need"] if need else []), "reasons"]))


@lifecycle.command()
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write the Markdown report to FILE.")
@pass_ctx
def report(ctx: Context, out: str | None) -> None:
    """The Archivist Lifecycle Report of a dry run (nothing changes)."""
    store = ctx.api()
    with working("lifecycle report", enabled=ctx.progress):
        result = store.run_lifecycle(apply=False)
    _emit(ctx, result, out)


@lifecycle.command()
@click.option("--apply", "apply_", is_flag=True,
              help="Write the changes (without it: a dry run that prints the plan).")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Also write the Markdown report to FILE.")
@pass_ctx
def run(ctx: Context, apply_: bool, out: str | None) -> None:
    """Run the lifecycle manager: decay, promotions, archive, hot set, expiry, retention."""
    store = ctx.api()
    with working("lifecycle run" + (" --apply" if apply_ else ""), enabled=ctx.progress):
        result = store.run_lifecycle(apply=apply_)
    _emit(ctx, result, out)


def _emit(ctx: Context, result: LifecycleReport, out: str | None) -> None:
    text = result.to_markdown()
    if out is not None:
        Path(out).write_text(text + "\n", encoding="utf-8")
    if ctx.json:
        click.echo(result.to_json())
    elif out is None:
        click.echo(text)
    else:
        click.echo(f"wrote {out} ({result.evaluated} memories evaluated, "
                   f"{'applied' if result.applied else 'dry run'})")


def _result(ctx: Context, result: PromoteResult | ArchiveResult | RestoreResult) -> None:
    """A transition's result: JSON, or a sentence; one that did not apply is an error."""
    if not result.success:
        raise ConflictError(f"{result.memory_id}: {result.error}")
    if ctx.json:
        echo_json(to_json(result))
    else:
        click.echo(sentence(result))


def sentence(result: Any) -> str:
    """What a transition did, as a sentence.

    >>> from datetime import UTC, datetime
    >>> at = datetime(2026, 7, 15, 12, tzinfo=UTC)
    >>> sentence(PromoteResult(success=True, memory_id="m1", old_type="episodic",
    ...                        reason="high_access", timestamp=at))
    'promoted m1 from episodic to semantic (reason: high_access)'
    >>> sentence(RestoreResult(success=True, memory_id="m1", undone="archive",
    ...                        from_state="archived", to_state="active", timestamp=at))
    'restored m1: undid its archive (archived -> active)'
    """
    if isinstance(result, PromoteResult):
        return (f"promoted {result.memory_id} from {result.old_type} to {result.new_type} "
                f"(reason: {result.reason})")
    if isinstance(result, ArchiveResult):
        line = f"archived {result.memory_id} (reason: {result.reason})"
        return line + (f"; summary: {result.summary}" if result.summary else "")
    return (f"restored {result.memory_id}: undid its {result.undone} "
            f"({result.from_state} -> {result.to_state})")


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--reason", type=click.Choice(PROMOTE_REASONS), default="manual",
              show_default=True)
@pass_ctx
def promote(ctx: Context, memory_id: str, reason: str) -> None:
    """Promote an episodic memory to semantic."""
    _result(ctx, ctx.api().promote(memory_id, reason=reason))


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--reason", type=click.Choice(ARCHIVE_REASONS), default="manual",
              show_default=True)
@click.option("--summary", is_flag=True, help="Write a summary into the archive event.")
@pass_ctx
def archive(ctx: Context, memory_id: str, reason: str, summary: bool) -> None:
    """Archive a memory (kept for audit and export, out of recall; restorable)."""
    _result(ctx, ctx.api().archive(memory_id, reason=reason, create_summary=summary))


@cli.command()
@click.argument("memory_id", metavar="ID")
@pass_ctx
def restore(ctx: Context, memory_id: str) -> None:
    """Undo a memory's latest archive, promotion or tombstone (within the restore window).

    A whole store comes back from a backup with `graphmem restore-backup DIR`.
    """
    from .._backup import MANIFEST  # the backup module only when a command needs it

    if (Path(memory_id) / MANIFEST).is_file():  # a backup: the old spelling, kept a while
        from ._backup import restore_backup

        click.echo(f"note: `graphmem restore {memory_id}` restores a backup only for a while; "
                   f"use `graphmem --db NEW restore-backup {memory_id}` (NEW: a new or "
                   "empty directory)", err=True)
        restore_backup(ctx, memory_id)
        return
    _result(ctx, ctx.api().restore(memory_id))


@cli.command()
@click.argument("memory_id", metavar="ID")
@pass_ctx
def tombstone(ctx: Context, memory_id: str) -> None:
    """Delete a memory logically (kept for audit, never recalled; restorable)."""
    memory = ctx.api().tombstone(memory_id)
    if ctx.json:
        echo_json(to_json(memory))
    else:
        click.echo(f"{memory.id}: {memory.status.value}")


@cli.command()
@click.argument("memory_ids", metavar="ID...", nargs=-1, required=True)
@click.option("--yes", is_flag=True, help="Confirm: the text is deleted for good.")
@pass_ctx
def forget(ctx: Context, memory_ids: tuple[str, ...], yes: bool) -> None:
    """Hard-delete memories: their text leaves the store, its indexes and the disk.
    Several IDs are forgotten together (their words cut from their neighbours in one
    pass, the file rewritten once); every ID is checked before anything is deleted."""
    if not yes:
        usage(f"forget {' '.join(memory_ids)} deletes {'its' if len(memory_ids) == 1 else 'their'}"
              " text for good; add --yes to confirm")
    if len(memory_ids) == 1:
        ctx.api().forget(memory_ids[0], confirm=True)
    else:
        ctx.api().forget_many(list(memory_ids), confirm=True)
    done = [{"memory_id": i, "status": "forgotten"} for i in dict.fromkeys(memory_ids)]
    if ctx.json:  # one ID: its object, as before; several: a list
        echo_json(done[0] if len(memory_ids) == 1 else done)
    else:
        for item in done:
            click.echo(f"{item['memory_id']}: forgotten")
