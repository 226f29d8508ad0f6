"""A loopback server that speaks the part of Ollama's HTTP API graphmem uses.

``POST /api/generate`` answers from a script (a list of response strings, consumed in
order; the last one repeats); ``POST /api/embed`` returns deterministic vectors;
``GET /api/tags`` lists the model. Every request is recorded for assertions.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOllama:
    def __init__(self, generate: list[str] | None = None, dim: int = 16) -> None:
        self.generate = list(generate or ['{"memories": []}'])
        self.dim = dim
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def vector(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [(b - 128) / 128 for b in digest[: self.dim]]

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, body: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/api/tags":
                    self._reply({"models": [{"name": "fake:latest", "model": "fake:latest"}]})
                else:
                    self._reply({"error": "not found"}, 404)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append((self.path, body))
                if self.path == "/api/generate":
                    text = fake.generate.pop(0) if len(fake.generate) > 1 else fake.generate[0]
                    self._reply({"model": body.get("model"), "created_at":
                                 "2026-07-15T00:00:00Z", "response": text, "done": True})
                elif self.path == "/api/embed" and not str(body.get("model")).startswith(
                        "fake"):  # what Ollama says of a model it has not pulled
                    self._reply({"error": f"model \"{body.get('model')}\" not found, try "
                                 "pulling it first"}, 404)
                elif self.path == "/api/embed":
                    inputs = body.get("input")
                    inputs = [inputs] if isinstance(inputs, str) else inputs
                    self._reply({"model": body.get("model"),
                                 "embeddings": [fake.vector(t) for t in inputs]})
                else:
                    self._reply({"error": f"unknown path {self.path}"}, 404)

        return Handler


@contextmanager
def fake_ollama(generate: list[str] | None = None, dim: int = 16) -> Iterator[FakeOllama]:
    """Run a fake Ollama on 127.0.0.1 (a free port) for the length of the block."""
    fake = FakeOllama(generate, dim)
    fake.server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
        thread.join(timeout=5)
