"""What a recall query says about itself, read by plain rules (pure functions)."""

from __future__ import annotations

import re

__all__ = ["asks_about_assistant", "named_actor"]

#: "what did I suggest ...", "the reminder I set", "which plugin did you recommend": a
#: question about what the assistant did or proposed (the agent asks in the first
#: person, its user in the second), in the past tense.
_ASSISTANT_ACT = re.compile(
    r"\b(?:did (?:i|you|the assistant)|(?:i|you|the assistant) (?:just |already )?"
    r"(?:suggested|recommended|proposed|set|booked|gave|sent|told|said|made|added|scheduled"
    r"|put|reserved|drafted|offered|mentioned|advised|planned))\b"
    r"|\b(?:the assistant'?s?|my|your) (?:suggestion|recommendation|advice|reminder|plan"
    r"|proposal|idea|tip)s?\b", re.IGNORECASE)


def asks_about_assistant(query: str) -> bool:
    """Whether a query asks what the assistant did, said or proposed.

    >>> asks_about_assistant("Which tea room did I recommend for a day out?")
    True
    >>> asks_about_assistant("When is the reminder I set for the budget review?")
    True
    >>> asks_about_assistant("Is there an ingredient I should leave out of recipes I suggest?")
    False

    Or calls it by a name ("which day trips did Wren suggest?": ``named_actor``).
    """
    return bool(_ASSISTANT_ACT.search(query)) or named_actor(query) is not None


#: "which day trips did Wren suggest?": someone named did what an assistant does.
_NAMED_ACT = re.compile(
    r"\b(?:did|has|had)\s+([^\W\d_][\w'’-]*)\s+(?:first\s+|just\s+|already\s+|also\s+)?"
    r"(?:suggest|recommend|propose|advise|book|schedule|remind|reserve|draft)(?:ed)?\b",
    re.IGNORECASE)
_NOT_NAMES = frozenset({"i", "you", "we", "he", "she", "they", "it", "someone", "anyone",
                        "somebody", "anybody", "nobody", "who", "the", "my", "your"})


def named_actor(query: str) -> str | None:
    """The name of whoever a query says suggested, recommended or booked something, or
    None: maybe the assistant's name (what it proposed comes before what the user said
    for such a query); if it is a friend's, the assistant's proposals merely compete as
    the user's do.

    >>> named_actor("What day trips did Wren suggest for Oliver's visit?")
    'Wren'
    >>> named_actor("Which plugin did you recommend?") is None
    True
    """
    found = _NAMED_ACT.search(query)
    if found is None or found.group(1).lower() in _NOT_NAMES:
        return None
    return found.group(1)
