"""Learning from use: a ranker learned from retrieval feedback (the ``learned`` preset)
and forecasts of which memories will be needed (beside the lifecycle's rule). The
algorithms; the component that runs them over a store is ``graphmem._store._learning``."""

import typing as _typing

from .._lazy import lazy_names as _lazy_names

if _typing.TYPE_CHECKING:
    from ._features import FEATURE_SET, FEATURES, Candidates
    from ._forecast import (
        BASELINES,
        FORECAST_FEATURES,
        Examples,
        ForecastModel,
        History,
        cuts,
        examples_at,
        fit_forecast,
        score_baselines,
        stack,
    )
    from ._linear import LinearModel, fit_logistic
    from ._ranker import RankerModel, fit_ranker, rank_metrics
    from ._results import ForecastInfo, LearnReport, RankerInfo
    from ._samples import RankingSample, channels_of, ranking_samples

#: where each name lives, imported on first use: recall needs the features and the
#: samples, not the ranker's or the forecast's training
_HOMES = {
    **dict.fromkeys(("FEATURE_SET", "FEATURES", "Candidates"), "._features"),
    **dict.fromkeys(("BASELINES", "FORECAST_FEATURES", "Examples", "ForecastModel",
                     "History", "cuts", "examples_at", "fit_forecast", "score_baselines",
                     "stack"), "._forecast"),
    **dict.fromkeys(("LinearModel", "fit_logistic"), "._linear"),
    **dict.fromkeys(("RankerModel", "fit_ranker", "rank_metrics"), "._ranker"),
    **dict.fromkeys(("ForecastInfo", "LearnReport", "RankerInfo"), "._results"),
    **dict.fromkeys(("RankingSample", "channels_of", "ranking_samples"), "._samples"),
}

__all__ = [
    "BASELINES",
    "FEATURES",
    "FEATURE_SET",
    "FORECAST_FEATURES",
    "Candidates",
    "Examples",
    "ForecastInfo",
    "ForecastModel",
    "History",
    "LearnReport",
    "LinearModel",
    "RankerInfo",
    "RankerModel",
    "RankingSample",
    "channels_of",
    "cuts",
    "examples_at",
    "fit_forecast",
    "fit_logistic",
    "fit_ranker",
    "rank_metrics",
    "ranking_samples",
    "score_baselines",
    "stack",
]

__getattr__, __dir__ = _lazy_names(__name__, _HOMES)
