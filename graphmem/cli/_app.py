"""The command-line face's plumbing: the root group and its global options (accepted
before or after the subcommand), opening the store or the sidecar that holds it, errors
(one line, ``error:``; JSON with ``--json``; exit 2 for every usage error), output."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from click.core import ParameterSource

from .._errors import GraphmemError, StoreError, StoreLockedError, error_code
from .._settings import EMBEDDER_CHOICES, Settings
from .._time import parse_iso

if TYPE_CHECKING:
    from .._facade import MemoryStore
    from ..client import Client

__all__ = ["Context", "add_global_options", "cli", "echo_json", "fail", "iso_time",
           "parse_params", "pass_ctx", "table", "usage"]

DEFAULT_DB = "graphmem.db"
#: --embedder's help, where it is an option of every command and of the group
_EMBEDDER_HELP = (f"Embedding model: {EMBEDDER_CHOICES}, each optionally +pooled (default: "
                  "the store's own, or $GRAPHMEM_EMBEDDER for a new store).")


def _refused(message: str, client: Client | None) -> click.UsageError:
    """A usage error of the command line's choice of sidecar (the client it opened,
    closed)."""
    if client is not None:
        client.close()
    return click.UsageError(message, ctx=click.get_current_context(silent=True))


class Context:
    """What every command gets: the global options and a lazily opened store (or the
    sidecar's client, when a sidecar holds the database)."""

    def __init__(self, db: str, json_out: bool, embedder: str | None, now: datetime | None,
                 *, sidecar: str | None = None, token: str | None = None) -> None:
        self.db = db
        self.json = json_out
        self.embedder = embedder
        self.now = now
        self.sidecar = sidecar
        self.token = token
        #: whether --db (or $GRAPHMEM_DB) named the database, rather than the default
        self.db_named = "GRAPHMEM_DB" in os.environ
        self._store: MemoryStore | Client | None = None
        #: where this command may create a store: the directory, and what it held before
        #: (None: no directory); see ``close``
        self._made: tuple[Path, set[str] | None] | None = None

    def settings(self) -> Settings:
        return Settings.from_env()

    @property
    def progress(self) -> bool:
        """Whether long commands draw progress bars: on a terminal's stderr, not with
        --json (a log or a pipe gets the result alone)."""
        return not self.json and _isatty(sys.stderr)

    # -- opening ---------------------------------------------------------------------------
    def api(self, *, create: bool = False, read_only: bool = False) -> MemoryStore | Client:
        """What a command that the sidecar serves works on: the sidecar named by
        --sidecar / $GRAPHMEM_SIDECAR_URL, or the one serving --db (it wrote
        ``<db>.sidecar.json``), else the database itself; while another command holds
        the database, its sidecar once one starts. A database that is not there is an
        error unless ``create``: a mistyped --db makes no new store."""
        if self._store is None:
            found: MemoryStore | Client | None = self._sidecar()
            if found is None:
                found = self._open_when_free(create=create, read_only=read_only,
                                             embedder=None)
            self._store = found
        return self._store

    def store(self, *, read_only: bool = False, embedder: str | None = None,
              create: bool = True) -> MemoryStore:
        """The database itself, for commands the sidecar does not serve (imports,
        re-embedding, drawings ...): refused, saying what to do, while a sidecar holds it."""
        from .._facade import MemoryStore

        if isinstance(self._store, MemoryStore):
            return self._store
        client = self._sidecar()
        if client is None:
            found = self._open_when_free(create=create, read_only=read_only,
                                         embedder=embedder)
            if isinstance(found, MemoryStore):
                self._store = found
                return found
            client = found
        command = click.get_current_context().command_path
        client.close()
        raise StoreLockedError(
            f"`{command}` works on the database itself, and the sidecar at "
            f"{client.url} holds it: stop the sidecar, run the command, start it again")

    def _open(self, *, create: bool, read_only: bool, embedder: str | None) -> MemoryStore:
        from .._facade import MemoryStore
        from ..engines import KuzuEngine, is_postgres_url

        local = self.db != ":memory:" and not is_postgres_url(self.db)
        held = local and KuzuEngine.holds_store(self.db)  # asked once for the checks below
        problem = KuzuEngine.link_problem(self.db) if local and not held else None
        if problem is not None:
            raise StoreError(problem)
        if local and not held:
            # a file, or a folder of other files: said before "create one with init",
            # which would refuse it
            self.refuse_foreign_directory()
        if local and not create and not held:
            raise StoreError(f"no graphmem database at {self.db}: create one with "
                             f"`graphmem --db {self.db} init` (or import into it), or check "
                             "--db and $GRAPHMEM_DB")
        now = self.now
        clock = (lambda: now) if now is not None else None
        made = None
        if local and create and not read_only and not held:
            directory = Path(self.db)
            made = (directory, {e.name for e in directory.iterdir()}
                    if directory.is_dir() else None)
        store = MemoryStore(self.db, settings=self.settings(),
                            embedder=embedder or self.embedder, read_only=read_only,
                            clock=clock, create=create)
        self._made = made  # the store is this process's now: no other can have made it
        return store

    def refuse_foreign_directory(self) -> None:
        """Refuse --db when it is a directory of other files that holds no store: a new
        database goes into a new or empty directory (every face that may create one)."""
        from ..engines import KuzuEngine, is_postgres_url

        if is_postgres_url(self.db):
            return
        problem = KuzuEngine.foreign_directory(self.db)
        if problem is not None:
            raise StoreError(f"{problem}; check --db and $GRAPHMEM_DB")

    def _open_when_free(self, *, create: bool, read_only: bool, embedder: str | None
                        ) -> MemoryStore | Client:
        """The database itself; while another process holds it, opened once it lets go
        (another command holds it for a second or two), or the sidecar that starts for
        it meanwhile (one holds the store a moment before it announces itself), tried
        every 0.2 s for ``lock_wait_s`` (``GRAPHMEM_LOCK_WAIT_S``, 15 s). A command that
        waited for a sidecar alone failed after 15 s while the command before it was done
        after one."""
        import time

        timeout_s = self.settings().lock_wait_s
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return self._open(create=create, read_only=read_only, embedder=embedder)
            except StoreLockedError as exc:
                if exc.here:  # this process holds it
                    raise
                if time.monotonic() >= deadline:
                    raise StoreLockedError(f"{exc} (waited {timeout_s:g} s for it)") from exc
            time.sleep(0.2)
            client = self._sidecar()
            if client is not None:
                return client

    def _sidecar(self) -> Client | None:
        """The sidecar to use: the one named, or the one that says it serves --db and
        answers with that store's id (a stale file is ignored). --now is refused there:
        the sidecar keeps its own clock."""
        from .._discovery import discover  # the HTTP client only when needed

        url = self.sidecar or self.settings().sidecar_url
        token = self.token or os.environ.get("GRAPHMEM_SIDECAR_TOKEN") or None
        found = None if url else discover(self.db)
        if not url and found is None:
            return None
        from ..client import Client, SidecarUnreachable

        # the local user records its agent id as the actor; a token's owner is its actor
        actor = None if token else self.settings().agent_id
        if url:
            self._refuse_now(url)
            client = Client(url, token=token, actor=actor)
            if self.db_named:
                self._refuse_another_store(client)
            return client
        assert found is not None
        client = Client(found.url, token=token or found.secret, timeout_s=30.0, actor=actor)
        try:
            served = client.whoami().get("store_id")
        except SidecarUnreachable:
            client.close()
            return None
        if served != found.store_id:
            client.close()
            return None
        self._refuse_now(found.url, client)
        if not self.json:
            click.echo(f"note: the sidecar at {found.url} holds {self.db}; working through it",
                       err=True)
        return client

    def _refuse_another_store(self, client: Client) -> None:
        """--db and a sidecar both named: the sidecar must be the one serving --db (its
        ``<db>.sidecar.json`` names the store it answers with), else the command would
        work on another store than --db says, without a word."""
        from .._discovery import discover
        from ..client import SidecarUnreachable

        found = discover(self.db)
        try:
            served = client.whoami().get("store_id")
        except SidecarUnreachable:
            return  # the command says so when it calls the sidecar
        if found is not None and served is not None and found.store_id == served \
                and found.url.rstrip("/") == client.url.rstrip("/"):
            return  # (a copy of the store has its id: the address tells them apart)
        raise _refused(
            f"--db (or $GRAPHMEM_DB) names {self.db}, but the sidecar at {client.url} is "
            f"not the one serving it: it serves another store, or a copy "
            f"({served or 'of unknown id'}): leave out --db and $GRAPHMEM_DB to work "
            "through the sidecar, or --sidecar and $GRAPHMEM_SIDECAR_URL to work on the "
            "database", client)

    def _refuse_now(self, url: str, client: Client | None = None) -> None:
        if self.now is None:
            return
        raise _refused(
            f"--now pretends the time in this process, and the sidecar at {url} (which "
            f"holds {self.db}) keeps its own clock: leave --now out, or stop the sidecar "
            "to run the command on the database itself", client)

    def close(self) -> None:
        """Close the store at the command's end. A store this command created and left
        without a memory is noted (``_UNMADE``): should the command fail with an error,
        what it created goes (``undo_new_store``), so that a refused import into a new
        --db leaves no empty store there."""
        from .._facade import MemoryStore

        made, self._made = self._made, None
        if self._store is not None:
            empty = False
            if made is not None and isinstance(self._store, MemoryStore):
                with contextlib.suppress(GraphmemError):
                    empty = self._store.stats().memories == 0
            self._store.close()
            self._store = None
            if empty and made is not None:
                _UNMADE.append(made)


#: New, empty stores of the command that ran (``Context.close``), for ``undo_new_store``.
_UNMADE: list[tuple[Path, set[str] | None]] = []


def undo_new_store() -> None:
    """After a command failed with an error (not an interruption: Ctrl-C ends ``ui``):
    remove the empty store it created, the entries its directory did not hold before
    (the directory too when it made it)."""
    while _UNMADE:
        directory, before = _UNMADE.pop()
        if before is None:
            shutil.rmtree(directory, ignore_errors=True)
            continue
        for entry in directory.iterdir():
            if entry.name in before:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


pass_ctx = click.make_pass_decorator(Context)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# -- global options, before or after the subcommand ----------------------------------------
def iso_time(_: click.Context, __: click.Parameter, value: str | None) -> datetime | None:
    """An option's ISO time as a datetime (a click callback; None when not given)."""
    if value is None:
        return None
    try:
        return parse_iso(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def db_path(_: click.Context, __: click.Parameter, value: str | None) -> str | None:
    """--db without the spaces around it (as $GRAPHMEM_DB is read: a quoted 's1.db ' made
    a second store beside s1.db), refused when blank (it would name the working
    directory)."""
    if value is not None and not value.strip():
        raise click.BadParameter("is empty: give a database directory or a postgresql:// "
                                 "URL (or leave --db out for $GRAPHMEM_DB or ./graphmem.db)")
    return value.strip() if value is not None else None


#: (declarations, attribute of Context, option settings): the root group's options, which
#: every command accepts too.
GLOBAL_OPTIONS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("--db",), "db", {"metavar": "PATH", "callback": db_path,
                       "help": "Database directory (default $GRAPHMEM_DB or ./graphmem.db)."}),
    (("--json", "json_out"), "json", {"is_flag": True, "default": None,
                                      "help": "Machine-readable JSON output (errors too)."}),
    (("--embedder",), "embedder", {"metavar": "SPEC", "help": _EMBEDDER_HELP}),
    (("--now",), "now", {"metavar": "ISO", "callback": iso_time,
                         "help": "Pretend the current time is ISO (replays, demos, tests)."}),
    (("--sidecar",), "sidecar", {"metavar": "URL", "help": "Work through the graphmem "
                                 "sidecar at URL (default $GRAPHMEM_SIDECAR_URL, or the one "
                                 "serving --db)."}),
    (("--token",), "token", {"metavar": "TOKEN", "help": "Bearer token for the sidecar "
                             "(default $GRAPHMEM_SIDECAR_TOKEN)."}),
]


