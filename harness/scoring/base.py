"""The scorer interface and the metric value type.

A scorer turns one instance, its human data and the model's response into per-instance values, then folds the
per-instance values of a task into metrics with a direction and a confidence interval. Human-only runs call the
same scorers with ``response=None``: a scorer then returns only the values it can compute from human data, which
is how the human reference row is produced without loading a model.
"""

from __future__ import annotations

import fnmatch
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from harness.instances import Instance
from harness.options import OptionError, Options


class ScorerUnavailable(Exception):
    """A scorer cannot run for this task (e.g. no POS tagger for the task's language); the message says why.

    Raised from :meth:`Scorer.prepare`. The runner then reports the scorer as unavailable for the task, with the
    reason, in ``results.json`` (``unavailable``) and in the CLI table: a probe is never silently skipped.
    """


#: The ``Scorer.notes`` key under which a scorer that keeps its distribution-only metrics says which of its values
#: need individual people and were left out because some instances give only proportions of people.
PROPORTIONS_NOTE = "proportions"


def counts_known(instance: Instance) -> bool:
    """Whether the instance's human data counts people (``human_counts`` are numbers of people). False where the
    data gave only proportions of people (``ClozeInstance.counts_known``, ``ChoiceInstance.counts_known``); an
    instance type without human counts counts as True."""
    return bool(getattr(instance, "counts_known", True))


def counted_people_reason(instances: Sequence[Instance], needs: str) -> str | None:
    """Why ``needs`` (what a scorer computes from individual people: split halves, groups drawn from the people)
    cannot be computed for ``instances``, in one line; None when every instance counts people.

    The one place that words it: a scorer that cannot run at all raises it (:func:`require_counted_people`), one
    that keeps its distribution-only metrics puts it in its ``notes``. Counts are never made up from proportions.

    >>> counted_people_reason([], "the split-half human control") is None
    True
    """
    only = sum(1 for instance in instances if not counts_known(instance))
    if not only:
        return None
    return (
        f"{only} of {len(instances)} instances give only proportions of people (no number of people), "
        f"so {needs} cannot be computed"
    )


def require_counted_people(instances: Sequence[Instance], needs: str) -> None:
    """Raise :class:`ScorerUnavailable` with :func:`counted_people_reason` when any of ``instances`` gives only
    proportions of people: for a scorer's :meth:`Scorer.prepare` whose every metric needs individual people."""
    reason = counted_people_reason(instances, needs)
    if reason is not None:
        raise ScorerUnavailable(reason)


@dataclass(frozen=True)
class Metric:
    """An aggregated metric. ``higher_is_better`` is None for descriptive quantities (e.g. entropy)."""

    #: The metric's value; NaN when no instance had a value (then ``n`` is 0).
    value: float
    #: Which direction is better (results.json and the leaderboard show it); None for a descriptive quantity.
    higher_is_better: bool | None
    #: Low end of the bootstrap confidence interval at level ``ci_level`` (the scorer's ``confidence``, default
    #: 0.95); ``value`` for a single instance, None where no interval was computed (results.json then has no ``ci``).
    ci_low: float | None = None
    #: High end of that interval, None exactly when ``ci_low`` is.
    ci_high: float | None = None
    #: Standard error: of the mean (``mean_metric``), or the standard deviation of the bootstrap statistics
    #: (``bootstrap_metric``); 0 when every value is equal, None for a single instance or where none was computed.
    stderr: float | None = None
    #: How many instances (values) the metric is computed over.
    n: int = 0
    #: Spread across resampled human splits, where the metric is itself an average over splits.
    spread: float | None = None
    #: Level of the interval ``ci_low``..``ci_high`` (0.95 for a 95% interval), set by ``mean_metric`` and
    #: ``bootstrap_metric``; a scorer that builds an interval itself sets it, or the harness takes the scorer's
    #: ``confidence`` option (else the level is unknown, and shown so). results.json records it as ``ci_level``.
    ci_level: float | None = None


