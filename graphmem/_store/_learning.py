"""Learning from use: trains the ranker and the forecast of need from the store's own
history, keeps them inside the store (as JSON store properties), and hands them to
recall (the ``learned`` preset) and to the lifecycle (the forecast beside the rule)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from .._context import Changed, StoreContext
from .._engine import EventQuery
from .._errors import ConflictError, InvalidInputError
from .._models import EventType
from .._recall._config import PRESETS

if TYPE_CHECKING:
    from .._learn._features import Candidates
    from .._learn._forecast import ForecastModel
    from .._learn._ranker import RankerModel
    from .._learn._results import ForecastInfo, LearnReport, RankerInfo
    from .._recall._hits import LearnedInfo

# The models' code (training, the ranker, the forecast) is imported where it is used:
# a store that keeps no model recalls without loading it.

__all__ = ["FORECAST_KEY", "RANKER_KEY", "Learning"]

M = TypeVar("M")

#: the store properties that hold the ranker and the forecast (JSON)
RANKER_KEY = "learned_ranker"
FORECAST_KEY = "learned_forecast"
#: what a forecast reads of each memory
_FIELDS = ["id", "status", "kind", "importance", "confidence", "created", "access_count",
           "access_times", "useful_count", "ignored_count", "tags", "session", "text"]
_DAY = 86400.0


class Learning:
    """The learned models of one store."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self._lock = threading.Lock()
        self._ranker: RankerModel | None = None
        self._forecast: ForecastModel | None = None
        self._errors: list[str] = []
        self._loaded = False
        #: the last forecast: (change count, when, result); valid until the store
        #: changes or an hour of its clock passes
        self._changes = 0
        self._cached: tuple[int, float, dict[str, float] | None] | None = None
        ctx.on_change(self._on_change)

    def _on_change(self, change: Changed) -> None:
        self._changes += 1

    # -- the stored models -------------------------------------------------------------
    def _load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            meta = self._ctx.engine.meta()
            self._errors = []
            self._ranker = self._forecast = None
            if meta.get(RANKER_KEY) or meta.get(FORECAST_KEY):
                from .._learn._forecast import ForecastModel
                from .._learn._ranker import RankerModel

                self._ranker = _read(meta.get(RANKER_KEY), RankerModel.from_dict, "ranker",
                                     self._errors)
                self._forecast = _read(meta.get(FORECAST_KEY), ForecastModel.from_dict,
                                       "forecast", self._errors)
            self._loaded = True

    def _reload(self) -> None:
        with self._lock:
            self._loaded = False
            self._cached = None

    def ranker(self) -> RankerModel | None:
        """The stored ranker (None when there is none, or it cannot be read)."""
        self._load()
        return self._ranker

    def rerank(self, candidates: Candidates, order: list[int], final: dict[int, float]
               ) -> tuple[list[int], dict[int, float], Mapping[int, LearnedInfo]]:
        """Recall's hook: the validated ranker's order, else the preset's own."""
        ranker = self.ranker()
        if ranker is None or not ranker.validated:
            return order, final, {}
        from .._learn._ranker import rerank

        return rerank(ranker, candidates, order, final)

    def forecast_model(self) -> ForecastModel | None:
        """The stored forecast (None when there is none, or it cannot be read)."""
        self._load()
        return self._forecast

    def forecast(self, *, validated_only: bool = True) -> dict[str, float] | None:
        """Memory id -> probability of being needed (marked useful) within the
        forecast's horizon, for every active memory; None without a forecast (or, with
        ``validated_only``, without one that validated)."""
        model = self.forecast_model()
        if model is None or (validated_only and not model.validated):
            return None
        from .._learn._forecast import History, forecast_now

        ctx = self._ctx
        ctx.before_read()
        now = ctx.now()
        since = now - timedelta(days=30)  # the queries ``query_recent`` looks at
        events = ctx.engine.events(EventQuery(event_type=EventType.FEEDBACK.value,
                                              since=since))
        history = History.build(ctx.engine.scan(_FIELDS).table.to_pylist(), events,
                                mentions=self._mentions())
        return forecast_now(model, history, now, ctx.settings)

    def lifecycle_forecast(self) -> tuple[float, Mapping[str, float]] | None:
        """The lifecycle's hook: (horizon, probabilities) of the validated forecast,
        computed once per change of the store (or hour of its clock)."""
        model = self.forecast_model()
        if model is None or not model.validated:
            return None
        now = self._ctx.now().timestamp()
        cached = self._cached
        if cached is None or cached[0] != self._changes or abs(now - cached[1]) > 3600:
            cached = self._cached = (self._changes, now, self.forecast())
        return (model.horizon_days, cached[2]) if cached[2] is not None else None

    def _mentions(self) -> list[tuple[str, str]]:
        return [(m.memory_id, m.entity_id) for m in self._ctx.engine.mentions()]

    # -- training ----------------------------------------------------------------------
    def learn(self, *, ranker: bool = True, forecast: bool = True,
              horizon_days: float = 30.0) -> LearnReport:
        """Train the ranker from the store's feedback, and the forecast of need from its
        history of use; keep them in the store (one write, nothing when both fail).

        Ranker: the most recent quarter of the recalls with useful feedback is held
        back; the model is trained on the rest and compared there with the ``default``
        order, then trained on everything. The ``learned`` preset uses it only when it
        ranked the held-back recalls better.

        Forecast: the probability that an active memory is needed (marked useful after
        a recall) within ``horizon_days``. Trained on cuts before ``now - horizon_days``
        (what happened before each cut, labelled by the horizon after it), validated on
        the last horizon against ACT-R activation, recency, frequency, the
        archivist's rule, the text's length and the times marked useful so far, then
        trained on every cut. The lifecycle uses it only when it beat all six there.

        Each model is stored with its training date, data size and validation. A model
        that cannot be trained (too little feedback or history) is left as it was and
        the report's notes say why; ``ConflictError`` when neither can be.
        """
        from .._learn._forecast import History, fit_forecast
        from .._learn._ranker import fit_ranker
        from .._learn._results import LearnReport
        from .._learn._samples import channels_of, ranking_samples

        if not (ranker or forecast):
            raise InvalidInputError("nothing to learn: ranker and forecast are both off",
                                    field="ranker")
        if not isinstance(horizon_days, int | float) or isinstance(horizon_days, bool) or \
                not 0 < horizon_days <= 3650:
            raise InvalidInputError(f"horizon_days must be a number of days in (0, 3650], "
                                    f"got {horizon_days!r}", field="horizon_days")
        ctx = self._ctx
        ctx.before_read()
        now = ctx.now()
        events = ctx.engine.events(EventQuery(event_type=EventType.FEEDBACK.value))
        stored: dict[str, str] = {}
        notes: list[str] = []
        ranker_model = forecast_model = None
        if ranker:
            samples = ranking_samples(events, channels_of(PRESETS["learned"]))
            try:
                ranker_model = fit_ranker(samples, now=now)
                stored[RANKER_KEY] = json.dumps(ranker_model.to_dict())
            except ValueError as exc:
                notes.append(f"ranker not trained: {exc}. Recall with the `default` or "
                             "`learned` preset and mark the memories that helped with "
                             "feedback(memory_id, useful=True, query=...) (graphmem "
                             "feedback ID --useful --query Q)")
        if forecast:
            history = History.build(ctx.engine.scan(_FIELDS).table.to_pylist(), events,
                                    ctx.engine.versions(), self._mentions())
            try:
                forecast_model = fit_forecast(history, now=now, horizon_days=horizon_days,
                                              settings=ctx.settings)
                stored[FORECAST_KEY] = json.dumps(forecast_model.to_dict())
            except ValueError as exc:
                notes.append(f"forecast not trained: {exc}")
        if not stored:
            raise ConflictError("nothing learned: " + "; ".join(notes))
        with ctx.lock:
            ctx.engine.set_meta(stored)
        self._reload()
        return LearnReport(
            ranker=ranker_info(ranker_model) if ranker_model else None,
            forecast=forecast_info(forecast_model) if forecast_model else None, notes=notes)

    def use_ranker(self, model: RankerModel | Mapping[str, Any]) -> RankerInfo:
        """Keep a ranker trained elsewhere (another store's feedback) in this store."""
        from .._learn._linear import ModelFormatError
        from .._learn._ranker import RankerModel

        try:
            ranker = model if isinstance(model, RankerModel) else RankerModel.from_dict(model)
        except ModelFormatError as exc:
            raise InvalidInputError(str(exc), field="model") from None
        with self._ctx.lock:
            self._ctx.engine.set_meta({RANKER_KEY: json.dumps(ranker.to_dict())})
        self._reload()
        return ranker_info(ranker)

    def status(self) -> LearnReport:
        """The models the store holds (None where it has none), with notes."""
        from .._learn._results import LearnReport

        self._load()
        notes = list(self._errors)
        if self._ranker is None and not any("ranker" in n for n in notes):
            notes.append("no learned ranker: run learn() (graphmem learn) after recalls "
                         "with feedback")
        if self._forecast is None and not any("forecast" in n for n in notes):
            notes.append("no forecast of need: run learn() (graphmem learn) once the store "
                         "has a history of use")
        return LearnReport(ranker=ranker_info(self._ranker) if self._ranker else None,
                           forecast=forecast_info(self._forecast) if self._forecast
                           else None, notes=notes)


def _read(raw: str | None, parse: Callable[[Any], M], what: str, errors: list[str]
          ) -> M | None:
    """A stored model, or None (an unreadable one is never used; ``errors`` say why)."""
    if not raw:
        return None
    from .._learn._linear import ModelFormatError

    try:
        return parse(json.loads(raw))
    except (ValueError, ModelFormatError) as exc:
        errors.append(f"the stored {what} is not used: {exc}")
        return None


def forecast_info(model: ForecastModel) -> ForecastInfo:
    from .._learn._results import ForecastInfo

    return ForecastInfo(trained=model.trained, horizon_days=model.horizon_days,
                        examples=model.examples, positives=model.positives,
                        validation=dict(model.validation), validated=model.validated,
                        top_features=model.model.weights()[:10])


def ranker_info(model: RankerModel) -> RankerInfo:
    from .._learn._results import RankerInfo

    return RankerInfo(trained=model.trained, recalls=model.recalls,
                      candidates=model.candidates, positives=model.positives,
                      validation=dict(model.validation), validated=model.validated,
                      top_features=model.model.weights()[:10])
