"""Recorded option distributions as a multiple-choice system: the ``option_probs`` kind, the ``mcq_reported`` scorer,
the replay adapter's answers from the JSON Lines format (a fixture written here) and from Hu et al.'s released
``model_data`` CSVs (``hu2023``, on the real files), through ``harness import``, ``harness score`` and
``harness leaderboard``."""

from __future__ import annotations

import ast
import csv
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from scipy.stats import binom

from harness.errors import HarnessError
from harness.instances import ChoiceInstance
from harness.kinds.option_probs import OptionProbsKind
from harness.models import ModelSpec
from harness.plugins.replay.adapter import ReplayAdapter
from harness.plugins.replay.formats import detect, read_outputs
from harness.plugins.replay.hu2023 import RecordedChoices, read_hu2023
from harness.registry.manager import get_registry
from harness.requests.option_probs import OptionProbsRequest, OptionProbsResponse
from harness.scorers.choice.reported import ReportedScorer
from tests.conftest import CliResult
from tests.helpers import REPO, shared_data_dir

FIXTURES = REPO / "tests" / "fixtures"
FIXTURE_PHENOMENA = ["CoherenceInference", "Irony", "Maxims"]
MODEL_DATA = Path("pragmatics-mcq") / "reference_outputs" / "hu2023" / "model_data"
#: Hu et al.'s models with the story (all seven phenomena) and without it (five: no coherence, no humour).
STORY_MODELS = (
    "flan-t5-base",
    "flan-t5-xl",
    "flan-t5-xxl",
    "gpt2",
    "text-ada-001",
    "text-davinci-002",
    "tk-instruct-11b-def-pos",
    "tk-instruct-3b-def-pos",
)
NO_STORY_MODELS = ("flan-t5-xl", "text-davinci-002", "tk-instruct-11b-def-pos")
TASK = "pragmatics-mcq-reported"
Cli = Callable[..., CliResult]


def _model_data() -> Path:
    path = shared_data_dir() / MODEL_DATA
    if not path.is_dir():
        pytest.skip(f"Hu et al.'s model_data not found under {shared_data_dir()}")
    return path


def _fixture_task(tmp_path: Path) -> Path:
    """The built-in task restricted to the phenomena of the small fixture release (7 items)."""
    raw = yaml.safe_load((REPO / "harness" / "tasks" / f"{TASK}.yaml").read_text())
    raw["task"] = "reported-fixture"
    raw["data"]["phenomena"] = FIXTURE_PHENOMENA
    path = tmp_path / "reported-fixture.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _results(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "results.json").read_text()))


def _metric(results: dict[str, Any], task: str, name: str) -> float:
    return float(results["metrics"][task][name]["value"])


# -- the kind and the scorer -----------------------------------------------------------------------------------


def test_option_probs_response_round_trips_and_is_checked() -> None:
    response = OptionProbsResponse([[0.2, 0.8], [0.4, 0.6]])
    assert response.probs == pytest.approx([0.3, 0.7])
    record = response.to_record()
    assert record == {"kind": "option_probs", "orders": [[0.2, 0.8], [0.4, 0.6]]}
    assert OptionProbsResponse.from_record(record) == response
    assert get_registry().kind("option_probs").response_from_record(record) == response
    request = OptionProbsRequest("Irony-1", ("a", "b"))
    assert request.to_record() == {"kind": "option_probs", "instance_id": "Irony-1", "options": ["a", "b"]}

    class Spec:
        spec = ModelSpec("replay", "x")

    kind = OptionProbsKind()
    kind.check_response(Spec(), request, response)  # type: ignore[arg-type]
    for bad, message in (
        (OptionProbsResponse([]), "no option distribution"),
        (OptionProbsResponse([[0.2, 0.3, 0.5]]), "3 option probabilities for 2 options"),
        (OptionProbsResponse([[0.0, 0.0]]), "not all 0"),
        (OptionProbsResponse([[-0.1, 1.1]]), "non-negative"),
    ):
        with pytest.raises(HarnessError, match=message):
            kind.check_response(Spec(), request, bad)  # type: ignore[arg-type]


