"""What a recall query says about itself, read by plain rules (pure functions)."""

from __future__ import annotations

import re

__all__ = ["answer_kind", "asks_about_assistant", "asks_about_intent", "holds_kind",
           "named_actor", "only_asks"]

#: "what did I suggest ...", "the reminder I set", "which plugin did you recommend": a
#: question about what the assistant did or proposed (the agent asks in the first
#: person, its user in the second), in the past tense.
_ASSISTANT_ACT = re.compile(
    r"\b(?:did (?:i|you|the assistant)|(?:i|you|the assistant) (?:just |already )?"
    r"(?:suggested|recommended|proposed|set|booked|gave|sent|told|said|made|added|scheduled"
    r"|put|reserved|drafted|offered|mentioned|advised|planned))\b"
    r"|\b(?:the assistant'?s?|my|your) (?:suggestion|recommendation|advice|reminder|plan"
    r"|proposal|idea|tip)s?\b"
    # a reminder in a chat is what the assistant set ("when will she get the reminder?",
    # "when is Olu's reminder to ...", "when will she be reminded", "it would remind him")
    r"|\b(?:the|his|her|their|[^\W\d_][\w-]*'s|[^\W\d_][\w-]*’s) reminders?\b"
    r"|\b(?:be|being|get|gets|getting) reminded\b|\b(?:would|will|'ll) remind\b",
    re.IGNORECASE)


def asks_about_assistant(query: str) -> bool:
    """Whether a query asks what the assistant did, said or proposed.

    >>> asks_about_assistant("Which tea room did I recommend for a day out?")
    True
    >>> asks_about_assistant("When is the reminder I set for the budget review?")
    True
    >>> asks_about_assistant("Is there an ingredient I should leave out of recipes I suggest?")
    False
    >>> asks_about_assistant("When does Ines get the reminder about her passport?")
    True
    >>> asks_about_assistant("What time of day does the user want reminders?")
    False
    >>> [asks_about_assistant(q) for q in ("When is Olu's reminder to order the cake?",
    ...  "When will Ana be reminded to call the bank?", "What was Ana reminded of by the song?")]
    [True, True, False]

    Or calls it by a name ("which day trips did Wren suggest?": ``named_actor``).
    """
    return bool(_ASSISTANT_ACT.search(query)) or named_actor(query) is not None


#: Words by which a question asks what someone may do, not what they do or did.
_INTENT = re.compile(
    r"\b(?:thinking\s+(?:of|about)|consider(?:s|ing)?|might|planning"
    r"|plans?\s+to|hop(?:e|es|ing)\s+to|would\s+like\s+to|wants?\s+to|wanting\s+to"
    r"|wondering\s+(?:whether|if|about))\b", re.IGNORECASE)


def asks_about_intent(query: str) -> bool:
    """Whether a query asks what someone may do, hopes or plans to do: what the gate
    kept as uncertain (a hedge, a ``candidate``) may then answer it.

    >>> asks_about_intent("Which club is she thinking of joining?")
    True
    >>> asks_about_intent("What might they renovate next year?")
    True
    >>> asks_about_intent("Which club did she join?")
    False
    """
    return bool(_INTENT.search(query))


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


#: What kind of value a question asks for, when its words say so: a day of the week
#: ("which days does she work?", "on which day", "how often"), a time of day ("what time
#: does it start?"), an amount ("how much does it cost?", "how many", "how old", "what age").
_ASKS_KIND = (
    ("weekday", re.compile(r"\b(?:(?:which|what)\s+days?(?!\s+(?:trips?|out))|how\s+often)\b",
                           re.IGNORECASE)),
    ("clock", re.compile(r"\bwhat\s+time\b(?!\s+of\s+(?:the\s+)?(?:day|year))"
                         r"|\b(?:at\s+)?what\s+hour\b", re.IGNORECASE)),
    ("amount", re.compile(r"\bhow\s+(?:much|many|old)\b|\b(?:cost|costs|price|prices|fee"
                          r"|fees|charge|charges|age|ages)\b", re.IGNORECASE)),
    # what someone recommended: "what did the assistant suggest ...", "which one was
    # recommended", "her advice", "what advice did he give"; not a request for one now
    # ("can you recommend ...?", "what's your suggestion?", "the recommended dose"), nor
    # "propose", "tip" and "point to", which say other things too ("when did Tom
    # propose?", "where did the sign point to?")
    ("advice", re.compile(
        r"\b(?:did|has|had)\b[^?.!]{0,40}?\b(?:suggest|recommend|advise)\b"
        r"|\b(?:i|you|he|she|they|we|was|were|been|assistant)\s+(?:just\s+|already\s+"
        r"|also\s+)?(?:suggested|recommended|advised)\b"
        r"|\b(?:the|his|her|their|my|[^\W\d_]\w*['’]s)\s+(?:suggestion|recommendation"
        r"|advice)s?\b|\b(?:suggestion|recommendation|advice)s?\s+(?:did|was|were|had)\b",
        re.IGNORECASE)),
)


