"""YAML-only tasks over the generic loaders, end to end: validate, run, score, leaderboard and export with no Python,
and the five built-in tasks re-expressed in ``examples/your-data/`` giving the dedicated loaders' instances."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.registry.manager import get_registry
from tests.helpers import REPO, shared_data_dir

NLI_TASK = """\
task: my-nli
version: 1
description: Natural language inference with the labels of many annotators per pair.
loader: generic_choice
data:
  files: nli/pairs.jsonl
  id: pair
  text: "Premise: {{ premise }}\\nHypothesis: {{ hypothesis }}\\nDoes the premise entail the hypothesis?"
  options: {e: entailment, n: neutral, c: contradiction}
  target: gold
  human: {shape: mapping, responses: votes}
request: multiple_choice
params:
  option_orders: 2
  prompt_template: "{scenario}\\n\\n{options}Answer:"
scorers: [mcq_human, mcq_string, mcq_label]
"""

CLOZE_TASK = """\
task: my-cloze
version: 1
loader: generic_cloze
data:
  files: cloze/norms.csv
  group_by: [sentence, position]
  id: "{{ sentence }}-{{ position }}"
  context: context
  target: word
  human: {shape: long, responses: guess, counts: n}
  normalise: {no_answer: ["", "?"]}
request: sample_words
params: {n_samples: 50}
scorers: [tvd, {name: human_control, args: {n_splits: 4}}, top1, entropy, ece]
"""


def nli_data(root: Path) -> None:
    pairs = [
        {
            "pair": "p1",
            "premise": "A man sleeps.",
            "hypothesis": "A person rests.",
            "gold": "e",
            "votes": {"e": 7, "n": 2, "c": 1},
        },
        {
            "pair": "p2",
            "premise": "It rains.",
            "hypothesis": "The street is dry.",
            "gold": "c",
            "votes": {"c": 9, "n": 1},
        },
        {
            "pair": "p3",
            "premise": "A dog barks.",
            "hypothesis": "The dog is hungry.",
            "gold": "n",
            "votes": {"n": 5, "e": 4, "c": 1},
        },
    ]
    (root / "nli").mkdir(parents=True)
    (root / "nli" / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))


def cloze_data(root: Path) -> None:
    rows = ["sentence,position,context,word,guess,n"]
    for position, (context, word, guesses) in enumerate(
        [
            ("The cat sat on the", "mat", {"mat": 5, "floor": 3, "sofa": 1, "?": 1}),
            ("She drank a cup of", "tea", {"tea": 6, "coffee": 4}),
        ],
        start=1,
    ):
        rows += [f"s1,{position},{context},{word},{g},{n}" for g, n in guesses.items()]
    (root / "cloze").mkdir(parents=True)
    (root / "cloze" / "norms.csv").write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize("kind", ["nli", "cloze"])
def test_a_yaml_task_over_a_local_file_runs_scores_ranks_and_exports(cli: Any, tmp_path: Path, kind: str) -> None:
    data = tmp_path / "data"
    (nli_data if kind == "nli" else cloze_data)(data)
    task_file = tmp_path / f"my-{kind}.yaml"
    task_file.write_text(NLI_TASK if kind == "nli" else CLOZE_TASK)
    task = f"my-{kind}"
    checked = cli("validate", str(task_file), "--data-dir", str(data))
    assert "data: the first 50 rows of" in checked.stdout
    runs = tmp_path / "runs"
    cli("run", "--tasks", str(task_file), "--model", "mock:test", "--data-dir", str(data), "--output-dir", str(runs))
    cli("run", "--tasks", str(task_file), "--human-only", "--data-dir", str(data), "--output-dir", str(runs))
    model_run, human_run = runs / "mock__test", runs / "human"
    results = json.loads((model_run / "results.json").read_text())
    assert results["data_sources"][task]["loader"] == f"generic_{'choice' if kind == 'nli' else 'cloze'}"
    metrics = results["metrics"][task]
    if kind == "nli":
        # The share of people choosing the target: 7/10, 9/10 and 5/10, mean 0.7; the majority chose it every time.
        assert metrics["human/acc"]["value"] == pytest.approx(0.7)
        assert metrics["human/majority_acc"]["value"] == 1.0
        samples = [
            json.loads(line) for line in next(model_run.glob(f"samples_{task}_*.jsonl")).read_text().splitlines()
        ]
        assert [s["human"]["counts"] for s in samples] == [[7, 2, 1], [0, 1, 9], [4, 5, 1]]
    else:
        samples = [
            json.loads(line) for line in next(model_run.glob(f"samples_{task}_*.jsonl")).read_text().splitlines()
        ]
        assert [s["human"]["counts"] for s in samples] == [{"mat": 5, "floor": 3, "sofa": 1}, {"tea": 6, "coffee": 4}]
        assert "tvd" in metrics and "top1_human_majority" in metrics
    cli("score", str(model_run), "--data-dir", str(data))
    board = tmp_path / "board"
    cli("leaderboard", str(model_run), str(human_run), "-o", str(board))
    assert (board / "index.html").is_file() or any(board.iterdir())
    cli("export", str(model_run), "--format", "lm-eval", "-o", str(tmp_path / "export"))
    assert any((tmp_path / "export").rglob("*.json"))


def test_validate_names_the_column_file_and_row_of_a_bad_mapping(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    cloze_data(data)
    bad = tmp_path / "bad.yaml"
    bad.write_text(CLOZE_TASK.replace("counts: n", "counts: count"))
    result = cli("validate", str(bad), "--data-dir", str(data), check=False)
    assert result.returncode == 2
    norms = data / "cloze" / "norms.csv"
    assert (
        f"{norms}: row 1: field 'human.counts': no column 'count' (columns: sentence, position, context, word"
        in result.stderr
    )


# ------------------------------------------------------------------------------------------- the five built-ins

TWINS = {
    "provo": "provo-long.yaml",
    "asset-valid": "asset-valid.yaml",
    "wmt14-en-de": "wmt14-en-de.yaml",
    "dailydialog-pp": "dailydialog-pp.yaml",
    "pragmatics-mcq": "pragmatics-mcq.yaml",
}


def instances(task_file: Path, root: Path) -> list[Any]:
    config = yaml.safe_load(task_file.read_text())
    return get_registry().loader(config["loader"])(config["data"], root).instances


@pytest.mark.parametrize("builtin", list(TWINS))
def test_the_yaml_only_twin_of_a_builtin_task_gives_its_instances(builtin: str) -> None:
    root = shared_data_dir()
    twin = REPO / "examples" / "your-data" / TWINS[builtin]
    try:
        theirs = instances(REPO / "harness" / "tasks" / f"{builtin}.yaml", root)
    except Exception as exc:  # no data here
        pytest.skip(f"{builtin}: {exc}")
    ours = instances(twin, root)
    assert len(ours) == len(theirs)
    if builtin == "dailydialog-pp":
        # The built-in loader also reads each context's topic from a second, nested file; nothing else differs.
        assert [i.meta for i in theirs][:1] == [{"topic": "Relationship"}]
        theirs = [type(i)(**{**i.__dict__, "meta": {}}) for i in theirs]
    assert ours == theirs


NO_TARGET_PROPORTIONS_TASK = """\
task: shares-cloze
version: 1
loader: generic_cloze
data:
  files: shares.jsonl
  id: id
  context: ctx
  human: {shape: mapping, responses: shares, values: proportions}
