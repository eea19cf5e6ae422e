"""``harness.exports``: finished runs exported to lm-evaluation-harness's output layout and to inspect_ai eval logs,
read back with those tools' own functions (``lm_eval.utils``, ``lm_eval.result_schema``, ``datasets`` as lm-eval
loads its files; ``inspect_ai.log.read_eval_log`` and ``list_eval_logs``), never with hand-written readers.

The runs are the mock model's, a few instances each, made in-process once for the module: Provo (``sample_words``)
with the pragmatics multiple-choice task (``multiple_choice``), ASSET with a two-decoder sweep (``generate``, task
names with ``@``), and the human-only reference of all three. Exported values must equal the run's own: every
aggregated metric, every per-instance value, the instance count, the hashes lm-eval computes."""

from __future__ import annotations

import glob
import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.exports import FORMATS, export_run
from harness.exports.common import flat_values, is_scalar
from tests.conftest import run_main
from tests.helpers import shared_data_dir

lm_eval_utils = pytest.importorskip("lm_eval.utils", reason="lm-eval is in the test extra (.[test])")
inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect-ai is in the test extra (.[test])")

SWEEP = "n_samples=3,max_new_tokens=8,decoding=ancestral;top_p=0.9"
#: lm-eval results keys an export leaves out: groups (the harness has none), samples (lm-eval keeps them in the
#: samples files too), and the tokenizer's details.
NOT_EXPORTED = {"groups", "samples", "tokenizer_pad_token", "tokenizer_eos_token", "tokenizer_bos_token"}
NOT_EXPORTED |= {"eot_token_id", "max_length"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Run folders: ``mock`` (provo, pragmatics-mcq, and the ASSET sweep: two invocations into one folder) and
    ``human`` (all three tasks, human-only)."""
    data = shared_data_dir()
    for needed in ("provo", "asset", "pragmatics-mcq"):
        if not (data / needed).is_dir():
            pytest.skip(f"{needed} data not found under {data}")
    out = tmp_path_factory.mktemp("export-runs")
    common = ["--data-dir", str(data), "--output-dir", str(out)]
    model = ["--model", "mock:a"]
    run_main("run", "--tasks", "provo,pragmatics-mcq", *model, "--limit", "3", *common)
    run_main("run", "--tasks", "asset-valid", *model, "--limit", "2", "--task-args", SWEEP, *common)
    run_main("run", "--tasks", "provo,pragmatics-mcq,asset-valid", "--human-only", "--limit", "2", *common)
    return {"mock": out / "mock__a", "human": out / "human"}


def read_invocations(run_dir: Path) -> Iterator[tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]]:
    """Each results file of a run folder with its tasks' samples, found by a glob: ``results_<date>.json`` with
    ``samples_<task>_<date>.jsonl``, or the layout before timestamps (``results.json``, ``samples_<task>.jsonl``)."""
    stamped = sorted(run_dir.glob("results_*.json"))
    for path in stamped or [run_dir / "results.json"]:
        results = json.loads(path.read_text())
        stamp = path.stem.removeprefix("results_") if stamped else None
        samples = {}
        for task in results["configs"]:
            name = f"samples_{glob.escape(task)}_{stamp}.jsonl" if stamp else f"samples_{glob.escape(task)}.jsonl"
            (found,) = run_dir.glob(name)
            samples[task] = [json.loads(line) for line in found.read_text().splitlines() if line.strip()]
        yield results, samples


def same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN (a metric a run could not compute)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _exported(runs: dict[str, Path], which: str, fmt: str, out: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    invocations = list(read_invocations(runs[which]))
    for results, samples in invocations:
        export_run(results, samples, fmt, out)
    return invocations


# ------------------------------------------------------------------------------------------------------- lm-eval


def _read_lm_eval_dir(model_dir: Path) -> tuple[str, list[str], list[str]]:
    """lm-eval's own way of finding a model folder's files (as its zeno_visualize script and EvaluationTracker's
    metadata card do): the latest results file, and every samples file."""
    files = [p.as_posix() for p in model_dir.iterdir() if p.is_file()]
    results_files = lm_eval_utils.get_results_filenames(files)
    sample_files = lm_eval_utils.get_sample_results_filenames(files)
    return lm_eval_utils.get_latest_filename(results_files), results_files, sample_files


@pytest.mark.parametrize("which", ["mock", "human"])
def test_lm_eval_export_reads_back_with_lm_eval(runs: dict[str, Path], which: str, tmp_path: Path) -> None:
    from lm_eval.result_schema import EvalResults, SampleResult

    hash_string = lm_eval_utils.hash_string
    invocations = _exported(runs, which, "lm-eval", tmp_path)
    # One folder, named as lm-eval names it and as the harness named the run's.
    (model_dir,) = tmp_path.iterdir()
    assert model_dir.name == runs[which].name
    latest, results_files, sample_files = _read_lm_eval_dir(model_dir)
    assert len(results_files) == len(invocations)
    # (lm-eval's get_file_datetime strips ".jsonl" only: a results file's datetime keeps its ".json".)
    stamps = sorted(lm_eval_utils.get_file_datetime(Path(f).name).removesuffix(".json") for f in results_files)
    assert stamps == sorted(p.stem.removeprefix("results_") for p in runs[which].glob("results_*.json"))
    assert lm_eval_utils.get_file_datetime(Path(latest).name) == f"{stamps[-1]}.json"
    tasks_in_files = {lm_eval_utils.get_file_task_name(Path(f).name): f for f in sample_files}
    assert set(tasks_in_files) == {task for _, samples in invocations for task in samples}

    for results, samples in invocations:
        stamp = results["samples_files"][next(iter(samples))].removesuffix(".jsonl").rsplit("_", 1)[1]
        exported = json.loads((model_dir / f"results_{stamp}.json").read_text())
        assert set(EvalResults.__annotations__) - set(exported) <= NOT_EXPORTED
        assert exported["model_name_sanitized"] == lm_eval_utils.sanitize_model_name(exported["model_name"])
        assert exported["git_hash"] == results["git_hash"]
        table = lm_eval_utils.make_table(exported)
        for task, records in samples.items():
            # Aggregated metrics: the run's, under lm-eval's "<metric>,none" keys; counts and directions too.
            entry = exported["results"][task]
            assert entry["name"] == task and entry["sample_len"] == len(records)
            for name, metric in results["metrics"][task].items():
                assert same(entry[f"{name},none"], metric["value"]), (task, name)
                stderr = metric["stderr"] if metric["stderr"] is not None else "N/A"
                assert same(entry[f"{name}_stderr,none"], stderr), (task, name)
            assert exported["n-samples"][task] == results["n-samples"][task]
            assert exported["n-samples"][task]["effective"] == len(records)
            assert exported["higher_is_better"][task] == results["higher_is_better"][task]
            assert exported["versions"][task] == results["versions"][task]
            assert f"|{task}" in table.replace(" ", "")
            # Samples, found through lm-eval's own file-name functions.
            found = tasks_in_files[task]
            assert lm_eval_utils.get_file_datetime(Path(found).name).removesuffix(".jsonl") == stamp
            lines = [json.loads(line) for line in Path(found).read_text().splitlines()]
            assert len(lines) == len(records)
            for sample, record in zip(lines, records, strict=True):
                assert set(SampleResult.__annotations__) <= set(sample)
                assert sample["doc_id"] == record["doc_id"] and sample["doc"] == record["doc"]
                values = flat_values(record["metrics"])
                assert sample["metrics"] == list(values)
                assert all(same(sample[k], v) for k, v in values.items())
                # lm-eval's hashes: the run's own where it has them, and lm-eval's hash_string of the inputs.
                assert sample["doc_hash"] == record["doc_hash"]
                prompt = sample["arguments"]["gen_args_0"]["arg_0"] if sample["arguments"] else ""
                assert sample["prompt_hash"] == hash_string(prompt)
                assert sample["prompt_hash"] == record.get("prompt_hash", hash_string(""))
                assert sample["target_hash"] == hash_string(sample["target"])
                _check_responses(results["configs"][task]["request"], sample, record)
            assert exported["task_hashes"][task] == hash_string(
                "".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in lines)
            )


def _check_responses(kind: str, sample: dict[str, Any], record: dict[str, Any]) -> None:
    """``resps``/``filtered_resps`` hold the response as the module docstring of ``harness.exports.lm_eval`` says."""
    response = record.get("response")
    if response is None:  # human-only: no request was sent
        assert sample["arguments"] == {} and sample["resps"] == [] and sample["filtered_resps"] == []
        assert sample["prompt_hash"] == lm_eval_utils.hash_string("")
        return
    if kind == "generate":
        assert sample["resps"] == [response["texts"]] == sample["filtered_resps"]
        kwargs = sample["arguments"]["gen_args_0"]["arg_1"]
        assert kwargs["until"] == record["arguments"]["stop"] and kwargs["repeats"] == len(response["texts"])
        assert sample["target"] == "" and sample["arguments"]["gen_args_0"]["arg_0"] == record["arguments"]["prompt"]
    elif kind == "sample_words":
        (words,) = sample["resps"]
        assert Counter(words) == Counter(response["counts"]) and sample["filtered_resps"] == [words]
        assert sum(response["counts"].values()) + sum(response["rejected"].values()) == response["n_requested"]
        assert sample["arguments"]["gen_args_0"]["arg_0"] == record["arguments"]["context"]
        assert sample["target"] == record["target"]
    else:
        options = record["doc"]["options"]
        orders = record["metrics"]["string.prob"]["scores"]
        assert [a["arg_1"] for a in sample["arguments"].values()] == [f" {o}" for o in options]
        assert len(sample["resps"]) == len(sample["filtered_resps"]) == len(options)
        for i, (per_order, filtered) in enumerate(zip(sample["resps"], sample["filtered_resps"], strict=True)):
            assert [float(r[0]) for r in per_order] == [order[i] for order in orders]
            assert float(filtered[0]) == pytest.approx(sum(o[i] for o in orders) / len(orders), abs=1e-12)
        assert sample["target"] == str(record["human"]["target"])


def test_lm_eval_files_load_with_datasets_as_lm_eval_loads_them(runs: dict[str, Path], tmp_path: Path) -> None:
    """lm-eval stringifies responses so that ``datasets`` can load its files (its metadata card loads the latest
    results file that way); the exported results and samples load too."""
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "out"
    _exported(runs, "mock", "lm-eval", out)
    latest, _, sample_files = _read_lm_eval_dir(out / "mock__a")
    cache = str(tmp_path / "cache")
    loaded = datasets.load_dataset("json", data_files=latest, split="train", cache_dir=cache)
    assert set(loaded["results"][0]) == set(json.loads(Path(latest).read_text())["results"])
    for path in sample_files:
        rows = datasets.load_dataset("json", data_files=path, split="train", cache_dir=cache)
        assert rows.num_rows == len(Path(path).read_text().splitlines())


# ------------------------------------------------------------------------------------------------------- inspect


@pytest.mark.parametrize("which", ["mock", "human"])
def test_inspect_export_reads_back_with_inspect(runs: dict[str, Path], which: str, tmp_path: Path) -> None:
    invocations = _exported(runs, which, "inspect", tmp_path)
    expected = {task: (results, records) for results, samples in invocations for task, records in samples.items()}
    listed = inspect_log.list_eval_logs(str(tmp_path))
    assert len(listed) == len(expected)
    model = "mock/a" if which == "mock" else "none/none"
    for info in listed:
        header = inspect_log.read_eval_log(info, header_only=True)
        task = header.eval.task
        results, records = expected.pop(task)
        assert info.task_id == header.eval.task_id
        assert header.status == "success" and header.samples is None
        assert header.eval.model == model
        assert header.results is not None and header.results.total_samples == len(records)
        scores = {s.name: s for s in header.results.scores}
        assert set(scores) == set(results["metrics"][task])
        for name, metric in results["metrics"][task].items():
            value = metric["value"] if metric["value"] is not None else math.nan
            assert same(scores[name].metrics["value"].value, value), (task, name)
            if metric["ci"] is not None:
                assert [scores[name].metrics[k].value for k in ("ci_low", "ci_high")] == metric["ci"]
        log = inspect_log.read_eval_log(info.name)
        assert log.samples is not None and len(log.samples) == len(records)
        for sample, record in zip(log.samples, records, strict=True):
            assert sample.id == record["id"] and sample.epoch == 1
            assert sample.scores is not None
            score = sample.scores["harness"]
            values = flat_values(record["metrics"])
            scalars = {k: v for k, v in values.items() if is_scalar(v)}
            assert isinstance(score.value, dict) and score.value.keys() == scalars.keys()
            assert all(same(score.value[k], v) for k, v in scalars.items())
            assert (score.metadata or {}) == {k: v for k, v in values.items() if not is_scalar(v)}
            assert sample.metadata["doc"] == record["doc"]
            _check_sample_io(results["configs"][task]["request"], sample, record)
    assert not expected


def _check_sample_io(kind: str, sample: Any, record: dict[str, Any]) -> None:
    response = record.get("response")
    if response is None:
        assert sample.output.choices == [] and [m.role for m in sample.messages] == ["user"]
        return
    assert [m.role for m in sample.messages] == ["user", "assistant"]
    assert sample.metadata["arguments"] == record["arguments"] and sample.metadata["response"] == response
    if kind == "generate":
        assert sample.input == record["arguments"]["prompt"]
        assert [c.message.text for c in sample.output.choices] == response["texts"]
        assert sample.output.completion == response["texts"][0]
        assert sample.target == record["human"]["references"]
    elif kind == "sample_words":
        assert sample.input == record["arguments"]["context"] and sample.target == record["target"]
        counts = response["counts"]
        assert [c.message.text for c in sample.output.choices] == sorted(counts, key=lambda w: (-counts[w], w))
    else:
        options = record["doc"]["options"]
        assert sample.choices == options and sample.target == "ABCDE"[record["human"]["target"]]
        p = record["metrics"]["string.prob"]["p"]
        assert sample.output.completion == options[p.index(max(p))]


# ------------------------------------------------------------------------------------------- both, and the API


def test_exports_of_a_run_written_before_arguments_and_hashes(runs: dict[str, Path], tmp_path: Path) -> None:
    """Samples without ``arguments``/hashes and results without ``samples_files``/``git_hash`` (the layout before
    timestamped files): lm-eval's hashes are computed as lm-eval computes them; the file stamp is the run's date."""
    hash_string = lm_eval_utils.hash_string
    results, samples = next(read_invocations(runs["mock"]))
    old = {k: v for k, v in results.items() if k not in ("samples_files", "git_hash", "format_version")}
    dropped = ("arguments", "doc_hash", "prompt_hash", "target_hash")
    old_samples = {t: [{k: v for k, v in r.items() if k not in dropped} for r in rs] for t, rs in samples.items()}
    written = export_run(old, old_samples, "lm-eval", tmp_path / "lm")
    stamp = old["date"].removesuffix("+00:00").replace(":", "-")
    assert written[0].name == f"results_{stamp}.json"
    for path in written[1:]:
        task = lm_eval_utils.get_file_task_name(path.name)
        for line, record in zip(path.read_text().splitlines(), old_samples[task], strict=True):
            sample = json.loads(line)
            doc = json.dumps(
                record["doc"],
                indent=2,
                default=lm_eval_utils.handle_non_serializable,
                ensure_ascii=False,
                sort_keys=True,
            )
            assert sample["doc_hash"] == hash_string(doc)
            assert sample["prompt_hash"] == hash_string(sample["arguments"]["gen_args_0"]["arg_0"]) == hash_string("")
    (log,) = [p for p in export_run(old, {"provo": old_samples["provo"]}, "inspect", tmp_path / "in")]
    read = inspect_log.read_eval_log(str(log))
    assert read.eval.task == "provo" and read.eval.revision is None and read.samples is not None


def test_exports_are_deterministic_and_only_of_the_tasks_given(runs: dict[str, Path], tmp_path: Path) -> None:
    results, samples = next(read_invocations(runs["mock"]))
    only = {"provo": samples["provo"]}
    for fmt in FORMATS:
        first = export_run(results, only, fmt, tmp_path / "a")
        second = export_run(results, only, fmt, tmp_path / "b")
        assert [p.relative_to(tmp_path / "a") for p in first] == [p.relative_to(tmp_path / "b") for p in second]
        assert all(a.read_bytes() == b.read_bytes() for a, b in zip(first, second, strict=True))
    lm = json.loads(next(p for p in (tmp_path / "a" / "mock__a").glob("results_*.json")).read_text())
    assert list(lm["results"]) == ["provo"]


def test_bad_input_is_one_line_error(runs: dict[str, Path], tmp_path: Path) -> None:
    results, samples = next(read_invocations(runs["mock"]))
    with pytest.raises(HarnessError, match="unknown.*lm-eval, inspect"):
        export_run(results, samples, "helm", tmp_path)
    with pytest.raises(HarnessError, match="'asset-test'.*no such task"):
        export_run(results, {"asset-test": samples["provo"]}, "inspect", tmp_path)
    with pytest.raises(HarnessError, match="no task's samples"):
        export_run(results, {}, "lm-eval", tmp_path)
    assert not list(tmp_path.iterdir())


def test_harness_export_command(runs: dict[str, Path], tmp_path: Path) -> None:
    """``harness export RUN --format ... -o DIR`` on a run folder exports every task's latest result."""
    for fmt in FORMATS:
        proc = run_main("export", str(runs["mock"]), "--format", fmt, "-o", str(tmp_path / fmt))
        assert "wrote" in proc.stdout
    listed = inspect_log.list_eval_logs(str(tmp_path / "inspect"))
    assert sorted(i.task for i in listed) == sorted(
        ["provo", "pragmatics-mcq", "asset-valid@ancestral", "asset-valid@top-p=0.9"]
    )
    _, results_files, sample_files = _read_lm_eval_dir(tmp_path / "lm-eval" / "mock__a")
    assert len(results_files) == 2 and len(sample_files) == 4
