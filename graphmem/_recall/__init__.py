"""Recall's algorithms: channels (full text, vectors, graph walks), reciprocal rank fusion,
ACT-R, and the in-memory index they search. The component that runs them over a store is
``graphmem._store._recall``."""

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