request: sample_words
params: {n_samples: 40}
scorers: [tvd, human_control, top1, entropy, ece]
"""


def test_proportions_without_people_and_without_a_corpus_word_say_what_cannot_be_computed(
    cli: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    rows = [
        {"id": "a", "ctx": "I like", "shares": {"tea": 0.5, "coffee": 0.25, "water": 0.25}},
        {"id": "b", "ctx": "We drank", "shares": {"tea": 0.6, "wine": 0.4}},
    ]
    (data / "shares.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    task_file = tmp_path / "shares.yaml"
    task_file.write_text(NO_TARGET_PROPORTIONS_TASK)
    runs = tmp_path / "runs"
    cli("run", "--tasks", str(task_file), "--model", "mock:test", "--data-dir", str(data), "--output-dir", str(runs))
    results = json.loads((runs / "mock__test" / "results.json").read_text())
    unavailable = results["unavailable"]["shares-cloze"]
    assert unavailable["human_control"] == (
        "2 of 2 instances give only proportions of people (no number of people), so the split-half human control "
        "(random halves of the people) cannot be computed"
    )
    assert unavailable["top1"] == (
        "2 of 2 instances have no corpus word (the task's data gives no target), so accuracy against the corpus word "
        "cannot be computed"
    )
    metrics = results["metrics"]["shares-cloze"]
    assert {"tvd", "entropy_human", "ece_model_majority"} <= set(metrics)
    assert not any("corpus" in name for name in metrics)
    # Entropy of the people's shares, by hand: (1.5 + H(0.6, 0.4)) / 2 bits.
    h_b = -(0.6 * math.log2(0.6) + 0.4 * math.log2(0.4))
    assert metrics["entropy_human"]["value"] == pytest.approx((1.5 + h_b) / 2)
    samples = next((runs / "mock__test").glob("samples_shares-cloze_*.jsonl")).read_text().splitlines()
    assert json.loads(samples[0])["human"]["counts_known"] is False
    # The paper-faithful ECE has no corpus gold either, and no oracle gold (subsets of people).
    paper = tmp_path / "paper"
    cli(
        "run",
        "--tasks",
        str(task_file),
        "--model",
        "mock:test",
        "--data-dir",
        str(data),
        "--output-dir",
        str(paper),
        "--task-args",
        "ece.variant=paper",
    )
    paper_metrics = json.loads((paper / "mock__test" / "results.json").read_text())["metrics"]["shares-cloze"]
    assert "ece_model_majority" in paper_metrics
    assert not any("corpus" in name or "oracle" in name for name in paper_metrics)


LABEL_DISTRIBUTION_TASK = """\
task: my-labels
version: 1
loader: generic_choice
data:
  files: labels.jsonl
  id: item
  text: "{{ sentence }}\\nHow does the writer feel?"
  options: [happy, sad, angry]
  human: {shape: parallel, counts: votes}
