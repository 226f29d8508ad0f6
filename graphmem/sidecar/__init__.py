"""The HTTP sidecar face: ``create_app`` over an open store, ``serve`` to run it."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .._errors import InvalidInputError
from .._facade import MemoryStore
from .._settings import Settings
from ._app import create_app
from ._auth import SCOPES, Principal, Tokens
from ._errors import error_status
from ._guard import is_loopback_host
from ._server import server_config

__all__ = ["SCOPES", "Principal", "Tokens", "create_app", "error_status", "is_loopback",
           "is_loopback_host", "serve", "server_config"]

DEFAULT_PORT = 4380


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(db: str | Path, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
          tokens_file: str | Path | None = None, settings: Settings | None = None,
          embedder: str | None = None, log_level: str = "info") -> None:
    """Open the store and serve it until interrupted (Ctrl-C), then close it cleanly.

    Refuses to listen beyond loopback without tokens: anyone on the network would
    otherwise read every memory. Limits and deadlines come from ``settings``
    (``GRAPHMEM_MAX_BODY_BYTES``, ``GRAPHMEM_HEADER_TIMEOUT_S``, ``GRAPHMEM_IDLE_TIMEOUT_S``).
    """
    import uvicorn

    settings = settings or Settings.from_env()
    path = tokens_file or settings.tokens_file
    tokens = Tokens.load(path) if path else None
    if tokens is None and not is_loopback(host):
        raise InvalidInputError(
            f"refusing to listen on {host} without tokens: anyone who can reach it could "
            "read every memory. Pass --tokens FILE (or set GRAPHMEM_TOKENS_FILE), or bind "
            "to 127.0.0.1", field="host")
    store = MemoryStore(db, settings=settings, embedder=embedder)
    try:
        config = server_config(create_app(store, tokens=tokens), host=host, port=port,
                               settings=settings, log_level=log_level)
        with announced(db, store, host=host, port=port, tokens=tokens):
            uvicorn.Server(config).run()
    finally:
        store.close()


@contextmanager
def announced(db: str | Path, store: MemoryStore, *, host: str, port: int,
              tokens: Tokens | None) -> Iterator[None]:
    """While serving, ``<db>.sidecar.json`` tells commands on this machine where the
    sidecar is (``graphmem.client.discover``), so they use it instead of failing on the
    database's lock."""
    from ..client import Discovery, forget_discovery, write_discovery
    from ..engines import is_postgres_url

    local = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "localhost": "127.0.0.1"}.get(host, host)
    if ":" in local and not local.startswith("["):
        local = f"[{local}]"
    if str(db) != ":memory:" and not is_postgres_url(str(db)):  # a URL has no files
        write_discovery(db, Discovery(url=f"http://{local}:{port}", store_id=store.store_id,
                                      pid=os.getpid(),
                                      auth="tokens" if tokens is not None else "local"))
    try:
        yield
    finally:
        forget_discovery(db)
