"""Human perplexity from relative judgments (``harness/analyses/relative_judgments/``, ``harness human-perplexity``):
hand-computed estimates on a 3-token vocabulary, the exact case G = H, the paper's uncertainty, rounding to the
allowed answers, and a one-line error naming file, line and field for every bad input. No real model, except the
``slow`` test of the validation benchmark."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.analyses.relative_judgments import (
    ALLOWED_ANSWERS,
    Round,
    RoundsError,
    dumps_round,
    estimate,
    importance_weights,
    read_rounds,
    round_to_allowed,
)

REPO = Path(__file__).resolve().parents[1]

# A 3-token vocabulary {a, b, c}: the judge's H and the generator's G after one context; the true token is a.
H = {"a": 0.5, "b": 0.3, "c": 0.2}
G = {"a": 0.2, "b": 0.3, "c": 0.5}


def calibrated(true: str, sampled: str, h: dict[str, float] = H) -> float:
    """The calibrated judge's answer: P(true is the true one) = H(t) / (H(t) + H(s))."""
    return h[true] / (h[true] + h[sampled])


def make_round(sampled: str, position: str = "p1", true: str = "a", **fields: Any) -> Round:
    values: dict[str, Any] = {
        "position_id": position,
        "context": f"context of {position}",
        "true_token": true,
        "sampled_token": sampled,
        "generator_prob": G[sampled],
        "judgment": calibrated(true, sampled),
    }
    return Round(**{**values, **fields})


def record(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "position_id": "p1",
        "context": "The cat sat on the",
        "true_token": " mat",
        "sampled_token": " sofa",
        "generator_prob": 0.25,
        "judgment": 0.7,
    }
    return {**base, **fields}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------ the estimator


def test_weights_by_hand_on_three_tokens() -> None:
    # w = (1 - r) / (r G(s)) = H(s) / (H(t) G(s)): b: (0.3 / 0.5) / 0.3 = 2; c: (0.2 / 0.5) / 0.5 = 0.8; a: 1 / 0.2 = 5
    weights = importance_weights([make_round("b"), make_round("c"), make_round("a")])
    assert weights.tolist() == pytest.approx([2.0, 0.8, 5.0])
    assert calibrated("a", "a") == 0.5  # a pair of identical tokens is judged 50%


def test_rounds_in_generator_proportions_give_the_exact_loss() -> None:
    # E_{s~G}[w] = 0.2 * 5 + 0.3 * 2 + 0.5 * 0.8 = 2 = 1 / H(a): 10 rounds drawn exactly in G's proportions.
    rounds = [make_round("a")] * 2 + [make_round("b")] * 3 + [make_round("c")] * 5
    est = estimate(rounds)
    assert est.loss == pytest.approx(math.log(2.0))
    assert est.perplexity == pytest.approx(2.0)
    assert est.positions[0].probability == pytest.approx(H["a"])
    assert est.n_rounds == 10 and est.n_positions == 1


def test_two_rounds_by_hand() -> None:
    est = estimate([make_round("b"), make_round("c")])
    # mean(2, 0.8) = 1.4: H(a) is estimated as 1 / 1.4, the loss as log 1.4 (true: log 2; two rounds are few)
    assert est.loss == pytest.approx(math.log(1.4))
    # within-position standard error (delta method, numpy's ddof 0): std(2, 0.8) = 0.6, / sqrt(2) / mean
    assert est.positions[0].se_sampling == pytest.approx(0.6 / math.sqrt(2) / 1.4)
    assert est.se_sampling == pytest.approx(0.6 / math.sqrt(2) / 1.4)
    assert est.se_positions is None and est.interval is None  # one position: no spread over positions


def test_overall_loss_and_the_papers_uncertainty() -> None:
    # p1: rounds b, c -> log 1.4; p2: rounds a, c -> mean(5, 0.8) = 2.9 -> log 2.9
    rounds = [make_round("b"), make_round("c"), make_round("a", "p2"), make_round("c", "p2")]
    est = estimate(rounds)
    l1, l2 = math.log(1.4), math.log(2.9)
    assert [p.loss for p in est.positions] == pytest.approx([l1, l2])
    assert est.loss == pytest.approx((l1 + l2) / 2)
    se = abs(l1 - l2) / 2 / math.sqrt(2)  # ddof-0 std of two values is half their distance
    assert est.se_positions == pytest.approx(se)
    assert est.interval == pytest.approx((est.loss - 2 * se, est.loss + 2 * se))
    assert est.perplexity_interval == pytest.approx((math.exp(est.loss - 2 * se), math.exp(est.loss + 2 * se)))
    s1, s2 = 0.6 / math.sqrt(2) / 1.4, 2.1 / math.sqrt(2) / 2.9
    assert est.se_sampling == pytest.approx(math.sqrt((s1 / 2) ** 2 + (s2 / 2) ** 2))