def answer_kind(query: str) -> str | None:
    """The kind of value a question asks for ("weekday", "clock", "amount"), or that it
    asks what someone recommended ("advice"), or None.

    >>> [answer_kind(q) for q in ("Which days does Ana work at the bakery?",
    ...  "What time does choir practice start?", "How much was the bike?",
    ...  "What day trips did Wren suggest?", "What time of day does she run?",
    ...  "What age is Omar's nephew?")]
    ['weekday', 'clock', 'amount', 'advice', None, 'amount']
    >>> [answer_kind(q) for q in ("Can you recommend a hotel in Porto?",
    ...  "What advice did the physio give?", "Which tea room was recommended?",
    ...  "What is your suggestion for dinner?", "What is the recommended daily intake?",
    ...  "What was Maria’s recommendation for the camera?")]
    [None, 'advice', 'advice', None, None, 'advice']
    """
    for kind, pattern in _ASKS_KIND:
        if pattern.search(query):
            return kind
    return None


_WEEKDAY_TERM = re.compile(r"(?:mon|tue|tues|wed|wednes|thu|thur|thurs|fri|sat|satur|sun)"
                           r"(?:day)?s?")
_CLOCK_TERM = re.compile(r"\d{1,2}(?:[.:]?\d{2})?(?:am|pm|h)|\d{2}(?:am|pm)")
_AMOUNT_TERM = re.compile(r"\d[\d.,]*(?:k|m|eur|usd|gbp|kg|km|yrs?|years?)?")
#: the words by which a statement recommends ("I'd recommend", "my top suggestion", "my
#: advice"), as ``tokenize`` stems them ("pick" and "tip" are stems of "picked up" and
#: "tipped" as well)
_ADVICE_TERM = re.compile(r"recommend|suggest|advic|advis")
_TERMS = {"weekday": _WEEKDAY_TERM, "clock": _CLOCK_TERM, "amount": _AMOUNT_TERM,
          "advice": _ADVICE_TERM}


def holds_kind(kind: str, term: str) -> bool:
    """Whether an indexed term (``tokenize``'s) is a value of ``kind``.

    >>> holds_kind("weekday", "thur"), holds_kind("weekday", "wednesday")
    (True, True)
    >>> holds_kind("clock", "9pm"), holds_kind("clock", "30pm"), holds_kind("clock", "9")
    (True, True, False)
    >>> holds_kind("amount", "65"), holds_kind("amount", "v3")
    (True, False)
    """
    return _TERMS[kind].fullmatch(term) is not None


_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_SPEAKER = re.compile(r"^[^\W\d_][\w .'-]{0,40}:\s")


def only_asks(text: str) -> bool:
    """Whether a memory only asks (its last sentence a question, the others questions
    or interjections of up to three words): a question holds no answer.

    >>> [only_asks(t) for t in ("Caroline: Wow, Mel! Any more paintings coming up?",
    ...  "Did you see that band?", "The flat is small. Can you recommend a bed?",
    ...  "Look at this? [image: a dog]")]
    [True, True, False, False]
    """
    sentences = [s.strip() for s in _SENTENCE.findall(_SPEAKER.sub("", text, count=1))]
    sentences = [s for s in sentences if s]
    if not sentences or not sentences[-1].endswith("?"):
        return False
    return all(s.endswith("?") or len(s.split()) <= 3 for s in sentences)
