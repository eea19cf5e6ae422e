"""ECE with hand-computed values, bin edges and input checks."""

from __future__ import annotations

import numpy as np
import pytest

from harness.scorers.calibration import calibration_bins, ece_columns, expected_calibration_error


def test_four_predictions_in_two_bins() -> None:
    # Bin 6 [0.6, 0.7): 0.62, 0.68 both correct -> acc 1, conf 0.65, weight 1/2 -> 0.5 * 0.35 = 0.175
    # Bin 2 [0.2, 0.3): 0.22 wrong, 0.28 right -> acc 0.5, conf 0.25, weight 1/2 -> 0.5 * 0.25 = 0.125
    ece = expected_calibration_error([0.62, 0.68, 0.22, 0.28], [True, True, False, True])
    assert ece == pytest.approx(0.3)


def test_second_hand_example_with_top_bin() -> None:
    # Bin 9: 0.9 right, 0.9 wrong -> |0.5 - 0.9| * 2/4 = 0.2; bin 1: two wrong at 0.1 -> 0.1 * 2/4 = 0.05
    assert expected_calibration_error([0.9, 0.9, 0.1, 0.1], [1, 0, 0, 0]) == pytest.approx(0.25)


def test_perfect_calibration_and_empty_bins_contribute_zero() -> None:
    assert expected_calibration_error([1.0, 1.0, 0.0], [True, True, False]) == 0.0
    assert expected_calibration_error([0.5, 0.5], [True, False]) == 0.0


def test_bin_edges() -> None:
    bins = calibration_bins([0.0, 0.1, 0.3, 12 / 40, 0.7, 0.95, 1.0], [0, 0, 0, 0, 0, 0, 0])
    # 0.0 -> bin 0; 0.1 -> bin 1 (left-closed); 0.3 and 12/40 -> bin 3 (not 2); 0.7 -> bin 7;
    # 0.95 and 1.0 -> the last bin, which is closed on the right.
    assert bins.counts.tolist() == [1, 1, 0, 2, 0, 0, 0, 1, 0, 2]
    assert bins.confidence[9] == pytest.approx(0.975)
    assert np.isnan(bins.accuracy[2])


def test_one_bin_is_the_absolute_gap_of_the_means() -> None:
    # n_bins=1: |mean(correct) - mean(conf)| = |0.5 - 0.3|
    assert expected_calibration_error([0.2, 0.4], [1, 0], n_bins=1) == pytest.approx(0.2)


def test_columns_match_one_dimensional_ece() -> None:
    rng = np.random.default_rng(0)
    conf = rng.random((50, 4))
    correct = rng.random((50, 4)) < conf
    per_column = ece_columns(conf, correct)
    for s in range(4):
        assert per_column[s] == pytest.approx(expected_calibration_error(conf[:, s], correct[:, s]))


@pytest.mark.parametrize(
    ("conf", "correct", "n_bins"),
    [
        ([0.5, 0.5], [1], 10),
        ([], [], 10),
        ([1.2], [1], 10),
        ([-0.1], [0], 10),
        ([0.5], [0.5], 10),
        ([0.5], [1], 0),
    ],
)
def test_bad_inputs_raise(conf: list[float], correct: list[float], n_bins: int) -> None:
    with pytest.raises(ValueError):
        expected_calibration_error(conf, correct, n_bins)