def test_generator_equal_to_judge_is_exact_with_no_variance() -> None:
    rng = np.random.default_rng(0)
    rounds, true_losses = [], []
    for q in range(20):
        h = rng.dirichlet(np.ones(6))
        t = int(rng.integers(6))
        true_losses.append(-math.log(h[t]))
        for s in rng.choice(6, size=5, p=h):
            r = h[t] / (h[t] + h[s])
            rounds.append(Round(f"q{q}", "ctx", str(t), str(s), float(h[s]), float(r)))
    est = estimate(rounds)
    assert est.loss == pytest.approx(float(np.mean(true_losses)), abs=1e-12)
    assert est.se_sampling == pytest.approx(0.0, abs=1e-12)


def test_many_rounds_sampled_from_the_generator_converge() -> None:
    tokens = list(G)
    draws = np.random.default_rng(1).choice(3, size=20_000, p=list(G.values()))
    est = estimate([make_round(tokens[i]) for i in draws])
    assert est.loss == pytest.approx(math.log(2.0), abs=0.02)


def test_rounds_under_different_generators_pool() -> None:
    # Each round is an unbiased estimate on its own, so a uniform generator's rounds pool with G's: under the
    # uniform generator, w = 3 H(s) / H(a) = 3, 1.8, 1.2 for a, b, c (mean 2); pooled with G's 10 rounds, 26 / 13.
    uniform = [make_round(s, generator_prob=1 / 3) for s in "abc"]
    assert importance_weights(uniform).tolist() == pytest.approx([3.0, 1.8, 1.2])
    from_g = [make_round("a")] * 2 + [make_round("b")] * 3 + [make_round("c")] * 5
    assert estimate(uniform + from_g).loss == pytest.approx(math.log(2.0))


def test_difference_from_the_generator() -> None:
    rounds = [make_round("b", generator_true_prob=0.2), make_round("c", generator_true_prob=0.2)]
    est = estimate(rounds)
    assert est.generator_loss == pytest.approx(-math.log(0.2))
    assert est.difference_from_generator == pytest.approx(math.log(1.4) + math.log(0.2))


def test_judgment_one_weighs_nothing_and_zero_is_refused_unless_rounded(tmp_path: Path) -> None:
    est = estimate([make_round("b"), make_round("c", judgment=1.0)])
    assert est.loss == pytest.approx(math.log(1.0))  # weights (2, 0): mean 1
    path = write_lines(tmp_path / "r.jsonl", [json.dumps(record()), json.dumps(record(judgment=0))])
    with pytest.raises(RoundsError) as info:
        estimate(read_rounds(path))
    assert str(info.value).startswith(f"{path}: line 2: field 'judgment': 0 makes the estimate infinite")
    assert estimate(read_rounds(path), rounded=True).loss == pytest.approx(math.log(((0.3 / 0.7 + 99) / 0.25) / 2))


def test_a_position_judged_one_every_time_is_refused(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "r.jsonl", [json.dumps(record(judgment=1)), json.dumps(record(judgment=1.0))])
    with pytest.raises(
        RoundsError, match=rf"^{re.escape(str(path))}: line 1: field 'judgment': every judgment of position 'p1'"
    ):
        estimate(read_rounds(path))


# -------------------------------------------------------------------------------------------------------- rounding


def test_allowed_answers_are_the_papers_eleven() -> None:
    assert ALLOWED_ANSWERS == (0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99)


def test_rounding_maps_to_the_nearest_allowed_answer() -> None:
    values = [0.0, 0.03, 0.05, 0.06, 0.14, 0.16, 0.5, 0.62, 0.94, 0.96, 1.0]
    assert round_to_allowed(values).tolist() == [0.01, 0.01, 0.01, 0.1, 0.1, 0.2, 0.5, 0.6, 0.9, 0.99, 0.99]
    grid = np.linspace(0, 1, 1001)
    assert set(round_to_allowed(grid).tolist()) == set(ALLOWED_ANSWERS)
    assert round_to_allowed(ALLOWED_ANSWERS).tolist() == list(ALLOWED_ANSWERS)  # allowed answers stay as they are


