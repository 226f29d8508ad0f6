"""Everyday chats: user/assistant conversations in sittings, with questions a later session
asks, each labelled by the turn that answers it (``eval/data/everyday_*.json``).

A file is a JSON object ``{"name", "description", "conversations": [...]}``; each
conversation has an ``owner``, ``sittings`` (``session``, ``timestamp``, ``messages`` in any
format ``add_conversation`` accepts) and ``questions`` (``id``, ``question``, ``category``,
``gold`` and, for corrections, ``stale``: lists of ``[session, message index]``).
``ingest_chat`` remembers a conversation the documented way: one ``add_conversation`` call
per sitting, owned by the conversation's owner.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from graphmem import AddResult, InvalidInputError, MemoryStore, parse_iso

__all__ = ["CATEGORIES", "Chat", "ChatQuestion", "Sitting", "Turn", "ingest_chat",
           "load_chats", "user_turns"]

CATEGORIES = ("fact", "person", "preference", "plan", "correction", "assistant")
#: Speakers that are the assistant when a message names no role.
_ASSISTANT_NAMES = frozenset({"assistant", "ai", "bot", "system", "tool"})

#: A turn of a conversation: (session, 0-based message index in its sitting).
Turn = tuple[str, int]


@dataclass(frozen=True)
class Sitting:
    """One ``add_conversation`` call: a session's messages, as the file gives them."""

    session: str
    timestamp: datetime
    messages: tuple[Any, ...]


@dataclass(frozen=True)
class ChatQuestion:
    id: str
    question: str
    category: str
    gold: tuple[Turn, ...]
    stale: tuple[Turn, ...] = ()


@dataclass(frozen=True)
class Chat:
    id: str
    owner: str
    sittings: tuple[Sitting, ...]
    questions: tuple[ChatQuestion, ...]
    assistant_name: str | None = None


def _fail(path: Path, where: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"{path}: {where}: {message}", field=where)


def _text_of(message: Any) -> str:
    if isinstance(message, str):
        return message
    text = message.get("text", message.get("content"))
    return text if isinstance(text, str) else ""


def is_assistant(message: Any, assistant_name: str | None = None) -> bool:
    """Whether a message of a chat file is the assistant's: its role says so or, without
    a role, its speaker is an assistant's name (``assistant``, the chat's own name)."""
    if isinstance(message, str):
        return False
    role = message.get("role")
    if isinstance(role, str) and role.strip():
        return role.strip().lower() != "user"
    speaker = message.get("speaker") or message.get("name") or ""
    names = _ASSISTANT_NAMES | ({assistant_name.lower()} if assistant_name else set())
    return isinstance(speaker, str) and speaker.strip().lower() in names


def user_turns(chat: Chat) -> list[tuple[Turn, str]]:
    """The user's messages of a chat, in order, with their turns."""
    return [((s.session, i), _text_of(m)) for s in chat.sittings
            for i, m in enumerate(s.messages) if not is_assistant(m, chat.assistant_name)]


def _turns(path: Path, where: str, raw: Any, sessions: Mapping[str, int]) -> tuple[Turn, ...]:
    if not isinstance(raw, list):
        raise _fail(path, where, "must be a list of [session, message index]")
    out = []
    for n, item in enumerate(raw):
        if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
                or isinstance(item[1], bool) or not isinstance(item[1], int)):
            raise _fail(path, f"{where}[{n}]", "must be [session, message index]")
        session, index = item
        if session not in sessions:
            raise _fail(path, f"{where}[{n}]", f"no sitting has session {session!r}")
        if not 0 <= index < sessions[session]:
            raise _fail(path, f"{where}[{n}]",
                        f"session {session!r} has {sessions[session]} messages, no index {index}")
        out.append((session, index))
    return tuple(out)


def _sitting(path: Path, where: str, raw: Any) -> Sitting:
    if not isinstance(raw, dict):
        raise _fail(path, where, "must be an object")
    session, stamp, messages = raw.get("session"), raw.get("timestamp"), raw.get("messages")
    if not isinstance(session, str) or not session.strip():
        raise _fail(path, f"{where}.session", "must be a non-empty string")
    try:
        timestamp = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        timestamp = None
    if timestamp is None or timestamp.tzinfo is None:
        raise _fail(path, f"{where}.timestamp", f"{stamp!r} is not an ISO 8601 time with an offset")
    try:
        parse_iso(str(stamp))  # in UTC too: 9999-12-31T23:00-05:00 is not
    except ValueError as exc:
        raise _fail(path, f"{where}.timestamp", str(exc)) from None
    if not isinstance(messages, list) or not messages:
        raise _fail(path, f"{where}.messages", "must be a non-empty list")
    for n, message in enumerate(messages):
        if not isinstance(message, str | dict) or not _text_of(message).strip():
            raise _fail(path, f"{where}.messages[{n}]",
                        "must be a string or an object with text or content")
    return Sitting(session, timestamp, tuple(messages))


