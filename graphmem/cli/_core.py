"""Core commands: init, add, show, history, import, export, stats."""

from __future__ import annotations

import codecs
import errno
import json
import sys
from pathlib import Path
from typing import Any

import click

from .._models import Kind, Memory
from .._views import to_json
from ._app import Context, cli, echo_json, pass_ctx, table, usage
from ._progress import phases

KINDS = [k.value for k in Kind]


def memory_lines(memory: Memory) -> list[str]:
    """A memory as ``key: value`` lines for humans."""
    lines = [
        f"id:          {memory.id}",
        f"kind:        {memory.kind.value}",
        f"status:      {memory.status.value}{'  (hot)' if memory.hot else ''}",
    ]
    if memory.subject:
        lines.append(f"subject:     {memory.subject}")
    lines.append(f"text:        {memory.text}")
    if memory.tags:
        lines.append(f"tags:        {', '.join(memory.tags)}")
    if memory.owner or memory.project:
        lines.append(f"scope:       owner={memory.owner or '-'} project={memory.project or '-'}")
    lines.append(f"importance:  {memory.importance:.2f} (original "
                 f"{memory.original_importance:.2f})   confidence: {memory.confidence:.2f}")
    lines.append(f"created:     {memory.created:%Y-%m-%d %H:%M:%S} UTC   version {memory.version}")
    lines.append(f"accesses:    {memory.access_count}   useful {memory.useful_count}   "
                 f"ignored {memory.ignored_count}")
    if memory.superseded_by:
        lines.append(f"superseded:  by {', '.join(memory.superseded_by)}")
    return lines


@cli.command()
@pass_ctx
def init(ctx: Context) -> None:
    """Create an empty database (or check an existing one)."""
    store = ctx.api(create=True)
    stats = store.stats()
    unreachable = _served_model_missing(store)
    if ctx.json:
        echo_json({"db": store.path, "memories": stats.memories,
                   "schema_version": stats.schema_version, "embedder": stats.embedder,
                   **({"warning": unreachable} if unreachable else {})})
    else:
        click.echo(f"database {store.path}: schema v{stats.schema_version}, "
                   f"{stats.memories} memories, embedder {stats.embedder}")
        if unreachable:
            click.echo(f"warning: {unreachable}", err=True)


def _served_model_missing(store: Any) -> str | None:
    """For a store whose model a server runs (``ollama:MODEL``), why it cannot embed now,
    or None: the store is made all the same (the server may start later), but every add
    and recall fails until it answers."""
    from .._errors import BackendUnavailableError
    from .._facade import MemoryStore

    if not isinstance(store, MemoryStore) or not store.embedder.spec.startswith("ollama:"):
        return None
    try:
        store.embedder.embed(["probe"])
    except BackendUnavailableError as exc:
        return (f"{exc}. Adding to the store and recalling from it fail until it embeds "
                "(GRAPHMEM_OLLAMA_HOST / OLLAMA_HOST name the server)")
    return None


@cli.command()
@click.argument("text")
@click.option("--kind", type=click.Choice(KINDS), default="episodic", show_default=True)
@click.option("--subject", default=None, help="A short title.")
@click.option("--importance", type=click.FloatRange(0, 1), default=0.5, show_default=True)
@click.option("--confidence", type=click.FloatRange(0, 1), default=1.0, show_default=True)
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.option("--owner", default=None)
@click.option("--project", default=None)
@click.option("--status", type=click.Choice(["active", "candidate"]), default="active",
              show_default=True)
@pass_ctx
def add(ctx: Context, text: str, kind: str, subject: str | None, importance: float,
        confidence: float, tags: tuple[str, ...], owner: str | None, project: str | None,
        status: str) -> None:
    """Add one memory with TEXT ('-': the text read from standard input)."""
    memory = ctx.api(create=True).add(_text_or_stdin(text), kind=kind, subject=subject,
                                      importance=importance, confidence=confidence,
                                      tags=list(tags), owner=owner, project=project,
                                      status=status)
    if ctx.json:
        echo_json(to_json(memory))
    else:
        click.echo(memory.id)


