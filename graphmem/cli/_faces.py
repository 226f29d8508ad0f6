"""Faces for agents: the HTTP sidecar (serve) and the MCP server (mcp)."""

from __future__ import annotations

import os

import click

from ._app import Context, cli, need_extra, pass_ctx, usage


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; beyond loopback, tokens are required.")
@click.option("--port", default=4380, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on; 0 takes a free one.")
@click.option("--tokens", "tokens_file", type=click.Path(dir_okay=False), default=None,
              help="JSON file: token -> {owner, scopes} (default $GRAPHMEM_TOKENS_FILE).")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.option("--idle-exit", "idle_exit_s", type=click.FloatRange(1), default=None,
              metavar="SECONDS", help="Exit after SECONDS without a request.")
@click.option("--auto", is_flag=True, hidden=True,
              help="The sidecar started for a store by graphmem mcp or graphmem.connect: a "
                   "free loopback port, a secret in the discovery file, an idle exit.")
@pass_ctx
def serve(ctx: Context, host: str, port: int, tokens_file: str | None, log_level: str,
          idle_exit_s: float | None, auto: bool) -> None:
    """Serve the store over HTTP (the sidecar) until Ctrl-C.

    \b
    Endpoints under /v1 (memories, conversations, retrieve, feedback, lifecycle,
    export, store), /healthz, the OpenAPI document at /openapi.json and the
    dashboard at /ui. Without tokens only loopback Host headers are served. Limits:
    GRAPHMEM_MAX_BODY_BYTES (16 MiB), GRAPHMEM_HEADER_TIMEOUT_S (10 s for a
    request's line and headers), GRAPHMEM_IDLE_TIMEOUT_S (30 s of body silence).
    """
    need_extra("server", "fastapi", "uvicorn")
    from .._errors import StoreLockedError
    from ..sidecar import serve as run

    settings = ctx.settings()
    ctx.refuse_foreign_directory()
    if auto:  # the port, the tokens and the lifetime are the starter's, not the user's
        port, tokens_file, log_level = 0, None, "warning"
        idle_exit_s = idle_exit_s or settings.sidecar_idle_s

    def ready(url: str) -> None:
        lines = [f"graphmem: serving {ctx.db} at {url}"]
        if auto:
            lines.append(f"  started for process {os.getppid()}; exits after "
                         f"{idle_exit_s:g} s without a request")
        else:
            lines.append(f"  dashboard: {url}/ui/   API: {url}/v1   (Ctrl-C stops)")
        click.echo("\n".join(lines), err=True)

    try:
        run(ctx.db, host=host, port=port, tokens_file=tokens_file, settings=settings,
            embedder=ctx.embedder, log_level=log_level, auto=auto, idle_exit_s=idle_exit_s,
            on_ready=ready)
    except StoreLockedError as exc:
        if not auto:
            raise
        click.echo(f"error: {exc}", err=True)
        from ..client._autostart import LOCKED_EXIT

        raise SystemExit(LOCKED_EXIT) from None


@cli.command()
@click.option("--sidecar", "sidecar_url", default=None, metavar="URL",
              help="Call this sidecar (default $GRAPHMEM_SIDECAR_URL). Without --token, "
                   "the store at --db answers when the sidecar is unreachable, if it is "
                   "the store the sidecar serves.")
@click.option("--token", default=None, envvar="GRAPHMEM_SIDECAR_TOKEN",
              help="Bearer token for the sidecar (default $GRAPHMEM_SIDECAR_TOKEN); with "
                   "one, only the sidecar answers (it enforces the token's owner and "
                   "scopes).")
@click.option("--embedded", is_flag=True,
              help="Open the store in this process alone, instead of sharing it with other "
                   "MCP servers and commands through its sidecar (found, or started).")
@pass_ctx
def mcp(ctx: Context, sidecar_url: str | None, token: str | None, embedded: bool) -> None:
    """Run the MCP server on stdio (tools: remember, recall, feedback, supersede, correct,
    update, link, forget, history, lifecycle_report).

    On a store directory the tools go through the store's sidecar: the one running,
    or one this server starts (a detached `graphmem serve` that exits after
    GRAPHMEM_SIDECAR_IDLE_S, 600 s, without a request), so that several agents,
    commands and notebooks (graphmem.connect(path)) share the store. A line on
    stderr says which sidecar.
    """
    need_extra("mcp", "mcp")
    from ..mcpserver import run_stdio

    if embedded:
        # in this process alone: a sidecar named on the command line contradicts it, one
        # the environment names (and its token) is not used
        given = click.get_current_context().get_parameter_source("token")
        if sidecar_url or ctx.sidecar or ctx.token or (
                token and given is click.core.ParameterSource.COMMANDLINE):
            usage("--embedded opens the store in this process alone; leave out --sidecar "
                  "and --token")
        sidecar_url, token = None, None
    else:
        sidecar_url = sidecar_url or ctx.sidecar or ctx.settings().sidecar_url
        token = token or ctx.token
    if not sidecar_url:
        ctx.refuse_foreign_directory()  # the store it works on, through a sidecar or not

    run_stdio(ctx.db, sidecar_url=sidecar_url, token=token, settings=ctx.settings(),
              embedder=ctx.embedder, embedded=embedded)
