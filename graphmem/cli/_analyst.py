"""Analyst commands: named and ad-hoc Cypher queries, and drawings of the graph."""

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
from typing import Any

import click

from ._app import Context, cli, echo_json, parse_params, pass_ctx, table, usage


@cli.command()
@click.argument("query_text", metavar="NAME|CYPHER", required=False)
@click.option("--list", "list_queries", is_flag=True, help="List the named queries and exit.")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="A query parameter (repeat). Named queries type it from their header; "
                   "for ad-hoc Cypher JSON values are typed, others are strings.")
@click.option("--write", is_flag=True,
              help="Allow one data-changing statement (CREATE, MERGE, SET). It bypasses "
                   "the version history and is recorded as a cypher_write event; it may "
                   "not set a memory's text, subject, status or what graphmem derives "
                   "from them (use update, supersede or a transition).")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default=None,
              help="Output format (default: table; json with --json).")
@pass_ctx
def query(ctx: Context, query_text: str | None, list_queries: bool, params: tuple[str, ...],
          write: bool, fmt: str | None) -> None:
    """Run a named query (see --list) or ad-hoc Cypher (read-only unless --write).

    \b
      graphmem query --list
      graphmem query most_referenced --param limit=5
      graphmem query "MATCH (m:Memory) RETURN m.kind, count(*)"
    """
    from ..named import find_query, load_queries

    if ctx.json and fmt not in (None, "json"):
        usage(f"--json prints JSON and --format {fmt} asks for {fmt.upper()}: give one of "
              "them")
    fmt = fmt or ("json" if ctx.json else "table")
    named = load_queries()
    if list_queries:
        if query_text or params:
            usage("--list lists the named queries: give it no query or --param")
        rows = [{"name": q.name, "parameters": ", ".join(p.describe() for p in q.params),
                 "description": q.description} for q in named.values()]
        if fmt != "table":
            emit_rows(rows, fmt)
            return
        for row in rows:  # a reference, read whole (a table's cells were 800 wide)
            click.echo(f"{row['name']}({row['parameters']})")
            click.echo(textwrap.fill(row["description"], width=88, initial_indent="    ",
                                     subsequent_indent="    ") + "\n")
        return
    if not query_text:
        usage("give a query NAME or CYPHER text (or --list)")
    if query_text in named or _NAME.fullmatch(query_text):
        find_query(query_text)  # a misspelled name: the error lists the names
        if write:
            usage("named queries are read-only; --write is for ad-hoc Cypher")
        store = ctx.api(read_only=True)
        rows = store.named_query(query_text,
                                 parse_params(params, convert=lambda _n, raw: raw))
    elif write:
        rows = ctx.store(create=False).cypher(query_text, parse_params(params), write=True)
        click.echo("note: this change bypassed the version history; it is recorded as a "
                   "cypher_write lifecycle event", err=True)
    else:
        rows = ctx.api(read_only=True).cypher(query_text, parse_params(params))
    emit_rows(rows, fmt)


#: A bare word: meant as a named query (no Cypher statement is one word).
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def emit_rows(rows: list[dict[str, Any]], fmt: str, *, cut: int | None = 80) -> None:
    """Print query rows as a table (a cell cut at ``cut`` characters), CSV or JSON."""
    if fmt == "json":
        echo_json(rows)
        return
    headers = list(rows[0]) if rows else []
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(headers)
        for row in rows:
            writer.writerow([json.dumps(v, default=str) if isinstance(v, dict | list) else v
                             for v in row.values()])
        click.echo(buffer.getvalue(), nl=False)
        return
    if not rows:
        click.echo("(no rows)")
        return
    click.echo(table([list(r.values()) for r in rows], headers, cut=cut))


@cli.command()
@click.argument("memory_id", metavar="ID", required=False)
@click.option("--depth", default=2, show_default=True, type=click.IntRange(0, 6),
              help="Hops from the memory.")
@click.option("--max-nodes", default=150, show_default=True, type=click.IntRange(1, 5000),
              help="At most this many nodes (with --entities the default is 40).")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="The file to write: .png or .html (interactive, self-contained).")
@click.option("--lifecycle", "lifecycle_flow", is_flag=True,
              help="Draw the lifecycle flow (transitions between states) instead; .png.")
@click.option("--entities", "entities", is_flag=True,
              help="Draw the knowledge graph instead: entities (coloured by type, sized by "
                   "mentions) and the facts between them; .png or .html.")
@click.option("--about", default=None, metavar="NAME",
              help="With --entities: this entity and those around it (default: the most "
                   "central entities).")
@click.option("--owner", default=None, help="Only this owner's memories.")
@pass_ctx
def draw(ctx: Context, memory_id: str | None, depth: int, max_nodes: int, out: str,
         lifecycle_flow: bool, entities: bool, about: str | None, owner: str | None
         ) -> None:
    """Draw a memory's neighbourhood (or the lifecycle flow, or the knowledge graph).

    Nodes are coloured by kind and shaped by status (hot ones outlined); references are
    solid, co-occurrence dashed, supersedes red. With --entities: facts are arrows
    labelled by predicate (dotted red once ended), co-mentions dashed grey.
    """
    from queries.draw import draw_entities, draw_lifecycle_flow, draw_neighbourhood

    store = ctx.store(read_only=True, create=False)
    if about is not None and not entities:
        usage("--about names an entity to draw with --entities")
    if entities:
        if memory_id or lifecycle_flow:
            usage("--entities draws the knowledge graph; leave out the ID and --lifecycle")
        given = click.get_current_context().get_parameter_source("max_nodes")
        limit = 40 if given is click.core.ParameterSource.DEFAULT else max_nodes
        path = draw_entities(store, out, about=about, owner=owner, limit=limit)
    elif lifecycle_flow:
        if memory_id:
            usage("--lifecycle draws the whole store's flow; leave out the ID")
        path = draw_lifecycle_flow(store, out)
    else:
        if not memory_id:
            usage("give the ID of the memory to draw (or --lifecycle)")
        path = draw_neighbourhood(store, memory_id, out, depth=depth, max_nodes=max_nodes,
                                  owner=owner)
    if ctx.json:
        echo_json({"written": str(path)})
    else:
        click.echo(f"wrote {path}", err=True)
