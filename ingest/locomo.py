"""The LoCoMo benchmark (Maharana et al., ACL 2024): load the file, repair its evidence,
and turn each conversation into memories (one per turn).

The file is CC BY-NC 4.0 and is read in place, never copied: pass its path, or set
``GRAPHMEM_LOCOMO``. In this workspace it is ``../shared/data/locomo/locomo10.json``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem import Edge, Kind, MemoryInput, MemoryStore, RecordError

__all__ = ["Conversation", "Question", "Session", "Turn", "default_path", "ingest_conversation",
           "load_locomo", "repair_evidence"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
WHERE = ("LoCoMo is not bundled (CC BY-NC 4.0). Get locomo10.json from "
         "https://github.com/snap-research/locomo (data/locomo10.json) and pass its path or "
         "set GRAPHMEM_LOCOMO; in this workspace it is ../shared/data/locomo/locomo10.json")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None = None


@dataclass(frozen=True)
class Session:
    index: int
    date_text: str
    date: datetime | None
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]
    raw_evidence: tuple[str, ...] = ()

    @property
    def category_name(self) -> str:
        return CATEGORIES.get(self.category, str(self.category))


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...] = field(default_factory=tuple)

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]


def default_path() -> Path:
    """``$GRAPHMEM_LOCOMO``, else ``../shared/data/locomo/locomo10.json`` from here."""
    env = os.environ.get("GRAPHMEM_LOCOMO")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"


def parse_session_date(text: str) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` -> 2023-05-08 13:56 UTC (None when it does not parse).

    >>> parse_session_date("1:56 pm on 8 May, 2023").isoformat()
    '2023-05-08T13:56:00+00:00'
    >>> parse_session_date("8 May, 2023").isoformat(), parse_session_date("someday")
    ('2023-05-08T00:00:00+00:00', None)
    """
    cleaned = " ".join(text.replace(",", " ").split())
    for fmt in ("%I:%M %p on %d %B %Y", "%I:%M%p on %d %B %Y", "%d %B %Y"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*0*(\d+)")


def repair_evidence(raw: list[Any], known: set[str]) -> tuple[str, ...]:
    """Split and repair evidence ids ('D8:6; D9:17', 'D:11:26', 'D30:05', space-joined
    lists) and drop those that name no turn of the conversation.

    >>> known = {"D8:6", "D9:17", "D11:26", "D30:5", "D4:4"}
    >>> repair_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D4:4 D99:1", "D8:6"], known)
    ('D8:6', 'D9:17', 'D11:26', 'D30:5', 'D4:4')
    """
    out: list[str] = []
    for item in raw:
        for match in _ID.finditer(str(item)):
            dia_id = f"D{int(match.group(1))}:{int(match.group(2))}"
            if dia_id in known and dia_id not in out:
                out.append(dia_id)
    return tuple(out)


def load_locomo(path: str | Path | None = None) -> list[Conversation]:
    """Every conversation of the file, with its sessions, turns and questions."""
    source = Path(path) if path is not None else default_path()
    if not source.exists():
        raise RecordError(f"no such file. {WHERE}", source=str(source))
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:  # a bad byte, bad JSON, a huge number
        raise RecordError(f"not LoCoMo JSON: {exc}", source=str(source)) from None
    except RecursionError:
        raise RecordError("JSON nested too deeply", source=str(source)) from None
    if not isinstance(data, list):
        raise RecordError("LoCoMo is a JSON list of conversations", source=str(source))
    return [_conversation(item, i, str(source)) for i, item in enumerate(data)]


def _conversation(item: Any, index: int, source: str) -> Conversation:
    try:
        conv = item["conversation"]
        sample_id = str(item["sample_id"])
        speakers = (str(conv["speaker_a"]), str(conv["speaker_b"]))
    except (KeyError, TypeError) as exc:
        raise RecordError(f"missing {exc}", source=source, index=index) from None
    sessions = []
    numbers = sorted(int(m.group(1)) for k in conv
                     if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(conv[k], list))
    for n in numbers:
        date_text = str(conv.get(f"session_{n}_date_time", ""))
        turns = tuple(Turn(str(t["dia_id"]), str(t["speaker"]), str(t.get("text", "")),
                           t.get("blip_caption")) for t in conv[f"session_{n}"])
        sessions.append(Session(n, date_text, parse_session_date(date_text), turns))
    known = {t.dia_id for s in sessions for t in s.turns}
    questions = []
    for q in item.get("qa", []):
        answer = q.get("answer", q.get("adversarial_answer", ""))
        raw = list(q.get("evidence") or [])
        questions.append(Question(str(q["question"]), str(answer), int(q["category"]),
                                  repair_evidence(raw, known), tuple(str(e) for e in raw)))
    return Conversation(sample_id, speakers, tuple(sessions), tuple(questions))


def memory_id(conversation: Conversation, dia_id: str) -> str:
    """The memory id of one turn.

    >>> memory_id(Conversation("conv-26", ("Caroline", "Melanie"), ()), "D1:5")
    'urn:locomo:conv-26:D1:5'
    """
    return f"urn:locomo:{conversation.sample_id}:{dia_id}"


def turn_text(turn: Turn, *, speaker: bool = True, captions: bool = True) -> str:
    """What a turn's memory says: ``Speaker: text [image: caption]`` by default.

    >>> turn = Turn("D1:5", "Caroline", "Look at this! ", "a photo of a dog")
    >>> turn_text(turn)
    'Caroline: Look at this! [image: a photo of a dog]'
    >>> turn_text(turn, speaker=False, captions=False)
    'Look at this!'
    """
    text = turn.text.strip() or "(no text)"
    if speaker:
        text = f"{turn.speaker}: {text}"
    if captions and turn.caption:
        text += f" [image: {turn.caption}]"
    return text


def ingest_conversation(
    store: MemoryStore,
    conversation: Conversation,
    *,
    owner: str | None = None,
    cooccur_window: int = 1,
    context_window: int = 1,
    entity_links: bool = True,
    speaker: bool = True,
    captions: bool = True,
) -> list[str]:
    """One memory per turn (dated by its session, with dia_id, speaker and session in the
    provenance), indexed with the ``context_window`` turns on either side as its context,
    CO_OCCURS between turns of a session up to ``cooccur_window`` apart (weight
    1/distance), and REFERENCES between turns that share a rare entity. Returns the
    memory ids in turn order. Re-ingesting changes nothing."""
    from graphmem import session_contexts

    records: list[MemoryInput] = []
    edges: list[Edge] = []
    for session in conversation.sessions:
        ids = []
        texts = [turn_text(t, speaker=speaker, captions=captions) for t in session.turns]
        contexts = session_contexts(texts, context_window)
        for turn, text, context in zip(session.turns, texts, contexts, strict=True):
            memory = memory_id(conversation, turn.dia_id)
            ids.append(memory)
            records.append(MemoryInput(
                id=memory, text=text, context=context, kind=Kind.EPISODIC, owner=owner,
                session=f"{conversation.sample_id}:S{session.index}",
                created=session.date, observed=session.date,
                provenance={"source": "locomo", "sample_id": conversation.sample_id,
                            "dia_id": turn.dia_id, "speaker": turn.speaker,
                            "session": session.index, "date": session.date_text}))
        for i in range(len(ids)):
            for j in range(i + 1, min(len(ids), i + cooccur_window + 1)):
                edges.append(Edge("co_occurs", ids[i], ids[j], weight=1.0 / (j - i),
                                  source=f"session:{session.index}"))
    result = store.merge(records, edges=edges, reason=f"locomo {conversation.sample_id}")
    if entity_links and result.created:
        store.derive_links(result.created)
    return [r.id or "" for r in records]
