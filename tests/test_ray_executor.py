"""``--executor ray`` on a real Ray cluster (no mock of Ray): identical results to a local run, a worker killed
with SIGKILL, a driver killed and resumed, a sweep folded into a leaderboard, and the packaged SmolLM2.

The cluster is started once per module by ``ray.init(num_cpus=2)`` in this process (two CPU slots, one per worker);
drivers run here (in-process, ``harness.cli.main``) or as ``harness run --ray-address`` subprocesses, which a test
can kill. Every test here is slow (Ray starts in a few seconds; the kill tests wait for real processes).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.executors import ExecutorOptions
from harness.models import ModelSpec
from harness.outputs.store import scan
from harness.run.options import RunOptions
from harness.run.runner import run
from tests.conftest import CliResult
from tests.executor_helpers import (
    PROVO,
    SLOW_MOCK,
    Driver,
    assert_identical,
    kill_a_worker_midway,
    results_of,
    store_of,
    stored_count,
)
from tests.helpers import require_provo

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """A local Ray cluster with 2 CPUs, owned by this test process; its GCS address for ``--ray-address``."""
    import ray

    ray.init(address="local", num_cpus=2, num_gpus=0, include_dashboard=False, logging_level="WARNING")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.mark.parametrize("workers", [1, 2])
def test_ray_run_equals_local_run(
    cli: Callable[..., CliResult], ray_cluster: str, tmp_path: Path, workers: int
) -> None:
    """Provo and a generation task on 1 and 2 Ray workers: the local run's results and samples."""
    require_provo()
    args = [
        "--tasks", "provo,wmt14-en-de", "--model", "mock:m", "--model-args", "block_size=3", "--limit", "10",
        "--task-args", "n_samples=8",
    ]  # fmt: skip
    cli("run", *args, "--output-dir", str(tmp_path / "local"))
    ray_run = cli(
        "run", *args, "--output-dir", str(tmp_path / "ray"), "--executor", "ray", "--workers", str(workers)
    )  # fmt: skip
    tasks = ["provo", "wmt14-en-de@ancestral"]
    assert_identical(tmp_path / "local" / "mock__m", tmp_path / "ray" / "mock__m", tasks)
    execution = results_of(tmp_path / "ray" / "mock__m")["execution"]
    assert execution["executor"] == "ray"
    assert execution["workers"] == workers and execution["worker_restarts"] == 0
    assert execution["blocks"] == {task: {"total": 4, "sent": 4} for task in tasks}  # 10 instances in blocks of 3
    assert f"ray: worker 1/{workers} ready" in ray_run.stderr or f"ray: worker 2/{workers} ready" in ray_run.stderr


def test_killed_worker_is_replaced(cli: Callable[..., CliResult], ray_cluster: str, tmp_path: Path) -> None:
    """SIGKILL one worker while it holds blocks: a replacement answers them; identical results, no duplicates."""
    require_provo()
    died = kill_a_worker_midway(cli, tmp_path, ["--executor", "ray", "--ray-address", ray_cluster, "--workers", "2"])
    assert died.startswith("warning: ray: worker ")


def test_killed_driver_resumes_with_only_missing_blocks(
    cli: Callable[..., CliResult], ray_cluster: str, tmp_path: Path
) -> None:
    """SIGKILL the driver midway; the same command again sends only the blocks the stores do not hold whole."""
    require_provo()
    args = [*PROVO, *SLOW_MOCK, "--output-dir", str(tmp_path / "ray"), "--executor", "ray", "--workers", "2"]
    out = tmp_path / "ray" / "mock__slow"
    driver = Driver([*args, "--ray-address", ray_cluster])
    driver.wait_for(lambda: stored_count(lambda: store_of(out, "provo")) >= 12, "three blocks stored")
    driver.proc.send_signal(signal.SIGKILL)
    driver.finish()
    assert not (out / "results.json").exists()
    stored = set(scan(store_of(out, "provo")).records)
    from harness.data.loaders import resolve_data_dir
    from harness.registry.manager import get_registry
    from harness.registry.task_loading import resolve_tasks

    (task,) = resolve_tasks(["provo"], {"n_samples": 40}, get_registry(), expand_decoding=True)
    instances = get_registry().loader("provo")(task.config.data, resolve_data_dir(None)[0]).instances[:48]
    blocks = [instances[k : k + 4] for k in range(0, 48, 4)]
    missing = sum(1 for block in blocks if any(inst.id not in stored for inst in block))
    assert 0 < missing < 12

    cli("run", *args)  # in-process, on the same cluster
    assert results_of(out)["execution"]["blocks"] == {"provo": {"total": 12, "sent": missing}}
    cli("run", *PROVO, *SLOW_MOCK, "--output-dir", str(tmp_path / "local"))
    assert_identical(tmp_path / "local" / "mock__slow", out, ["provo"])
    store = scan(store_of(out, "provo"))
    assert len(store.records) == 48 and not store.problems


