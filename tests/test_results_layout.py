"""What a run writes besides the numbers: lm-eval's provenance keys, the samples' exact requests and hashes, the
short headline table, and the command-line conveniences of ``harness score``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from harness.outputs.results import FORMAT_VERSION, format_table
from tests.helpers import require_provo, samples_of, source_of

SLUG = "mock__test"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _run(cli: Any, out: Path, *args: str) -> Any:
    data = str(require_provo())
    return cli("run", "--model", "mock:test", "--data-dir", data, "--output-dir", str(out), *args)


def test_results_carry_provenance_and_samples_carry_the_request_and_lm_eval_hashes(cli: Any, tmp_path: Path) -> None:
    _run(cli, tmp_path, "--tasks", "provo", "--limit", "2", "--task-args", "n_samples=7", "--seed", "5")
    run_dir = tmp_path / SLUG
    results = json.loads(source_of(run_dir, "provo").read_text())
    assert results["format_version"] == FORMAT_VERSION == 2
    assert results["git_hash"] is None or len(results["git_hash"]) >= 7
    assert results["config"]["data_dir"] == str(require_provo().resolve())
    assert results["samples_files"] == {"provo": samples_of(run_dir, "provo").name}
    first = json.loads(samples_of(run_dir, "provo").read_text().splitlines()[0])
    # Checked by hand: the first Provo context is "There", its target "are".
    assert first["doc"] == {"context": "There"} and first["target"] == "are"
    assert first["doc_hash"] == _sha('{\n  "context": "There"\n}')
    assert first["target_hash"] == _sha("are")
    assert first["prompt_hash"] == _sha("There")
    assert first["arguments"] == {
        "context": "There",
        "n": 7,
        "seed": first["seed"],
        "temperature": 1.0,
        "mode": "exact",
        "segmenter": "spaces",
        "max_new_tokens": 32,
        "instance_id": "1-2",
    }


def test_human_only_samples_have_doc_hashes_but_no_request(cli: Any, tmp_path: Path) -> None:
    data = str(require_provo())
    cli("run", "--tasks", "provo", "--human-only", "--limit", "1", "--data-dir", data, "--output-dir", str(tmp_path))
    (record,) = [json.loads(line) for line in samples_of(tmp_path / "human", "provo").read_text().splitlines()]
    assert record["doc_hash"] == _sha('{\n  "context": "There"\n}')
    assert "arguments" not in record and "prompt_hash" not in record


def test_the_short_table_shows_headline_metrics_beside_their_human_controls(cli: Any, tmp_path: Path) -> None:
    proc = _run(cli, tmp_path, "--tasks", "provo", "--limit", "3")
    results = json.loads((tmp_path / SLUG / "results.json").read_text())
    assert results["headline"]["provo"] == [
        "tvd",
        "tvd_human_halves",
        "ece_model_corpus",
        "ece_human_corpus",
        "ece_oracle_corpus",
        "top1_model",
        "top1_human_majority",
        "entropy_model",
        "entropy_human",
    ]
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["task", "metric", "value", "95%", "CI", "human", "control", "better"]
    rows = [line.split()[1] for line in lines[2:] if line.startswith("provo ")]
    # Controls shown beside their metric get no row of their own.
    assert rows == ["tvd", "ece_model_corpus", "ece_human_corpus", "top1_model", "entropy_model"]
    tvd = results["metrics"]["provo"]["tvd"]["value"]
    control = results["metrics"]["provo"]["tvd_human_halves"]["value"]
    tvd_row = next(line for line in lines if line.startswith("provo ") and line.split()[1] == "tvd")
    assert f"{tvd:.4f}" in tvd_row and f"{control:.4f} (tvd_human_halves)" in tvd_row and tvd_row.endswith("lower")
    hidden = len(results["metrics"]["provo"]) - len(rows) - 4
    assert f"{hidden} more metrics are in results.json (--full-table prints them)" in proc.stdout
    full = format_table(results, full=True).splitlines()
    notes = sum(len(n) for scorers in results.get("notes", {}).values() for n in scorers.values())
    assert len(full) == 2 + len(results["metrics"]["provo"]) + notes
    assert [line.split()[1] for line in full[2 : 2 + len(results["metrics"]["provo"])]] == list(
        results["metrics"]["provo"]
    )


def test_score_reads_the_runs_data_folder_and_takes_signed_scorers(cli: Any, tmp_path: Path, monkeypatch: Any) -> None:
    _run(cli, tmp_path, "--tasks", "provo", "--limit", "2")
    monkeypatch.delenv("HARNESS_DATA_DIR", raising=False)
    # No --data-dir and no HARNESS_DATA_DIR: the folder the run recorded; "-top1" as its own argument.
    proc = cli("score", str(tmp_path / SLUG), "--scorers", "-top1", "--output-dir", str(tmp_path / "re"))
    rescored = json.loads((tmp_path / "re" / "results.json").read_text())
    assert "top1_model" not in rescored["metrics"]["provo"] and "tvd" in rescored["metrics"]["provo"]
    assert "wrote " in proc.stdout
    # "+entropy" on a run that has entropy keeps it as recorded: the numbers do not change.
    cli("score", str(tmp_path / SLUG), "--scorers", "+entropy", "--output-dir", str(tmp_path / "same"))
    same = json.loads((tmp_path / "same" / "results.json").read_text())
    original = json.loads((tmp_path / SLUG / "results.json").read_text())
    assert same["metrics"] == original["metrics"]
