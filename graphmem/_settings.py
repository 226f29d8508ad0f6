"""Typed configuration, read once from the environment and passed in; never read at import.

The archivist's variables keep the archivist policy's names (``PROMOTION_ACCESS_THRESHOLD`` ...);
everything else lives in the ``GRAPHMEM_*`` namespace.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ._errors import InvalidInputError

__all__ = ["DEFAULT_HALF_LIVES", "Settings"]

#: Importance half-life in days per kind: working notes fade fast, identity barely.
DEFAULT_HALF_LIVES: dict[str, float] = {
    "working": 2.0,
    "episodic": 30.0,
    "note": 60.0,
    "procedural": 180.0,
    "semantic": 365.0,
    "identity": 3650.0,
}


@dataclass(frozen=True)
class Settings:
    """Every tunable of graphmem; ``Settings.from_env()`` reads the environment once."""

    archivist_enabled: bool = True
    promotion_access_threshold: int = 10
    promotion_importance_threshold: float = 0.8
    archive_age_days: float = 30.0
    archive_importance_threshold: float = 0.3
    archive_access_threshold: int = 0
    auto_archive_enabled: bool = False
    cross_reference_threshold: int = 3
    decay_half_life_days: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_HALF_LIVES)
    )
    decay_min_drop: float = 0.05
    hot_set_size: int = 50
    payload_retention_days: float = 90.0
    candidate_expiry_days: float = 30.0
    restore_window_days: float = 7.0
    #: the forecast of need (``learn``) against the archivist's rule: an archive of a
    #: memory at least this likely to be needed, or a promotion of one at most this
    #: likely, goes to review instead of applying
    forecast_archive_review: float = 0.5
    forecast_promote_review: float = 0.05
    access_history: int = 32
    feedback_boost: float = 0.05
    row_cache_size: int = 4096
    agent_id: str = "graphmem"
    buffer_pool_mb: int = field(default_factory=lambda: _default_buffer_pool())
    embedder: str = "minilm"
    #: threads that embed one query; None: the embedder's own choice (2 on ONNX Runtime,
    #: 1 on torch, whose threads spin)
    embed_threads: int | None = None
    embed_batch_threads: int = field(default_factory=lambda: min(4, os.cpu_count() or 1))
    ollama_host: str | None = None
    ollama_model: str = "llama3.2"
    ollama_timeout_s: float = 30.0
    #: where facts come from: "rules", "ollama" (checked triples, rules as fallback), or
    #: "auto" (Ollama when a host is configured)
    fact_extractor: str = "auto"
    tokens_file: str | None = None
    sidecar_url: str | None = None
    max_body_bytes: int = 16 * 2**20
    header_timeout_s: float = 10.0
    idle_timeout_s: float = 30.0
    sidecar_timeout_s: float = 10.0
    #: how long one ad-hoc Cypher statement (``store.cypher``, named queries, ``POST
    #: /v1/cypher``) may run before Kuzu stops it: a legal statement can run for hours
    #: (a five-way cross product over 200 memories: ~35 min)
    cypher_timeout_s: float = 10.0
    #: a sidecar started for a store (``graphmem mcp``, ``graphmem.connect(path)``) exits
    #: after this long without a request
    sidecar_idle_s: float = 600.0
    #: how long a command waits for a store another process holds (it opens the store
    #: once that process lets go, or works through the sidecar that starts meanwhile)
    lock_wait_s: float = 15.0
    #: from this many memories on, vector search ranks sign bits and re-scores the best
    #: candidates exactly (None: the index's default, 100k; 0 never: always exact)
    sign_bits_from: int | None = None
    #: keep the recall index in a file beside the store, read back when it opens (checked
    #: against the store's change log, caught up, or built again); False: build it in
    #: memory on first use, every time
    persist_index: bool = True
    #: where the recall index of a PostgreSQL store is kept on this host (None:
    #: ``recall`` in the user's cache directory, ``$XDG_CACHE_HOME/graphmem`` or
    #: ``~/.cache/graphmem``); a Kuzu store keeps it in its own directory
    index_dir: str | None = None

    def __post_init__(self) -> None:
        _check_range("PROMOTION_ACCESS_THRESHOLD", self.promotion_access_threshold, 0, None)
        _check_range("PROMOTION_IMPORTANCE_THRESHOLD", self.promotion_importance_threshold, 0, 1)
        _check_range("ARCHIVE_AGE_DAYS", self.archive_age_days, 0, None)
        _check_range("ARCHIVE_IMPORTANCE_THRESHOLD", self.archive_importance_threshold, 0, 1)
        _check_range("ARCHIVE_ACCESS_THRESHOLD", self.archive_access_threshold, 0, None)
        _check_range(
            "GRAPHMEM_CROSS_REFERENCE_THRESHOLD", self.cross_reference_threshold, 1, None
        )
        _check_range("GRAPHMEM_DECAY_MIN_DROP", self.decay_min_drop, 0, 1)
        _check_range("GRAPHMEM_HOT_SET_SIZE", self.hot_set_size, 0, None)
        _check_range("GRAPHMEM_PAYLOAD_RETENTION_DAYS", self.payload_retention_days, 0, None)
        _check_range("GRAPHMEM_CANDIDATE_EXPIRY_DAYS", self.candidate_expiry_days, 0, None)
        _check_range("GRAPHMEM_RESTORE_WINDOW_DAYS", self.restore_window_days, 0, None)
        _check_range("GRAPHMEM_FORECAST_ARCHIVE_REVIEW", self.forecast_archive_review, 0, 1)
        _check_range("GRAPHMEM_FORECAST_PROMOTE_REVIEW", self.forecast_promote_review, 0, 1)
        _check_range("GRAPHMEM_ACCESS_HISTORY", self.access_history, 1, 10_000)
        _check_range("GRAPHMEM_FEEDBACK_BOOST", self.feedback_boost, 0, 1)
        _check_range("GRAPHMEM_ROW_CACHE_SIZE", self.row_cache_size, 0, None)
        _check_range("GRAPHMEM_BUFFER_POOL_MB", self.buffer_pool_mb, 16, None)
        if self.embed_threads is not None:
            _check_range("GRAPHMEM_EMBED_THREADS", self.embed_threads, 1, 256)
        _check_range("GRAPHMEM_EMBED_BATCH_THREADS", self.embed_batch_threads, 1, 256)
        _check_range("GRAPHMEM_OLLAMA_TIMEOUT_S", self.ollama_timeout_s, 0.1, None)
        if self.fact_extractor not in ("auto", "rules", "ollama"):
            raise InvalidInputError(
                f"GRAPHMEM_FACT_EXTRACTOR: {self.fact_extractor!r} is not one of auto, "
                "rules, ollama", field="GRAPHMEM_FACT_EXTRACTOR")
        if self.fact_extractor == "ollama" and not self.ollama_host:
            raise InvalidInputError("GRAPHMEM_FACT_EXTRACTOR=ollama needs an Ollama server "
                                    "(GRAPHMEM_OLLAMA_HOST or OLLAMA_HOST)",
                                    field="GRAPHMEM_FACT_EXTRACTOR")
        _check_range("GRAPHMEM_MAX_BODY_BYTES", self.max_body_bytes, 1024, None)
        _check_range("GRAPHMEM_HEADER_TIMEOUT_S", self.header_timeout_s, 0.1, 3600)
        _check_range("GRAPHMEM_IDLE_TIMEOUT_S", self.idle_timeout_s, 0.1, 3600)
        _check_range("GRAPHMEM_SIDECAR_TIMEOUT_S", self.sidecar_timeout_s, 0.1, 3600)
        _check_range("GRAPHMEM_CYPHER_TIMEOUT_S", self.cypher_timeout_s, 0.001, 86_400)
        _check_range("GRAPHMEM_SIDECAR_IDLE_S", self.sidecar_idle_s, 1, None)
        _check_range("GRAPHMEM_LOCK_WAIT_S", self.lock_wait_s, 0, 86_400)
        if self.sign_bits_from is not None:
            _check_range("GRAPHMEM_SIGN_BITS_FROM", self.sign_bits_from, 0, None)
        for kind, days in self.decay_half_life_days.items():
            if kind not in DEFAULT_HALF_LIVES:
                raise InvalidInputError(
                    f"GRAPHMEM_DECAY_HALF_LIFE_DAYS: unknown kind {kind!r}; "
                    f"kinds are {', '.join(DEFAULT_HALF_LIVES)}",
                    field="GRAPHMEM_DECAY_HALF_LIFE_DAYS",
                )
            _check_range(f"GRAPHMEM_DECAY_HALF_LIFE_DAYS[{kind}]", days, 0.001, None)

    def half_life(self, kind: str) -> float:
        """Decay half-life in days for ``kind`` (the default table fills gaps)."""
        return float(self.decay_half_life_days.get(kind, DEFAULT_HALF_LIVES.get(kind, 30.0)))

    def with_(self, **changes: Any) -> Settings:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the variables of ``_ENV`` from ``environ`` (default ``os.environ``)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, (attr, parse) in _ENV.items():
            raw = env.get(name)
            if raw is None or raw.strip() == "":
                continue
            try:
                values[attr] = parse(raw.strip())
            except ValueError as exc:
                raise InvalidInputError(f"{name}={raw!r}: {exc}", field=name) from exc
        if "ollama_host" not in values and env.get("OLLAMA_HOST", "").strip():
            values["ollama_host"] = env["OLLAMA_HOST"].strip()
        return cls(**values)

    @classmethod
    def variables(cls) -> dict[str, str]:
        """Environment variable -> settings field, for documentation and help text."""
        return {name: attr for name, (attr, _) in _ENV.items()}


def _default_buffer_pool() -> int:
    """A quarter of physical memory, between 256 MB and 1 GB (Kuzu's own default, ~80% of
    RAM, would starve everything else). At 1M memories every measured operation (the
    recall index's build, recalls recording access, the lifecycle) ran in 1 GB and the
    process stayed under 4 GB; 2 GB built the index in 116 s instead of ~150 s, at
    4.9 GB (``eval/bench_scale.py``)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError, AttributeError):
        return 1024
    return int(min(1024, max(256, total // 4)))


def _check_range(name: str, value: float, low: float | None, high: float | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InvalidInputError(f"{name} must be a number, got {value!r}", field=name)
    if low is not None and value < low:
        raise InvalidInputError(f"{name} must be >= {low}, got {value!r}", field=name)
    if high is not None and value > high:
        raise InvalidInputError(f"{name} must be <= {high}, got {value!r}", field=name)


def _bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError("expected true or false")


def _int(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ValueError("expected an integer") from None


def _float(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("expected a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("expected a finite number")
    return value


def _half_lives(raw: str) -> dict[str, float]:
    """``episodic=30,working=2``: days per kind, merged over the defaults."""
    table = dict(DEFAULT_HALF_LIVES)
    for part in raw.split(","):
        if not part.strip():
            continue
        kind, sep, days = part.partition("=")
        if not sep:
            raise ValueError(f"expected kind=days pairs, got {part!r}")
        table[kind.strip()] = _float(days.strip())
    return table


def _text(raw: str) -> str:
    return raw


#: The model specs ``embedder_from_spec`` builds (a test holds the two together), and
#: how messages and help texts list them.
EMBEDDER_CHOICES = "minilm, minilm:int8, minilm:torch, e5, hashing[:DIM] or ollama:MODEL"
EMBEDDER_SPEC = re.compile(r"(?:minilm(?::(?:int8|onnx|torch))?|e5|hashing(?::\d+)?"
                           r"|ollama:\S+?)(?:\+pooled)?")


def _embedder_spec(raw: str) -> str:
    """A model spec, checked (a bad one made half a store before: the database was
    created before the spec was read)."""
    if not EMBEDDER_SPEC.fullmatch(raw):
        raise ValueError(f"unknown embedder {raw!r}: use {EMBEDDER_CHOICES}, optionally "
                         "with +pooled")
    return raw


_ENV: dict[str, tuple[str, Any]] = {
    "ARCHIVIST_ENABLED": ("archivist_enabled", _bool),
    "PROMOTION_ACCESS_THRESHOLD": ("promotion_access_threshold", _int),
    "PROMOTION_IMPORTANCE_THRESHOLD": ("promotion_importance_threshold", _float),
    "ARCHIVE_AGE_DAYS": ("archive_age_days", _float),
    "ARCHIVE_IMPORTANCE_THRESHOLD": ("archive_importance_threshold", _float),
    "ARCHIVE_ACCESS_THRESHOLD": ("archive_access_threshold", _int),
    "AUTO_ARCHIVE_ENABLED": ("auto_archive_enabled", _bool),
    "GRAPHMEM_CROSS_REFERENCE_THRESHOLD": ("cross_reference_threshold", _int),
    "GRAPHMEM_DECAY_HALF_LIFE_DAYS": ("decay_half_life_days", _half_lives),
    "GRAPHMEM_DECAY_MIN_DROP": ("decay_min_drop", _float),
    "GRAPHMEM_HOT_SET_SIZE": ("hot_set_size", _int),
    "GRAPHMEM_PAYLOAD_RETENTION_DAYS": ("payload_retention_days", _float),
    "GRAPHMEM_CANDIDATE_EXPIRY_DAYS": ("candidate_expiry_days", _float),
    "GRAPHMEM_RESTORE_WINDOW_DAYS": ("restore_window_days", _float),
    "GRAPHMEM_FORECAST_ARCHIVE_REVIEW": ("forecast_archive_review", _float),
    "GRAPHMEM_FORECAST_PROMOTE_REVIEW": ("forecast_promote_review", _float),
    "GRAPHMEM_ACCESS_HISTORY": ("access_history", _int),
    "GRAPHMEM_FEEDBACK_BOOST": ("feedback_boost", _float),
    "GRAPHMEM_ROW_CACHE_SIZE": ("row_cache_size", _int),
    "GRAPHMEM_AGENT_ID": ("agent_id", _text),
    "GRAPHMEM_BUFFER_POOL_MB": ("buffer_pool_mb", _int),
    "GRAPHMEM_EMBEDDER": ("embedder", _embedder_spec),
    "GRAPHMEM_EMBED_THREADS": ("embed_threads", _int),
    "GRAPHMEM_EMBED_BATCH_THREADS": ("embed_batch_threads", _int),
    "GRAPHMEM_OLLAMA_HOST": ("ollama_host", _text),
    "GRAPHMEM_OLLAMA_MODEL": ("ollama_model", _text),
    "GRAPHMEM_OLLAMA_TIMEOUT_S": ("ollama_timeout_s", _float),
    "GRAPHMEM_FACT_EXTRACTOR": ("fact_extractor", _text),
    "GRAPHMEM_TOKENS_FILE": ("tokens_file", _text),
    "GRAPHMEM_SIDECAR_URL": ("sidecar_url", _text),
    "GRAPHMEM_MAX_BODY_BYTES": ("max_body_bytes", _int),
    "GRAPHMEM_HEADER_TIMEOUT_S": ("header_timeout_s", _float),
    "GRAPHMEM_IDLE_TIMEOUT_S": ("idle_timeout_s", _float),
    "GRAPHMEM_SIDECAR_TIMEOUT_S": ("sidecar_timeout_s", _float),
    "GRAPHMEM_CYPHER_TIMEOUT_S": ("cypher_timeout_s", _float),
    "GRAPHMEM_SIDECAR_IDLE_S": ("sidecar_idle_s", _float),
    "GRAPHMEM_LOCK_WAIT_S": ("lock_wait_s", _float),
    "GRAPHMEM_SIGN_BITS_FROM": ("sign_bits_from", _int),
    "GRAPHMEM_PERSIST_INDEX": ("persist_index", _bool),
    "GRAPHMEM_INDEX_DIR": ("index_dir", _text),
}

assert {attr for attr, _ in _ENV.values()} <= {f.name for f in fields(Settings)}
