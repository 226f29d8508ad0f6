"""How the sidecar is served: uvicorn's h11 protocol with a deadline for request heads.

What uvicorn 0.54 and h11 0.16 offer against slow or idle clients, and what is used:

- ``timeout_keep_alive``: closes a kept-alive connection idle between requests; it is
  cancelled by the first byte of the next request, so it does not bound a slow one.
- ``h11_max_incomplete_event_size`` (h11's ``max_incomplete_event_size``): the bytes
  buffered for an unfinished request line and headers (a 400 beyond it); set to 64 KiB,
  room for an id of the longest allowed length, percent-encoded.
- ``limit_concurrency`` answers 503 beyond a number of connections and tasks; not set,
  since the deadlines below already end stalled connections.
- No option bounds the time to receive the request line and headers (slowloris: one
  byte every few seconds keeps a connection forever). ``_HeadDeadlineProtocol`` adds
  it: the head must be complete within ``header_timeout_s`` of the connection opening
  or of the previous response, or the connection is closed.
- A stalled body is the gate's to end (``idle_timeout_s``, answered with a 408).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .._settings import Settings

__all__ = ["MAX_HEAD_BYTES", "server_config"]

MAX_HEAD_BYTES = 64 * 1024


class _HeadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, with a deadline for each request's line and headers."""

    header_timeout_s = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._head_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # a request head has arrived
            self._disarm()

    def on_response_complete(self) -> None:
        self._arm()  # the next request's head must come in time too
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        timer, self._head_timer = getattr(self, "_head_timer", None), None
        if timer is not None:
            timer.cancel()

    def _too_slow(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def server_config(app: Any, *, host: str, port: int, settings: Settings,
                  log_level: str = "info", **more: Any) -> uvicorn.Config:
    """The uvicorn configuration of a sidecar: timeouts and limits from ``settings``."""
    protocol = type("HeadDeadlineProtocol", (_HeadDeadlineProtocol,),
                    {"header_timeout_s": settings.header_timeout_s})
    return uvicorn.Config(app, host=host, port=port, log_level=log_level,
                          server_header=False, http=protocol,
                          timeout_keep_alive=max(1, math.ceil(settings.header_timeout_s)),
                          h11_max_incomplete_event_size=MAX_HEAD_BYTES, **more)
