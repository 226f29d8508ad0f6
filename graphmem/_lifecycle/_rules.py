"""The archivist's rules, as a pure function and as its vectorised twin.

``shouldPromote``: accessCount >= PROMOTION_ACCESS_THRESHOLD, or importance >=
PROMOTION_IMPORTANCE_THRESHOLD, or a "critical" / "permanent" tag, or >= 3 cross-references
(distinct memories that REFERENCE this one). Promotion moves episodic memories to semantic.

``shouldArchive``: (ageInDays >= ARCHIVE_AGE_DAYS and importance <
ARCHIVE_IMPORTANCE_THRESHOLD and accessCount <= ARCHIVE_ACCESS_THRESHOLD), or a
"deprecated" tag.

Both true: ``review`` (the rules disagree). Neither, but within reach of a promotion (70% of
the access threshold, importance within 0.1 of its threshold, one cross-reference short) or
of an archive (old and importance within 0.1 above its threshold): ``review``, with the rule
named in the reasons. Otherwise ``maintain``.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._settings import Settings
from ._results import Action, EvaluationMetrics, EvaluationResult

__all__ = ["ARCHIVE_REASONS", "ARCHIVE_RULES", "PROMOTE_REASONS", "PROMOTE_RULES",
           "decayed_score", "evaluate_arrays", "evaluate_memory_lifecycle"]

#: The rules that promote an episodic memory and those that archive one, each in the
#: order in which a memory's reason names the first that applies (``evaluate_arrays``).
PROMOTE_RULES = ("high_access", "high_importance", "critical_tag", "cross_references")
ARCHIVE_RULES = ("age", "deprecated")
#: The reasons ``promote`` and ``archive`` take: a rule's name, or a person's decision.
PROMOTE_REASONS = (*PROMOTE_RULES, "manual")
ARCHIVE_REASONS = ("age", "low_importance", "deprecated", "manual")
PROMOTE_TAGS = ("critical", "permanent")
ARCHIVE_TAGS = ("deprecated",)
_NEAR_IMPORTANCE = 0.1
_NEAR_ACCESS = 0.7


def decayed_score(importance: float, age_in_days: float, half_life_days: float) -> float:
    """Importance halved every ``half_life_days`` of age.

    >>> decayed_score(0.8, 30, 30), decayed_score(0.8, 60, 30), decayed_score(0.8, -5, 30)
    (0.4, 0.2, 0.8)
    """
    return importance * 0.5 ** (max(age_in_days, 0.0) / half_life_days)


def evaluate_memory_lifecycle(
    *,
    memory_id: str,
    importance: float,
    age_in_days: float,
    access_count: int,
    type: str,  # the policy's parameter name
    tags: Sequence[str] = (),
    cross_reference_count: int = 0,
    centrality: float | None = None,
    settings: Settings | None = None,
) -> EvaluationResult:
    """Evaluate one memory for promotion or archiving (the archivist's evaluateMemoryLifecycle).

    Examples
    --------
    >>> evaluate_memory_lifecycle(memory_id="test-1", importance=0.7, age_in_days=5,
    ...                           access_count=15, type="episodic").recommended_action
    'promote'
    >>> evaluate_memory_lifecycle(memory_id="test-2", importance=0.2, age_in_days=45,
    ...                           access_count=0, type="episodic").recommended_action
    'archive'
    >>> evaluate_memory_lifecycle(memory_id="test-3", importance=0.5, age_in_days=10,
    ...                           access_count=3, type="episodic").recommended_action
    'maintain'
    """
    s = settings or Settings()
    tags = tuple(tags)
    promote_reasons = []
    if access_count >= s.promotion_access_threshold:
        promote_reasons.append(f"high_access: {access_count} accesses >= "
                               f"{s.promotion_access_threshold}")
    if importance >= s.promotion_importance_threshold:
        promote_reasons.append(f"high_importance: {importance:.2f} >= "
                               f"{s.promotion_importance_threshold}")
    for tag in PROMOTE_TAGS:
        if tag in tags:
            promote_reasons.append(f"critical_tag: tagged {tag!r}")
    if cross_reference_count >= s.cross_reference_threshold:
        promote_reasons.append(f"cross_references: referenced by {cross_reference_count} "
                               f"memories >= {s.cross_reference_threshold}")
    archive_reasons = []
    if (age_in_days >= s.archive_age_days and importance < s.archive_importance_threshold
            and access_count <= s.archive_access_threshold):
        archive_reasons.append(
            f"age: {age_in_days:.0f} days >= {s.archive_age_days:g}, importance "
            f"{importance:.2f} < {s.archive_importance_threshold}, {access_count} accesses "
            f"<= {s.archive_access_threshold}")
    if any(tag in tags for tag in ARCHIVE_TAGS):
        archive_reasons.append("deprecated: tagged 'deprecated'")
    promotable = type == "episodic"
    action: Action
    near = _near_reasons(importance=importance, age_in_days=age_in_days,
                         access_count=access_count, cross_reference_count=cross_reference_count,
                         promotable=promotable, settings=s)
    if promotable and promote_reasons and archive_reasons:
        action, reasons, confidence = "review", ["conflict: both promotion and archive "
                                                 "rules apply", *promote_reasons,
                                                 *archive_reasons], 0.5
    elif promotable and promote_reasons:
        action, reasons = "promote", promote_reasons
        confidence = min(1.0, 0.7 + 0.1 * (len(promote_reasons) - 1))
    elif archive_reasons:
        action, reasons = "archive", archive_reasons
        confidence = min(1.0, 0.7 + 0.1 * (len(archive_reasons) - 1))
    elif near:
        action, reasons, confidence = "review", near, 0.5
    else:
        action, reasons, confidence = "maintain", ["no promotion or archive rule applies"], 0.8
    return EvaluationResult(
        memory_id=memory_id,
        current_state=type,
        recommended_action=action,
        confidence=confidence,
        reasons=reasons,
        metrics=EvaluationMetrics(
            importance=importance, age_in_days=age_in_days, access_count=access_count,
            decayed_score=decayed_score(importance, age_in_days, s.half_life(type)),
            cross_reference_count=cross_reference_count, centrality=centrality),
    )


def _near_reasons(*, importance: float, age_in_days: float, access_count: int,
                  cross_reference_count: int, promotable: bool, settings: Settings) -> list[str]:
    s = settings
    out = []
    if promotable:
        if access_count >= math.ceil(_NEAR_ACCESS * s.promotion_access_threshold):
            out.append(f"borderline promotion: high_access ({access_count} of "
                       f"{s.promotion_access_threshold} accesses)")
        if importance >= s.promotion_importance_threshold - _NEAR_IMPORTANCE:
            out.append(f"borderline promotion: high_importance ({importance:.2f}, threshold "
                       f"{s.promotion_importance_threshold})")
        if cross_reference_count == s.cross_reference_threshold - 1:
            out.append(f"borderline promotion: cross_references ({cross_reference_count} of "
                       f"{s.cross_reference_threshold})")
    if (age_in_days >= s.archive_age_days and access_count <= s.archive_access_threshold
            and importance < s.archive_importance_threshold + _NEAR_IMPORTANCE):
        out.append(f"borderline archive: age ({age_in_days:.0f} days, importance "
                   f"{importance:.2f}, threshold {s.archive_importance_threshold})")
    return out


def evaluate_arrays(
    *,
    importance: np.ndarray,
    age_in_days: np.ndarray,
    access_count: np.ndarray,
    episodic: np.ndarray,
    promote_tag: np.ndarray,
    archive_tag: np.ndarray,
    cross_reference_count: np.ndarray,
    settings: Settings,
) -> dict[str, Any]:
    """The same rules over arrays (one entry per memory): masks of each action.

    Returns ``{"promote", "archive", "review", "maintain"}`` boolean arrays, and
    ``"reason"``: the policy's name of the first rule that applies (high_access,
    high_importance, critical_tag, cross_references, age, deprecated; "" otherwise). The
    tests check it against ``evaluate_memory_lifecycle`` on random inputs.

    Examples
    --------
    Three episodic memories: much used; old, unimportant and unused; in between.

    >>> masks = evaluate_arrays(
    ...     importance=np.array([0.7, 0.2, 0.5]), age_in_days=np.array([5.0, 45.0, 10.0]),
    ...     access_count=np.array([15, 0, 3]), episodic=np.array([True, True, True]),
    ...     promote_tag=np.zeros(3, dtype=bool), archive_tag=np.zeros(3, dtype=bool),
    ...     cross_reference_count=np.zeros(3, dtype=int), settings=Settings())
    >>> [a for i in range(3) for a in ("promote", "archive", "review", "maintain")
    ...  if masks[a][i]]
    ['promote', 'archive', 'maintain']
    >>> masks["reason"].tolist()
    ['high_access', 'age', '']
    """
    s = settings
    rules = {
        "high_access": access_count >= s.promotion_access_threshold,
        "high_importance": importance >= s.promotion_importance_threshold,
        "critical_tag": promote_tag,
        "cross_references": cross_reference_count >= s.cross_reference_threshold,
        "age": ((age_in_days >= s.archive_age_days)
                & (importance < s.archive_importance_threshold)
                & (access_count <= s.archive_access_threshold)),
        "deprecated": archive_tag,
    }
    promote = functools.reduce(operator.or_, [rules[r] for r in PROMOTE_RULES])
    archive = functools.reduce(operator.or_, [rules[r] for r in ARCHIVE_RULES])
    near_promote = episodic & (
        (access_count >= math.ceil(_NEAR_ACCESS * s.promotion_access_threshold))
        | (importance >= s.promotion_importance_threshold - _NEAR_IMPORTANCE)
        | (cross_reference_count == s.cross_reference_threshold - 1))
    near_archive = ((age_in_days >= s.archive_age_days)
                    & (access_count <= s.archive_access_threshold)
                    & (importance < s.archive_importance_threshold + _NEAR_IMPORTANCE))
    conflict = episodic & promote & archive
    do_promote = episodic & promote & ~archive
    do_archive = archive & ~conflict
    review = conflict | (~do_promote & ~do_archive & (near_promote | near_archive))
    maintain = ~(do_promote | do_archive | review)
    promote_first = np.select([rules[r] for r in PROMOTE_RULES], list(PROMOTE_RULES), "")
    archive_first = np.select([rules[r] for r in ARCHIVE_RULES], list(ARCHIVE_RULES), "")
    reason = np.where(do_promote, promote_first, np.where(do_archive, archive_first, ""))
    return {"promote": do_promote, "archive": do_archive, "review": review,
            "maintain": maintain, "reason": reason}
