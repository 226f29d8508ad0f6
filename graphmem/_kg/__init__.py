"""The knowledge graph's extraction layer: typed entities, their resolution, times, and facts,
as free functions and value types with no dependency on the store, the database or recall."""

import typing as _typing

from .._lazy import lazy_names as _lazy_names

if _typing.TYPE_CHECKING:
    from ._calendar import Granularity, TimeWindow
    from ._entities import ENTITY_TYPES, EntityType, Mention, extract_mentions
    from ._facts import (
        ASKED_AS,
        FUNCTIONAL_PREDICATES,
        NOT_ENTITIES,
        PREDICATES,
        RELATION_PREDICATES,
        Fact,
        entity_names,
        normalize_predicate,
        supersedes,
    )
    from ._ollama import FactExtraction, FactGenerator, OllamaFactExtractor
    from ._patterns import extract_facts
    from ._resolve import (
        MERGE_RULES,
        ROLE_WEIGHTS,
        Entity,
        EntityResolver,
        Merge,
        Resolution,
        entity_weights,
        informativeness,
        new_entity_id,
        restrict,
    )
    from ._text import ROLE_SPEAKERS, normalize, person_speaker
    from ._time import (
        TimeMention,
        asks_for_time,
        asks_now,
        is_temporal_question,
        parse_times,
        query_window,
    )

#: where each name lives, imported on first use: recall needs the time parser and a few
#: names, not the fact patterns or the Ollama extractor
_HOMES = {
    **dict.fromkeys(("Granularity", "TimeWindow"), "._calendar"),
    **dict.fromkeys(("ENTITY_TYPES", "EntityType", "Mention", "extract_mentions"),
                    "._entities"),
    **dict.fromkeys(("ASKED_AS", "FUNCTIONAL_PREDICATES", "NOT_ENTITIES", "PREDICATES",
                     "RELATION_PREDICATES", "Fact", "entity_names", "normalize_predicate",
                     "supersedes"), "._facts"),
    **dict.fromkeys(("FactExtraction", "FactGenerator", "OllamaFactExtractor"), "._ollama"),
    "extract_facts": "._patterns",
    **dict.fromkeys(("MERGE_RULES", "ROLE_WEIGHTS", "Entity", "EntityResolver", "Merge",
                     "Resolution", "entity_weights", "informativeness", "new_entity_id",
                     "restrict"), "._resolve"),
    **dict.fromkeys(("ROLE_SPEAKERS", "normalize", "person_speaker"), "._text"),
    **dict.fromkeys(("TimeMention", "asks_for_time", "asks_now", "is_temporal_question",
                     "parse_times", "query_window"), "._time"),
}

__all__ = [
    "ASKED_AS",
    "ENTITY_TYPES",
    "FUNCTIONAL_PREDICATES",
    "MERGE_RULES",
    "NOT_ENTITIES",
    "PREDICATES",
    "RELATION_PREDICATES",
    "ROLE_SPEAKERS",
    "ROLE_WEIGHTS",
    "Entity",
    "EntityResolver",
    "EntityType",
    "Fact",
    "FactExtraction",
    "FactGenerator",
    "Granularity",
    "Mention",
    "Merge",
    "OllamaFactExtractor",
    "Resolution",
    "TimeMention",
    "TimeWindow",
    "asks_for_time",
    "asks_now",
    "entity_names",
    "entity_weights",
    "extract_facts",
    "extract_mentions",
    "informativeness",
    "is_temporal_question",
    "new_entity_id",
    "normalize",
    "normalize_predicate",
    "parse_times",
    "person_speaker",
    "query_window",
    "restrict",
    "supersedes",
]

__getattr__, __dir__ = _lazy_names(__name__, _HOMES)
