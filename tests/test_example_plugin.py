"""A real third-party plugin package, installed with pip, is found through the entry-point group and used.

Slow: pip installs the package and the CLI runs in subprocesses (entry points are read at process start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, require_provo, run_cli, samples_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Install examples/harness-example-plugin into a private directory (not into the test environment's site)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(REPO / "examples" / "harness-example-plugin"),
        ],
        check=True,
        capture_output=True,
    )
    return target


def test_plugin_is_listed(plugin_site: Path) -> None:
    env = {"PYTHONPATH": str(plugin_site)}
    plugins = json.loads(run_cli("plugins", env=env).stdout)
    example = next(p for p in plugins if p["name"] == "example")
    assert example["distribution"] == "harness-example-plugin 0.1.0"
    assert example["hooks"] == ["register_models", "register_request_kinds", "register_scorers", "register_tasks"]
    assert "guess_word\texample" in run_cli("ls", "kinds", env=env).stdout
    tasks = run_cli("ls", "tasks", env=env).stdout
    assert "provo-openers\texample" in tasks
    assert f"example-cloze\texample\t{plugin_site / 'harness_example_plugin' / 'example-cloze.yaml'}" in tasks
    assert "context-unigram\texample" in run_cli("ls", "models", env=env).stdout
    assert "support_coverage\texample" in run_cli("ls", "scorers", env=env).stdout
    # Without the plugin on the path, none of it is there.
    assert "provo-openers" not in run_cli("ls", "tasks").stdout


def test_plugin_task_scorer_and_adapter_used_by_run(plugin_site: Path, tmp_path: Path) -> None:
    data = require_provo()
    env = {"PYTHONPATH": str(plugin_site)}
    args = ["run", "--tasks", "provo-openers", "--model", "context-unigram:baseline", "--data-dir", str(data)]
    proc = run_cli(*args, "--output-dir", str(tmp_path), env=env)
    assert "support_coverage" in proc.stdout
    results = json.loads((tmp_path / "context-unigram__baseline" / "results.json").read_text())
    # 55 passages, word positions 2..6, less text 55's missing word 3.
    assert results["n-samples"]["provo-openers"] == {"original": 274, "effective": 274}
    metrics = results["metrics"]["provo-openers"]
    assert set(metrics) >= {"tvd", "support_coverage"}
    assert 0.0 < metrics["support_coverage"]["value"] < 0.5
    assert 0.5 < metrics["tvd"]["value"] <= 1.0
    samples = [json.loads(line) for line in samples_of(tmp_path / "context-unigram__baseline", "provo-openers").open()]
    first = samples[0]
    assert first["id"] == "1-2" and first["doc"] == {"context": "There"}
    # The only word in the context is "there", so every sample is "there".
    assert first["response"]["counts"] == {"there": 200}


def test_plugin_request_kind_is_used_by_run(plugin_site: Path, tmp_path: Path) -> None:
    """The plugin's own request kind, ``guess_word``, goes through the runner, the store and scoring unchanged."""
    data = require_provo()
    env = {"PYTHONPATH": str(plugin_site)}
    args = ["run", "--tasks", "provo-guess", "--model", "context-unigram:baseline", "--data-dir", str(data)]
    run_cli(*args, "--limit", "20", "--output-dir", str(tmp_path), env=env)
    run_dir = tmp_path / "context-unigram__baseline"
    results = json.loads((run_dir / "results.json").read_text())
    assert results["configs"]["provo-guess"]["params"] == {"normalise": True}
    assert results["responses"]["provo-guess"] == {"guesses": 20}
    samples = [json.loads(line) for line in samples_of(run_dir, "provo-guess").open()]
    # "There" -> the only context word; "There are" -> both once, the latest wins.
    assert samples[0]["response"] == {"word": "there"}
    assert samples[1]["doc"] == {"context": "There are"} and samples[1]["response"] == {"word": "are"}
    # guess_share by hand: the share of people whose guess was the model's word.
    shares = []
    for sample in samples:
        counts = sample["human"]["counts"]
        shares.append(counts.get(sample["response"]["word"], 0) / sum(counts.values()))
        assert sample["metrics"]["guess_share"] == shares[-1]
    assert results["metrics"]["provo-guess"]["guess_share"]["value"] == pytest.approx(sum(shares) / len(shares))
    # Re-scoring reads the stored guess_word responses back through the kind.
    rescored = run_cli("score", str(run_dir), "--data-dir", str(data), env=env)
    assert "guess_share" in rescored.stdout


def test_plugin_task_reads_the_data_the_plugin_ships_from_anywhere(plugin_site: Path, tmp_path: Path) -> None:
    """``example-cloze`` reads the package's own data through ``task:`` and ``package:`` paths: run from another
    working directory with a data root that holds none of it, after ``pip install``, it finds its files where pip
    put them (``harness validate``, ``run`` and ``score`` alike)."""
    elsewhere, empty = tmp_path / "elsewhere", tmp_path / "empty-data"
    elsewhere.mkdir()
    empty.mkdir()
    env = {**os.environ, "PYTHONPATH": str(plugin_site), "HARNESS_NO_PROGRESS": "1"}
    env.pop("HARNESS_DATA_DIR", None)

    def harness(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "harness", *args], cwd=elsewhere, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, f"harness {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    shipped = plugin_site / "harness_example_plugin" / "data"
    checked = harness("validate", "example-cloze", "--data-dir", str(empty))
    assert f"data: the first 50 rows of {shipped / 'cloze_guesses.csv'} make 5 instances" in checked.stdout
    harness("run", "--tasks", "example-cloze", "--model", "mock:test", "--data-dir", str(empty), "--output-dir", "runs")
    run_dir = elsewhere / "runs" / "mock__test"
    results = json.loads((run_dir / "results.json").read_text())
    assert results["n-samples"]["example-cloze"] == {"original": 5, "effective": 5}
    assert set(results["metrics"]["example-cloze"]) >= {"tvd", "top1_human_majority", "support_coverage"}
    source = results["data_sources"]["example-cloze"]
    assert source["files"] == [str(shipped / "cloze_guesses.csv")]
    assert source["join"]["files"] == [str(shipped / "cloze_items.csv")]
    assert source["normalise"]["replacements"] == {"file": str(shipped / "spellings.csv"), "n": 1}
    samples = [json.loads(line) for line in samples_of(run_dir, "example-cloze").open()]
    # Item 3: "galss" is merged into "glass" by the shipped spellings file; item 2's "?" is no answer.
    assert samples[2]["doc"]["context"] == "He poured the cold milk into a tall"
    assert samples[2]["human"]["counts"] == {"glass": 11, "cup": 2, "jug": 1}
    assert sum(samples[1]["human"]["counts"].values()) == 15
    # Re-scoring reads the task's configuration from results.json: its task: paths are the registered task's.
    rescored = harness("score", str(run_dir), "--data-dir", str(empty))
    assert "support_coverage" in rescored.stdout
