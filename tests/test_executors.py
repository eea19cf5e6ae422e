"""Executors and sweeps without a Ray cluster (fast tier): option checks, worker planning, the plan file, several
models in one command on the local executor. The real-Ray tests are in ``test_ray_executor.py``."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.executors import AnswerJob, ExecutorOptions
from harness.executors.pool import answer_with_pool
from harness.executors.processes import ProcessBackend, visible_gpus
from harness.executors.ray_driver import plan_workers
from harness.executors.worker_counts import WorkerCounts, sum_stats
from harness.models import ModelSpec
from harness.outputs.results import strip_volatile
from harness.plugins.mock.adapter import MockAdapter
from harness.run.sweep import pair_model_args, read_plan
from tests.conftest import CliResult
from tests.helpers import require_provo

CPU_MODEL = ModelSpec("hf", "m", device="cpu")
AUTO_MODEL = ModelSpec("hf", "m")


def _results(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--ray-address", "auto"], "--ray-address: only used with --executor ray"),
        (["--gpus-per-worker", "1"], "--gpus-per-worker: only used with --executor ray"),
        (["--workers", "2", "--gpus-per-worker", "1"], "--gpus-per-worker: only used with --executor ray"),
        (["--cpus-per-worker", "2"], "--cpus-per-worker: only used with --workers N or --executor ray"),
        (["--max-retries", "1"], "--max-retries: only used with --workers N or --executor ray"),
        (["--workers", "0"], "--workers: expected a positive integer, got 0"),
        (["--workers", "2", "--cpus-per-worker", "0"], "--cpus-per-worker: expected a positive number, got 0.0"),
    ],
)
def test_executor_flags_are_checked_before_data_loads(
    cli: Callable[..., CliResult], flags: list[str], message: str
) -> None:
    result = cli("run", "--tasks", "provo", "--model", "mock:a", *flags, check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {message}"


def test_ray_not_installed_is_one_line(cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    result = cli("run", "--tasks", "provo", "--model", "mock:a", "--executor", "ray", check=False)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: --executor ray needs the 'ray' extra, which is not installed (no ray): "
        "pip install 'variability-harness[ray]'"
    ]


@pytest.mark.parametrize(
    ("options", "model", "resources", "expected"),
    [
        # GPUs in the cluster and a model not pinned to the CPU: one worker per GPU.
        (ExecutorOptions("ray"), AUTO_MODEL, {"CPU": 16, "GPU": 4}, (4, 1.0, 1.0)),
        # The same cluster for a --device cpu model: the CPUs decide.
        (ExecutorOptions("ray"), CPU_MODEL, {"CPU": 16, "GPU": 4}, (16, 1.0, 0.0)),
        (ExecutorOptions("ray", cpus_per_worker=3), CPU_MODEL, {"CPU": 16}, (5, 3.0, 0.0)),
        # Two workers per GPU when each asks for half of one.
        (ExecutorOptions("ray", gpus_per_worker=0.5), AUTO_MODEL, {"CPU": 8, "GPU": 2}, (4, 1.0, 0.5)),
        (ExecutorOptions("ray", workers=2), AUTO_MODEL, {"CPU": 2}, (2, 1.0, 0.0)),
        # Less than one worker's worth of CPUs still gives one worker (Ray refuses it below if it cannot hold it).
        (ExecutorOptions("ray", cpus_per_worker=0.5), CPU_MODEL, {"CPU": 0.4}, None),
    ],
)
def test_plan_workers(options: ExecutorOptions, model: ModelSpec, resources: dict, expected: tuple | None) -> None:
    if expected is None:
        with pytest.raises(HarnessError, match=r"--workers: 1 worker x --cpus-per-worker 0.5 need 0.5 CPUs"):
            plan_workers(options, model, resources)
    else:
        assert plan_workers(options, model, resources) == expected


def test_plan_workers_refuses_what_the_cluster_cannot_hold() -> None:
    with pytest.raises(HarnessError) as caught:
        plan_workers(ExecutorOptions("ray", workers=3), AUTO_MODEL, {"CPU": 2})
    assert str(caught.value) == (
        "--workers: 3 workers x --cpus-per-worker 1 need 3 CPUs, but the Ray cluster has 2; ask for fewer workers or "
        "less per worker"
    )
    with pytest.raises(HarnessError, match=r"need 2 GPUs, but the Ray cluster has 1"):
        plan_workers(ExecutorOptions("ray", workers=2), AUTO_MODEL, {"CPU": 8, "GPU": 1})


@pytest.mark.parametrize(
    ("device", "count", "listed", "expected"),
    [
        ("cpu", 4, None, []),  # --device cpu touches no GPU
        ("auto", 0, None, []),
        ("auto", 3, None, ["0", "1", "2"]),
        ("cuda", 2, "4,GPU-8f1c,6", ["4", "GPU-8f1c"]),  # torch's count wins: CUDA hides entries after an invalid one
        ("cuda", 1, " 3 ", ["3"]),
    ],
)
def test_visible_gpus(
    device: str, count: int, listed: str | None, expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    if listed is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", listed)
    assert visible_gpus(device) == expected


def test_local_workers_take_the_gpus_in_turn() -> None:
    backend = ProcessBackend(ExecutorOptions(workers=3), ["7", "GPU-8f1c"])
    assert [backend.gpu_of(i) for i in range(4)] == ["7", "GPU-8f1c", "7", "GPU-8f1c"]
    assert backend.gpus == pytest.approx(2 / 3)
    assert ProcessBackend(ExecutorOptions(workers=2), ["0", "1", "2", "3"]).gpus == 1.0  # one GPU each at most
    unmapped = ProcessBackend(ExecutorOptions(workers=2))
    assert unmapped.gpu_of(1) is None and unmapped.gpus == 0.0


def test_sum_stats_adds_numbers_at_every_depth() -> None:
    a = {"sent": 3, "retries": 1, "failures": {"timeout": 1}, "server": "llama.cpp"}
    b = {"sent": 4, "retries": 0, "failures": {"timeout": 2, "429": 1}, "server": "llama.cpp", "from_store": 2}
    assert sum_stats(a, b) == {
        "sent": 7,
        "retries": 1,
        "failures": {"timeout": 3, "429": 1},
        "server": "llama.cpp",
        "from_store": 2,
    }


def test_worker_counts_keep_each_workers_latest_report() -> None:
    """Counts only grow, so a worker's latest report replaces its earlier ones; a dead worker's last one stays."""
    counts = WorkerCounts()
    assert counts.total() is None
    counts.report(1, {"sent": 2})
    counts.report(1, {"sent": 5})  # worker 1's second block
    counts.report(2, {"sent": 3, "retries": 1})  # worker 2, which then died
    counts.report(3, None)  # its replacement, with an adapter that counts nothing
    counts.report(1, {"sent": 9})
    assert counts.total() == {"sent": 12, "retries": 1}


def test_model_args_pair_with_models() -> None:
    assert pair_model_args(["mock:a", "mock:b"], None) == [None, None]
    assert pair_model_args(["mock:a", "mock:b"], ["x=1"]) == ["x=1", "x=1"]
    assert pair_model_args(["mock:a", "mock:b"], ["x=1", "x=2"]) == ["x=1", "x=2"]
    with pytest.raises(HarnessError, match=r"--model-args: given 2 times for 3 models"):
        pair_model_args(["a:a", "b:b", "c:c"], ["x=1", "x=2"])


def test_model_args_typo_is_caught_before_data_loads(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli(
        "run", "--tasks", "provo", "--model", "mock:a", "--model-args", "blok_size=2", "--data-dir",
        str(tmp_path / "no-data"), "--output-dir", str(tmp_path), check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("error: --model-args for mock:a: unknown option 'blok_size'")


def _plan(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return path


def test_read_plan(tmp_path: Path) -> None:
    path = _plan(
        tmp_path,
        """
