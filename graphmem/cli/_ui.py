"""``graphmem ui``: the operator dashboard on a local store, in the default browser."""

from __future__ import annotations

import threading
import time
import webbrowser

import click

from .._errors import InvalidInputError
from ._app import Context, cli, need_extra, pass_ctx


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; beyond loopback, tokens are required.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on; 0 picks a free one.")
@click.option("--tokens", "tokens_file", type=click.Path(dir_okay=False), default=None,
              help="JSON file: token -> {owner, scopes} (default $GRAPHMEM_TOKENS_FILE); "
                   "with it the dashboard asks for a token and shows its owner's memories.")
@click.option("--open/--no-open", "open_browser", default=True, show_default=True,
              help="Open the dashboard in the default web browser.")
@pass_ctx
def ui(ctx: Context, host: str, port: int, tokens_file: str | None,
       open_browser: bool) -> None:
    """Open the operator dashboard on the store until Ctrl-C.

    \b
    Pages: Overview, Extraction quality, Review queue (approve, reject, undo),
    Memory view (versions, events, edges, neighbourhood drawing) and Recall
    playground. It is the sidecar's /ui (graphmem serve serves it too): without
    tokens, the local user sees every owner, on loopback only.
    """
    need_extra("server", "fastapi", "uvicorn")
    import uvicorn

    from ..sidecar import Tokens, create_app, is_loopback, server_config

    settings = ctx.settings()
    path = tokens_file or settings.tokens_file
    tokens = Tokens.load(path) if path else None
    if tokens is None and not is_loopback(host):
        raise InvalidInputError(f"refusing to listen on {host} without tokens: anyone who "
                                "can reach it could read every memory. Pass --tokens FILE, "
                                "or bind to 127.0.0.1", field="host")
    store = ctx.store()
    server = uvicorn.Server(server_config(create_app(store, tokens=tokens), host=host,
                                          port=port, settings=settings, log_level="warning"))

    def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            time.sleep(0.05)
        bound = server.servers[0].sockets[0].getsockname()[1]
        name = f"[{host}]" if ":" in host else host
        url = f"http://{name}:{bound}/ui/"
        click.echo(f"dashboard: {url}  (Ctrl-C to stop)")
        if open_browser:
            webbrowser.open(url)

    threading.Thread(target=announce, daemon=True).start()
    server.run()
