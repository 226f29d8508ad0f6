"""Recall: channels (full text, vectors, graph walks), reciprocal rank fusion, ACT-R."""

from ._actr import ActivationTerms, activation, approx_activation, base_level
from ._config import PRESETS, ActrParams, GraphParams, RecallConfig
from ._fusion import reciprocal_rank_fusion
from ._hits import ActivationInfo, ChannelRank, Explanation, Hit

__all__ = [
    "PRESETS",
    "ActivationInfo",
    "ActivationTerms",
    "ActrParams",
    "ChannelRank",
    "Explanation",
    "GraphParams",
    "Hit",
    "RecallConfig",
    "activation",
    "approx_activation",
    "base_level",
    "reciprocal_rank_fusion",
]
