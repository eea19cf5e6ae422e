"""``harness run`` with an API model, end to end on real Provo contexts against the real llama.cpp server: a run
through the fault-injecting proxy ends with the same results as a clean run, and a run killed midway resumes by
sending only what is missing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from harness.models import ModelSpec
from harness.run.options import RunOptions
from harness.run.runner import run
from tests.fault_proxy import Fault, FaultProxy
from tests.helpers import REPO, require_provo, samples_of

#: Every test here runs the real llama.cpp server (a subprocess), and one also runs the harness CLI in another.
pytestmark = pytest.mark.slow

TASK_ARGS = {"n_samples": 5, "max_new_tokens": 8}
LIMIT = 3
#: Every call the run makes: the echo probe on load, then one request per sample.
CALLS = 1 + LIMIT * TASK_ARGS["n_samples"]
SLUG = "openai__smollm2"
#: Seconds before a request is abandoned.
TIMEOUT = 15
SECRET = "sk-e2e-secret-never-written-0123456789"


def _args(base_url: str, **extra: str) -> dict[str, str]:
    # Requests wait their turn at the one-at-a-time server, so the timeout leaves room for the queue even on a loaded
    # CI machine (6 s once timed out a healthy request there, which the proxy then counted as an extra "ok"); the
    # injected stall is longer still, so it is the only request that times out.
    return {
        "base_url": base_url,
        "chat": "false",
        "concurrency": "2",
        "timeout": str(TIMEOUT),
        "backoff": "0.05",
        "backoff_max": "0.3",
        "api_key_env": "HARNESS_TEST_KEY",
        **extra,
    }


def _run(out: Path, base_url: str, data: Path, **extra: str) -> dict[str, Any]:
    options = RunOptions(
        tasks=["provo"],
        model=ModelSpec("openai", "smollm2", _args(base_url, **extra)),
        task_args=TASK_ARGS,
        limit=LIMIT,
        output_dir=out,
        data_dir=str(data),
    )
    return run(options)


def _samples(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in samples_of(out / SLUG, "provo").open()]


def _api_records(out: Path) -> list[dict[str, Any]]:
    lines = (out / SLUG / "api-cache" / "smollm2.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if "id" in r]


def _same_results(a: dict[str, Any], b: dict[str, Any]) -> None:
    for key in ("results", "metrics", "responses", "n-samples", "task_hashes"):
        assert a[key] == b[key], key


def test_faults_change_nothing_and_no_sample_is_lost_or_doubled(
    api_server: str, tmp_path: Path, monkeypatch: Any
) -> None:
    data = require_provo()
    monkeypatch.setenv("HARNESS_TEST_KEY", SECRET)
    clean = _run(tmp_path / "clean", api_server, data)
    assert clean["responses"]["provo"]["usage"]["requests"] == LIMIT * TASK_ARGS["n_samples"]
    faults = [
        None,
        Fault("rate_limit", retry_after=0.5),
        Fault("server_error"),
        None,
        Fault("stall", stall_seconds=TIMEOUT + 5),
        Fault("cut"),
        None,
        Fault("rate_limit"),
        Fault("cut"),
        Fault("server_error"),
    ]
    port = urlparse(api_server).port
    assert port is not None
    with FaultProxy(("127.0.0.1", port), faults) as proxy:
        faulty = _run(tmp_path / "faulty", f"{proxy.url}/v1", data)
        outcomes = [entry[3] for entry in proxy.log]
    # The adapter asks /models once (which server is this?), then makes every call; 7 faults were injected.
    assert outcomes.count("ok") == 1 + CALLS and len(outcomes) == 1 + CALLS + 7
    _same_results(clean, faulty)
    assert _samples(tmp_path / "clean") == _samples(tmp_path / "faulty")
    calls = faulty["api_calls"]
    assert calls["sent"] == CALLS and calls["retries"] == 7
    failures = calls["failures"]
    assert failures["HTTP 429"] == 2 and failures["HTTP 500"] == 2 and failures["timeout"] == 1
    # A cut connection shows as a dropped connection or a truncated body, depending on where it was cut.
    assert failures.get("connection", 0) + failures.get("malformed response", 0) == 2
    records = _api_records(tmp_path / "faulty")
    assert len(records) == CALLS and len({r["id"] for r in records}) == CALLS
    # The key is read from the environment and written nowhere.
    for path in (tmp_path / "faulty").rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_a_killed_run_resumes_sending_only_what_is_missing(api_server: str, tmp_path: Path) -> None:
    data = require_provo()
    clean = _run(tmp_path / "clean", api_server, data)
    out = tmp_path / "killed"
    store = out / SLUG / "api-cache" / "smollm2.jsonl"
    args = ",".join(f"{k}={v}" for k, v in _args(api_server).items())
    command = [
        sys.executable, "-m", "harness", "run", "--tasks", "provo", "--model", "openai:smollm2",
        "--model-args", args, "--task-args", "n_samples=5,max_new_tokens=8", "--limit", str(LIMIT),
        "--data-dir", str(data), "--output-dir", str(out),
    ]  # fmt: skip
    proc = subprocess.Popen(command, cwd=REPO, env={**os.environ, "HARNESS_NO_PROGRESS": "1"})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if store.exists() and len(store.read_text().splitlines()) >= 7:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stored = len(_api_records(out))
    assert 6 <= stored < CALLS
    resumed = _run(out, api_server, data)
    assert resumed["api_calls"]["sent"] == CALLS - stored
    assert resumed["api_calls"]["from_store"] == stored
    _same_results(clean, resumed)
    assert _samples(tmp_path / "clean") == _samples(out)
    # An identical rerun sends nothing: every instance is in the run's store, so no model is even set up.
    again = _run(out, api_server, data)
    assert "api_calls" not in again
    _same_results(clean, again)
    assert len(_api_records(out)) == CALLS