def _setter(attribute: str, check: Callable[[click.Context, click.Parameter, Any], Any] | None
            ) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A callback that lets an option given after the subcommand override the root's,
    through the root option's own ``check`` (its callback)."""

    def remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None or value is False:  # not given (a flag left out is False)
            return None
        if check is not None:
            value = check(ctx, param, value)
        obj = ctx.find_object(Context)
        if obj is not None:
            setattr(obj, attribute, value)
            if attribute == "db":
                obj.db_named = True
        return value

    return remember


def add_global_options(group: click.Group) -> None:
    """Give every command and subgroup under ``group`` the global options (not those it
    defines itself: ``reembed --embedder`` is its target model)."""
    for command in group.commands.values():
        taken = {opt for p in command.params for opt in getattr(p, "opts", [])}
        for decls, attribute, settings in GLOBAL_OPTIONS:
            if decls[0] in taken:
                continue
            extra = {k: v for k, v in settings.items() if k not in ("callback", "default")}
            command.params.append(click.Option(
                [decls[0]], expose_value=False, default=None,
                callback=_setter(attribute, settings.get("callback")), **extra))
        if isinstance(command, click.Group):
            add_global_options(command)


# -- errors ----------------------------------------------------------------------------------
def _report(message: str, *, code: str, json_mode: bool, field: str | None = None,
            usage_line: str | None = None) -> None:
    if json_mode:
        body: dict[str, Any] = {"error": code, "detail": message}
        if field:
            body["field"] = field
        click.echo(json.dumps(body, ensure_ascii=False), err=True)
        return
    click.echo(f"error: {message}", err=True)
    if usage_line:
        click.echo(usage_line, err=True)


