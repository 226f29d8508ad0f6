"""Recall commands: recall, feedback, reembed."""

from __future__ import annotations

from datetime import datetime

import click

from .._models import Kind
from .._recall import PRESETS, Hit
from .._recall._config import CHANNELS
from .._settings import EMBEDDER_CHOICES
from .._views import to_json
from ._app import Context, cli, echo_json, iso_time, pass_ctx, table, usage


@cli.command()
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="How many memories to return.")
@click.option("--preset", type=click.Choice(list(PRESETS)), default="default",
              show_default=True, help="Retrieval configuration.")
@click.option("--explain", is_flag=True, help="Show channel ranks and ACT-R terms per hit.")
@click.option("--owner", default=None, help="Only this owner's memories.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice([k.value for k in Kind]),
              help="Only these kinds (repeat).")
@click.option("--as-of", callback=iso_time, default=None, metavar="ISO",
              help="What was valid and current at this time.")
@click.option("--since", callback=iso_time, default=None, metavar="ISO",
              help="Only memories created at or after this time.")
@click.option("--until", callback=iso_time, default=None, metavar="ISO",
              help="Only memories created before this time.")
@click.option("--min-similarity", type=click.FloatRange(0, 1), default=None, metavar="X",
              help="Answer nothing when no memory's cosine similarity to QUERY reaches X "
                   "(0.25 suits MiniLM).")
@click.option("--min-relative", type=click.FloatRange(0, 1), default=None, metavar="X",
              help="Drop hits scoring below X times the best hit's score.")
@click.option("--include-archived", is_flag=True, help="Archived memories too.")
@click.option("--record-access/--no-record-access", " /--no-record", default=False,
              help="Record an access for each hit (ACT-R's uses, the lifecycle's access "
                   "counts). Off by default: a recall changes nothing (--no-record is "
                   "the old name of the default).")
@pass_ctx
def recall(ctx: Context, query: str, k: int, preset: str, explain: bool, owner: str | None,
           kinds: tuple[str, ...], as_of: datetime | None, since: datetime | None,
           until: datetime | None, min_similarity: float | None, min_relative: float | None,
           include_archived: bool, record_access: bool) -> None:
    """Recall the memories that best answer QUERY."""
    if not query.strip():
        usage("QUERY is empty: say what to recall")
    hits = ctx.api().recall(query, k=k, preset=preset, owner=owner, kinds=list(kinds) or None,
                            as_of=as_of, include_archived=include_archived,
                            record_access=record_access, since=since, until=until,
                            min_similarity=min_similarity, min_relative=min_relative)
    if ctx.json:
        echo_json([to_json(h) for h in hits])
        return
    if not hits:
        click.echo("(no memories)")
        return
    click.echo(explain_table(hits) if explain else hits_table(hits))


def hits_table(hits: list[Hit]) -> str:
    """Rank, score, kind, when (the day of its session), id and the memory's text (a
    subject is shared by every version of a memory; the text tells them apart); a hit
    that is not active says its status (a candidate: what was said as uncertain)."""
    return table([(h.rank, f"{h.score:.4f}", h.memory.kind.value
                   + ("" if h.memory.status.value == "active" else f" ({h.memory.status.value})"),
                   f"{h.when:%Y-%m-%d}", h.memory.id, _text(h, 70)) for h in hits],
                 ["#", "score", "kind", "when", "id", "text"])


def _text(hit: Hit, width: int) -> str:
    line = " ".join(hit.memory.text.split()) or (hit.memory.subject or "")
    return line if len(line) <= width else line[: width - 1] + "…"


def explain_table(hits: list[Hit]) -> str:
    """The rank of each channel that found a hit (every channel that found any), fused
    score and ACT-R terms per hit; then what else moved each (the path a walk took, a
    lift, the learned ranker's reasons, the version it stands for), one line each."""
    found = {c for h in hits for c in h.explanation.channels}
    channels = [c for c in CHANNELS if c in found] or ["fulltext", "vector"]
    rows = []
    for h in hits:
        e = h.explanation
        ranks = [e.channels[c].rank if c in e.channels else "-" for c in channels]
        a = e.activation
        rows.append((h.rank, *ranks, f"{e.fused:.4f}", a.rank if a else "-",
                     f"{a.value:.2f}" if a else "-", a.formula if a else "-",
                     f"{e.final:.4f}", _text(h, 44)))
    lines = [table(rows, ["#", *channels, "fused", "act-r", "A", "formula", "final",
                          "text"])]
    shown = {*CHANNELS, "act-r"}  # in the table already
    lines += [f"#{h.rank} {line.strip()}" for h in hits for line in h.explanation.lines()[1:]
              if line.split()[0] not in shown]
    return "\n".join(lines)


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--useful", "helped", is_flag=True, help="The recalled memory helped.")
@click.option("--ignored", "ignored", is_flag=True, help="It did not.")
@click.option("--query", default=None,
              help="The query it answered: pairs it with the other useful memories of that "
                   "recall, and gives `graphmem learn` the recall's candidates to learn from.")
@click.option("--preset", default="default", show_default=True,
              type=click.Choice(sorted(PRESETS)),
              help="The preset that recall used (with --query).")
@pass_ctx
def feedback(ctx: Context, memory_id: str, helped: bool, ignored: bool,
             query: str | None, preset: str) -> None:
    """Report whether a recalled memory was useful: --useful or --ignored."""
    if helped == ignored:
        usage("say whether it helped: --useful or --ignored" if not helped else
              "--useful and --ignored contradict each other: give one")
    from ..client import Client

    useful = helped
    api = ctx.api()
    if query is not None and not isinstance(api, Client):
        # The recall ran in another process, which kept its candidates: made again here
        # (recording nothing), the feedback carries what the learned ranker learns from.
        api.recall(query, preset=preset, record_access=False)
    memory = api.feedback(memory_id, useful=useful, query=query)
    if ctx.json:
        echo_json(to_json(memory))
    else:
        click.echo(f"{memory.id}: useful {memory.useful_count}, ignored "
                   f"{memory.ignored_count}, importance {memory.importance:.2f}")


@cli.command()
@click.option("--embedder", "target", required=True,
              help=f"The new model: {EMBEDDER_CHOICES}, each optionally with +pooled.")
@click.option("--batch-size", type=click.IntRange(1, 10_000), default=256, show_default=True)
@pass_ctx
def reembed(ctx: Context, target: str, batch_size: int) -> None:
    """Re-embed every memory with another model (with a progress bar)."""
    store = ctx.store(create=False)
    count = store.reembed(target, batch_size=batch_size, progress=ctx.progress)
    if ctx.json:
        echo_json({"embedded": count, "embedder": store.embedder.name})
    else:
        click.echo(f"re-embedded {count} memories with {store.embedder.name}")