class Scorer(ABC):
    """Base class for scorers registered through the ``register_scorers`` hook.

    ``args`` come from the task YAML (``scorers: [{name, args}]``) and from ``--task-args name.key=value``.
    """

    #: Registry name, used in task YAML.
    name: ClassVar[str] = ""
    #: The arguments this scorer takes (``harness ls scorers --options``); ``harness.api.ArgsScorer`` checks them.
    options: ClassVar[Options] = Options()
    #: Request kinds whose responses this scorer understands.
    request_kinds: ClassVar[frozenset[str]] = frozenset()
    #: For ``multiple_choice`` tasks: the kinds of the requests :meth:`requests` builds (``loglikelihood``,
    #: ``next_token``, ``similarity``, ``generate``). The runner checks them against the model before it loads.
    requested_kinds: ClassVar[frozenset[str]] = frozenset()
    #: The few metrics (shell-style patterns) that ``harness run`` prints in its short table, with their human
    #: control beside them; every metric stays in ``results.json`` and in ``--full-table``. None (the default):
    #: the scorer's first metric; ``()``: none.
    headline: ClassVar[tuple[str, ...] | None] = None
    #: The extras of the harness this scorer needs (``harness.extras.EXTRAS``: ``probes``, ...), checked before a
    #: run or a re-scoring starts; a missing one is a one-line error naming it.
    extras: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **args: Any) -> None:
        # An argument no option declares would be ignored without a word (``--task-args x.confidence=0.9`` on a
        # scorer that has no such option): refuse it by name. ``ArgsScorer`` also converts and defaults them.
        unknown = sorted(set(args) - set(self.options.names()))
        if unknown:
            accepted = ", ".join(self.options.names()) or "none"
            raise OptionError(
                f"scorer '{self.name}': unknown argument '{unknown[0]}' (accepted: {accepted}; a scorer declares "
                "its arguments in `options`, docs/plugins.md)"
            )
        self.args = args
        #: Remarks about this task's metrics for ``results.json`` (``notes``), e.g. why a control is missing.
        self.notes: dict[str, str] = {}
        #: The task's request parameters, set when the task is resolved (a multiple-choice scorer needs the
        #: prompt structure and option orders again when it scores stored answers).
        self.task_params: dict[str, Any] = {}

    def required_extras(self) -> tuple[str, ...]:
        """The extras this scorer, as configured, needs: ``extras``, and those of what its arguments choose (the
        free-generation scorer adds its answer classifier's)."""
        return self.extras

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:  # noqa: B027 - optional hook
        """Called once per task before ``score``, with every instance and its response (None where absent).

        Scorers that tag or embed texts batch that work here, over all distinct texts at once. Raise
        :class:`ScorerUnavailable` if the scorer cannot run for this task.
        """

    def requests(self, instance: Instance, params: dict[str, Any], seed: int) -> dict[str, Any]:
        """For ``multiple_choice`` tasks: the requests (``harness.requests.ScoringRequest``) this scorer needs for
        one item, under keys of its choosing. ``params`` are the task's request parameters (prompt structure,
        option orders) and ``seed`` the item's seed. ``score`` then receives the responses under the same keys."""
        return {}

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        """For this scorer's metrics that compare the model with people: the metric that scores a second human
        population the same way (the human control), e.g. ``tvd`` -> ``tvd_human_halves``.

        ``metrics`` are every metric name the task reported. The runner keeps the pairs whose two ends were both
        reported (``results.json``, ``controls``), and ``harness leaderboard`` shows the control's value in the
        human row under the model metric's column. The default, no pairs, leaves the human row without them.
        """
        return {}

    def headline_metrics(self, own: Sequence[str], metrics: Collection[str]) -> list[str]:
        """Which of the task's ``metrics`` are this scorer's headline (:attr:`headline`), in report order; ``own``
        are the metrics this scorer reported."""
        if self.headline is None:
            return list(own[:1])
        patterns = self.headline
        return [m for m in metrics if any(fnmatch.fnmatchcase(m, pattern) for pattern in patterns)]

    def describe(self) -> dict[str, Any]:
        """Provenance of the scorer's own models (tagger, embedding model), for ``results.json``."""
        return {}

    def report(
        self, instances: list[Instance], values: list[dict[str, Any]], metrics: dict[str, Metric]
    ) -> dict[str, Any] | None:
        """Optional summary across the task's scorers, called after every scorer has aggregated.

        ``values`` are the per-instance values of all scorers (as in ``samples_<task>.jsonl``), ``metrics`` all
        aggregated metrics. The returned mapping goes to ``results.json`` under ``reports``; its ``text`` (if
        any) is printed by the CLI, and its ``per_instance`` list (if any, one entry per instance) goes to the
        samples file under ``reports``.
        """
        return None

    @abstractmethod
    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        """Per-instance values (JSON-serialisable). ``rng`` is seeded from the run seed and the instance id."""

    @abstractmethod
    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        """Fold the values ``score`` returned for every instance into metrics."""
