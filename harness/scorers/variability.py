"""Production variability: do a model's outputs for one input vary the way human productions of it vary?

For each input ``x`` and each measure ``k`` of a probe (``harness.scorers.probes``), three sets of pairwise distances:

* ``H``: between the human productions, over unordered pairs;
* ``M``: between the model's outputs, over unordered pairs (the model's self-variability);
* ``C``: between each model output and each human production (cross-variability).

Reported per input (prefix ``p`` = the measure's metric name, e.g. ``unigram``, ``pos_bigram``, ``cosine``):

* ``p_w1_mh = W1(M, H)`` and ``p_w1_ch = W1(C, H)``: Wasserstein-1 distances between those distance sets
  (``scipy.stats.wasserstein_distance``), lower is closer to human variability;
* ``p_dmu_mh = mean(M) - mean(H)`` and ``p_dmu_ch = mean(C) - mean(H)``, signed: positive means the model varies
  more than humans (over-estimates variability), negative less;
* ``p_h_mean``, ``p_m_mean``, ``p_c_mean``: the mean distances themselves;
* the human control (``p_control_*``): the references are split into two disjoint halves A and B (seeded,
  ``n_splits`` times); ``W1(H_A, H_B)`` between the halves' own pair distances, ``W1(X_AB, H_B)`` with the cross
  distances between the halves (half A playing the model's part in ``W1(C, H)``), and ``mean(H_A) - mean(H_B)``.
  It shows what a second human population scores. An input needs at least ``2 * min_half`` references; where
  none has that many, the task's notes say so and no control is reported (never a control on one or two items);
* the paper-faithful variant (``p_paper_*``), because the original study's code differs from its paper: per input,
  ``numpy.random.default_rng(42)`` (re-seeded for every input) draws ``len(H)`` values WITH replacement from
  ``H``; the first half of that sample is ``H1``, the first half of ``H`` in its original (pair) order is ``H2``;
  the model is compared with ``H1`` (``p_paper_w1_mh``, ``p_paper_w1_ch``) and the control is ``W1(H1, H2)``
  (``p_paper_control_w1``), which the study did not compute for dialogue (``paper_control: false``).

Pairs whose distance is undefined (NaN: two texts without an n-gram of the order) are left out and counted in the
task's notes (``undefined: drop``, the default); with ``undefined: zero`` they are kept at distance 0 instead (the
convention the task issue reports for the original study's analysis) and counted all the same. Either way, the
human, model and cross sets, both controls and the paper variant see the same distances. Texts are stripped of
surrounding whitespace before probing. Every per-input value, and with ``keep_distances`` the distance sets
themselves, go to ``samples_<task>.jsonl``, so plots and re-scoring need no re-run. Aggregates are means over
inputs with bootstrap confidence intervals.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection
from typing import Any, ClassVar

import numpy as np
from scipy.stats import wasserstein_distance

from harness.api import (
    ArgsScorer,
    GenerateResponse,
    GenerationInstance,
    HarnessError,
    Instance,
    Metric,
    Option,
    Options,
    ScorerUnavailable,
    boolean,
    mean_metric,
    metric_rngs,
    one_of,
    positive_int,
    split_half,
    split_spread,
)
from harness.scorers.probes.base import Probe, ProbeUnavailable
from harness.scorers.probes.lexical import NgramProbe
from harness.scorers.probes.semantic import EmbeddingProbe
from harness.scorers.probes.syntactic import PosNgramProbe

#: The seed the original study re-seeded its generator with for every input.
PAPER_SEED = 42
#: Decimal places kept for distances written to the samples file.
DISTANCE_DECIMALS = 6
#: What happens to an undefined (NaN) distance: left out of every set (the default), or set to 0.
UNDEFINED_CHOICES = ("drop", "zero")


#: Arguments every variability scorer takes besides the bootstrap ones (``harness.scoring.args.BOOTSTRAP_OPTIONS``);
#: the rest are its probe's (``Probe.options``).
VARIABILITY_OPTIONS = Options(
    Option("n_splits", positive_int, 10, "random split-half human controls per input"),
    Option("min_half", positive_int, 3, "references each half of a control needs"),
    Option("paper_control", boolean, True, "report the original study's control (p_paper_control_w1)"),
    Option("keep_distances", boolean, True, "write the distance sets H, M, C to the samples file"),
    Option(
        "undefined",
        one_of(*UNDEFINED_CHOICES),
        "drop",
        "undefined (NaN) pair distances: drop leaves them out; zero counts them as 0 (reported for the paper)",
    ),
)


def upper_pairs(matrix: np.ndarray) -> np.ndarray:
    """The distances of unordered pairs ``i < j``, row by row (the order the original study enumerated them)."""
    rows, cols = np.triu_indices(matrix.shape[0], k=1)
    return np.asarray(matrix[rows, cols], dtype=np.float64)


def finite(values: np.ndarray) -> tuple[np.ndarray, int]:
    """The defined distances, and how many were undefined (NaN)."""
    mask = np.isfinite(values)
    return values[mask], int(values.size - mask.sum())


def zero_undefined(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` with every undefined (NaN) distance set to 0 (``undefined: zero``)."""
    return np.where(np.isfinite(matrix), matrix, 0.0)


