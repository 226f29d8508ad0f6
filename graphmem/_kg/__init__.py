"""The knowledge graph's extraction layer: typed entities, their resolution, times, and facts,
as free functions and value types with no dependency on the store, the database or recall."""

from ._calendar import Granularity, TimeWindow
from ._entities import ENTITY_TYPES, EntityType, Mention, extract_mentions
from ._resolve import (
    MERGE_RULES,
    Entity,
    EntityResolver,
    Merge,
    Resolution,
    entity_weights,
    informativeness,
)
from ._text import normalize
from ._time import TimeMention, is_temporal_question, parse_times, query_window

__all__ = [
    "ENTITY_TYPES",
    "MERGE_RULES",
    "Entity",
    "EntityResolver",
    "EntityType",
    "Granularity",
    "Mention",
    "Merge",
    "Resolution",
    "TimeMention",
    "TimeWindow",
    "entity_weights",
    "extract_mentions",
    "informativeness",
    "is_temporal_question",
    "normalize",
    "parse_times",
    "query_window",
]