def test_a_worker_that_cannot_be_placed_stops_the_run(ray_cluster: str, tmp_path: Path) -> None:
    """A worker asking for CPUs no node has free (an actor holds the cluster's two) ends the run with one line once
    the placement timeout passes, instead of waiting forever (a replacement after a death goes the same way)."""
    import ray

    require_provo()

    @ray.remote(num_cpus=2)
    class Blocker:
        def ready(self) -> bool:
            return True

    blocker = Blocker.remote()  # type: ignore[attr-defined]
    ray.get(blocker.ready.remote(), timeout=60)
    options = RunOptions(
        tasks=["provo"],
        model=ModelSpec("mock", "m"),
        task_args={"n_samples": 4},
        limit=4,
        output_dir=tmp_path,
        executor=ExecutorOptions("ray", workers=1, placement_timeout=3),
    )
    try:
        with pytest.raises(HarnessError) as caught:
            run(options)
    finally:
        ray.kill(blocker)
    assert str(caught.value).startswith(
        "ray: worker 1 could not be placed in 3 s (it asks for 1 CPU and 0 GPUs; the Ray cluster has 0 CPUs, 0 GPUs "
        "free (of 2 CPUs, 0 GPUs)) and no other worker is running; free them or ask for less (--workers, "
    )


def test_sweep_on_ray_then_leaderboard(cli: Callable[..., CliResult], ray_cluster: str, tmp_path: Path) -> None:
    """Two model configurations x two tasks on the cluster, then ``harness leaderboard`` over the sweep."""
    require_provo()
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"output_dir: {tmp_path / 'sweep'}\n"
        "tasks: [provo, wmt14-en-de]\n"
        "limit: 6\n"
        "task_args: {n_samples: 8}\n"
        "human_only: true\n"
        "models:\n"
        "  - {model: mock:small, model_args: {block_size: 2}}\n"
        "  - {model: mock:sharp, model_args: {zipf: 2.0}}\n"
    )
    swept = cli("sweep", str(plan), "--executor", "ray", "--workers", "2")
    assert "== mock:small ==" in swept.stdout and "== mock:sharp ==" in swept.stdout
    for name, args in (("small", "block_size=2"), ("sharp", "zipf=2.0")):
        folder = tmp_path / "sweep" / f"mock__{name}"
        assert results_of(folder)["execution"]["executor"] == "ray"
        cli("run", "--tasks", "provo,wmt14-en-de", "--limit", "6", "--task-args", "n_samples=8",
            "--model", f"mock:{name}", "--model-args", args, "--output-dir", str(tmp_path / "local"))  # fmt: skip
        assert_identical(tmp_path / "local" / f"mock__{name}", folder, ["provo", "wmt14-en-de@ancestral"])
    board = tmp_path / "board"
    cli("leaderboard", *(str(p) for p in sorted((tmp_path / "sweep").iterdir())), "-o", str(board), "--no-plots")
    data = json.loads((board / "leaderboard.json").read_text())
    assert sorted(data["tasks"]) == ["provo", "wmt14-en-de"]
    models = sorted(s["model"] for s in data["systems"] if s["kind"] == "model")
    assert models == ["mock:sharp", "mock:small"]


def test_smollm2_on_ray_equals_local(cli: Callable[..., CliResult], ray_cluster: str, tmp_path: Path) -> None:
    """The packaged SmolLM2 on 2 workers of 1 CPU each against a local run on 1 thread (the workers' count:
    on CPU the last bits of a sum depend on how many threads share it, docs/distributed.md)."""
    import torch

    require_provo()
    args = [
        "--tasks", "provo,wmt14-en-de", "--model", "hf:smollm2-135m", "--device", "cpu", "--limit", "4",
        "--task-args", "n_samples=100,max_new_tokens=12",
    ]  # fmt: skip
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        cli("run", *args, "--output-dir", str(tmp_path / "local"))
    finally:
        torch.set_num_threads(threads)
    cli("run", *args, "--output-dir", str(tmp_path / "ray"), "--executor", "ray", "--workers", "2")
    folder = tmp_path / "ray" / "hf__smollm2-135m"
    assert_identical(tmp_path / "local" / "hf__smollm2-135m", folder, ["provo", "wmt14-en-de@ancestral"])
    execution = results_of(folder)["execution"]
    assert execution["threads_per_worker"] == 1 and execution["workers"] == 2