def test_rounded_estimate_by_hand() -> None:
    # r_b = 0.625 -> 0.6: w = (0.4 / 0.6) / 0.3 = 20/9; r_c = 0.714... -> 0.7: w = (0.3 / 0.7) / 0.5 = 6/7
    est = estimate([make_round("b"), make_round("c")], rounded=True)
    assert est.loss == pytest.approx(math.log((20 / 9 + 6 / 7) / 2))
    assert est.rounded and est.to_json()["allowed_answers"] == list(ALLOWED_ANSWERS)


# ------------------------------------------------------------------------------------------------------ the format


def test_round_trip_through_the_format(tmp_path: Path) -> None:
    rounds = [
        make_round("b", judge="ann", meta={"sample": 0}),
        make_round("c", judge="bob", generator_true_prob=None),
        make_round("a", "p2"),
    ]
    path = write_lines(tmp_path / "rounds.jsonl", [dumps_round(r) for r in rounds] + [""])
    back = read_rounds(path)
    assert [(r.position_id, r.sampled_token, r.judgment, r.generator_prob, r.judge, r.meta) for r in back] == [
        (r.position_id, r.sampled_token, r.judgment, r.generator_prob, r.judge, r.meta) for r in rounds
    ]
    assert [r.line for r in back] == [1, 2, 3]
    assert estimate(back).judges == ["ann", "bob"]


BAD_FIELDS: list[tuple[dict[str, Any] | str, str, str]] = [
    ({"judgment": None}, "judgment", "expected a probability in [0, 1], got null"),
    ({"judgment": 1.5}, "judgment", "expected a probability in [0, 1], got 1.5"),
    ({"judgment": -0.1}, "judgment", "got -0.1"),
    ({"judgment": "0.5"}, "judgment", "got a string '0.5'"),
    ({"judgment": True}, "judgment", "got a boolean True"),
    ('"judgment": NaN', "judgment", "got nan"),
    ({"generator_prob": 0}, "generator_prob", "expected a probability in (0, 1], got 0"),
    ({"generator_prob": 1.2}, "generator_prob", "got 1.2"),
    ('"generator_prob": Infinity', "generator_prob", "got inf"),
    ('"generator_prob": 1' + "0" * 400, "generator_prob", "an integer of 401 digits"),
    ({"position_id": ""}, "position_id", "expected a non-empty string"),
    ({"position_id": 3}, "position_id", "expected a string, got an integer 3"),
    ({"context": None}, "context", "expected a string, got null"),
    ({"true_token": ["a"]}, "true_token", "expected a string, got a list"),
    ({"sampled_token": 7}, "sampled_token", "expected a string"),
    ({"judge": 5}, "judge", "expected a string"),
    ({"generator_true_prob": 0}, "generator_true_prob", "expected a probability in (0, 1]"),
    ({"meta": "x"}, "meta", "expected a JSON object, got a string"),
    ({"judgement": 0.5}, "judgement", "unknown field (accepted: position_id, context,"),
]


@pytest.mark.parametrize(("change", "field", "says"), BAD_FIELDS, ids=[f"{c[1]}-{i}" for i, c in enumerate(BAD_FIELDS)])
def test_a_bad_field_names_file_line_and_field(
    tmp_path: Path, change: dict[str, Any] | str, field: str, says: str
) -> None:
    if isinstance(change, str):  # JSON that json.dumps would not write: NaN, Infinity, huge integers
        bad = json.dumps({k: v for k, v in record().items() if k != field})[:-1] + ", " + change + "}"
    else:
        bad = json.dumps(record(**change))
    path = write_lines(tmp_path / "rounds.jsonl", [json.dumps(record()), bad])
    with pytest.raises(RoundsError) as info:
        read_rounds(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line 2: field '{field}': "), message
    assert says in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "field", ["position_id", "context", "true_token", "sampled_token", "generator_prob", "judgment"]
)
def test_a_missing_field_names_file_line_and_field(tmp_path: Path, field: str) -> None:
    lines = [json.dumps(record()), "", json.dumps({k: v for k, v in record().items() if k != field})]
    path = write_lines(tmp_path / "rounds.jsonl", lines)
    with pytest.raises(RoundsError, match=rf"^{re.escape(str(path))}: line 3: field '{field}': missing \("):
        read_rounds(path)