class _Group(click.Group):
    """The root group: every failure is one line on stderr (``error: ...``; a JSON object
    with --json), never a traceback; exit 1 for errors, 2 for usage errors."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        json_mode = "--json" in argv[:argv.index("--")] if "--" in argv else "--json" in argv
        garbled = _not_utf8(argv)
        if garbled is not None:
            _report(garbled, code="usage", json_mode=json_mode)
            if standalone_mode:
                sys.exit(2)
            return 2
        _UNMADE.clear()
        try:
            result = super().main(argv, prog_name, complete_var, standalone_mode=False,
                                  **extra)
            code = result if isinstance(result, int) and not isinstance(result, bool) else 0
        except click.UsageError as exc:
            ctx = exc.ctx or self._context_of(argv, prog_name or "graphmem")
            hint = (ctx.get_usage().replace("Usage:", "usage:", 1)
                    + f"  (see {ctx.command_path} --help)")
            _report(exc.format_message(), code="usage", json_mode=json_mode, usage_line=hint)
            code = 2
        except click.ClickException as exc:
            _report(exc.format_message(), code="error", json_mode=json_mode)
            code = exc.exit_code
        except GraphmemError as exc:
            _report(str(exc), code=error_code(exc), json_mode=json_mode,
                    field=getattr(exc, "field", None))
            code = 1
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            _report(f"{exc.strerror or exc}{where}", code="os_error", json_mode=json_mode)
            code = 1
        except (click.Abort, KeyboardInterrupt):
            _report("interrupted", code="interrupted", json_mode=json_mode)
            code = 130
        if code not in (0, 130):
            undo_new_store()
        _UNMADE.clear()
        if standalone_mode:
            sys.exit(code)
        return code


    def _context_of(self, argv: Sequence[str], prog_name: str) -> click.Context:
        """The context of the command ``argv`` names, for an error click raised before it
        had one (an option missing its value: ``graphmem stats --db``)."""
        command: click.Command = self
        path = [prog_name]
        for token in argv:
            if isinstance(command, click.Group) and token in command.commands:
                command = command.commands[token]
                path.append(token)
        return click.Context(command, info_name=" ".join(path))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", default=lambda: os.environ.get("GRAPHMEM_DB", "").strip() or DEFAULT_DB,
              callback=db_path, metavar="PATH",
              show_default="$GRAPHMEM_DB or ./graphmem.db",
              help="Database directory, or a postgresql:// URL.")
@click.option("--json", "json_out", is_flag=True, help="Machine-readable JSON output "
                                                       "(errors too, on stderr).")
@click.option("--embedder", default=None,
              help=_EMBEDDER_HELP)
@click.option("--now", callback=iso_time, default=None, metavar="ISO",
              help="Pretend the current time is ISO (replays, demos, tests).")
@click.option("--sidecar", default=None, metavar="URL",
              help="Work through the graphmem sidecar at URL (default "
                   "$GRAPHMEM_SIDECAR_URL, or the one serving --db: `graphmem serve` "
                   "writes <db>.sidecar.json).")
@click.option("--token", default=None, metavar="TOKEN",
              help="Bearer token for the sidecar (default $GRAPHMEM_SIDECAR_TOKEN).")
@click.version_option(package_name="graphmem")
@click.pass_context
def cli(ctx: click.Context, db: str, json_out: bool, embedder: str | None,
        now: datetime | None, sidecar: str | None, token: str | None) -> None:
    """graphmem: an embedded, graph-centric memory store for AI agents.

    Every command works on one database directory (--db), or through the sidecar that
    serves it. The options above are accepted after the command too. Errors print one
    line and exit with status 1; usage errors exit with status 2.
    """
    ctx.obj = Context(db, json_out, embedder, now, sidecar=sidecar, token=token)
    if ctx.get_parameter_source("db") is ParameterSource.COMMANDLINE:
        ctx.obj.db_named = True
    ctx.call_on_close(ctx.obj.close)


def fail(message: str) -> NoReturn:
    """An error that is not graphmem's (exit 1)."""
    raise click.ClickException(message)


