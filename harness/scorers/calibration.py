"""Expected calibration error (ECE) with equal-width confidence bins.

Bins: ``n_bins`` equal-width bins on [0, 1]; bin ``b`` is ``[b/n_bins, (b+1)/n_bins)`` except the last, which is
closed, ``[1 - 1/n_bins, 1]``. ECE is ``sum_b (n_b / N) * |acc_b - conf_b|`` where ``acc_b`` is the share of
correct predictions and ``conf_b`` the mean confidence in bin ``b``; empty bins contribute 0.

The bin index is ``floor(conf * n_bins)`` (clipped to the last bin), not a search over ``linspace`` edges: the
float edge ``linspace(0, 1, 11)[3]`` is ``0.30000000000000004``, which would put a confidence of exactly ``0.3``
(e.g. 12 of 40 guesses) in the wrong bin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True)
class CalibrationBins:
    """Per-bin counts, accuracy and mean confidence (NaN for empty bins), for reliability diagrams and tests."""

    counts: NDArray[np.int64]
    accuracy: NDArray[np.float64]
    confidence: NDArray[np.float64]


def _validate(
    confidences: ArrayLike, correct: ArrayLike, n_bins: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    conf = np.asarray(confidences, dtype=np.float64)
    corr = np.asarray(correct, dtype=np.float64)
    if conf.shape != corr.shape:
        raise ValueError(f"confidences {conf.shape} and correct {corr.shape} differ in shape")
    if conf.ndim not in (1, 2):
        raise ValueError("confidences must be 1-D (instances) or 2-D (instances x columns)")
    if conf.shape[0] == 0:
        raise ValueError("ECE of zero predictions is undefined")
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if not np.all((conf >= 0.0) & (conf <= 1.0)):
        raise ValueError("confidences must lie in [0, 1]")
    if not np.all((corr == 0.0) | (corr == 1.0)):
        raise ValueError("correct must be booleans (0/1)")
    return conf, corr


def _bin_index(conf: NDArray[np.float64], n_bins: int) -> NDArray[np.int64]:
    return np.minimum(np.floor(conf * n_bins).astype(np.int64), n_bins - 1)


def ece_columns(confidences: ArrayLike, correct: ArrayLike, n_bins: int = 10) -> NDArray[np.float64]:
    """ECE of each column of 2-D ``(N, S)`` arrays (e.g. one column per human split), in one vectorised pass.

    1-D input is treated as a single column and gives a length-1 array.
    """
    conf, corr = _validate(confidences, correct, n_bins)
    if conf.ndim == 1:
        conf, corr = conf[:, None], corr[:, None]
    n, n_cols = conf.shape
    flat = (_bin_index(conf, n_bins) + n_bins * np.arange(n_cols)[None, :]).ravel()
    size = n_bins * n_cols
    # sum_b (n_b/N) |acc_b - conf_b| == sum_b |sum_correct_b - sum_conf_b| / N: no division by empty bins.
    sum_conf = np.bincount(flat, weights=conf.ravel(), minlength=size).reshape(n_cols, n_bins)
    sum_corr = np.bincount(flat, weights=corr.ravel(), minlength=size).reshape(n_cols, n_bins)
    result: NDArray[np.float64] = np.abs(sum_corr - sum_conf).sum(axis=1) / n
    return result


def expected_calibration_error(confidences: ArrayLike, correct: ArrayLike, n_bins: int = 10) -> float:
    """ECE of 1-D confidences and correctness flags (see the module docstring for the bins).

    Two bins of two: [0.9, 1.0] has accuracy 0.5 at confidence 0.9, [0.1, 0.2) accuracy 0 at confidence 0.1,
    so ECE = 0.5 * 0.4 + 0.5 * 0.1:

    >>> expected_calibration_error([0.9, 0.9, 0.1, 0.1], [True, False, False, False])
    0.25
    """
    conf, _ = _validate(confidences, correct, n_bins)
    if conf.ndim != 1:
        raise ValueError("expected_calibration_error takes 1-D arrays; use ece_columns for 2-D")
    return float(ece_columns(confidences, correct, n_bins)[0])


def calibration_bins(confidences: ArrayLike, correct: ArrayLike, n_bins: int = 10) -> CalibrationBins:
    """Per-bin count, accuracy and mean confidence of 1-D inputs (the quantities ECE is built from)."""
    conf, corr = _validate(confidences, correct, n_bins)
    if conf.ndim != 1:
        raise ValueError("calibration_bins takes 1-D arrays")
    idx = _bin_index(conf, n_bins)
    counts = np.bincount(idx, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.bincount(idx, weights=corr, minlength=n_bins) / counts
        confidence = np.bincount(idx, weights=conf, minlength=n_bins) / counts
    return CalibrationBins(counts=counts.astype(np.int64), accuracy=accuracy, confidence=confidence)
