"""End to end on the real Provo data: the human-only reference, a run of the mock model (complete, deterministic, not
redone), missing data as one clear line, all in-process (fast); the console script in a subprocess, a real SmolLM2 run
(deterministic, not redone) and resume after SIGKILL (slow)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.outputs.results import strip_volatile
from tests.helpers import REPO, require_provo, run_cli, samples_of

MODEL = "hf:smollm2-135m"
SLUG = "hf__smollm2-135m"


def read_results(out: Path, slug: str = SLUG) -> dict:
    return json.loads((out / slug / "results.json").read_text())


def read_samples(out: Path, task: str = "provo", slug: str = SLUG) -> list[dict]:
    return [json.loads(line) for line in samples_of(out / slug, task).open()]


def stored_ids(store: Path) -> list[str]:
    """Instance ids in a response store, in the order they were written (a cut-off last line is ignored)."""
    ids = []
    for line in store.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "id" in record:
            ids.append(record["id"])
    return ids


def test_human_only_reference_on_the_whole_data_set(cli: Any, tmp_path: Path) -> None:
    data = require_provo()
    cli("run", "--tasks", "provo", "--human-only", "--data-dir", str(data), "--output-dir", str(tmp_path))
    results = read_results(tmp_path, "human")
    assert results["n-samples"]["provo"] == {"original": 2687, "effective": 2687}
    assert results["config"]["human_only"] is True and results["config"]["model"] == "human"
    metrics = results["metrics"]["provo"]
    for name in ("tvd_human_halves", "ece_human_corpus", "ece_oracle_heldout", "top1_human_guess", "entropy_human"):
        assert name in metrics, name
    assert not any(name.startswith(("tvd_model", "ece_model", "entropy_model")) or name == "tvd" for name in metrics)
    # lm-eval layout
    assert results["results"]["provo"]["alias"] == "provo"
    assert "tvd_human_halves,none" in results["results"]["provo"]
    assert results["task_hashes"]["provo"].startswith("sha256:")
    assert results["versions"]["provo"] == 1
    samples = read_samples(tmp_path, slug="human")
    assert len(samples) == 2687 and "response" not in samples[0]


def test_mock_run_is_complete_and_deterministic(cli: Any, tmp_path: Path) -> None:
    data = require_provo()
    args = ["run", "--tasks", "provo", "--model", "mock:test", "--limit", "4", "--task-args", "n_samples=60"]
    args += ["--data-dir", str(data), "--seed", "3"]
    first = cli(*args, "--output-dir", str(tmp_path / "a"))
    assert f"every task's latest result: {tmp_path / 'a' / 'mock__test'}/results.json)" in first.stdout
    cli(*args, "--output-dir", str(tmp_path / "b"))
    a, b = read_results(tmp_path / "a", "mock__test"), read_results(tmp_path / "b", "mock__test")
    assert strip_volatile(a) == strip_volatile(b)
    assert read_samples(tmp_path / "a", slug="mock__test") == read_samples(tmp_path / "b", slug="mock__test")
    assert "model_load_seconds" in a["timing"]

    assert a["config"]["model"] == "mock" and a["config"]["model_name"] == "test"
    assert a["config"]["random_seed"] == 3
    assert a["configs"]["provo"]["params"]["n_samples"] == 60
    assert a["n-samples"]["provo"] == {"original": 2687, "effective": 4}
    metrics = a["metrics"]["provo"]
    tvd = metrics["tvd"]
    assert tvd["higher_is_better"] is False and 0.0 < tvd["value"] <= 1.0
    assert tvd["ci"][0] <= tvd["value"] <= tvd["ci"][1]
    assert a["responses"]["provo"]["n_requested"] == 240

    samples = read_samples(tmp_path / "a", slug="mock__test")
    assert [s["id"] for s in samples] == ["1-2", "1-3", "1-4", "1-5"]
    first_row = samples[0]
    assert first_row["doc"] == {"context": "There"} and first_row["target"] == "are"
    assert first_row["human"]["counts"]["are"] == 16
    counts = first_row["response"]["counts"]
    assert sum(counts.values()) + sum(first_row["response"]["rejected"].values()) == 60
    assert 0.0 <= first_row["metrics"]["tvd"] <= 1.0

    # A finished run is not redone: the second command finds every response stored and loads no model.
    cli(*args, "--output-dir", str(tmp_path / "a"))
    again = read_results(tmp_path / "a", "mock__test")
    assert "model_load_seconds" not in again["timing"]
    assert strip_volatile(again) == strip_volatile(a)


@pytest.mark.slow
def test_the_console_script_runs_in_a_subprocess(tmp_path: Path) -> None:
    """The installed ``harness`` entry point (and ``python -m harness``): a run, its output, and a one-line error."""
    data = require_provo()
    script = Path(sys.executable).parent / "harness"
    if not script.is_file():
        pytest.skip(f"the console script is not installed beside {sys.executable} (pip install -e .)")
    args = ["run", "--tasks", "provo", "--model", "mock:test", "--limit", "2", "--data-dir", str(data)]
    env = {**os.environ, "HARNESS_NO_PROGRESS": "1"}
    proc = subprocess.run(
        [str(script), *args, "--output-dir", str(tmp_path)], capture_output=True, text=True, env=env, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr
    assert f"every task's latest result: {tmp_path / 'mock__test'}/results.json)" in proc.stdout
    assert read_results(tmp_path, "mock__test")["n-samples"]["provo"]["effective"] == 2
    bad = run_cli("run", "--tasks", "provo", "--model", "mock", "--limit", "1", check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: --model: expected KIND:NAME (e.g. hf:smollm2-135m), got 'mock'"


@pytest.mark.slow
def test_real_model_run_is_complete_and_deterministic(tmp_path: Path) -> None:
    data = require_provo()
    args = [
        "run",
        "--tasks",
        "provo",
        "--model",
        MODEL,
        "--limit",
        "4",
        "--task-args",
        "n_samples=60",
        "--data-dir",
        str(data),
        "--seed",
        "3",
        "--device",
        "cpu",
    ]
    run_cli(*args, "--output-dir", str(tmp_path / "a"))
    run_cli(*args, "--output-dir", str(tmp_path / "b"))
    a, b = read_results(tmp_path / "a"), read_results(tmp_path / "b")
    assert strip_volatile(a) == strip_volatile(b)
    assert read_samples(tmp_path / "a") == read_samples(tmp_path / "b")

    assert a["config"]["model"] == "hf" and a["config"]["model_name"] == "smollm2-135m"
    assert a["config"]["random_seed"] == 3 and a["config"]["device"] == "cpu"
    assert a["configs"]["provo"]["params"]["n_samples"] == 60
    assert a["n-samples"]["provo"] == {"original": 2687, "effective": 4}
    assert {"torch", "transformers", "numpy", "harness"} <= set(a["library_versions"])
    metrics = a["metrics"]["provo"]
    tvd = metrics["tvd"]
    assert tvd["higher_is_better"] is False and 0.0 < tvd["value"] <= 1.0
    assert tvd["ci"][0] <= tvd["value"] <= tvd["ci"][1]
    assert a["responses"]["provo"]["n_requested"] == 240

    samples = read_samples(tmp_path / "a")
    assert [s["id"] for s in samples] == ["1-2", "1-3", "1-4", "1-5"]
    first = samples[0]
    assert first["doc"] == {"context": "There"} and first["target"] == "are"
    assert first["human"]["counts"]["are"] == 16
    counts = first["response"]["counts"]
    assert sum(counts.values()) + sum(first["response"]["rejected"].values()) == 60
    assert all(w == w.lower() for w in counts)
    assert 0.0 <= first["metrics"]["tvd"] <= 1.0

    # A finished run is not redone: the second command found every response stored and loaded no model.
    again = run_cli(*args, "--output-dir", str(tmp_path / "a"))
    assert "model_load_seconds" not in read_results(tmp_path / "a")["timing"], again.stdout


@pytest.mark.slow
def test_resume_after_sigkill_matches_uninterrupted_run(tmp_path: Path) -> None:
    data = require_provo()
    args = [
        "run",
        "--tasks",
        "provo",
        "--model",
        MODEL,
        "--limit",
        "8",
        "--task-args",
        "n_samples=200",
        "--model-args",
        "contexts_per_pass=2",
        "--data-dir",
        str(data),
        "--device",
        "cpu",
    ]
    run_cli(*args, "--output-dir", str(tmp_path / "clean"))

    out = tmp_path / "killed"
    env = {**os.environ, "HARNESS_NO_PROGRESS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *args, "--output-dir", str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    store_dir = out / SLUG / "responses"
    deadline = time.monotonic() + 300
    done = 0
    while time.monotonic() < deadline and proc.poll() is None:
        stores = list(store_dir.glob("provo-*.jsonl")) if store_dir.exists() else []
        done = len(stored_ids(stores[0])) if stores else 0
        if done >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"run ended before it could be killed: {proc.stderr.read() if proc.stderr else ''}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / SLUG / "results.json").exists()
    killed_at = len(stored_ids(next(store_dir.glob("provo-*.jsonl"))))
    assert 2 <= killed_at < 8

    run_cli(*args, "--output-dir", str(out))
    ids = stored_ids(next(store_dir.glob("provo-*.jsonl")))
    assert len(ids) == 8 and len(set(ids)) == 8, "finished instances were redone or lost"
    assert strip_volatile(read_results(out)) == strip_volatile(read_results(tmp_path / "clean"))
    assert read_samples(out) == read_samples(tmp_path / "clean")


def test_missing_data_is_one_clear_line(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    proc = cli(
        "run",
        "--tasks",
        "provo",
        "--human-only",
        "--data-dir",
        str(tmp_path / "nowhere"),
        "--output-dir",
        str(tmp_path / "out"),
        check=False,
    )
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err
    assert str(tmp_path / "nowhere") in err and "HARNESS_DATA_DIR" in err