output_dir: out
tasks: provo, wmt14-en-de
task_args: {n_samples: 40, decoding: [ancestral, top_p=0.9]}
limit: 5
seed: 3
human_only: true
models:
  - model: mock:a
    model_args: {block_size: 2, latency: 0}
  - model: mock:b
    device: cpu
    task_args: {n_samples: 20}
""",
    )
    runs = read_plan(path, ExecutorOptions())
    assert [r.model.label if r.model else None for r in runs] == ["mock:a", "mock:b", None]
    first, second, human = runs
    assert first.tasks == ["provo", "wmt14-en-de"]
    assert first.model is not None and first.model.args == {"block_size": "2", "latency": "0"}
    assert first.task_args == {"n_samples": 40, "decoding": ["ancestral", "top_p=0.9"]}
    assert second.model is not None and second.model.device == "cpu"
    assert second.task_args == {"n_samples": 20, "decoding": ["ancestral", "top_p=0.9"]}
    assert (first.limit, first.seed, first.output_dir) == (5, 3, Path("out"))
    assert human.task_args == first.task_args


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tasks: [provo]\nmodel: [mock:a]\n", "unknown field 'model' (known: output_dir, tasks, task_args"),
        ("tasks: [provo]\nlimit: 0\nmodels: [mock:a]\n", "field 'limit': expected a positive integer, got 0"),
        ("tasks: []\nmodels: [mock:a]\n", "field 'tasks': expected a list of task names or YAML files, got []"),
        ("tasks: provo\nmodels: [{model: mock:a, device: tpu}]\n", "field 'models[0]'.device: expected auto, cpu"),
        ("tasks: provo\nmodels: [{model: mock:a, dtype: x}]\n", "field 'models[0]': unknown field 'dtype'"),
        ("tasks: provo\nmodels: [{model: mock:a, folder: ../x}]\n", "field 'models[0]'.folder: expected a folder"),
        ("tasks: provo\n", "no run: list models under 'models'"),
        ("tasks: [provo\n", "not valid YAML"),
    ],
)
def test_plan_errors_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = _plan(tmp_path, text)
    with pytest.raises(HarnessError) as caught:
        read_plan(path, ExecutorOptions())
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_two_configurations_of_one_model_need_their_own_folders(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    require_provo()
    args = ["run", "--tasks", "provo", "--limit", "4", "--output-dir", str(tmp_path)]
    same = cli(*args, "--model", "mock:a", "--model", "mock:a", "--model-args", "zipf=1.1", "--model-args", "zipf=2",
               check=False)  # fmt: skip
    assert same.returncode == 2
    assert same.stderr.strip() == (
        f"error: two runs would write the same folder {tmp_path / 'mock__a'} (the same model kind and name): give "
        "each configuration its own 'folder' in a plan file (harness sweep), or its own --output-dir"
    )
    assert not (tmp_path / "mock__a").exists()
    plan = _plan(
        tmp_path,
        f"output_dir: {tmp_path}\ntasks: provo\nlimit: 4\n"
        "models: [{model: mock:a, model_args: {zipf: 1.1}}, {model: mock:a, model_args: {zipf: 2}, folder: a-sharp}]\n",
    )
    cli("sweep", str(plan))
    flat, sharp = _results(tmp_path / "mock__a"), _results(tmp_path / "a-sharp")
    assert (flat["config"]["model_args"], sharp["config"]["model_args"]) == ({"zipf": "1.1"}, {"zipf": "2"})
    assert flat["results"] != sharp["results"]


def test_several_models_in_one_command(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """``--model`` twice gives the two runs one ``--model`` each would give (and one table each)."""
    require_provo()
    common = ["--tasks", "provo", "--limit", "6", "--task-args", "n_samples=30"]
    both = cli(
        "run", *common, "--model", "mock:a", "--model", "mock:b", "--model-args", "block_size=2",
        "--model-args", "block_size=4", "--output-dir", str(tmp_path / "both"),
    )  # fmt: skip
    assert "== mock:a ==" in both.stdout and "== mock:b ==" in both.stdout
    for name, block in (("a", 2), ("b", 4)):
        cli("run", *common, "--model", f"mock:{name}", "--model-args", f"block_size={block}",
            "--output-dir", str(tmp_path / name))  # fmt: skip
        together = _results(tmp_path / "both" / f"mock__{name}")
        alone = _results(tmp_path / name / f"mock__{name}")
        assert strip_volatile(together) == strip_volatile(alone)
        execution = together["execution"]
        assert execution["executor"] == "local"
        # 6 instances in blocks of 2 or 4 (``threads`` is there too when torch is loaded in this process)
        assert execution["blocks"] == {"provo": {"total": 3 if block == 2 else 2, "sent": 3 if block == 2 else 2}}


def test_sweep_keeps_going_after_a_failed_run(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """A run that fails while answering does not stop the others; the command says which failed and exits 2."""
    require_provo()
    (tmp_path / "out" / "mock__b").mkdir(parents=True)
    (tmp_path / "out" / "mock__b" / "responses").write_text("a file where the stores' folder should be")
    path = _plan(
        tmp_path,
        f"output_dir: {tmp_path / 'out'}\ntasks: provo\nlimit: 4\ntask_args: {{n_samples: 20}}\n"
        "models: [mock:a, mock:b, mock:c]\n",
    )
    result = cli("sweep", str(path), check=False)
    assert result.returncode == 2
    assert (tmp_path / "out" / "mock__a" / "results.json").is_file()
    assert (tmp_path / "out" / "mock__c" / "results.json").is_file()
    assert not (tmp_path / "out" / "mock__b" / "results.json").exists()
    assert "failed: mock:b: " in result.stderr
    assert result.stderr.strip().endswith("1 of 3 runs failed; the others' results are written")


def test_a_finished_run_sends_no_block(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    require_provo()
    args = ["run", "--tasks", "provo", "--model", "mock:a", "--limit", "6", "--output-dir", str(tmp_path)]
    cli(*args)
    cli(*args)
    assert _results(tmp_path / "mock__a")["execution"] == {"executor": "local", "blocks": {"provo": {"sent": 0}}}


class UnplacedBackend:
    """A pool backend (``harness.executors.backend.Backend``) whose workers in ``never`` are never placed, as a Ray
    actor asking for resources no node has free; the others are placed at once and load in ``load_seconds``."""

    name = "fake"
    cpus, gpus, in_flight = 1.0, 0.5, 1

    def __init__(self, workers: int, never: set[int], load_seconds: float = 0.0) -> None:
        self.workers, self.never, self.load_seconds = workers, never, load_seconds
        self.killed: list[int] = []

    def start(self, index: int, adapter_cls: type, spec: ModelSpec, threads: int) -> int:
        return index

    def call(self, worker: int, method: str, *args: object) -> tuple[int, str, float]:
        delay = float("inf") if worker in self.never else self.load_seconds if method == "load" else 0.0
        return (worker, method, time.monotonic() + delay)

    def wait(self, calls: list[tuple[int, str, float]], timeout: float) -> list[tuple[int, str, float]]:
        time.sleep(0.02)
        return [call for call in calls if call[2] <= time.monotonic()]

    def result(self, call: tuple[int, str, float], timeout: float | None = None) -> object:
        worker, method, _ = call
        if method == "load":
            return {"pid": 100 + worker, "host": "fake", "group_size": 4, "info": {}, "load_seconds": 0.0}
        return {"pid": 100 + worker, "host": "fake"} if method == "placed" else None

    def kill(self, worker: int) -> None:
        self.killed.append(worker)

    def where(self) -> str:
        return "nowhere"

    def execution(self) -> dict:
        return {}

    def room(self) -> str:
        return "the fake cluster has 0 GPUs free"


def test_a_worker_never_placed_stops_the_run_with_one_line(tmp_path: Path) -> None:
    backend = UnplacedBackend(workers=2, never={0, 1})
    options = ExecutorOptions("ray", workers=2, placement_timeout=0.3)
    started = time.monotonic()
    with pytest.raises(HarnessError) as caught:
        answer_with_pool(backend, AnswerJob([], ModelSpec("mock", "m"), MockAdapter, tmp_path, 0, options))  # type: ignore[arg-type]
    assert 0.3 < time.monotonic() - started < 5
    assert str(caught.value) == (
        "fake: workers 1 and 2 could not be placed in 0.3 s (each asks for 1 CPU and 0.5 GPUs; the fake cluster has "
        "0 GPUs free) and no other worker is running; free them or ask for less (--workers, --cpus-per-worker, "
        f"--gpus-per-worker); the 0 responses stored so far are safe in {tmp_path.resolve() / 'responses'}; run the "
        "same command again to resume"
    )
    assert sorted(backend.killed) == [0, 1]  # the pending workers are stopped, not left waiting for resources


def test_the_pool_goes_on_without_a_worker_never_placed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A worker still waiting for resources after the timeout is left behind while another worker runs."""
    backend = UnplacedBackend(workers=2, never={1}, load_seconds=0.6)
    options = ExecutorOptions("ray", workers=2, placement_timeout=0.2)
    answered = answer_with_pool(backend, AnswerJob([], ModelSpec("mock", "m"), MockAdapter, tmp_path, 0, options))  # type: ignore[arg-type]
    assert answered.execution["worker_restarts"] == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: fake: worker 2 not placed after 0.2 s (it asks for 1 CPU and 0.5 GPUs; the fake cluster has 0 GPUs "
        "free); going on with the other workers (it joins them if placed later)"
    ]


def test_placement_timeout_is_checked() -> None:
    with pytest.raises(HarnessError, match=r"^placement_timeout: expected a positive number of seconds, got 0$"):
        ExecutorOptions("local", workers=2, placement_timeout=0).check()
