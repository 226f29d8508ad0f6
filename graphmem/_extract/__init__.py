"""Turning conversation messages into memories: quality gate, extractors, entities,
corrections, derived links. The component that writes what they find is
``graphmem._store._conversations``."""

from ._ollama import OllamaExtractor
from ._rules import Extracted, RuleExtractor, extract_entities, is_filler, signal_strength

__all__ = ["Extracted", "OllamaExtractor", "RuleExtractor", "extract_entities", "is_filler",
           "signal_strength"]
