"""End to end: the pragmatics multiple-choice task on the small official-format fixture (7 items, 3 phenomena).

With the mock model (fast): every method, stored answers that the scores are read from, the robustness report, a
rerun that loads no model and gives identical results, and a model that cannot answer a query kind refused before
it loads. With the real packaged SmolLM2 (slow, 2 items, one option order): every query kind answered with a real
model's numbers, read back from the store on a rerun."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import HarnessError
from harness.instances import ChoiceInstance
from harness.models import ModelAdapter, ModelSpec
from harness.outputs.results import format_table, strip_volatile
from harness.prompts.choice import option_order
from harness.registry.manager import Registered, get_registry
from harness.run.options import RunOptions
from harness.run.runner import run
from tests.helpers import REPO, samples_of

FIXTURES = REPO / "tests" / "fixtures"
KINDS = {"generate", "loglikelihood", "next_token", "similarity"}
MOCK = ModelSpec("mock", "test")
SMOLLM2 = ModelSpec("hf", "smollm2-135m", device="cpu")
SYSTEMS = (
    "free.temp0.1",
    "free.temp0.9",
    "string.prob",
    "string.token_prob",
    "string.logprob",
    "string.prior_corrected",
    "string.surprisal_reduction",
    "label.prob",
    "label.prior_corrected",
    "label.surprisal_reduction",
    "rating.likely",
    "embedding.cosine",
)


def _task_file(tmp_path: Path, option_orders: int = 2) -> Path:
    """The built-in task, restricted to the fixture's phenomena, with two orders and one rating scale (fast)."""
    raw = yaml.safe_load((REPO / "harness" / "tasks" / "pragmatics-mcq.yaml").read_text())
    raw["task"] = "mcq-fixture"
    raw["data"]["phenomena"] = ["CoherenceInference", "Irony", "Maxims"]
    raw["params"]["option_orders"] = option_orders
    raw["scorers"] = [
        s if s != "mcq_rating" else {"name": "mcq_rating", "args": {"scales": ["likely"]}} for s in raw["scorers"]
    ]
    path = tmp_path / "mcq-fixture.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _options(task: Path, out: Path, model: ModelSpec = MOCK, limit: int | None = None) -> RunOptions:
    return RunOptions(tasks=[str(task)], model=model, output_dir=out, data_dir=str(FIXTURES), limit=limit)


def _samples(out: Path, model: ModelSpec = MOCK) -> list[dict[str, Any]]:
    slug = f"{model.kind}__{model.name}"
    return [json.loads(line) for line in samples_of(out / slug, "mcq-fixture").open()]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("mcq")
    task = _task_file(tmp)
    return task, tmp / "runs", run(_options(task, tmp / "runs"))


def test_every_method_reports_every_metric(first_run: tuple[Path, Path, dict[str, Any]]) -> None:
    _, _, results = first_run
    metrics = results["metrics"]["mcq-fixture"]
    for system in SYSTEMS:
        for measure in ("acc", "tvd", "ll_multinomial", "logprob_per_choice", "ll_binomial"):
            assert f"{system}/{measure}" in metrics, f"{system}/{measure}"
            assert f"{system}/{measure}/Irony" in metrics
        assert 0.0 <= metrics[f"{system}/acc"]["value"] <= 1.0
        assert 0.0 <= metrics[f"{system}/tvd"]["value"] <= 1.0
        assert metrics[f"{system}/ll_multinomial"]["value"] < 0
    assert 0.0 <= metrics["free.temp0.1/unclassified"]["value"] <= 1.0
    assert metrics["human/acc"]["value"] > 0.5
    counts = results["responses"]["mcq-fixture"]["queries"]
    assert set(counts) == KINDS
    assert results["unavailable"] == {}


def test_scores_are_read_from_the_stored_answers(first_run: tuple[Path, Path, dict[str, Any]]) -> None:
    _, out, _ = first_run
    rows = _samples(out)
    assert len(rows) == 7
    for row in rows:
        answers = row["response"]["answers"]
        values = row["metrics"]
        item_options = row["doc"]["options"]
        for system in SYSTEMS:
            assert sum(values[system]["p"]) == pytest.approx(1.0)
        # String prob: the sum of the stored token log-probabilities of each option after prompt I.
        for k in range(len(item_options)):
            stored = answers[f"mcq_string:o1/I/{k}"]["token_logprobs"]
            assert values["string.prob"]["scores"][1][k] == pytest.approx(sum(stored), rel=1e-8)
        # Label prob: the stored label log-probabilities, moved from positions back to options.
        item = ChoiceInstance(id=row["id"], options=tuple(item_options))
        order = option_order(item, 0, 0)
        label_lp = answers["mcq_label:o0/I"]["logprobs"]
        for position, k in enumerate(order):
            assert values["label.prob"]["scores"][0][k] == pytest.approx(label_lp[position], rel=1e-8)
        # Free generation: one answer per order and temperature (two orders here).
        assert len(values["free.temp0.9"]["answers"]) == 2
        assert row["reports"]["mcq_robustness"]["n_systems"] == len(SYSTEMS)


