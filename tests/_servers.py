"""A real sidecar on 127.0.0.1 for tests: uvicorn in a thread of the test process."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from graphmem import MemoryStore
from graphmem.sidecar import Tokens, create_app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running_sidecar(store: MemoryStore, tokens: Tokens | None = None) -> Iterator[str]:
    """Serve ``store`` on a free loopback port; yields the base URL."""
    port = free_port()
    config = uvicorn.Config(create_app(store, tokens=tokens), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="off")
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