def test_reported_scorer_scores_each_order_like_the_other_methods() -> None:
    item = ChoiceInstance(
        id="Irony-1",
        phenomenon="Irony",
        item_id=1,
        options=("literal", "ironic", "other"),
        target=1,
        human_counts=(1, 3, 1),
    )
    scorer = ReportedScorer()
    assert scorer.requests(item, {}, 0) == {"probs": OptionProbsRequest("Irony-1", item.options)}
    answer = {"probs": OptionProbsResponse([[0.2, 0.7, 0.1], [0.5, 0.3, 0.2]])}
    values = scorer.score(item, answer, np.random.default_rng(0))["reported.probs"]
    # Orders: the target first in one of two; p is the mean (0.35, 0.5, 0.15); TVD to (0.2, 0.6, 0.2) = 0.15.
    assert values["acc"] == 0.5
    assert values["p"] == pytest.approx([0.35, 0.5, 0.15])
    assert values["tvd"] == pytest.approx(0.15)
    assert len(values["scores"]) == 2
    with pytest.raises(ValueError, match="expected 3 option probabilities per order"):
        scorer.score(item, {"probs": OptionProbsResponse([[0.5, 0.5]])}, np.random.default_rng(0))


# -- Hu et al.'s released distributions (real files) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "n_items", "n_files"),
    [(m, 169, 35) for m in STORY_MODELS] + [(f"{m}/no-story", 104, 25) for m in NO_STORY_MODELS],
)
def test_hu2023_items_and_seeds_per_model(setting: str, n_items: int, n_files: int) -> None:
    outputs = read_hu2023(_model_data(), setting)
    # Every item but Maxims 13 (dropped by Hu et al.'s prompts); no-story: 20 + 20 + 25 + 19 + 20 items.
    assert len(outputs.entries) == n_items
    assert "Maxims-13" not in outputs.entries
    assert len(outputs.sources) == n_files
    assert outputs.meta["orders_per_item"] == f"5 ({n_items} items)"
    assert outputs.meta["seeds"] == "0,1,2,3,4"
    assert outputs.meta["setting"] == setting
    phenomena = {key.rpartition("-")[0] for key in outputs.entries}
    assert ("CoherenceInference" in phenomena) is (n_items == 169)
    for entry in outputs.entries.values():
        assert isinstance(entry, RecordedChoices)
        assert len(entry.orders) == 5
        assert entry.option_probs == pytest.approx(np.mean(entry.orders, axis=0))


