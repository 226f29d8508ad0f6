"""A thin, optional Ollama client: text generation for summaries and extraction.

Only used when a host is configured (``GRAPHMEM_OLLAMA_HOST`` or ``OLLAMA_HOST``); every
failure becomes ``BackendUnavailableError`` so callers can fall back to the deterministic
path and say so.
"""

from __future__ import annotations

from typing import Any

from ._errors import BackendUnavailableError
from ._settings import Settings

__all__ = ["OllamaGenerator"]


class OllamaGenerator:
    """Generates text (or JSON) with a local Ollama model through the ``ollama`` client."""

    def __init__(self, host: str, model: str, *, timeout: float = 30.0) -> None:
        self.host = host
        self.model = model
        self._timeout = timeout
        self._client: Any = None

    @classmethod
    def from_settings(cls, settings: Settings) -> OllamaGenerator | None:
        if not settings.ollama_host:
            return None
        return cls(settings.ollama_host, settings.ollama_model, timeout=settings.ollama_timeout_s)

    def generate(self, prompt: str, *, system: str | None = None, json_mode: bool = False
                 ) -> str:
        import ollama

        if self._client is None:
            self._client = ollama.Client(host=self.host, timeout=self._timeout)
        try:
            response = self._client.generate(model=self.model, prompt=prompt, system=system,
                                             format="json" if json_mode else "",
                                             options={"temperature": 0})
        except Exception as exc:  # connection errors, HTTP errors, timeouts: all alike here
            raise BackendUnavailableError(
                f"Ollama at {self.host} (model {self.model}) failed: {exc}") from exc
        text = response.get("response") if isinstance(response, dict) else \
            getattr(response, "response", None)
        if not isinstance(text, str):
            raise BackendUnavailableError(f"Ollama at {self.host} returned no text")
        return text
