"""The HTTP sidecar face: ``create_app`` over an open store, ``serve`` to run it."""

from __future__ import annotations

import errno
import ipaddress
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._errors import InvalidInputError
from .._facade import MemoryStore
from .._settings import Settings
from ._app import create_app
from ._auth import LOCAL, SCOPES, Principal, Tokens
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
          embedder: str | None = None, log_level: str = "info", auto: bool = False,
          idle_exit_s: float | None = None,
          on_ready: Callable[[str], None] | None = None) -> None:
    """Open the store and serve it until interrupted (Ctrl-C), then close it cleanly.

    Refuses to listen beyond loopback without tokens: anyone on the network would
    otherwise read every memory. ``port`` 0 takes a free one. ``auto`` is the sidecar
    started for a store (``graphmem.client.find_or_start``): loopback, a fresh secret
    that only the store's user can read in the discovery file instead of a tokens file
    (its holders are the local user), and an exit after ``idle_exit_s`` without a
    request. ``on_ready(url)`` is called once it listens. Limits and deadlines come from
    ``settings`` (``GRAPHMEM_MAX_BODY_BYTES``, ``GRAPHMEM_HEADER_TIMEOUT_S``,
    ``GRAPHMEM_IDLE_TIMEOUT_S``).
    """
    import uvicorn

    settings = settings or Settings.from_env()
    secret = None
    if auto:
        secret = secrets.token_urlsafe(32)
        tokens: Tokens | None = Tokens({secret: LOCAL})
    else:
        path = tokens_file or settings.tokens_file
        tokens = Tokens.load(path) if path else None
    if (tokens is None or auto) and not is_loopback(host):
        raise InvalidInputError(
            f"refusing to listen on {host} without tokens: anyone who can reach it could "
            "read every memory. Pass --tokens FILE (or set GRAPHMEM_TOKENS_FILE), or bind "
            "to 127.0.0.1", field="host")
    listener = _listen(host, port)
    try:
        store = MemoryStore(db, settings=settings, embedder=embedder)
    except BaseException:
        listener.close()
        raise
    restore = _stop_on_sigterm()
    try:
        store.warm()  # before it listens: healthy means a first request waits for nothing
        url = _local_url(host, listener.getsockname()[1])
        app: Any = create_app(store, tokens=tokens)
        watch = _IdleWatch(app) if idle_exit_s else None
        config = server_config(watch or app, host=host, port=listener.getsockname()[1],
                               settings=settings, log_level=log_level)
        server = uvicorn.Server(config)
        with announced(db, store, url=url, tokens=tokens, secret=secret):
            if on_ready is not None:
                on_ready(url)
            if watch is not None and idle_exit_s:
                watch.stop_after(server, idle_exit_s)
            server.run(sockets=[listener])
    finally:
        listener.close()
        store.close()
        restore()


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0: a free port), so the URL is known before
    uvicorn runs and a port in use is a clear error instead of uvicorn's log line."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        listener = socket.socket(family, kind, proto)
    except OSError as exc:
        raise InvalidInputError(f"cannot listen on {host}: {exc}", field="host") from None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(2048)  # connections wait in the backlog until uvicorn accepts
    except OSError as exc:
        listener.close()
        hint = " (another graphmem serve? --port 0 takes a free port)" \
            if exc.errno == errno.EADDRINUSE else ""
        raise InvalidInputError(f"cannot listen on {host}:{port}: "
                                f"{exc.strerror or exc}{hint}", field="port") from None
    return listener


def _local_url(host: str, port: int) -> str:
    """The URL a client on this machine uses for a server bound to ``host``."""
    local = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "localhost": "127.0.0.1"}.get(host, host)
    if ":" in local and not local.startswith("["):
        local = f"[{local}]"
    return f"http://{local}:{port}"


class _IdleWatch:
    """The app, counting requests in flight and when the last one ended, so that a
    sidecar started for a store ends once nobody has used it for a while."""

    def __init__(self, app: Any) -> None:
        self.app, self.active, self.last = app, 0, time.monotonic()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1
            self.last = time.monotonic()

    def stop_after(self, server: Any, idle_s: float) -> None:
        """Tell ``server`` to exit once no request has run for ``idle_s`` seconds."""

        def watch() -> None:
            while not server.should_exit:
                time.sleep(min(1.0, idle_s / 4))
                if not self.active and time.monotonic() - self.last >= idle_s:
                    server.should_exit = True

        threading.Thread(target=watch, name="graphmem-idle-exit", daemon=True).start()


def _stop_on_sigterm() -> Callable[[], None]:
    """SIGTERM ends ``serve`` like Ctrl-C: the store is closed (its log checkpointed).

    uvicorn drains requests on SIGTERM, then raises the signal again under the handler it
    found; with the default one the process died there, before the store was closed, and
    the next open had to replay the write-ahead log. Returns what undoes this."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    previous = signal.signal(signal.SIGTERM, stop)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


@contextmanager
def announced(db: str | Path, store: MemoryStore, *, url: str, tokens: Tokens | None,
              secret: str | None = None) -> Iterator[None]:
    """While serving, ``<db>.sidecar.json`` tells commands on this machine where the
    sidecar is (``graphmem.client.discover``), so they use it instead of failing on the
    database's lock."""
    from .._discovery import Discovery, forget_discovery, write_discovery
    from ..engines import is_postgres_url

    auth = "secret" if secret else "tokens" if tokens is not None else "local"
    if str(db) != ":memory:" and not is_postgres_url(str(db)):  # a URL has no files
        write_discovery(db, Discovery(url=url, store_id=store.store_id, pid=os.getpid(),
                                      auth=auth, secret=secret))
    try:
        yield
    finally:
        forget_discovery(db)