def test_hu2023_seeds_are_mapped_back_to_the_original_option_order() -> None:
    outputs = read_hu2023(_model_data(), "text-davinci-002")
    entry = outputs.entries["Irony-1"]
    assert isinstance(entry, RecordedChoices)
    # Seed 0 showed original options 3, 4, 1, 2 (randomized_option_order [3, 4, 1, 2]) with probabilities
    # {'1': 0.00103..., '2': 0.08423..., '3': 0.90775..., '4': 0.00697...}: original option 1 got position 3's.
    assert entry.orders[0] == pytest.approx(
        [0.9077589753823077, 0.006974595392283877, 0.0010302915472281337, 0.08423613767818035]
    )
    assert entry.target == 1
    assert entry.options[1] == "Lara needs to get a dress of a shorter length."
    # Checked on every row of the model's files against the files' own columns: the target's probability is
    # prob_true_answer, and the most probable presented option is the file's answer.
    rows = 0
    for path in outputs.sources:
        seed = int(path.name.split("_seed")[1].split("_")[0])
        with path.open(newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                phenomenon = path.name.split("_")[0]
                mapped = outputs.entries[f"{phenomenon}-{row['item_id']}"]
                assert isinstance(mapped, RecordedChoices)
                probs = mapped.orders[seed]
                order = ast.literal_eval(row["randomized_option_order"])
                assert mapped.target == order[int(row["randomized_true_answer"]) - 1] - 1
                # (prob_true_answer is written rounded to 6 decimals in some files, in full in others)
                assert probs[mapped.target] == pytest.approx(float(row["prob_true_answer"]), abs=5e-7)
                presented = [probs[k - 1] for k in order]
                assert int(np.argmax(presented)) + 1 == int(row["answer"])
                rows += 1
    assert rows == 169 * 5


def test_hu2023_settings_files_and_detection() -> None:
    folder = _model_data()
    assert detect(folder) == "hu2023"
    one = folder / "Irony_no-story_flan-t5-xl_seed3_examples0.csv"
    assert detect(one) == "hu2023"
    single = read_hu2023(one, None)
    assert single.meta["setting"] == "flan-t5-xl/no-story"
    # One file is one seed: one option order per item.
    assert len(single.entries) == 25 and single.meta["orders_per_item"] == "1 (25 items)"
    assert single.meta["seeds"] == "3"
    with pytest.raises(HarnessError, match=r"holds 11 models; name one with setting= \(flan-t5-base, "):
        read_hu2023(folder, None)
    with pytest.raises(HarnessError, match=r"has no files for 'gpt2/no-story'"):
        read_hu2023(folder, "gpt2/no-story")
    with pytest.raises(HarnessError, match=r"has no files for 'gpt2'"):
        read_hu2023(one, "gpt2")
    with pytest.raises(HarnessError, match=r"expected MODEL or MODEL/no-story"):
        read_hu2023(folder, "gpt2/story")


def test_hu2023_import_end_to_end(cli: Cli, tmp_path: Path) -> None:
    folder = _model_data()
    data = str(shared_data_dir())
    out = tmp_path / "runs"
    for name in ("text-davinci-002", "gpt2"):
        result = cli(
            "import",
            str(MODEL_DATA),  # found under the data folder
            "--task",
            TASK,
            "--name",
            name,
            "--format",
            "hu2023",
            "--setting",
            name,
            "--data-dir",
            data,
            "--output-dir",
            str(out),
        )
        assert "left out" not in result.stderr  # every item's options and target are the instance's
        assert "has no outputs for 1 of 170 instances" in result.stderr
    run_dir = out / "replay__text-davinci-002"
    results = _results(run_dir)
    assert results["data_sources"][TASK]["missing"] == {"n": 1, "ids": ["Maxims-13"]}
    source_meta = results["config"]["model_info"]["source_meta"]
    assert source_meta["orders_per_item"] == "5 (169 items)" and source_meta["setting"] == "text-davinci-002"
    for metric in ("acc", "tvd", "ll_multinomial", "logprob_per_choice", "ll_binomial", "acc/Irony"):
        assert f"reported.probs/{metric}" in results["metrics"][TASK]
    # The accuracy is Hu et al.'s own: the mean of the files' ``correct`` column over items and seeds.
    correct = []
    for path in sorted(p for p in folder.glob("*_text-davinci-002_seed*_examples0.csv") if "no-story" not in p.name):
        with path.open(newline="", encoding="utf-8") as f:
            correct += [row["correct"] == "True" for row in csv.DictReader(f)]
    assert len(correct) == 845
    assert _metric(results, TASK, "reported.probs/acc") == pytest.approx(float(np.mean(correct)))
    assert "human/control_tvd" in results["metrics"][TASK]

    # Re-scored from the stored answers, with no model: the same numbers.
    cli("score", str(run_dir))
    again = _results(run_dir / "rescored")
    for name in ("reported.probs/acc", "reported.probs/tvd", "reported.probs/ll_binomial"):
        assert _metric(again, TASK, name) == _metric(results, TASK, name)

    board = tmp_path / "board"
    cli("leaderboard", str(out / "replay__text-davinci-002"), str(out / "replay__gpt2"), "-o", str(board), "--no-plots")
    text = (board / "leaderboard.json").read_text()
    assert "reported.probs" in text and "replay:gpt2" in text


# -- the JSON Lines format (a fixture written here) --------------------------------------------------------------


def _write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_jsonl_option_probs_import_score_and_leaderboard(cli: Cli, tmp_path: Path) -> None:
    task = _fixture_task(tmp_path)
    source = _write_jsonl(
        tmp_path / "mine.jsonl",
        [
            {"harness_outputs": 1, "model": "my-scorer"},
            {"id": "CoherenceInference-1", "option_probs": [0.8, 0.2]},
            {"id": "Irony-1", "option_probs": [0.1, 0.6, 0.2, 0.1]},
            {"id": "Maxims-1", "option_probs": [0.5, 0.25, 0.25, 0.0]},
            {"id": "Irony-2", "option_probs": [0.5, 0.5]},  # two probabilities for four options: left out
            {"id": "Nope-1", "option_probs": [0.5, 0.5]},  # no such item
        ],
    )
    out = tmp_path / "runs"
    common = ["--task", str(task), "--name", "mine", "--data-dir", str(FIXTURES), "--output-dir", str(out)]
    result = cli("import", str(source), *common)
    assert "item Irony-2: 2 option probabilities recorded, the item has 4 options; left out" in result.stderr
    assert "match no instance" in result.stderr
    run_dir = out / "replay__mine"
    results = _results(run_dir)
    t = "reported-fixture"
    assert results["data_sources"][t]["missing"]["ids"] == ["CoherenceInference-21", "Irony-2", "Irony-16", "Maxims-13"]
    # By hand, items (target; human counts): C-1 (0; 4, 1), Irony-1 (1; 1, 3, 0, 1), Maxims-1 (2; 1, 1, 3, 0).
    assert _metric(results, t, "reported.probs/acc") == pytest.approx(2 / 3)
    # TVD: 0 for C-1; (0.1 + 0 + 0.2 + 0.1) / 2 = 0.2 for Irony-1; (0.3 + 0.05 + 0.35) / 2 = 0.35 for Maxims-1.
    assert _metric(results, t, "reported.probs/tvd") == pytest.approx((0 + 0.2 + 0.35) / 3)
    # Fits use p' = 0.99 p + 0.01 / K.
    q = {"c": [0.797, 0.203], "i": [0.1015, 0.5965, 0.2005, 0.1015], "m": [0.4975, 0.25, 0.25, 0.0025]}
    counts = {"c": [4, 1], "i": [1, 3, 0, 1], "m": [1, 1, 3, 0]}
    per_choice = sum(c * math.log(p) for k in q for c, p in zip(counts[k], q[k], strict=True) if c) / 15
    assert _metric(results, t, "reported.probs/logprob_per_choice") == pytest.approx(per_choice)
    binomial = binom.logpmf(4, 5, 0.797) + binom.logpmf(3, 5, 0.5965) + binom.logpmf(3, 5, 0.25)
    assert _metric(results, t, "reported.probs/ll_binomial") == pytest.approx(binomial)
    assert results["config"]["model_info"]["source_meta"] == {"model": "my-scorer"}

    # harness score: the default again, then the follow-up study's binomial (argmax rates 1, 1 and 0, clipped).
    cli("score", str(run_dir), "--output-dir", str(tmp_path / "default"))
    assert _metric(_results(tmp_path / "default"), t, "reported.probs/ll_binomial") == pytest.approx(binomial)
    cli("score", str(run_dir), "--task-args", "mcq_reported.variant=paper", "--output-dir", str(tmp_path / "paper"))
    paper = _results(tmp_path / "paper")
    eps = 1e-9
    expected = binom.logpmf(4, 5, 1 - eps) + binom.logpmf(3, 5, 1 - eps) + binom.logpmf(3, 5, eps)
    # By hand, the Maxims term: log C(5, 3) + 3 log(1e-9) + 2 log(1 - 1e-9) = 2.302585 - 62.169798 = -59.867212.
    assert binom.logpmf(3, 5, eps) == pytest.approx(-59.867212, abs=1e-6)
    assert _metric(paper, t, "reported.probs/ll_binomial") == pytest.approx(expected)
    assert _metric(paper, t, "reported.probs/acc") == _metric(results, t, "reported.probs/acc")

    board = tmp_path / "board"
    cli("leaderboard", str(run_dir), "-o", str(board), "--no-plots")
    assert "reported.probs" in (board / "leaderboard.json").read_text()


def test_mismatched_option_texts_are_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hu2023 file whose listed options are not the instance's: that item is warned about and not scored."""
    original = _model_data() / "Irony_gpt2_seed0_examples0.csv"
    text = original.read_text(encoding="utf-8")
    assert text.count("Simon has to get back to work.") == 1
    changed = tmp_path / "Irony_gpt2_seed0_examples0.csv"
    changed.write_text(text.replace("Simon has to get back to work.", "Simon has to go home."), encoding="utf-8")
    from harness.plugins.loaders.pragmatics import load_pragmatics_mcq

    instances = load_pragmatics_mcq({"phenomena": ["Irony"]}, shared_data_dir()).instances
    spec = ModelSpec("replay", "gpt2", {"path": str(changed), "format": "auto"})
    covered = ReplayAdapter.covered_instances(spec, list(instances))
    assert covered is not None and len(covered) == 24 and "Irony-1" not in covered
    err = capsys.readouterr().err
    assert "item Irony-1: the outputs' option 4 is 'Simon has to go home.'" in err and "left out" in err
    # The adapter itself refuses to answer it too, if asked.
    adapter = ReplayAdapter(spec)
    item = next(i for i in instances if i.id == "Irony-1")
    assert isinstance(item, ChoiceInstance)
    with pytest.raises(HarnessError, match="option 4 is 'Simon has to go home.'"):
        adapter.option_probs_many([OptionProbsRequest(item.id, item.options)])
    outputs = read_outputs(changed.resolve(), "auto", None)
    assert outputs.format == "hu2023"


def test_a_model_that_cannot_report_distributions_is_refused(cli: Cli, tmp_path: Path) -> None:
    task = _fixture_task(tmp_path)
    result = cli(
        "run", "--tasks", str(task), "--model", "mock:test", "--data-dir", str(FIXTURES), "--output-dir",
        str(tmp_path), check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "cannot answer the 'option_probs' requests that scorer 'mcq_reported'" in result.stderr