def _text_or_stdin(text: str) -> str:
    """A text argument, or for '-' standard input's: UTF-8 (a byte order mark left out),
    its line ends as '\\n', without the one that ends it."""
    if text != "-":
        return text
    if sys.stdin is None:
        usage("'-' reads the text from standard input, which is closed")
    data = sys.stdin.buffer.read()
    mark = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        read = data[mark:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = mark + exc.start  # in the input as given
        usage(f"standard input is not UTF-8 text (byte {at + 1}: {data[at:at + 1]!r})")
    return read.replace("\r\n", "\n").rstrip("\r\n")  # a line end as the argument's


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--text", default=None,
              help="The new text (its graph and vectors follow; '-': standard input's).")
@click.option("--subject", default=None, help="A new short title ('' clears it).")
@click.option("--importance", type=click.FloatRange(0, 1), default=None)
@click.option("--confidence", type=click.FloatRange(0, 1), default=None)
@click.option("--kind", type=click.Choice(KINDS), default=None)
@click.option("--tag", "tags", multiple=True,
              help="The tags it has from now on (repeat for more; one '' clears them).")
@click.option("--project", default=None, help="A new project ('' clears it).")
@click.option("--owner", default=None, help="The memory's owner (a check: another's is "
              "not found).")
@pass_ctx
def update(ctx: Context, memory_id: str, text: str | None, subject: str | None,
           importance: float | None, confidence: float | None, kind: str | None,
           tags: tuple[str, ...], project: str | None, owner: str | None) -> None:
    """Change fields of a memory; the old values stay in its history (`graphmem history
    ID`). A changed memory keeps its id; to record that a new one replaces it, add the
    new one and let a conversation's correction, or `MemoryStore.supersede`, link them."""
    fields: dict[str, Any] = {name: value for name, value in (
        ("text", None if text is None else _text_or_stdin(text)),
        ("importance", importance), ("confidence", confidence), ("kind", kind))
        if value is not None}
    for name, value in (("subject", subject), ("project", project)):
        if value is not None:
            fields[name] = value or None
    if tags:
        fields["tags"] = [] if tags == ("",) else list(tags)
    if not fields:
        raise click.UsageError("nothing to change: give --text, --subject, --importance, "
                               "--confidence, --kind, --tag or --project",
                               ctx=click.get_current_context(silent=True))
    memory = ctx.api().update(memory_id, owner=owner, **fields)
    if ctx.json:
        echo_json(to_json(memory))
    else:
        click.echo(f"updated {memory.id} (version {memory.version})")


@cli.command()
@click.argument("memory_id", metavar="ID")
@pass_ctx
def show(ctx: Context, memory_id: str) -> None:
    """Show one memory and its edges."""
    store = ctx.api()
    memory = store.get(memory_id)
    links = store.links(memory_id)
    if ctx.json:
        echo_json({**to_json(memory), "edges": [vars(x) for x in links]})
        return
    for line in memory_lines(memory):
        click.echo(line)
    for link in links:
        arrow = "->" if link.direction == "out" else "<-"
        click.echo(f"edge:        {link.kind} {arrow} {link.other}  (weight {link.weight:g})")


@cli.command()
@click.argument("memory_id", metavar="ID")
@pass_ctx
def history(ctx: Context, memory_id: str) -> None:
    """Show the append-only version history of a memory."""
    versions = ctx.api().history(memory_id)
    if ctx.json:
        echo_json([to_json(v) for v in versions])
        return
    rows = [(v.seq, v.at, v.change_type.value, v.status.value if v.status else "",
             f"{v.importance:.2f}" if v.importance is not None else "",
             "[redacted]" if v.redacted else (v.text or ""),
             # what the row does not hold, its reason says ("tags [a] -> [b]")
             (v.reason or "").removeprefix(f"{v.change_type.value}: ")
             if (v.reason or "").startswith(f"{v.change_type.value}: ") else "")
            for v in versions]
    click.echo(table(rows, ["seq", "at", "change", "status", "importance", "text", "also"]))


@cli.group(name="import")
def import_group() -> None:
    """Import memories from files."""