def w1(a: np.ndarray, b: np.ndarray) -> float | None:
    """Wasserstein-1 distance between two sets of distances; None if either set is empty."""
    if a.size == 0 or b.size == 0:
        return None
    return float(wasserstein_distance(a, b))


def mean_gap(a: np.ndarray, b: np.ndarray) -> float | None:
    """``mean(a) - mean(b)``, signed; None if either set is empty."""
    if a.size == 0 or b.size == 0:
        return None
    return float(a.mean() - b.mean())


def control_halves(n: int, rng: np.random.Generator, n_splits: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_splits`` seeded splits of ``n`` references into disjoint halves of ``floor(n/2)`` and ``ceil(n/2)``: the
    references' indices, in order (``harness.api.split_half`` of ``range(n)``, one permutation per split)."""
    halves = []
    for _ in range(n_splits):
        a, b = split_half(range(n), rng)
        halves.append((np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)))
    return halves


def split_control(matrix: np.ndarray, rng: np.random.Generator, n_splits: int, min_half: int) -> dict[str, Any]:
    """The split-half human control from the references' distance matrix (see the module docstring).

    Returns per-split values and their means; empty if there are fewer than ``2 * min_half`` references.
    """
    n = matrix.shape[0]
    if n // 2 < min_half:
        return {}
    self_w1: list[float] = []
    cross_w1: list[float] = []
    gaps: list[float] = []
    for a, b in control_halves(n, rng, n_splits):
        h_a, _ = finite(upper_pairs(matrix[np.ix_(a, a)]))
        h_b, _ = finite(upper_pairs(matrix[np.ix_(b, b)]))
        x_ab, _ = finite(np.asarray(matrix[np.ix_(a, b)], dtype=np.float64).ravel())
        same, cross, gap = w1(h_a, h_b), w1(x_ab, h_b), mean_gap(h_a, h_b)
        if same is None or cross is None or gap is None:
            continue
        self_w1.append(same)
        cross_w1.append(cross)
        gaps.append(gap)
    if not self_w1:
        return {}
    return {
        "control_w1": float(np.mean(self_w1)),
        "control_w1_cross": float(np.mean(cross_w1)),
        "control_dmu": float(np.mean(gaps)),
        "control_w1_splits": self_w1,
        "control_w1_cross_splits": cross_w1,
        "control_dmu_splits": gaps,
    }