def test_robustness_report_is_in_results_and_table(first_run: tuple[Path, Path, dict[str, Any]]) -> None:
    _, _, results = first_run
    report = results["reports"]["mcq-fixture"]["mcq_robustness"]
    assert report["systems"] == list(SYSTEMS)
    assert report["spread"]["acc"]["range"] >= 0
    n_pairs = len(SYSTEMS) * (len(SYSTEMS) - 1) // 2
    assert len(report["kendall_tau"]) == n_pairs
    assert set(report["winners"]) == {"CoherenceInference", "Irony", "Maxims"}
    taus = [v["tau"] for v in report["kendall_tau"].values() if v["tau"] is not None]
    assert all(-1.0 <= t <= 1.0 for t in taus)
    table = format_table(results)
    assert "robustness across ways of asking" in table and "Kendall's tau" in table


def test_rerun_loads_no_model_and_gives_identical_results(first_run: tuple[Path, Path, dict[str, Any]]) -> None:
    task, out, results = first_run
    again = run(_options(task, out))
    assert "model_load_seconds" not in again["timing"]
    assert strip_volatile(again) == strip_volatile(results)


def test_a_model_without_a_query_kind_is_refused_before_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = get_registry()

    class NoSimilarity(ModelAdapter):
        supported_requests = frozenset({"loglikelihood", "next_token", "generate"})

        def __init__(self, spec: ModelSpec) -> None:
            raise AssertionError("must not be built")

        def close(self) -> None:
            pass

    monkeypatch.setitem(registry.models, "nosim", Registered(NoSimilarity, "test"))  # undone after the test
    options = RunOptions(
        tasks=[str(_task_file(tmp_path))], model=ModelSpec("nosim", "x"), output_dir=tmp_path, data_dir=str(FIXTURES)
    )
    with pytest.raises(HarnessError, match=r"'similarity' \w+ that scorer 'mcq_embedding'"):
        run(options)


@pytest.mark.slow
def test_smollm2_answers_every_query_kind_with_real_numbers(tmp_path: Path) -> None:
    """The real model on 2 items, one option order: its answers are real log-probabilities and cosines, the scores
    are read from them, and a rerun reads them back from the store without loading the model."""
    task = _task_file(tmp_path, option_orders=1)
    results = run(_options(task, tmp_path / "runs", SMOLLM2, limit=2))
    assert results["unavailable"] == {}
    assert set(results["responses"]["mcq-fixture"]["queries"]) == KINDS
    metrics = results["metrics"]["mcq-fixture"]
    for system in SYSTEMS:
        assert 0.0 <= metrics[f"{system}/acc"]["value"] <= 1.0
        assert metrics[f"{system}/ll_multinomial"]["value"] < 0
    rows = _samples(tmp_path / "runs", SMOLLM2)
    assert len(rows) == 2
    for row in rows:
        answers = row["response"]["answers"]
        n_options = len(row["doc"]["options"])
        for k in range(n_options):
            stored = answers[f"mcq_string:o0/I/{k}"]["token_logprobs"]
            # A real model's token log-probabilities: negative, and an option of several tokens far below 0.
            assert stored and all(-50.0 < lp < 0.0 for lp in stored)
            assert row["metrics"]["string.prob"]["scores"][0][k] == pytest.approx(sum(stored), rel=1e-8)
        # The label tokens' probabilities after one prompt: a part of the next-token distribution, so below 1.
        label_lp = answers["mcq_label:o0/I"]["logprobs"]
        assert len(label_lp) == n_options and 0.0 < sum(math.exp(lp) for lp in label_lp) < 1.0
        for system in SYSTEMS:
            assert sum(row["metrics"][system]["p"]) == pytest.approx(1.0)
    cosines = [c for row in rows for a in row["response"]["answers"].values() for c in a.get("cosines", [])]
    assert cosines and all(-1.0 <= c <= 1.0 for c in cosines) and len(set(cosines)) > 1
    again = run(_options(task, tmp_path / "runs", SMOLLM2, limit=2))
    assert "model_load_seconds" not in again["timing"]
    assert strip_volatile(again) == strip_volatile(results)
