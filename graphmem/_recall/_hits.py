"""What recall returns: hits that explain themselves."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, computed_field

from .._models import Memory

__all__ = ["ActivationInfo", "ChannelRank", "Explanation", "Hit", "LearnedInfo"]


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True)


class ChannelRank(_Value):
    """A hit's place in one channel: rank from 1, and the channel's own score."""

    rank: int
    score: float


class ActivationInfo(_Value):
    """The ACT-R terms of a hit (see ``graphmem._recall._actr``)."""

    value: float
    formula: str
    base_level: float
    age_s: float
    frequency: int
    confidence_term: float
    history: int
    rank: int
    contribution: float


class LearnedInfo(_Value):
    """How the learned ranker scored a hit: the probability that it is useful, its rank
    among the re-ranked candidates, and the features that moved its log-odds most
    (feature, contribution), strongest first."""

    probability: float
    rank: int
    contributions: tuple[tuple[str, float], ...] = ()


#: how an explanation names a kind of value (``RecallConfig.answer``, ``advice``)
_KIND_WORDS = {"weekday": "day of the week", "clock": "time of day", "amount": "number",
               "advice": "recommendation"}


class Explanation(_Value):
    """Why a memory was recalled: per-channel ranks, the fused score, the activation."""

    channels: dict[str, ChannelRank]
    fused: float
    activation: ActivationInfo | None = None
    final: float
    redirected_from: tuple[str, ...] = ()
    #: the entities a graph walk went through to reach this memory ("melanie", "sweden")
    graph_path: tuple[str, ...] = ()
    #: the learned ranker's score and reasons (the ``learned`` preset)
    learned: LearnedInfo | None = None
    #: the factor the fused score was multiplied by for what the assistant, not its user,
    #: said (``RecallConfig.assistant``), or None
    assistant: float | None = None
    #: the factor the fused score was multiplied by for what the user, not the assistant,
    #: said when the query asks what the assistant did or proposed, or None
    user: float | None = None
    #: the factor the fused score was multiplied by for a memory that only asks (a
    #: question holds no answer: ``RecallConfig.asking``), or None
    asks: float | None = None
    #: the statement this memory was moved before: one beside what it corrects, of the
    #: same message (``corrections_first``), or None
    corrects_before: str | None = None
    #: the earlier statement on the same subject this one, which says something changed,
    #: was moved before (``later_first``), or None
    said_after: str | None = None
    #: the kind of value the question asks for that this memory holds ("weekday",
    #: "clock", "amount"), for which its fused score was lifted (``RecallConfig.answer``)
    answers: str | None = None
    preset: str

    def lines(self) -> list[str]:
        """A human reading, one line per term.

        >>> e = Explanation(channels={"fulltext": ChannelRank(rank=1, score=2.5),
        ...                           "vector": ChannelRank(rank=3, score=0.41)},
        ...                 fused=1 / 61 + 0.3 / 63, final=1 / 61 + 0.3 / 63,
        ...                 preset="hybrid", redirected_from=("urn:old",))
        >>> print("\\n".join(e.lines()))
        preset hybrid: final 0.02116 = fused 0.02116
          fulltext rank   1  score 2.5000
          vector   rank   3  score 0.4100
          current version of urn:old
        """
        out = [f"preset {self.preset}: final {self.final:.5f} = fused {self.fused:.5f}"
               + (f" + activation {self.activation.contribution:.5f}" if self.activation
                  else "")]
        for name, rank in self.channels.items():
            out.append(f"  {name:<8} rank {rank.rank:>3}  score {rank.score:.4f}")
        if self.activation:
            a = self.activation
            out.append(f"  act-r    rank {a.rank:>3}  A={a.value:.3f} ({a.formula}: base "
                       f"{a.base_level:.3f}, age {a.age_s / 86400:.1f} d, {a.frequency} "
                       f"uses, conf term {a.confidence_term:.3f})")
        if self.learned:
            why = ", ".join(f"{name} {value:+.2f}" for name, value in self.learned.contributions)
            out.append(f"  learned  rank {self.learned.rank:>3}  p={self.learned.probability:.3f}"
                       + (f" ({why})" if why else ""))
        if self.graph_path:
            out.append("  via " + " -> ".join(self.graph_path))
        if self.redirected_from:
            out.append("  current version of " + ", ".join(self.redirected_from))
        if self.assistant is not None:
            out.append(f"  said by the assistant: fused x {self.assistant:g}")
        if self.user is not None:
            out.append(f"  said by the user, asked what the assistant did: fused x "
                       f"{self.user:g}")
        if self.asks is not None:
            out.append(f"  only asks: fused x {self.asks:g}")
        if self.answers is not None:
            out.append(f"  holds a {_KIND_WORDS.get(self.answers, self.answers)}, as the "
                       f"question asks")
        if self.corrects_before is not None:
            out.append(f"  corrects the message of {self.corrects_before}: ranked before it")
        if self.said_after is not None:
            out.append(f"  says what changed since {self.said_after}: ranked before it")
        return out


class Hit(_Value):
    """One recalled memory, its final score and rank, and its explanation; ``when`` and
    ``speaks_of`` date it for a reader who answers "when": a conversation's turn is dated
    by its session, and "yesterday" in it is the day before that session."""

    memory: Memory
    score: float
    rank: int
    explanation: Explanation

    @computed_field  # type: ignore[prop-decorator]
    @property
    def when(self) -> datetime:
        """When what the memory says was observed (its session's time), else created."""
        return self.memory.observed or self.memory.created

    @computed_field  # type: ignore[prop-decorator]
    @property
    def speaks_of(self) -> tuple[tuple[datetime, datetime], ...]:
        """The time windows ``[start, end)`` its text names, resolved against ``when`` at
        ingest ("last week" in a turn of 9 August 2023 is 31 July to 7 August)."""
        return tuple(zip(self.memory.times_from, self.memory.times_to, strict=False))
