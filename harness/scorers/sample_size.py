"""``sample_size``: how many model samples per context are enough? (Ilia & Aziz 2024, appendix C.1)

An API model is paid per sample, so users want the smallest ``n`` whose TVD they can trust. This scorer answers it
from a run that drew many samples (``n`` = 1,000 by default): for each size ``k`` in ``sizes`` smaller than the
instance's accepted samples, it draws ``n_repeats`` subsamples of ``k`` of the model's words without replacement
(a subsample of i.i.d. samples is an i.i.d. sample of size ``k``), computes each one's TVD to the humans, and
compares it with the TVD of all the model's samples:

- ``tvd_at_n{k}``: the mean TVD at ``k`` samples (descriptive);
- ``tvd_error_at_n{k}``: the mean absolute difference from the all-samples TVD (lower is better: the error a run
  with ``k`` samples would make);
- ``tvd_bias_at_n{k}``: the mean signed difference (TVD of a finite sample is biased upwards, so this is positive
  and shrinks with ``k``);
- ``tvd_sq_error_at_n{k}``: the mean squared difference, the quantity the study plotted (lower is better).

How it differs from the study's notebook (``Additional_Experiments/Appendix_C/ablation_model_dist_size.ipynb``):
there, each size got one subsample (disjoint chunks of one shuffled list of the samples, sizes 10, 20, 40, 100),
and both TVDs were taken against one random half of the humans (20 guesses, the seed-0 oracle split). Here each
size gets ``n_repeats`` subsamples, averaged, against all the human guesses; the all-samples TVD is the ``tvd``
scorer's own value. The curve's shape (error against ``k``) is the same question; the numbers are not the study's.

Each is the mean over instances with a bootstrap interval; instances with at most ``k`` accepted samples have no
value at ``k`` (their ``n`` shows how many counted). The all-samples TVD is itself an estimate: the error is
measured against the run's own best estimate, not against the model's true distribution, so it understates the
error at sizes close to the run's ``n``. The report ``sample_size`` lists the curve (size, TVD, error, bias) for
the leaderboard.

Run it on a finished run without asking the model again: ``harness score RUN --scorers +sample_size``.

Only the model's words are resampled, never the people's, so human data given only as proportions
(``counts_known`` False) is compared with as it is.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from harness.api import Instance, Metric, Option, Options, mean_metric, metric_rngs, positive_int
from harness.scorers.cloze import ClozeScorer
from harness.scorers.distributions import counts_tvd

DEFAULT_SIZES = (10, 20, 40, 100, 200, 400)
#: Per instance and size: mean TVD, mean absolute error, mean signed error (bias), mean squared error.
KEYS = ("tvd_at_n{k}", "tvd_error_at_n{k}", "tvd_bias_at_n{k}", "tvd_sq_error_at_n{k}")


def size_list(value: Any) -> tuple[int, ...]:
    """Sample sizes: a list of positive integers, or a string of them separated by ``;``, ``,`` or spaces."""
    items = re.split(r"[;,\s]+", value.strip()) if isinstance(value, str) else value
    if isinstance(items, int) and not isinstance(items, bool):
        items = [items]
    if not isinstance(items, list | tuple) or not items:
        raise ValueError(f"expected a list of positive integers, got {value!r}")
    sizes = sorted({positive_int(item) for item in items if item != ""})
    if not sizes:
        raise ValueError(f"expected a list of positive integers, got {value!r}")
    return tuple(sizes)


size_list.type_name = "list of int >= 1"  # type: ignore[attr-defined]


class SampleSizeScorer(ClozeScorer):
    """The TVD a run with fewer samples would have measured, and its error (module docstring)."""

    name: ClassVar[str] = "sample_size"
    headline: ClassVar[tuple[str, ...] | None] = ("tvd_error_at_n10", "tvd_error_at_n40", "tvd_error_at_n100")
    options: ClassVar[Options] = Options(
        Option("sizes", size_list, DEFAULT_SIZES, "sample sizes to subsample the model's words to"),
        Option("n_repeats", positive_int, 20, "subsamples drawn per size and instance (their TVDs are averaged)"),
    )

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        if response is None:
            return {}
        model = self.model_counts(response)
        words = sorted(model)
        items = np.repeat(np.arange(len(words)), [model[w] for w in words])
        full = counts_tvd(model, cloze.human_counts) if len(items) else None
        row: dict[str, Any] = {"sample_size_n": int(len(items))}
        for k in self.args["sizes"]:
            if full is None or k >= len(items):
                for key in KEYS:
                    row[key.format(k=k)] = None
                continue
            tvds = np.empty(self.args["n_repeats"])
            for r in range(self.args["n_repeats"]):
                drawn = np.bincount(rng.choice(items, size=k, replace=False), minlength=len(words))
                tvds[r] = counts_tvd({w: int(c) for w, c in zip(words, drawn, strict=True) if c}, cloze.human_counts)
            row[f"tvd_at_n{k}"] = float(tvds.mean())
            row[f"tvd_error_at_n{k}"] = float(np.abs(tvds - full).mean())
            row[f"tvd_bias_at_n{k}"] = float((tvds - full).mean())
            row[f"tvd_sq_error_at_n{k}"] = float(((tvds - full) ** 2).mean())
        return row

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        metrics: dict[str, Metric] = {}
        rngs = metric_rngs(rng)
        kw: dict[str, Any] = {"n_resamples": self.n_resamples, "confidence": self.confidence}
        for k in self.args["sizes"]:
            for pattern, better in zip(KEYS, (None, False, None, False), strict=True):
                key = pattern.format(k=k)
                values = [float(row[key]) for row in per_instance if row.get(key) is not None]
                if values:
                    metrics[key] = mean_metric(values, better, rngs(key), **kw)
        return metrics

    def report(
        self, instances: list[Instance], values: list[dict[str, Any]], metrics: dict[str, Metric]
    ) -> dict[str, Any] | None:
        curve = []
        for k in self.args["sizes"]:
            if f"tvd_at_n{k}" not in metrics:
                continue
            curve.append(
                {
                    "n": k,
                    "tvd": metrics[f"tvd_at_n{k}"].value,
                    "abs_error": metrics[f"tvd_error_at_n{k}"].value,
                    "abs_error_ci": [metrics[f"tvd_error_at_n{k}"].ci_low, metrics[f"tvd_error_at_n{k}"].ci_high],
                    "bias": metrics[f"tvd_bias_at_n{k}"].value,
                    "sq_error": metrics[f"tvd_sq_error_at_n{k}"].value,
                    "instances": metrics[f"tvd_at_n{k}"].n,
                }
            )
        if not curve:
            return None
        sizes = [int(row["sample_size_n"]) for row in values if row.get("sample_size_n") is not None]
        lines = [f"{c['n']:>5} samples: TVD {c['tvd']:.4f}, error {c['abs_error']:.4f}" for c in curve]
        return {
            "curve": curve,
            "full_n_median": float(np.median(sizes)) if sizes else None,
            "n_repeats": self.args["n_repeats"],
            "ci_level": self.confidence,
            "text": "TVD against the all-samples value, by sample size:\n" + "\n".join(lines),
        }