@import_group.command(name="ump")
@click.argument("file", type=click.Path(dir_okay=False))
@pass_ctx
def import_ump_cmd(ctx: Context, file: str) -> None:
    """Import a UMP JSON file: all records or none; re-importing changes nothing."""
    from ingest.ump import import_ump

    store = ctx.store()
    with phases(Path(file).name, enabled=ctx.progress, unit=" records") as report:
        result = import_ump(store, file, progress=report)
    echo_import(ctx, file, result, edges="supersede")


def echo_import(ctx: Context, source: str, result: Any, *, edges: str) -> None:
    """What an import of ``source`` created, updated and left unchanged, and how many
    edges (of the kind ``edges`` names) it drew."""
    summary: dict[str, Any] = {"created": len(result.created),
                               "updated": len(result.updated),
                               "unchanged": len(result.unchanged),
                               "edges": result.edges_created}
    skipped = list(getattr(result, "skipped", ()))
    if skipped:
        summary["skipped"] = skipped
    # records of memories forgotten here: never brought back, and said so
    forgotten = list(getattr(result, "forgotten", ()))
    summary["forgotten"] = len(forgotten)
    if ctx.json:
        echo_json(summary)
        return
    click.echo(f"{source}: created {summary['created']}, updated {summary['updated']}, "
               f"unchanged {summary['unchanged']}, {edges} edges {summary['edges']}"
               + (f", forgotten {len(forgotten)} (not brought back)" if forgotten else ""))
    for note in skipped:
        click.echo(f"warning: {note}", err=True)


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["ump", "gdpr"]), default="ump",
              show_default=True, help="ump: a UMP file; gdpr: the full GDPR export.")
@click.option("--owner", default=None, help="Only this owner's memories.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write to this file instead of standard output ('-': standard output).")
@pass_ctx
def export(ctx: Context, fmt: str, owner: str | None, out: str | None) -> None:
    """Export memories as a UMP file or a GDPR export (JSON)."""
    from ..client import Client

    store = ctx.api()
    if isinstance(store, Client):
        data: Any = store.export(owner, format=fmt)
    elif fmt == "ump":
        from ingest.ump import ump_records

        data = ump_records(store, owner=owner)
    else:
        data = store.export(owner=owner)
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    if out is None or out == "-":
        sys.stdout.write(text)
        return
    if not out.strip():
        usage("--out names no file: give a file name, or '-' for standard output")
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)  # as `draw` does
        Path(out).write_text(text, encoding="utf-8")
    except FileExistsError as exc:  # a file where a directory of the path would go
        raise OSError(errno.ENOTDIR, "a file, not a directory, in the path of --out",
                      exc.filename) from None
    except OSError as exc:  # named by the file it was writing ("No space left", "/dev/full")
        raise OSError(exc.errno, exc.strerror, exc.filename or out) from None
    count = len(data) if isinstance(data, list) else len(data["memories"])
    if ctx.json:
        echo_json({"written": out, "format": fmt, "memories": count})
    else:
        click.echo(f"wrote {count} memories to {out}", err=True)


@cli.command()
@pass_ctx
def stats(ctx: Context) -> None:
    """Counts by kind and status, edges, versions and events."""
    data = ctx.api().stats()
    if ctx.json:
        echo_json(to_json(data))
        return
    click.echo(f"memories {data.memories}  (hot {data.hot}, superseded {data.superseded}, "
               f"owners {data.owners})")
    if data.superseded:
        # a superseded memory keeps its status; recall returns what replaced it
        click.echo(f"           ({data.superseded} superseded: counted by status below, "
                   "recall returns what replaced them)")
    click.echo("by kind:   " + ", ".join(f"{k} {v}" for k, v in sorted(data.by_kind.items())))
    click.echo("by status: " + ", ".join(f"{k} {v}" for k, v in sorted(data.by_status.items())))
    click.echo("edges:     " + ", ".join(f"{k} {v}" for k, v in data.edges.items()))
    click.echo(f"versions {data.versions}, events {data.events}, embedder {data.embedder}, "
               f"schema v{data.schema_version}")
