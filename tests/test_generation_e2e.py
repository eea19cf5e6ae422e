"""End to end on the real generation data sets: human-only references for every task, a model run with a decoding
sweep, determinism and resume without the model, and probes reported unavailable where they are. Model runs use the
mock model (fast, in-process) and are repeated with the real SmolLM2 (slow)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.models import ModelSpec
from harness.outputs.results import strip_volatile
from harness.run.options import RunOptions
from harness.run.runner import run
from tests.helpers import REPO, samples_of, shared_data_dir, source_of
from tests.snapshot import value_differences

#: The model runs: the mock (fast) and the real SmolLM2 (slow).
MODELS = [
    pytest.param(ModelSpec("mock", "test"), id="mock"),
    pytest.param(ModelSpec("hf", "smollm2-135m"), marks=pytest.mark.slow, id="smollm2"),
]
PROBE_PREFIXES = ("unigram", "bigram", "trigram", "pos_unigram", "pos_bigram", "pos_trigram", "cosine")


def require(folder: str, file: str) -> Path:
    data = shared_data_dir()
    if not (data / folder / file).is_file():
        pytest.skip(f"{folder} data not found under {data}")
    return data


def human_only(task: str, data: Path, out: Path, limit: int | None = 8) -> dict[str, Any]:
    return run(RunOptions(tasks=[task], model=None, limit=limit, output_dir=out, data_dir=str(data)))


def samples(out: Path, slug: str, task: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in samples_of(out / slug, task).open()]


def test_asset_human_only_has_every_probe_and_both_controls(tmp_path: Path) -> None:
    data = require("asset", "asset_test.jsonl")
    results = human_only("asset-test", data, tmp_path)
    metrics = results["metrics"]["asset-test"]
    for prefix in PROBE_PREFIXES:
        for suffix in ("h_mean", "control_w1", "control_w1_cross", "control_dmu", "paper_control_w1"):
            assert f"{prefix}_{suffix}" in metrics, f"{prefix}_{suffix}"
        assert f"{prefix}_w1_mh" not in metrics
        assert metrics[f"{prefix}_control_w1"]["spread"] is not None
    assert 0 < metrics["unigram_h_mean"]["value"] < 1
    assert 0 < metrics["cosine_h_mean"]["value"] < 1
    assert results["unavailable"] == {}
    rows = samples(tmp_path, "human", "asset-test")
    assert len(rows) == 8 and len(rows[0]["human"]["references"]) == 10
    # 10 references: 45 unordered pairs per measure, kept for plots and re-scoring.
    assert len(rows[0]["metrics"]["unigram_distances"]["H"]) == 45
    assert results["scorers"]["asset-test"]["syntactic"]


def test_translation_reports_the_german_tagger_unavailable(tmp_path: Path) -> None:
    data = require("wmt14-multiref", "wmt14_en-de_multiref.jsonl")
    results = human_only("wmt14-en-de", data, tmp_path, limit=4)
    reason = results["unavailable"]["wmt14-en-de"]["syntactic"]
    assert "de" in reason and "de_core_news_sm" in reason
    metrics = results["metrics"]["wmt14-en-de"]
    assert not any(name.startswith("pos_") for name in metrics)
    assert "unigram_control_w1" in metrics and "cosine_h_mean" in metrics
    # 11 references per source: 55 pairs.
    assert len(samples(tmp_path, "human", "wmt14-en-de")[0]["metrics"]["unigram_distances"]["H"]) == 55


def test_dialogue_says_why_it_has_no_control(tmp_path: Path) -> None:
    data = require("dailydialog-plusplus", "dataset/dev.json")
    results = human_only("dailydialog-pp", data, tmp_path, limit=6)
    metrics = results["metrics"]["dailydialog-pp"]
    assert "unigram_h_mean" in metrics
    assert "unigram_control_w1" not in metrics and "unigram_paper_control_w1" not in metrics
    notes = results["notes"]["dailydialog-pp"]["lexical"]
    assert "6 references" in notes["control"]


def test_writingprompts_on_its_fixture(tmp_path: Path) -> None:
    fixtures = REPO / "tests" / "fixtures"
    results = human_only("writingprompts", fixtures, tmp_path, limit=None)
    assert results["n-samples"]["writingprompts"]["effective"] >= 1
    assert "unigram_h_mean" in results["metrics"]["writingprompts"]


def slug(model: ModelSpec) -> str:
    return f"{model.kind}__{model.name}"


@pytest.mark.parametrize("model", MODELS)
def test_model_run_with_a_decoding_sweep_is_deterministic_and_resumes_without_the_model(
    model: ModelSpec, cli: Any, tmp_path: Path
) -> None:
    data = require("asset", "asset_test.jsonl")
    args = [
        "run",
        "--tasks",
        "asset-test",
        "--model",
        model.label,
        "--device",
        model.device,
        "--limit",
        "4",
        "--task-args",
        "n_samples=3,max_new_tokens=24,decoding=ancestral;top_p=0.9",
        "--data-dir",
        str(data),
    ]
    first = cli(*args, "--output-dir", str(tmp_path / "a"))
    assert "asset-test@top_p=0.9" in first.stdout
    results = json.loads((tmp_path / "a" / slug(model) / "results.json").read_text())
    assert set(results["metrics"]) == {"asset-test@ancestral", "asset-test@top_p=0.9"}
    for task in results["metrics"]:
        metrics = results["metrics"][task]
        for prefix in PROBE_PREFIXES:
            for suffix in ("w1_mh", "w1_ch", "dmu_mh", "dmu_ch", "control_w1", "paper_w1_mh"):
                assert f"{prefix}_{suffix}" in metrics, (task, prefix, suffix)
        summary = results["responses"][task]
        assert summary["n_samples"] == 12
        assert sum(summary["finish_reasons"].values()) == 12
        rows = samples(tmp_path / "a", slug(model), task)
        assert len(rows[0]["response"]["texts"]) == 3
        assert len(rows[0]["metrics"]["cosine_distances"]["C"]) == 30
    assert results["configs"]["asset-test@top_p=0.9"]["params"]["decoding"] == ["top_p=0.9"]

    # The same command again: identical results from the store, no model loaded.
    again = run(
        RunOptions(
            tasks=["asset-test"],
            model=model,
            task_args={"n_samples": 3, "max_new_tokens": 24, "decoding": "ancestral;top_p=0.9"},
            limit=4,
            output_dir=tmp_path / "a",
            data_dir=str(data),
        )
    )
    assert "model_load_seconds" not in again["timing"]
    first_results = json.loads(source_of(tmp_path / "a" / slug(model), "asset-test@ancestral").read_text())
    assert strip_volatile(json.loads(json.dumps(again))) == strip_volatile(first_results)

    # A fresh directory reproduces the samples exactly (seeded per task variant and instance). The mock's answers
    # depend on the request alone, so a shorter run reproduces the first instances (and scores fewer); a real
    # model's batched numerics may depend on the block of instances, so it runs the same command.
    shorter = args[: args.index("--limit") + 1] + ["2"] + args[args.index("--limit") + 2 :]
    cli(*(shorter if model.kind == "mock" else args), "--output-dir", str(tmp_path / "b"))
    for task in results["metrics"]:
        texts_b = [r["response"]["texts"] for r in samples(tmp_path / "b", slug(model), task)]
        texts_a = [r["response"]["texts"] for r in samples(tmp_path / "a", slug(model), task)][: len(texts_b)]
        assert texts_a == texts_b and len(texts_b) == (2 if model.kind == "mock" else 4)
    # Human metrics do not depend on the model run or the decoding setting.
    human = human_only("asset-test", data, tmp_path / "h", limit=4)
    for task in results["metrics"]:
        for name in ("unigram_h_mean", "cosine_control_w1", "pos_bigram_paper_control_w1"):
            # Equal up to the last bits: the human-only run embeds its texts in other batches (float32 kernels).
            got, want = results["metrics"][task][name], human["metrics"]["asset-test"][name]
            assert value_differences({name: got}, {name: want}) == []


#: Every generation task, on its real data where present (WritingPrompts only exists as a fixture here).
TASK_DATA = [
    ("wmt14-en-de", "wmt14-multiref", "wmt14_en-de_multiref.jsonl", {}),
    ("wmt14-en-fr", "wmt14-multiref", "wmt14_en-fr_multiref.jsonl", {}),
    ("asset-valid", "asset", "asset_valid.jsonl", {}),
    ("asset-test", "asset", "asset_test.jsonl", {}),
    ("dailydialog-pp", "dailydialog-plusplus", "dataset/dev.json", {}),
    ("dailydialog-pp", "dailydialog-plusplus", "dataset/dev.json", {"chat": True}),
    ("writingprompts", None, None, {}),
]


#: The mock runs each task whose request differs from the rest (the ASSET and the other WMT14 task are only other
#: data for the same request; asset-test runs with the mock in the decoding sweep above); SmolLM2 runs them all.
MOCK_TASKS = {"wmt14-en-de", "dailydialog-pp", "writingprompts"}
TASK_MODELS = [
    pytest.param(*task, model.values[0], id=f"{task[0]}{'-chat' if task[3] else ''}-{model.id}", marks=model.marks)
    for model in MODELS
    for task in TASK_DATA
    if model.id == "smollm2" or task[0] in MOCK_TASKS
]


@pytest.mark.parametrize(("task", "folder", "file", "extra", "model"), TASK_MODELS)
def test_each_task_end_to_end(
    task: str, folder: str | None, file: str | None, extra: dict[str, Any], model: ModelSpec, tmp_path: Path
) -> None:
    data = require(folder, file) if folder and file else REPO / "tests" / "fixtures"
    results = run(
        RunOptions(
            tasks=[task],
            model=model,
            task_args={"n_samples": 3, "max_new_tokens": 16, **extra},
            limit=2,
            output_dir=tmp_path,
            data_dir=str(data),
        )
    )
    name = f"{task}@ancestral"
    metrics = results["metrics"][name]
    for prefix in ("unigram", "bigram", "trigram", "cosine"):
        for suffix in ("w1_mh", "w1_ch", "dmu_mh", "dmu_ch"):
            assert f"{prefix}_{suffix}" in metrics, f"{prefix}_{suffix}"
    has_tagger = not task.startswith("wmt14")
    assert ("pos_bigram_w1_mh" in metrics) is has_tagger
    assert ("syntactic" in results["unavailable"].get(name, {})) is not has_tagger
    rows = samples(tmp_path, slug(model), name)
    assert len(rows) == results["n-samples"][name]["effective"]
    for row in rows:
        response = row["response"]
        assert len(response["texts"]) == 3
        assert all(reason in ("eos", "stop", "length") for reason in response["finish_reasons"])
        assert all(1 <= k <= 16 for k in response["n_tokens"])
    if model.kind == "hf":
        assert results["config"]["model_info"]["generation"]
