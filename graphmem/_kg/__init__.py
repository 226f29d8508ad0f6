"""The knowledge graph's extraction layer: typed entities, their resolution, times, and facts,
as free functions and value types with no dependency on the store, the database or recall."""

from ._calendar import Granularity, TimeWindow
from ._entities import ENTITY_TYPES, EntityType, Mention, extract_mentions
from ._facts import (
    FUNCTIONAL_PREDICATES,
    PREDICATES,
    RELATION_PREDICATES,
    Fact,
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
from ._text import normalize
from ._time import TimeMention, is_temporal_question, parse_times, query_window

__all__ = [
    "ENTITY_TYPES",
    "FUNCTIONAL_PREDICATES",
    "MERGE_RULES",
    "PREDICATES",
    "RELATION_PREDICATES",
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
    "entity_weights",
    "extract_facts",
    "extract_mentions",
    "informativeness",
    "is_temporal_question",
    "new_entity_id",
    "normalize",
    "normalize_predicate",
    "parse_times",
    "query_window",
    "restrict",
    "supersedes",
]
