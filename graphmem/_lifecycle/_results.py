"""Results of the archivist: evaluations, transitions, and the lifecycle report.

Python names and JSON keys are snake_case (``to_json()``, the command line, the sidecar);
``model_dump(by_alias=True)`` gives the archivist's camelCase (memoryId, recommendedAction,
ageInDays ...), and camelCase input is still read.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .._time import format_iso

__all__ = [
    "ArchiveResult",
    "EvaluationMetrics",
    "EvaluationResult",
    "JobCounts",
    "LifecycleReport",
    "PromoteResult",
    "RestoreResult",
]

Action = Literal["promote", "archive", "maintain", "review"]


class _Seed(BaseModel):
    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)


class EvaluationMetrics(_Seed):
    importance: float
    age_in_days: float
    access_count: int
    decayed_score: float
    cross_reference_count: int = 0
    centrality: float | None = None


class EvaluationResult(_Seed):
    memory_id: str
    current_state: str
    recommended_action: Action
    confidence: float
    reasons: list[str]
    metrics: EvaluationMetrics
    #: the probability that the memory is needed within the forecast's horizon (when the
    #: store has a validated forecast of need, see ``MemoryStore.learn``); left out of
    #: the specification's JSON without one
    forecast: float | None = Field(default=None, exclude_if=lambda v: v is None)
    subject: str | None = Field(default=None, exclude=True)


class PromoteResult(_Seed):
    success: bool
    memory_id: str
    old_type: str
    new_type: str = "semantic"
    reason: str
    timestamp: datetime
    error: str | None = None


class ArchiveResult(_Seed):
    success: bool
    memory_id: str
    old_type: str
    new_type: str = "archival"
    reason: str
    summary: str | None = None
    timestamp: datetime
    error: str | None = None


class RestoreResult(_Seed):
    success: bool
    memory_id: str
    undone: str | None = None
    from_state: str | None = None
    to_state: str | None = None
    timestamp: datetime
    error: str | None = None


class JobCounts(_Seed):
    """What each lifecycle-manager job did (or would do, in a dry run)."""

    centrality_computed: int = 0
    decayed: int = 0
    recomputed: int = 0
    promoted: int = 0
    archived: int = 0
    archive_for_review: int = 0
    hot_added: int = 0
    hot_removed: int = 0
    candidates_expired: int = 0
    payloads_redacted: int = 0


_SECTIONS = (("promote", "Promote to Semantic", "Promotions"), ("archive", "Archive", "Archives"),
             ("maintain", "Maintain", None), ("review", "Manual Review", "Manual Review Required"))


class LifecycleReport(_Seed):
    """The archivist's lifecycle report: how many memories each action concerns, the
    evaluations of those to promote, archive or review, what the manager's jobs did, and
    whether they were applied.

    Examples
    --------
    >>> from datetime import UTC
    >>> report = LifecycleReport(
    ...     generated=datetime(2026, 7, 15, 12, tzinfo=UTC), applied=False, evaluated=8,
    ...     counts={"promote": 2, "archive": 1, "maintain": 5}, evaluations=[],
    ...     jobs=JobCounts(decayed=3, hot_added=2))
    >>> report.count("promote"), report.count("review")
    (2, 0)
    >>> report.summary()["maintain"]
    (5, 62.5)
    >>> text = report.to_markdown()
    >>> print("\\n".join(text.splitlines()[:5]))
    # Archivist Lifecycle Report
    <BLANKLINE>
    **Generated:** 2026-07-15T12:00:00Z
    **Memories Evaluated:** 8
    **Mode:** dry run (nothing changed)
    >>> [line for line in text.splitlines() if line.startswith(("| Promote to", "| Hot"))]
    ['| Promote to Semantic | 2 | 25.0% |', '| Hot set: added / removed | 2 / 0 |']
    >>> import json; json.loads(report.to_json())["jobs"]["hot_added"]
    2
    """

    generated: datetime
    applied: bool
    evaluated: int
    counts: dict[str, int]
    evaluations: list[EvaluationResult]
    jobs: JobCounts
    seconds: float = 0.0
    #: the forecast of need beside the rule: its horizon, and how many of the rule's
    #: archives and promotions it contradicted strongly (sent to review instead)
    forecast_horizon_days: float | None = None
    forecast_reviews: int = 0

    def count(self, action: str) -> int:
        return self.counts.get(action, 0)

    def summary(self) -> dict[str, tuple[int, float]]:
        """action -> (count, percentage of evaluated memories)."""
        total = max(self.evaluated, 1)
        return {action: (self.count(action), 100.0 * self.count(action) / total)
                for action, _, _ in _SECTIONS}

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2)

    def to_markdown(self, *, limit: int = 20) -> str:
        """The report in the "Archivist Lifecycle Report" layout."""
        lines = ["# Archivist Lifecycle Report", "",
                 f"**Generated:** {format_iso(self.generated)}",
                 f"**Memories Evaluated:** {self.evaluated}",
                 f"**Mode:** {'applied' if self.applied else 'dry run (nothing changed)'}", "",
                 *([f"The summary counts what the rule recommends; "
                    f"{self.jobs.archive_for_review} archive(s) await review, as "
                    "auto-archive is off (`AUTO_ARCHIVE_ENABLED=true` applies them; "
                    "`graphmem archive ID` applies one; the dashboard's review page "
                    "decides each).", ""]
                   if self.applied and self.jobs.archive_for_review else []),
                 "## Summary", "", "| Action | Count | Percentage |",
                 "|--------|-------|------------|"]
        summary = self.summary()
        for action, label, _ in _SECTIONS:
            count, pct = summary[action]
            lines.append(f"| {label} | {count} | {pct:.1f}% |")
        if self.forecast_horizon_days:
            lines += ["", f"Forecast of need ({self.forecast_horizon_days:g} days) beside "
                          f"the rule: {self.forecast_reviews} archive or promotion "
                          "decision(s) it contradicts strongly went to review."]
        for action, _, title in _SECTIONS:
            if title is None:
                continue
            chosen = [e for e in self.evaluations if e.recommended_action == action]
            total = max(self.count(action), len(chosen))  # evaluations are a sample
            lines += ["", f"## {title} ({total})", ""]
            for n, e in enumerate(chosen[:limit], start=1):
                m = e.metrics
                lines += [f"{n}. **\"{e.subject or e.memory_id}\"**"
                          + (f" (`{e.memory_id}`)" if e.subject else ""),
                          f"   - Access Count: {m.access_count}",
                          f"   - Importance: {m.importance:.2f}",
                          f"   - Age: {m.age_in_days:.0f} days",
                          f"   - Cross-References: {m.cross_reference_count}",
                          *([f"   - Forecast: {e.forecast:.0%} likely to be needed within "
                             f"{self.forecast_horizon_days:g} days"]
                            if e.forecast is not None and self.forecast_horizon_days
                            else []),
                          f"   - Reason: {'; '.join(e.reasons)}"]
            shown = min(len(chosen), limit)
            if total > shown:
                lines.append(f"\n... and {total - shown} more")
        j = self.jobs
        lines += ["", "## Lifecycle Manager", "", "| Job | Count |", "|-----|-------|",
                  f"| Centrality recomputed | {j.centrality_computed} |",
                  f"| Importance decayed | {j.decayed} |",
                  f"| Importance recomputed upward | {j.recomputed} |",
                  f"| Promoted | {j.promoted} |",
                  f"| Archived | {j.archived} |",
                  f"| Archive awaiting review (auto-archive off) | {j.archive_for_review} |",
                  f"| Hot set: added / removed | {j.hot_added} / {j.hot_removed} |",
                  f"| Weak candidates expired | {j.candidates_expired} |",
                  f"| Payloads redacted | {j.payloads_redacted} |",
                  "", "---", "", "*Archivist lifecycle evaluation complete.*"]
        return "\n".join(lines)
