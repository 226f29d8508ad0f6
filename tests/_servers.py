"""A real sidecar on 127.0.0.1 for tests (uvicorn in a thread of the test process, set
up as ``graphmem serve`` sets it up, or ``graphmem serve`` itself in a process of its
own), and raw HTTP exchanges for what clients refuse to send."""

from __future__ import annotations

import json
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.routing import BaseRoute

from graphmem import MemoryStore
from graphmem.sidecar import Tokens, create_app, server_config


def every_route(routes: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    """Every route of an app, those of included routers and mounted routers too (FastAPI
    keeps an included router as one entry that holds the original router); a mounted
    app that lists no routes stands as its mount."""
    for route in routes:
        router = getattr(route, "original_router", None)
        inner = router.routes if router is not None else getattr(route, "routes", None)
        if inner:
            yield from every_route(inner)
        else:
            yield route


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_healthy(url: str, process: subprocess.Popen[Any], seconds: float = 60) -> None:
    """Until the sidecar ``process`` started answers ``/healthz`` at ``url``."""
    import httpx

    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, process.stderr
        time.sleep(0.1)


@contextmanager
def serve_process(db: Path, *options: str, env: Mapping[str, str]
                  ) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``graphmem --db DB serve`` with ``options`` in a process of its own (a crash or a
    statement that never ends stays there, out of the tests); yields its base URL and the
    process once it answers, then stops it (Ctrl-C, killed if it does not end)."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "graphmem", "--db", str(db), "serve",
                               "--port", str(port), "--log-level", "warning", *options],
                              env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server)
        yield url, server
    finally:
        interrupt(server)


def interrupt(process: subprocess.Popen[Any], seconds: float = 60) -> bool:
    """Ctrl-C to ``process``, then wait for it to end; kill it when it has not within
    ``seconds``. Whether it ended by itself."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False


@contextmanager
def running_sidecar(store: MemoryStore, tokens: Tokens | None = None, *,
                    app: Any = None) -> Iterator[str]:
    """Serve ``store`` on a free loopback port, configured as ``graphmem serve`` does
    (limits and deadlines from ``store.settings``), or ``app`` made from it by
    ``create_app``; yields the base URL."""
    port = free_port()
    config = server_config(app or create_app(store, tokens=tokens), host="127.0.0.1",
                           port=port, settings=store.settings, log_level="warning",
                           lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the sidecar did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@dataclass
class RawResponse:
    """What a raw exchange got back: ``status`` None when the server closed the
    connection without answering."""

    status: int | None
    headers: dict[str, str]
    body: bytes
    closed: bool

    def json(self) -> Any:
        return json.loads(self.body)


def raw_request(url: str, head: bytes, body: Iterable[bytes] = (), *,
                timeout: float = 10.0, pause: float = 0.0) -> RawResponse:
    """Send ``head`` (request line and headers, as given: nothing is checked or fixed)
    then the ``body`` pieces, ``pause`` seconds apart, stopping early when the server
    answers or closes; then read one response, or the close, within ``timeout``."""
    host, _, port = url.removeprefix("http://").partition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(head)
        for piece in body:
            if select.select([sock], [], [], pause)[0]:
                break  # answered (or closed) before the body was all sent
            try:
                sock.sendall(piece)
            except OSError:
                break
        return read_response(sock, time.monotonic() + timeout)


def read_response(sock: socket.socket, deadline: float) -> RawResponse:
    data, closed = b"", False
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip()
                       for k, _, v in (line.partition(":") for line in lines[1:])}
            length = int(headers.get("content-length", "-1"))
            if closed or 0 <= length <= len(rest):
                return RawResponse(int(lines[0].split()[1]), headers,
                                   rest[:length] if length >= 0 else rest,
                                   closed or headers.get("connection") == "close")
        if closed:
            return RawResponse(None, {}, data, True)
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            raise TimeoutError("no answer from the server in time") from None
        except OSError:
            chunk = b""  # reset by the server
        closed = not chunk
        data += chunk
