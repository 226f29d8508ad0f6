"""Turning conversation messages into memories: quality gate, extractors, entities."""

from ._ollama import OllamaExtractor
from ._rules import Extracted, RuleExtractor, extract_entities, is_filler, signal_strength

__all__ = ["Extracted", "OllamaExtractor", "RuleExtractor", "extract_entities", "is_filler",
           "signal_strength"]
