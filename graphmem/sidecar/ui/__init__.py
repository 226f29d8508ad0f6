"""The dashboard's parts: browser sessions in front of the sidecar's gate (``_sessions``),
the data behind each page (``_pages``), and the page itself (``static/``: HTML, CSS and
JavaScript, no network)."""

from __future__ import annotations

from ._pages import Pages
from ._sessions import SESSION, Session, SessionGate, Sessions

__all__ = ["SESSION", "Pages", "Session", "SessionGate", "Sessions"]