def paper_halves(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``H1`` (first half of a with-replacement resample of ``h`` by ``default_rng(42)``) and ``H2`` (first half of
    ``h`` as it is), as the original study's code built them for every input."""
    rng = np.random.default_rng(PAPER_SEED)
    resample = rng.choice(h, size=h.size, replace=True)
    return resample[: resample.size // 2], h[: h.size // 2]


class VariabilityScorer(ArgsScorer):
    """Base of the ``lexical``, ``syntactic`` and ``semantic`` scorers: one probe, compared as described above.

    Arguments: :data:`VARIABILITY_OPTIONS` and the bootstrap ones, plus those of the probe :meth:`make_probe`
    builds: a subclass declares its probe's ``options`` as its own, so that ``cls.options`` lists everything it
    accepts, and the probe gets the arguments that are not the common ones, as given.
    """

    request_kinds: ClassVar[frozenset[str]] = frozenset({"generate"})
    #: spaCy tokenises (lexical) and tags (syntactic); sentence-transformers embeds (semantic).
    extras: ClassVar[tuple[str, ...]] = ("probes",)
    #: Prefix of metric names per probe measure (``pos_`` for syntactic n-grams), so scorers never clash.
    metric_prefix: ClassVar[str] = ""
    options: ClassVar[Options] = VARIABILITY_OPTIONS

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.n_splits: int = self.args["n_splits"]
        self.min_half: int = self.args["min_half"]
        self.paper_control: bool = self.args["paper_control"]
        self.keep_distances: bool = self.args["keep_distances"]
        self.undefined: str = self.args["undefined"]
        # The probe gets its arguments as they were given (it checks and converts them itself).
        common = VariabilityScorer.options
        probe_args = {k: v for k, v in args.items() if k not in common}
        try:
            self.probe = self.make_probe(**probe_args)
        except ValueError as exc:
            raise HarnessError(f"scorer '{self.name}': {exc}") from None
        self._undefined: dict[str, int] = defaultdict(int)

    @classmethod
    def make_probe(cls, **args: Any) -> Probe:
        raise NotImplementedError

    def metric_name(self, measure: str) -> str:
        return f"{self.metric_prefix}{measure}"

    def describe(self) -> dict[str, Any]:
        described = {
            **self.probe.describe(),
            "n_splits": self.n_splits,
            "min_half": self.min_half,
            "paper_control": self.paper_control,
        }
        if self.undefined != "drop":  # recorded when not the default, so a default run's record is as it was
            described["undefined"] = self.undefined
        return described

    @staticmethod
    def _generation(instance: Instance) -> GenerationInstance:
        if not isinstance(instance, GenerationInstance):
            raise HarnessError(f"variability scorers need generation instances, got {type(instance).__name__}")
        return instance

    @staticmethod
    def _outputs(response: Any) -> list[str]:
        if not isinstance(response, GenerateResponse):
            raise HarnessError(f"variability scorers need generate responses, got {type(response).__name__}")
        return [t.strip() for t in response.texts]

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        """Tag or embed every distinct text of the task once, in batches, per language.

        References go first and on their own, then model outputs: a text's embedding depends in its last float bits
        on the batch it was computed in, so keeping the references' batches the same as in a human-only run keeps
        the human metrics of a model run bit-identical to the human-only ones.
        """
        references: dict[str, list[str]] = defaultdict(list)
        outputs: dict[str, list[str]] = defaultdict(list)
        for instance, response in zip(instances, responses, strict=True):
            gen = self._generation(instance)
            references[gen.language].extend(r.strip() for r in gen.references)
            if response is not None:
                outputs[gen.language].extend(self._outputs(response))
        for texts_by_language in (references, outputs):
            for language, texts in sorted(texts_by_language.items()):
                try:
                    self.probe.prepare(list(dict.fromkeys(texts)), language)
                except ProbeUnavailable as exc:
                    raise ScorerUnavailable(str(exc)) from exc

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        gen = self._generation(instance)
        refs = [r.strip() for r in gen.references]
        outputs = self._outputs(response) if response is not None else []
        texts = outputs + refs
        m = len(outputs)
        matrices = self.probe.distances(texts, texts, gen.language)
        values: dict[str, Any] = {}
        for measure in self.probe.measures:
            name = self.metric_name(measure)
            raw = np.asarray(matrices[measure], dtype=np.float64)
            # Undefined pairs are counted on the probe's matrix; ``zero`` then sets them to 0 before any set is built.
            full = zero_undefined(raw) if self.undefined == "zero" else raw
            h, _ = finite(upper_pairs(full[m:, m:]))
            self._undefined[name] += finite(upper_pairs(raw[m:, m:]))[1]
            values[f"{name}_h_mean"] = float(h.mean()) if h.size else None
            # The control comes first: it is the only user of ``rng``, so human-only and model runs split alike.
            control = split_control(full[m:, m:], rng, self.n_splits, self.min_half)
            for key, value in control.items():
                values[f"{name}_{key}"] = value
            h1 = h2 = np.empty(0)
            if h.size:
                h1, h2 = paper_halves(h)
                if self.paper_control:
                    values[f"{name}_paper_control_w1"] = w1(h1, h2)
            distances: dict[str, list[float]] = {"H": _rounded(h)}
            if m:
                mm, _ = finite(upper_pairs(full[:m, :m]))
                cc, _ = finite(full[:m, m:].ravel())
                self._undefined[name] += finite(upper_pairs(raw[:m, :m]))[1] + finite(raw[:m, m:].ravel())[1]
                values.update(
                    {
                        f"{name}_m_mean": float(mm.mean()) if mm.size else None,
                        f"{name}_c_mean": float(cc.mean()) if cc.size else None,
                        f"{name}_w1_mh": w1(mm, h),
                        f"{name}_w1_ch": w1(cc, h),
                        f"{name}_dmu_mh": mean_gap(mm, h),
                        f"{name}_dmu_ch": mean_gap(cc, h),
                        f"{name}_paper_w1_mh": w1(mm, h1),
                        f"{name}_paper_w1_ch": w1(cc, h1),
                    }
                )
                distances.update({"M": _rounded(mm), "C": _rounded(cc)})
            if self.keep_distances:
                values[f"{name}_distances"] = distances
        return values

    #: Per-input values aggregated as means: (suffix, higher_is_better).
    MEAN_VALUES: ClassVar[tuple[tuple[str, bool | None], ...]] = (
        ("w1_mh", False),
        ("w1_ch", False),
        ("dmu_mh", None),
        ("dmu_ch", None),
        ("h_mean", None),
        ("m_mean", None),
        ("c_mean", None),
        ("paper_w1_mh", False),
        ("paper_w1_ch", False),
        ("paper_control_w1", False),
    )
    #: Control values, aggregated as means with their spread over splits.
    CONTROL_VALUES: ClassVar[tuple[str, ...]] = ("control_w1", "control_w1_cross", "control_dmu")

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        pairs: dict[str, str] = {}
        for measure in self.probe.measures:
            name = self.metric_name(measure)
            pairs[f"{name}_w1_mh"] = f"{name}_control_w1"
            pairs[f"{name}_w1_ch"] = f"{name}_control_w1_cross"
            pairs[f"{name}_dmu_mh"] = f"{name}_control_dmu"
            pairs[f"{name}_paper_w1_mh"] = f"{name}_paper_control_w1"
        return pairs

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        kw: dict[str, Any] = {"n_resamples": self.n_resamples, "confidence": self.confidence}
        rngs = metric_rngs(rng)
        metrics: dict[str, Metric] = {}
        for measure in self.probe.measures:
            name = self.metric_name(measure)
            for suffix, direction in self.MEAN_VALUES:
                key = f"{name}_{suffix}"
                column = [row[key] for row in per_instance if row.get(key) is not None]
                if column:
                    metrics[key] = mean_metric(column, direction, rngs(key), **kw)
            for suffix in self.CONTROL_VALUES:
                key = f"{name}_{suffix}"
                rows = [row for row in per_instance if row.get(key) is not None]
                if not rows:
                    continue
                direction = None if suffix == "control_dmu" else False
                # Spread across splits of the task-level mean: split s of every input forms one human half.
                per_split = np.array(
                    [row[f"{key}_splits"] for row in rows if len(row[f"{key}_splits"]) == self.n_splits]
                )
                spread = split_spread(per_split.mean(axis=0)) if per_split.size else None
                metrics[key] = mean_metric([row[key] for row in rows], direction, rngs(key), spread=spread, **kw)
            self._note(name, per_instance)
        return metrics

    def _note(self, name: str, per_instance: list[dict[str, Any]]) -> None:
        """Say why a control is missing, and how many pairs were undefined."""
        if per_instance and not any(row.get(f"{name}_control_w1") is not None for row in per_instance):
            counts = sorted({len(row.get(f"{name}_distances", {}).get("H", [])) for row in per_instance})
            self.notes["control"] = (
                f"no input has the {2 * self.min_half} references a split-half control needs "
                f"(min_half={self.min_half}); the human control is not reported for this task"
                + (f" (human pairs per input: {', '.join(map(str, counts))})" if counts and counts != [0] else "")
            )
        if not self.paper_control:
            self.notes["paper_control"] = "off for this task (the original study had no control here)"
        undefined = self._undefined.get(name, 0)
        if undefined:
            fate = "were counted as distance 0 (undefined: zero)" if self.undefined == "zero" else "were left out"
            self.notes[f"{name}_undefined_pairs"] = (
                f"{undefined} pairs had no {name} of their order on either side and {fate}"
            )


def _rounded(values: np.ndarray) -> list[float]:
    return [round(float(v), DISTANCE_DECIMALS) for v in values if math.isfinite(v)]


class LexicalScorer(VariabilityScorer):
    """``lexical``: word n-gram distances (``n``, default 1, 2, 3); see ``harness.scorers.probes.lexical``."""

    name: ClassVar[str] = "lexical"
    headline: ClassVar[tuple[str, ...] | None] = ("unigram_w1_mh", "unigram_control_w1")
    options: ClassVar[Options] = NgramProbe.options

    @classmethod
    def make_probe(cls, **args: Any) -> Probe:
        return NgramProbe(**args)


class SyntacticScorer(VariabilityScorer):
    """``syntactic``: Universal POS n-gram distances from spaCy, per language; see
    ``harness.scorers.probes.syntactic``."""

    name: ClassVar[str] = "syntactic"
    headline: ClassVar[tuple[str, ...] | None] = ("pos_unigram_w1_mh", "pos_unigram_control_w1")
    metric_prefix: ClassVar[str] = "pos_"
    options: ClassVar[Options] = PosNgramProbe.options

    @classmethod
    def make_probe(cls, **args: Any) -> Probe:
        return PosNgramProbe(**args)


class SemanticScorer(VariabilityScorer):
    """``semantic``: cosine distance between sentence embeddings; see ``harness.scorers.probes.semantic``."""

    name: ClassVar[str] = "semantic"
    headline: ClassVar[tuple[str, ...] | None] = ("cosine_w1_mh", "cosine_control_w1")
    options: ClassVar[Options] = EmbeddingProbe.options

    @classmethod
    def make_probe(cls, **args: Any) -> Probe:
        return EmbeddingProbe(**args)
