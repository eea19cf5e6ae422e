"""No finished result is ever lost: runs add files and never overwrite one, two processes never share an output
folder, a full disk stops a run with what is safe, and a damaged response store is refused and repairable.

Runs use the deterministic mock model (fast); the two-process and file-size-limit tests run ``harness`` in
subprocesses (slow tier).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.outputs.run_dir import task_sources
from harness.outputs.store import ResponseStore
from tests.helpers import require_provo

MODEL = "mock:test"
SLUG = "mock__test"


def _run(cli: Any, out: Path, *args: str, check: bool = True) -> Any:
    data = str(require_provo())
    return cli("run", "--model", MODEL, "--data-dir", data, "--output-dir", str(out), *args, check=check)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_two_tasks_into_one_model_folder_keep_both(cli: Any, tmp_path: Path) -> None:
    _run(cli, tmp_path, "--tasks", "provo", "--limit", "3")
    run_dir = tmp_path / SLUG
    first = _files(run_dir)
    _run(cli, tmp_path, "--tasks", "asset-valid", "--limit", "2", "--task-args", "n_samples=3,max_new_tokens=8")
    # The first run's files are untouched; the second added its own.
    after = _files(run_dir)
    assert {k: v for k, v in after.items() if k in first and k != "results.json"} == {
        k: v for k, v in first.items() if k != "results.json"
    }
    invocations = sorted(n for n in after if n.startswith("results_"))
    assert len(invocations) == 2
    merged = json.loads(after["results.json"])
    assert set(merged["metrics"]) == {"provo", "asset-valid@ancestral"}
    assert merged["sources"]["provo"]["results"] == invocations[0]
    assert merged["sources"]["asset-valid@ancestral"]["results"] == invocations[1]
    assert merged["run_config"]["provo"]["limit"] == 3 and merged["run_config"]["asset-valid@ancestral"]["limit"] == 2
    provo = json.loads(after[invocations[0]])
    assert merged["metrics"]["provo"] == provo["metrics"]["provo"]
    # The leaderboard of the model folder's results.json finds both tasks.
    proc = cli("leaderboard", str(run_dir / "results.json"), "-o", str(tmp_path / "board"), "--no-plots")
    assert "2 tasks (provo, asset-valid)" in proc.stdout
    # Running a task again adds a newer result; the older file stays, results.json points at the newer one.
    _run(cli, tmp_path, "--tasks", "provo", "--limit", "3", "--seed", "1")
    again = _files(run_dir)
    assert again[invocations[0]] == after[invocations[0]]
    newest = sorted(n for n in again if n.startswith("results_"))[-1]
    merged = json.loads(again["results.json"])
    assert merged["sources"]["provo"]["results"] == newest and merged["run_config"]["provo"]["random_seed"] == 1
    assert [s.results_path.name for s in task_sources(run_dir)] == [newest, invocations[1]]


@pytest.mark.parametrize("tasks", ["", " , ", ","])
def test_an_empty_task_list_is_an_error_and_changes_nothing(cli: Any, tmp_path: Path, tasks: str) -> None:
    _run(cli, tmp_path, "--tasks", "provo", "--limit", "2")
    before = _files(tmp_path / SLUG)
    proc = _run(cli, tmp_path, "--tasks", tasks, check=False)
    assert proc.returncode == 2
    assert (
        proc.stderr.strip() == "error: --tasks: no task given (expected comma-separated task names or task YAML files)"
    )
    assert _files(tmp_path / SLUG) == before


def test_a_pre_timestamp_run_folder_is_kept_when_a_new_run_is_added(cli: Any, tmp_path: Path) -> None:
    """Folders written before timestamped files (one results.json, samples_<task>.jsonl) are adopted, not lost."""
    _run(cli, tmp_path, "--tasks", "provo", "--limit", "2")
    run_dir = tmp_path / SLUG
    (source,) = task_sources(run_dir)
    legacy = json.loads(source.results_path.read_text())
    for key in ("samples_files", "format_version"):
        legacy.pop(key)
    source.samples_path.rename(run_dir / "samples_provo.jsonl")
    source.results_path.unlink()
    (run_dir / "results.json").write_text(json.dumps(legacy))
    _run(cli, tmp_path, "--tasks", "asset-valid", "--limit", "2", "--task-args", "n_samples=3,max_new_tokens=8")
    merged = json.loads((run_dir / "results.json").read_text())
    assert set(merged["metrics"]) == {"provo", "asset-valid@ancestral"}
    assert merged["sources"]["provo"]["samples"] == "samples_provo.jsonl"
    assert merged["metrics"]["provo"] == legacy["metrics"]["provo"]


def test_a_full_disk_while_writing_results_keeps_the_responses(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(cli, tmp_path / "clean", "--tasks", "provo", "--limit", "3")
    import harness.files

    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m:
        m.setattr(harness.files.tempfile, "mkstemp", full)
        proc = _run(cli, tmp_path, "--tasks", "provo", "--limit", "3", check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "cannot write (No space left on device)" in proc.stderr
    assert f"the model's responses are safe in {tmp_path / SLUG / 'responses'}" in proc.stderr
    (store,) = (tmp_path / SLUG / "responses").glob("provo-*.jsonl")
    assert sum(1 for line in store.read_text().splitlines() if '"id"' in line) == 3
    # Space again: the same command writes the results from the store, equal to a run that never failed.
    _run(cli, tmp_path, "--tasks", "provo", "--limit", "3")
    clean = json.loads((tmp_path / "clean" / SLUG / "results.json").read_text())
    again = json.loads((tmp_path / SLUG / "results.json").read_text())
    assert again["metrics"] == clean["metrics"]


def _store(tmp_path: Path, cli: Any) -> Path:
    _run(cli, tmp_path, "--tasks", "provo", "--limit", "3")
    (store,) = (tmp_path / SLUG / "responses").glob("provo-*.jsonl")
    return store


def test_a_store_without_its_header_is_refused_then_repaired(cli: Any, tmp_path: Path) -> None:
    store = _store(tmp_path, cli)
    lines = store.read_text().splitlines(keepends=True)
    assert '"fingerprint"' in lines[0]
    store.write_text("".join(lines[1:]))
    proc = _run(cli, tmp_path, "--tasks", "provo", "--limit", "3", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"error: {store}: line 1: no header line (the run fingerprint that ties the records to a configuration); "
        f"`harness store repair {store}` fixes it"
    )
    check = cli("store", "check", str(tmp_path / SLUG), check=False)
    assert (
        check.returncode == 2
        and "no header line" in check.stdout
        and "header restored from the file name" in check.stdout
    )
    repaired = cli("store", "repair", str(store))
    assert "repaired:" in repaired.stdout and "3 instances kept" in repaired.stdout
    fingerprint = store.name.rsplit("-", 1)[1].removesuffix(".jsonl")
    assert json.loads(store.read_text().splitlines()[0])["fingerprint"] == fingerprint
    assert cli("store", "check", str(store)).stdout.startswith("ok:")
    _run(cli, tmp_path, "--tasks", "provo", "--limit", "3")


def test_conflicting_duplicates_are_refused_identical_ones_read_as_one(cli: Any, tmp_path: Path) -> None:
    store = _store(tmp_path, cli)
    lines = store.read_text().splitlines(keepends=True)
    record = json.loads(lines[-1])
    with store.open("a") as f:
        f.write(lines[-1])  # the same response twice: harmless
    assert len(ResponseStore(store, store.name.rsplit("-", 1)[1][:16], {}).records) == 3
    assert "1 identical duplicate records" in cli("store", "check", str(store)).stdout
    record["response"]["counts"] = {"other": 1}
    with store.open("a") as f:
        f.write(json.dumps(record) + "\n")
    proc = _run(cli, tmp_path, "--tasks", "provo", "--limit", "3", check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    n = len(lines) + 2
    assert (
        f"{store}: line {n}: instance {record['id']} again, with another response than line {len(lines)}" in proc.stderr
    )
    repaired = cli("store", "repair", str(store))
    assert "1 conflicting records moved to" in repaired.stdout
    rejected = store.with_name(store.name + ".rejected.jsonl")
    assert json.loads(rejected.read_text())["response"]["counts"] == {"other": 1}
    assert [json.loads(line) for line in store.read_text().splitlines()] == [json.loads(line) for line in lines]
    assert len(list(store.parent.glob("*.bak-*"))) == 1


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"id": "x", "seed": 1}', "record without field 'response'"),
        ('{"seed": 1, "response": {}}', "record without field 'id'"),
        ("{not json", "not JSON: {not json"),
    ],
)
def test_malformed_store_records_are_refused_and_not_repaired(
    cli: Any, tmp_path: Path, line: str, message: str
) -> None:
    store = _store(tmp_path, cli)
    with store.open("a") as f:
        f.write(line + "\n")
    before = store.read_bytes()
    n = len(before.decode().splitlines())
    proc = _run(cli, tmp_path, "--tasks", "provo", "--limit", "3", check=False)
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: {store}: line {n}: {message}"
    proc = cli("store", "repair", str(store), check=False)
    assert proc.returncode == 2 and "cannot be repaired without guessing" in proc.stderr
    assert store.read_bytes() == before


def _harness(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "HARNESS_NO_PROGRESS": "1"}
    cmd = [sys.executable, "-m", "harness", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kwargs)


@pytest.mark.slow
def test_a_second_process_on_the_same_output_folder_refuses(tmp_path: Path) -> None:
    data = str(require_provo())
    args = ["run", "--tasks", "provo", "--limit", "24", "--model", MODEL, "--data-dir", data]
    args += ["--output-dir", str(tmp_path), "--model-args", "latency=0.5"]
    first = _harness(*args)
    lock = tmp_path / SLUG / ".harness.lock"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (lock.is_file() and lock.read_text().strip()):
        time.sleep(0.1)
    assert json.loads(lock.read_text())["pid"] == first.pid
    second = _harness(*args)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 2
    assert err.strip().splitlines() == [
        f"error: {tmp_path / SLUG}: in use by another harness process (pid {first.pid}, since "
        + err.split(", since ", 1)[1].strip()
    ]
    assert "; wait for it to finish or use another --output-dir" in err
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    (store,) = (tmp_path / SLUG / "responses").glob("provo-*.jsonl")
    ids = [json.loads(line)["id"] for line in store.read_text().splitlines() if '"id"' in line]
    assert len(ids) == len(set(ids)) == 24
    assert sum(1 for line in store.read_text().splitlines() if '"model_info"' in line) == 1
    # Once the first has finished, the same command runs (from the store, without asking the model again).
    third = _harness(*args)
    out, err = third.communicate(timeout=120)
    assert third.returncode == 0, err
    assert store.read_text().count('"id"') == 24


@pytest.mark.slow
def test_a_file_size_limit_while_writing_the_store_stops_with_what_is_safe(tmp_path: Path) -> None:
    data = str(require_provo())
    args = ["run", "--tasks", "provo", "--limit", "40", "--model", MODEL, "--data-dir", data]
    limited = _harness(*args, "--output-dir", str(tmp_path / "limited"), preexec_fn=_limit_file_size)
    out, err = limited.communicate(timeout=120)
    assert limited.returncode == 2, err
    assert len(err.strip().splitlines()) == 1 and "cannot write (File too large)" in err
    assert "responses stored before are safe" in err and "run the same command again to resume" in err
    # Without the limit the same command resumes and ends with the results of a run that never failed.
    resumed = _harness(*args, "--output-dir", str(tmp_path / "limited"))
    assert resumed.communicate(timeout=120) and resumed.returncode == 0
    clean = _harness(*args, "--output-dir", str(tmp_path / "clean"))
    assert clean.communicate(timeout=120) and clean.returncode == 0
    after = json.loads((tmp_path / "limited" / SLUG / "results.json").read_text())
    expected = json.loads((tmp_path / "clean" / SLUG / "results.json").read_text())
    assert after["metrics"] == expected["metrics"]


def _limit_file_size() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (32 * 1024, 32 * 1024))
