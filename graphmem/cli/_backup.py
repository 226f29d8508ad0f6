"""Backup commands: ``graphmem backup DIR`` and ``graphmem restore-backup DIR``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .._facade import MemoryStore
from ._app import Context, cli, echo_json, pass_ctx
from ._progress import working

if TYPE_CHECKING:
    from .._backup import BackupInfo


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False))
@pass_ctx
def backup(ctx: Context, directory: str) -> None:
    """Write a consistent snapshot of the database to DIRECTORY (new or empty).

    The snapshot is graphmem's records (memories, versions, events, edges, entities,
    mentions, facts, store properties) as Parquet files, whichever engine holds the
    store, with a manifest holding the format, the schema version, the embedder
    fingerprint, counts and a SHA-256 of every file. Writers wait while it is taken.
    Through a sidecar (--sidecar, or the one serving --db) the snapshot is taken there
    and written here (the token needs the admin and all_owners scopes).
    `graphmem --db NEW restore-backup DIRECTORY` brings it back into either engine;
    restoring runs nothing the backup holds (it checks each file's columns and every
    row, and writes them through graphmem itself).
    """
    store = ctx.api()
    with working(f"backing up to {directory}", enabled=ctx.progress):
        info = store.backup(directory)
    if ctx.json:
        _echo_manifest(info)
        return
    click.echo(f"backed up {store.path} to {directory}: {info.memories} memories, "
               f"{info.versions} versions, {info.events} events, {_layout(info)}, "
               f"{len(info.files)} files, {info.size / 1e6:.1f} MB")


@cli.command(name="restore-backup")
@click.argument("directory", type=click.Path(file_okay=False))
@pass_ctx
def restore_backup_cmd(ctx: Context, directory: str) -> None:
    """Create the database --db (new or empty: a directory or a PostgreSQL URL) from the
    backup in DIRECTORY, after checking its manifest, checksums and rows; a legacy
    backup's older schema is migrated."""
    restore_backup(ctx, directory)


def restore_backup(ctx: Context, directory: str) -> None:
    """Create the database --db from the backup in ``directory``."""
    if ctx.embedder is not None:
        # a restored store keeps the model of its backup: another one named is refused
        # before anything is made, as opening a store with another model is
        from .._backup import read_manifest
        from .._embed import embedder_from_spec
        from .._errors import EmbedderMismatchError

        chosen, made_with = embedder_from_spec(ctx.embedder), read_manifest(directory).embedder
        if made_with and chosen.name != made_with:
            raise EmbedderMismatchError(
                f"backup {directory} was embedded with {made_with}; --embedder "
                f"{ctx.embedder} is {chosen.name}. Leave --embedder out (a restored store "
                f"keeps its model) and switch models after with `graphmem --db {ctx.db} "
                f"reembed --embedder {ctx.embedder}`")
    with working(f"restoring {directory}", enabled=ctx.progress):
        info = MemoryStore.restore_backup(directory, ctx.db, settings=ctx.settings())
    if ctx.json:
        _echo_manifest(info)
        return
    click.echo(f"restored {directory} into {ctx.db}: {info.memories} memories "
               f"(backup of {info.created}, {_layout(info)})")
    if info.forgotten:
        were = "was" if info.forgotten == 1 else "were"
        click.echo(f"note: {info.forgotten} of them {were} forgotten. A backup holds no forget "
                   "key, so a chat imported again into this store is checked against what "
                   "they said only once the original store's forget key is added to its "
                   "keys (docs/security.md, forget)", err=True)


def _layout(info: BackupInfo) -> str:
    """How a backup is written: "format 2, tables v1" (graphmem's own tables), or the
    store schema of a legacy backup (Kuzu's export)."""
    if info.format >= 2:
        return f"format {info.format}, tables v{info.schema_version}"
    return f"format {info.format}, schema v{info.schema_version}"


def _echo_manifest(info: BackupInfo) -> None:
    from .._backup import manifest_json  # the backup module only when a command needs it

    echo_json(manifest_json(info))