def _question(path: Path, where: str, raw: Any, sessions: Mapping[str, int]) -> ChatQuestion:
    if not isinstance(raw, dict):
        raise _fail(path, where, "must be an object")
    for key in ("id", "question", "category"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _fail(path, f"{where}.{key}", "must be a non-empty string")
    if raw["category"] not in CATEGORIES:
        raise _fail(path, f"{where}.category",
                    f"{raw['category']!r} is not one of {', '.join(CATEGORIES)}")
    gold = _turns(path, f"{where}.gold", raw.get("gold"), sessions)
    if not gold:
        raise _fail(path, f"{where}.gold", "names no turn")
    stale = _turns(path, f"{where}.stale", raw.get("stale", []), sessions)
    if raw["category"] == "correction" and not stale:
        raise _fail(path, f"{where}.stale", "a correction names the turn it corrects")
    return ChatQuestion(raw["id"], raw["question"], raw["category"], gold, stale)


def load_chats(path: str | Path) -> list[Chat]:
    """Read and check a chat file; an error names the file, the record and the field."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise InvalidInputError(f"{path}: no such file", field="file") from None
    except (UnicodeDecodeError, ValueError) as exc:  # a bad byte, bad JSON, a huge number
        raise InvalidInputError(f"{path}: not valid JSON: {exc}", field="file") from None
    except RecursionError:
        raise InvalidInputError(f"{path}: JSON nested too deeply", field="file") from None
    if not isinstance(data, dict) or not isinstance(data.get("conversations"), list):
        raise _fail(path, "conversations", "the file must be an object with a list "
                                           "'conversations'")
    chats, seen_sessions, seen_owners = [], set[str](), set[str]()
    for c, raw in enumerate(data["conversations"]):
        where = f"conversations[{c}]"
        if not isinstance(raw, dict):
            raise _fail(path, where, "must be an object")
        for key in ("id", "owner"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise _fail(path, f"{where}.{key}", "must be a non-empty string")
        if raw["owner"] in seen_owners:
            raise _fail(path, f"{where}.owner", f"owner {raw['owner']!r} is used twice")
        seen_owners.add(raw["owner"])
        if not isinstance(raw.get("sittings"), list) or not raw["sittings"]:
            raise _fail(path, f"{where}.sittings", "must be a non-empty list")
        sittings = [_sitting(path, f"{where}.sittings[{s}]", item)
                    for s, item in enumerate(raw["sittings"])]
        for s, sitting in enumerate(sittings):
            if sitting.session in seen_sessions:
                raise _fail(path, f"{where}.sittings[{s}].session",
                            f"session {sitting.session!r} is used twice")
            seen_sessions.add(sitting.session)
        sessions = {s.session: len(s.messages) for s in sittings}
        questions = raw.get("questions", [])
        if not isinstance(questions, list):
            raise _fail(path, f"{where}.questions", "must be a list")
        assistant = raw.get("assistant_name")
        chats.append(Chat(raw["id"], raw["owner"], tuple(sittings),
                          tuple(_question(path, f"{where}.questions[{q}]", item, sessions)
                                for q, item in enumerate(questions)),
                          assistant if isinstance(assistant, str) else None))
    return chats


def ingest_chat(store: MemoryStore, chat: Chat, **options: Any) -> list[AddResult]:
    """Remember a chat as the README says: one ``add_conversation`` per sitting, a
    message without a role that the chat's ``assistant_name`` speaks given the role
    ``assistant`` (the store knows only the usual assistants' names)."""
    return [store.add_conversation([_with_role(m, chat.assistant_name) for m in s.messages],
                                   session_id=s.session, owner=chat.owner,
                                   timestamp=s.timestamp, **options)
            for s in chat.sittings]


def _with_role(message: Any, assistant_name: str | None) -> Any:
    if isinstance(message, dict) and not message.get("role") and assistant_name \
            and is_assistant(message, assistant_name):
        return {**message, "role": "assistant"}
    return message


def turn_of(provenance: Mapping[str, Any]) -> Turn | None:
    """The turn a memory came from, by its provenance (None: not from a chat)."""
    session, message = provenance.get("session"), provenance.get("message")
    if isinstance(session, str) and isinstance(message, int):
        return session, message
    return None


def texts_by_turn(chats: Sequence[Chat]) -> dict[Turn, str]:
    """Every turn's text, user and assistant alike."""
    return {(s.session, i): _text_of(m) for chat in chats for s in chat.sittings
            for i, m in enumerate(s.messages)}
