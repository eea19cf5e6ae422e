"""Scorer arguments, declared with :mod:`harness.options` and checked when the scorer is built.

A scorer's arguments come from the task file (``scorers: [{name, args}]``) and from ``--task-args
scorer.key=value`` (strings), and are checked before any data or model is loaded: an unknown or bad argument is a
``HarnessError`` naming the scorer and the argument.

A subclass of :class:`ArgsScorer` declares only its own options; they are added to its base class's, so that
``cls.options`` is everything the class accepts (``harness ls scorers --options`` lists it) and every such scorer
takes the bootstrap options :data:`BOOTSTRAP_OPTIONS`::

    class EceScorer(ClozeScorer):
        options = Options(Option("n_bins", positive_int, 10, "equal-width confidence bins"))

    EceScorer.options.names()   # ['n_resamples', 'confidence', 'n_bins']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from harness.options import Option, Options, open_unit_float, positive_int
from harness.scoring.base import Metric, Scorer
from harness.scoring.stats import bootstrap_metric, mean_metric

#: Arguments every :class:`ArgsScorer` accepts: the bootstrap resamples and the CI level of its metrics.
BOOTSTRAP_OPTIONS = Options(
    Option("n_resamples", positive_int, 1000, "bootstrap resamples for each metric's confidence interval"),
    Option("confidence", open_unit_float, 0.95, "level of the metrics' confidence intervals"),
)


class ArgsScorer(Scorer):
    """A scorer whose keyword arguments are checked against its class's ``options``.

    ``self.args`` holds every option's value (converted, defaults filled in); ``n_resamples`` and ``confidence``
    are also attributes, and ``self.mean_metric`` / ``self.bootstrap_metric`` apply them, so a scorer that
    aggregates through these methods honours ``--task-args name.confidence=...`` without passing anything on. See
    the module docstring for how a subclass's ``options`` are merged.
    """

    options: ClassVar[Options] = BOOTSTRAP_OPTIONS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("options")
        if isinstance(own, Options):
            # The base class's options first (the bootstrap ones at the root), then this class's.
            cls.options = super(cls, cls).options | own

    def __init__(self, **args: Any) -> None:
        resolved = self.options.parse_arguments(args, f"scorer '{self.name}'")
        super().__init__(**resolved)
        self.n_resamples: int = resolved["n_resamples"]
        self.confidence: float = resolved["confidence"]

    def mean_metric(
        self, values: Sequence[float] | ArrayLike, higher_is_better: bool | None, rng: np.random.Generator, **kw: Any
    ) -> Metric:
        """``harness.scoring.stats.mean_metric`` with this scorer's ``n_resamples`` and ``confidence``.

        Why a method: the module-level helper has fixed defaults, so a scorer that calls it without passing its
        options on would silently ignore ``--task-args name.confidence=0.9``. Calling this one cannot.
        ``kw`` takes the helper's other arguments (``spread``).
        """
        return mean_metric(values, higher_is_better, rng, self.n_resamples, self.confidence, **kw)

    def bootstrap_metric(
        self,
        columns: Sequence[ArrayLike],
        statistic: Callable[..., float],
        higher_is_better: bool | None,
        rng: np.random.Generator,
        **kw: Any,
    ) -> Metric:
        """``harness.scoring.stats.bootstrap_metric`` with this scorer's ``n_resamples`` and ``confidence`` (see
        ``mean_metric`` for why)."""
        return bootstrap_metric(columns, statistic, higher_is_better, rng, self.n_resamples, self.confidence, **kw)
