"""Lifecycle commands: lifecycle evaluate|report|run, promote, archive, restore, tombstone,
forget."""

from __future__ import annotations

from pathlib import Path

import click

from .._lifecycle._component import ARCHIVE_REASONS, PROMOTE_REASONS
from ._app import Context, cli, echo_json, fail, pass_ctx, table


@cli.group()
def lifecycle() -> None:
    """The archivist's evaluations and the lifecycle manager."""


@lifecycle.command()
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--owner", default=None, help="Only this owner's memories.")
@pass_ctx
def evaluate(ctx: Context, ids: tuple[str, ...], owner: str | None) -> None:
    """Recommend promote / archive / maintain / review (every active memory without IDs)."""
    store = ctx.store()
    results = ([store.evaluate(i, owner=owner) for i in ids] if ids
               else store.batch_evaluate(owner=owner))
    if ctx.json:
        echo_json([r.model_dump(mode="json", by_alias=True) for r in results])
        return
    click.echo(table([(r.recommended_action, f"{r.confidence:.2f}", r.memory_id,
                       r.metrics.access_count, f"{r.metrics.importance:.2f}",
                       f"{r.metrics.age_in_days:.0f}", r.metrics.cross_reference_count,
                       "; ".join(r.reasons)) for r in results],
                     ["action", "conf", "id", "uses", "imp", "age d", "xrefs", "reasons"]))


@lifecycle.command()
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write the Markdown report to FILE.")
@pass_ctx
def report(ctx: Context, out: str | None) -> None:
    """The Archivist Lifecycle Report of a dry run (nothing changes)."""
    result = ctx.store().run_lifecycle(apply=False)
    _emit(ctx, result, out)


@lifecycle.command()
@click.option("--apply", "apply_", is_flag=True,
              help="Write the changes (without it: a dry run that prints the plan).")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Also write the Markdown report to FILE.")
@pass_ctx
def run(ctx: Context, apply_: bool, out: str | None) -> None:
    """Run the lifecycle manager: decay, promotions, archive, hot set, expiry, retention."""
    result = ctx.store().run_lifecycle(apply=apply_)
    _emit(ctx, result, out)


def _emit(ctx: Context, result: object, out: str | None) -> None:
    from .._lifecycle import LifecycleReport

    assert isinstance(result, LifecycleReport)
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


def _result(ctx: Context, result: object) -> None:
    data = result.model_dump(mode="json", by_alias=True)  # type: ignore[attr-defined]
    if ctx.json:
        echo_json(data)
    elif not data["success"]:
        fail(data["error"])
    else:
        click.echo(", ".join(f"{k}={v}" for k, v in data.items() if v is not None))


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--reason", type=click.Choice(PROMOTE_REASONS), default="manual",
              show_default=True)
@pass_ctx
def promote(ctx: Context, memory_id: str, reason: str) -> None:
    """Promote an episodic memory to semantic."""
    _result(ctx, ctx.store().promote(memory_id, reason=reason))


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--reason", type=click.Choice(ARCHIVE_REASONS), default="manual",
              show_default=True)
@click.option("--summary", is_flag=True, help="Write a summary into the archive event.")
@pass_ctx
def archive(ctx: Context, memory_id: str, reason: str, summary: bool) -> None:
    """Archive a memory (kept for audit and export, out of recall; restorable)."""
    _result(ctx, ctx.store().archive(memory_id, reason=reason, create_summary=summary))


@cli.command()
@click.argument("target", metavar="ID|BACKUP_DIR")
@pass_ctx
def restore(ctx: Context, target: str) -> None:
    """Undo a memory's latest archive, promotion or tombstone (within the window), or,
    given a backup directory, create the database --db from that backup.

    \b
    graphmem restore urn:ump:...            restore one memory
    graphmem --db new.db restore backups/mon  restore a whole store from a backup
    """
    if Path(target).is_dir():
        from ._backup import restore_backup

        restore_backup(ctx, target)
        return
    _result(ctx, ctx.store().restore(target))


@cli.command()
@click.argument("memory_id", metavar="ID")
@pass_ctx
def tombstone(ctx: Context, memory_id: str) -> None:
    """Delete a memory logically (kept for audit, never recalled; restorable)."""
    memory = ctx.store().tombstone(memory_id)
    click.echo(f"{memory.id}: {memory.status.value}")


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--yes", is_flag=True, help="Confirm: the text is deleted for good.")
@pass_ctx
def forget(ctx: Context, memory_id: str, yes: bool) -> None:
    """Hard-delete a memory: its text leaves the store, its indexes and the disk."""
    if not yes:
        fail(f"forget {memory_id} deletes its text for good; add --yes to confirm")
    ctx.store().forget(memory_id, confirm=True)
    click.echo(f"{memory_id}: forgotten")