@pytest.mark.parametrize(
    ("change", "field"),
    [({"context": "another context"}, "context"), ({"true_token": " rug"}, "true_token")],
)
def test_a_position_is_one_context_and_one_true_token(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    lines = [json.dumps(record()), json.dumps(record(position_id="p2")), json.dumps(record(**change))]
    path = write_lines(tmp_path / "rounds.jsonl", lines)
    with pytest.raises(
        RoundsError, match=rf"^{re.escape(str(path))}: line 3: field '{field}': differs from line 1, the first round"
    ):
        read_rounds(path)


def test_generator_true_prob_is_given_for_every_position_or_none(tmp_path: Path) -> None:
    lines = [json.dumps(record(generator_true_prob=0.1)), json.dumps(record(position_id="p2"))]
    path = write_lines(tmp_path / "rounds.jsonl", lines)
    with pytest.raises(
        RoundsError, match=rf"^{re.escape(str(path))}: line 2: field 'generator_true_prob': missing here but given"
    ):
        read_rounds(path)
    lines = [json.dumps(record(generator_true_prob=0.1)), json.dumps(record(generator_true_prob=0.2))]
    path = write_lines(tmp_path / "rounds.jsonl", lines)
    with pytest.raises(
        RoundsError, match=rf"^{re.escape(str(path))}: line 2: field 'generator_true_prob': differs from line 1"
    ):
        read_rounds(path)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("{not json", "line 2: not JSON (Expecting property name enclosed in double quotes)"),
        ("[1, 2]", "line 2: expected a JSON object (one round), got a list"),
        ('"a round"', "line 2: expected a JSON object (one round), got a string"),
    ],
)
def test_a_line_that_is_not_a_round_names_file_and_line(tmp_path: Path, line: str, says: str) -> None:
    path = write_lines(tmp_path / "rounds.jsonl", [json.dumps(record()), line])
    with pytest.raises(RoundsError) as info:
        read_rounds(path)
    assert str(info.value).startswith(f"{path}: {says}")


def test_an_empty_or_missing_file(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "empty.jsonl", ["", "  "])
    with pytest.raises(RoundsError, match=rf"^{re.escape(str(path))}: no rounds"):
        read_rounds(path)
    with pytest.raises(Exception, match=rf"^{re.escape(str(tmp_path / 'absent.jsonl'))}: cannot read the rounds file"):
        read_rounds(tmp_path / "absent.jsonl")


# ------------------------------------------------------------------------------------------------------ the command


def test_the_command_prints_and_writes_the_estimate(tmp_path: Path, cli: Callable[..., Any]) -> None:
    rounds = [make_round("b", judge="ann"), make_round("c"), make_round("a", "p2"), make_round("c", "p2")]
    path = write_lines(tmp_path / "rounds.jsonl", [dumps_round(r) for r in rounds])
    out = tmp_path / "out" / "estimate.json"
    result = cli("human-perplexity", str(path), "--json", str(out))
    expected = estimate(rounds)
    assert "4 rounds at 2 positions (2 per position, 1 judge); judgments as given" in result.stdout
    assert f"loss        {expected.loss:.4f} nats" in result.stdout
    assert f"perplexity  {expected.perplexity:.3f}" in result.stdout
    data = json.loads(out.read_text())
    assert data["loss"] == pytest.approx(expected.loss)
    assert data["interval"]["loss"] == pytest.approx(list(expected.interval or ()))
    assert [p["position_id"] for p in data["positions"]] == ["p1", "p2"]
    rounded = cli("human-perplexity", str(path), "--rounded")
    assert "judgments rounded to the nearest allowed answer" in rounded.stdout
    assert f"{estimate(rounds, rounded=True).loss:.4f}" in rounded.stdout


def test_the_command_reports_a_bad_file_in_one_line(tmp_path: Path, cli: Callable[..., Any]) -> None:
    path = write_lines(tmp_path / "rounds.jsonl", [json.dumps(record()), json.dumps(record(judgment=2))])
    result = cli("human-perplexity", str(path), check=False)
    assert result.returncode == 2
    assert result.stderr == f"error: {path}: line 2: field 'judgment': expected a probability in [0, 1], got 2\n"


# --------------------------------------------------------------------------------------- validation, real model


@pytest.mark.slow
def test_validation_on_smollm2_is_exact_when_the_generator_is_the_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers import require_provo

    data = require_provo()
    spec = importlib.util.spec_from_file_location("validate_rj", REPO / "benchmarks" / "validate_relative_judgments.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up while it is executed
    spec.loader.exec_module(module)
    out = tmp_path / "validation.json"
    argv = ["--data-dir", str(data), "--limit", "8", "--ks", "1,4", "--temperatures", "2.0", "--out", str(out)]
    assert module.main(argv) == 0
    result = json.loads(out.read_text())
    assert result["positions"] == 8
    assert result["sanity_g_equals_h_max_abs_error"] < 1e-9
    assert [(r["generator"], r["K"]) for r in result["rows"]] == [
        ("T=2", 1),
        ("T=2", 4),
        ("T=1 (G = H)", 1),
        ("T=1 (G = H)", 4),
    ]