def need_extra(extra: str, *modules: str) -> None:
    """Fail with the install command when a face's optional dependencies are missing
    (``graphmem[server]`` for the sidecar and the dashboard, ``graphmem[mcp]``)."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            fail(f"this command needs the {extra!r} extra ({module} is not installed): "
                 f"pip install 'graphmem[{extra}]'")


def usage(message: str) -> NoReturn:
    """A usage error: the arguments do not make sense together (exit 2)."""
    raise click.UsageError(message, ctx=click.get_current_context(silent=True))


def echo_json(data: Any) -> None:
    """``data`` as strict JSON: a NaN or infinite number (a Cypher result may hold one) is
    null, as the sidecar answers it, not the ``NaN`` a JSON parser refuses."""
    click.echo(json.dumps(_finite(data), ensure_ascii=False, indent=2, default=str,
                         allow_nan=False))


def _finite(data: Any) -> Any:
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(v) for v in data]
    return data


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str], *, cut: int | None = 80
          ) -> str:
    """A plain text table, columns padded to their widest cell, a cell cut at ``cut``
    characters (None: whole)."""
    cells = [[_cell(c, cut) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    line = "  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)).rstrip()
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in cells]
    return "\n".join([line, rule, *body])


def _cell(value: Any, cut: int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    text = str(value).replace("\n", " ")
    return text if cut is None or len(text) <= cut else text[:cut - 1] + "…"


def parse_params(pairs: Sequence[str], *, convert: Callable[[str, str], Any] | None = None
                 ) -> dict[str, Any]:
    """``k=v`` pairs (``$k=v`` too, as the query spells it). Values are JSON when they
    parse as JSON (numbers, true, lists; not NaN or Infinity, which JSON has not),
    strings otherwise; ``convert(name, raw)`` overrides that per parameter."""
    params: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        name = name.strip().removeprefix("$")
        if not sep or not name:
            raise click.BadParameter(f"expects NAME=VALUE, got {pair!r}",
                                     param_hint="'--param'")
        if name in params:
            raise click.BadParameter(f"{name} is given twice", param_hint="'--param'")
        if convert is not None:
            params[name] = convert(name, raw)
            continue
        try:
            params[name] = json.loads(raw, parse_constant=_not_json)
        except ValueError:
            params[name] = raw
        except RecursionError:
            raise click.BadParameter(f"{name}: JSON nested too deeply",
                                     param_hint="'--param'") from None
    return params


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _not_utf8(argv: Sequence[str]) -> str | None:
    """What is wrong with the first argument, or ``GRAPHMEM_*`` variable, that was not
    UTF-8 (Python reads such bytes as lone surrogates, which nothing downstream can
    encode), or None."""
    named = [(f"argument {number}", arg) for number, arg in enumerate(argv, 1)]
    named += [(f"${name}", value) for name, value in sorted(os.environ.items())
              if name.startswith("GRAPHMEM_")]
    for what, arg in named:
        if not arg.isascii():
            try:
                arg.encode("utf-8")
            except UnicodeEncodeError:
                shown = arg.encode("utf-8", "surrogateescape").decode("utf-8",
                                                                      "backslashreplace")
                return (f"{what} ({shown}) is not UTF-8 text: graphmem reads its arguments "
                        "and settings as UTF-8; check the terminal's or the script's encoding")
    return None
