"""The command-line face's plumbing: the root group, store opening, error mapping, output."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NoReturn

import click

from .._errors import GraphmemError, InvalidInputError
from .._facade import MemoryStore
from .._settings import Settings
from .._time import parse_iso

__all__ = ["Context", "cli", "echo_json", "fail", "parse_params", "pass_ctx", "table"]

DEFAULT_DB = "graphmem.db"


class Context:
    """What every command gets: options of the root group and a lazily opened store."""

    def __init__(self, db: str, json_out: bool, embedder: str | None, now: datetime | None
                 ) -> None:
        self.db = db
        self.json = json_out
        self.embedder = embedder
        self.now = now
        self._store: MemoryStore | None = None

    def settings(self) -> Settings:
        return Settings.from_env()

    def store(self, *, read_only: bool = False, embedder: str | None = None) -> MemoryStore:
        if self._store is None:
            now = self.now
            clock = (lambda: now) if now is not None else None
            self._store = MemoryStore(self.db, settings=self.settings(),
                                      embedder=embedder or self.embedder,
                                      read_only=read_only, clock=clock)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


pass_ctx = click.make_pass_decorator(Context)


class _Group(click.Group):
    """Maps graphmem's errors to one line on stderr and exit code 1: no tracebacks."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GraphmemError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except OSError as exc:
            click.echo(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
                       err=True)
            sys.exit(1)


def _parse_now(_: click.Context, __: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_iso(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", default=lambda: os.environ.get("GRAPHMEM_DB", DEFAULT_DB),
              show_default="$GRAPHMEM_DB or ./graphmem.db", help="Database directory.")
@click.option("--json", "json_out", is_flag=True, help="Machine-readable JSON output.")
@click.option("--embedder", default=None,
              help="Embedding model: minilm, hashing[:DIM] or ollama:MODEL "
                   "(default: the store's own, or $GRAPHMEM_EMBEDDER for a new store).")
@click.option("--now", callback=_parse_now, default=None, metavar="ISO",
              help="Pretend the current time is ISO (replays, demos, tests).")
@click.version_option(package_name="graphmem")
@click.pass_context
def cli(ctx: click.Context, db: str, json_out: bool, embedder: str | None,
        now: datetime | None) -> None:
    """graphmem: an embedded, graph-centric memory store for AI agents.

    Every command works on one database directory (--db). Errors print one line
    and exit with status 1; bad arguments exit with status 2.
    """
    ctx.obj = Context(db, json_out, embedder, now)
    ctx.call_on_close(ctx.obj.close)


def fail(message: str) -> NoReturn:
    raise click.ClickException(message)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """A plain text table, columns padded to their widest cell."""
    cells = [[_cell(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    line = "  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)).rstrip()
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in cells]
    return "\n".join([line, rule, *body])


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    text = str(value).replace("\n", " ")
    return text if len(text) <= 80 else text[:79] + "…"


def parse_params(pairs: Sequence[str], *, convert: Callable[[str, str], Any] | None = None
                 ) -> dict[str, Any]:
    """``k=v`` pairs. Values are JSON when they parse as JSON (numbers, true, lists),
    strings otherwise; ``convert(name, raw)`` overrides that per parameter."""
    params: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name.strip():
            raise InvalidInputError(f"--param expects NAME=VALUE, got {pair!r}", field="param")
        name = name.strip()
        if convert is not None:
            params[name] = convert(name, raw)
            continue
        try:
            params[name] = json.loads(raw)
        except ValueError:
            params[name] = raw
    return params