request: multiple_choice
params: {option_orders: 2}
scorers: [mcq_human, mcq_string, mcq_label, mcq_free, mcq_robustness]
"""


def test_a_label_distribution_without_a_target_keeps_the_distribution_metrics(cli: Any, tmp_path: Path) -> None:
    """No target in the data: TVD and the multinomial fit are computed, accuracy, p_target and the binomial are not."""
    data = tmp_path / "data"
    data.mkdir()
    items = [
        {"item": "a", "sentence": "I won the prize!", "votes": [8, 1, 1]},
        {"item": "b", "sentence": "My cat is lost.", "votes": [0, 7, 3]},
        {"item": "c", "sentence": "They cancelled again.", "votes": [1, 4, 5]},
    ]
    (data / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    task_file = tmp_path / "labels.yaml"
    task_file.write_text(LABEL_DISTRIBUTION_TASK)
    runs = tmp_path / "runs"
    cli("run", "--tasks", str(task_file), "--model", "mock:test", "--data-dir", str(data), "--output-dir", str(runs))
    results = json.loads((runs / "mock__test" / "results.json").read_text())
    metrics = results["metrics"]["my-labels"]
    assert "my-labels" not in results.get("unavailable", {})
    assert "string.prob/tvd" in metrics and "string.prob/ll_multinomial" in metrics
    assert not any(name.endswith(("/acc", "/ll_binomial", "majority_acc")) for name in metrics)
    # The chance row against the people's distributions, by hand: TVD of uniform against each item's shares.
    by_hand = [0.5 * sum(abs(1 / 3 - v / 10) for v in r["votes"]) for r in items]
    assert metrics["chance/tvd"]["value"] == pytest.approx(sum(by_hand) / 3)
    samples = [
        json.loads(x) for x in next((runs / "mock__test").glob("samples_my-labels_*.jsonl")).read_text().splitlines()
    ]
    assert [s["human"]["target"] for s in samples] == [None, None, None]
