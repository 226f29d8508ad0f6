"""Faces for agents: the HTTP sidecar (serve) and the MCP server (mcp)."""

from __future__ import annotations

import click

from ._app import Context, cli, need_extra, pass_ctx


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; beyond loopback, tokens are required.")
@click.option("--port", default=4380, show_default=True, type=click.IntRange(1, 65535))
@click.option("--tokens", "tokens_file", type=click.Path(dir_okay=False), default=None,
              help="JSON file: token -> {owner, scopes} (default $GRAPHMEM_TOKENS_FILE).")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@pass_ctx
def serve(ctx: Context, host: str, port: int, tokens_file: str | None, log_level: str) -> None:
    """Serve the store over HTTP (the sidecar) until Ctrl-C.

    \b
    Endpoints under /v1 (memories, conversations, retrieve, feedback, lifecycle,
    export, store), /healthz, and the OpenAPI document at /openapi.json.
    Without tokens only loopback Host headers are served. Limits:
    GRAPHMEM_MAX_BODY_BYTES (16 MiB), GRAPHMEM_HEADER_TIMEOUT_S (10 s for a
    request's line and headers), GRAPHMEM_IDLE_TIMEOUT_S (30 s of body silence).
    """
    need_extra("server", "fastapi", "uvicorn")
    from ..sidecar import serve as run

    run(ctx.db, host=host, port=port, tokens_file=tokens_file, settings=ctx.settings(),
        embedder=ctx.embedder, log_level=log_level)


@cli.command()
@click.option("--sidecar", "sidecar_url", default=None, metavar="URL",
              help="Call this sidecar (default $GRAPHMEM_SIDECAR_URL). Without --token, "
                   "the store at --db answers when the sidecar is unreachable, if it is "
                   "the store the sidecar serves.")
@click.option("--token", default=None, envvar="GRAPHMEM_SIDECAR_TOKEN",
              help="Bearer token for the sidecar (default $GRAPHMEM_SIDECAR_TOKEN); with "
                   "one, only the sidecar answers (it enforces the token's owner and "
                   "scopes).")
@pass_ctx
def mcp(ctx: Context, sidecar_url: str | None, token: str | None) -> None:
    """Run the MCP server on stdio (tools: remember, recall, feedback, supersede, correct,
    update, link, forget, history, lifecycle_report)."""
    need_extra("mcp", "mcp")
    from ..mcpserver import run_stdio

    run_stdio(ctx.db, sidecar_url=sidecar_url or ctx.sidecar or ctx.settings().sidecar_url,
              token=token or ctx.token, settings=ctx.settings(), embedder=ctx.embedder)
