"""The LongMemEval benchmark (Wu et al., ICLR 2025): each question comes with its own
haystack of chat sessions; retrieval is judged at the session level.

Formats ``longmemeval_s`` and ``longmemeval_oracle`` (a JSON list of questions)::

    {"question_id": "...", "question_type": "single-session-user", "question": "...",
     "answer": "...", "question_date": "2023/05/30 (Tue) 23:40",
     "haystack_session_ids": [...], "haystack_dates": [...],
     "haystack_sessions": [[{"role": "user", "content": "...", "has_answer": true}, ...]],
     "answer_session_ids": [...]}

The file is not bundled: pass its path (or set ``GRAPHMEM_LONGMEMEVAL``).
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem import Edge, Kind, MemoryInput, MemoryStore, RecordError

__all__ = ["LMEQuestion", "LMESession", "default_path", "ingest_question", "load_longmemeval"]

WHERE = ("LongMemEval is not bundled. Get longmemeval_s.json (or _oracle) from "
         "https://github.com/xiaowu0162/LongMemEval (Hugging Face dataset "
         "xiaowu0162/longmemeval) and pass its path or set GRAPHMEM_LONGMEMEVAL")


@dataclass(frozen=True)
class LMESession:
    session_id: str
    date: datetime | None
    turns: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class LMEQuestion:
    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: datetime | None
    sessions: tuple[LMESession, ...]
    answer_session_ids: tuple[str, ...]

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")

    @property
    def gold_sessions(self) -> tuple[str, ...]:
        """Sessions that hold the answer (their ids contain "answer").

        >>> q = LMEQuestion("q1_abs", "multi-session", "Where?", "", None, (),
        ...                 ("answer_a_1", "sharegpt_b_2"))
        >>> q.gold_sessions, q.abstention
        (('answer_a_1',), True)
        """
        return tuple(s for s in self.answer_session_ids if "answer" in s)


def default_path() -> Path | None:
    """``$GRAPHMEM_LONGMEMEVAL``, else the development split
    ``../shared/data/longmemeval/longmemeval_s_dev.json.gz`` from here when it exists."""
    env = os.environ.get("GRAPHMEM_LONGMEMEVAL")
    if env:
        return Path(env)
    dev = (Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval"
           / "longmemeval_s_dev.json.gz")
    return dev if dev.exists() else None


def parse_date(text: Any) -> datetime | None:
    """``"2023/05/20 (Sat) 02:21"`` -> a UTC datetime (None when it does not parse).

    >>> parse_date("2023/05/20 (Sat) 02:21").isoformat()
    '2023-05-20T02:21:00+00:00'
    >>> parse_date("2023-05-20").isoformat(), parse_date("last week"), parse_date(None)
    ('2023-05-20T00:00:00+00:00', None, None)
    """
    if not isinstance(text, str):
        return None
    parts = text.split()
    cleaned = " ".join(p for p in parts if not (p.startswith("(") and p.endswith(")")))
    for fmt in ("%Y/%m/%d %H:%M", "%Y/%m/%d", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def load_longmemeval(path: str | Path | None = None) -> list[LMEQuestion]:
    source = Path(path) if path is not None else default_path()
    if source is None or not source.exists():
        raise RecordError(f"no LongMemEval file. {WHERE}",
                          source=str(source) if source else None)
    try:
        raw = source.read_bytes()
        if raw[:2] == b"\x1f\x8b":  # gzip, read in place
            raw = gzip.decompress(raw)
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, OSError, EOFError) as exc:
        raise RecordError(f"not LongMemEval JSON: {exc}", source=str(source)) from None
    except RecursionError:
        raise RecordError("JSON nested too deeply", source=str(source)) from None
    if not isinstance(data, list):
        raise RecordError("LongMemEval is a JSON list of questions", source=str(source))
    return [_question(item, i, str(source)) for i, item in enumerate(data)]


def _question(item: Any, index: int, source: str) -> LMEQuestion:
    try:
        ids = list(item["haystack_session_ids"])
        dates = list(item.get("haystack_dates") or [None] * len(ids))
        sessions = tuple(
            LMESession(str(sid), parse_date(date), tuple(turns))
            for sid, date, turns in zip(ids, dates, item["haystack_sessions"], strict=True))
        return LMEQuestion(str(item["question_id"]), str(item.get("question_type", "")),
                           str(item["question"]), str(item.get("answer", "")),
                           parse_date(item.get("question_date")), sessions,
                           tuple(str(s) for s in item.get("answer_session_ids", [])))
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"malformed question: {exc}", source=source, index=index,
                          record_id=str(item.get("question_id")) if isinstance(item, dict)
                          else None) from None


def ingest_question(store: MemoryStore, question: LMEQuestion, *, user_turns_only: bool = True,
                    cooccur_window: int = 1, context_window: int = 1) -> dict[str, str]:
    """Index one question's haystack: a memory per user turn (as the paper indexes them),
    dated by its session, with the turns around it (any role) as its context, CO_OCCURS
    within a session. Returns memory id -> the file's session id, which the store never
    sees (nor ``has_answer``): its sessions are named by position."""
    from graphmem import session_contexts

    records, edges, session_of = [], [], {}
    for n, session in enumerate(question.sessions):
        ids = []
        contexts = session_contexts([str(t.get("content", "")).strip()[:4000]
                                     for t in session.turns], context_window)
        for t, turn in enumerate(session.turns):
            role = str(turn.get("role", "user"))
            text = str(turn.get("content", "")).strip()
            if (user_turns_only and role != "user") or not text:
                continue
            memory = f"urn:lme:{question.question_id}:{n}:{t}"
            ids.append(memory)
            session_of[memory] = session.session_id
            # the store hears no label: the file's session ids name answer sessions
            # ("answer_..."), and turns say has_answer; the session is its position
            sitting = f"urn:lme:{question.question_id}:{n}"
            records.append(MemoryInput(
                id=memory, text=text[:200_000], context=contexts[t], kind=Kind.EPISODIC,
                session=sitting, created=session.date, observed=session.date,
                provenance={"source": "longmemeval", "session": sitting, "turn": t,
                            "role": role}))
        edges += [Edge("co_occurs", ids[i], ids[j], weight=1.0 / (j - i), source="session")
                  for i in range(len(ids)) for j in range(i + 1, min(len(ids),
                                                                    i + cooccur_window + 1))]
    store.merge(records, edges=edges, reason=f"longmemeval {question.question_id}")
    return session_of
