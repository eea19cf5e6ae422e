"""``harness import``: a ``harness run`` of the ``replay`` adapter, with the options filled in from the outputs.

Why a command of its own when ``--model replay:NAME --model-args path=...`` already works: an import should say
how many samples per input it holds without the user counting them (a task's ``n_samples`` defaults to what the
harness would draw, 1,000 for Provo, while the study's BLOOM file has 40), and the command line a researcher
types should name the file first (``docs/importing.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.models import ModelSpec
from harness.registry.manager import get_registry
from harness.registry.task_loading import resolve_tasks
from harness.run.options import RunOptions

REPLAY = "replay"


def import_options(
    source: str,
    *,
    task: str,
    name: str,
    fmt: str = "auto",
    setting: str | None = None,
    task_args: dict[str, Any] | None = None,
    seed: int = 0,
    output_dir: Path = Path("runs"),
    data_dir: str | None = None,
) -> RunOptions:
    """The run that scores ``source`` as the system ``name`` on ``task``.

    A task that takes ``n_samples`` gets the outputs' most common count per instance unless ``task_args`` sets it,
    so the results and the leaderboard report the sample size the system really had."""
    registry = get_registry()
    given = Path(source).expanduser()
    if data_dir is not None and not given.is_absolute() and not given.exists():
        # The replay adapter looks relative paths up under $HARNESS_DATA_DIR; --data-dir names another data folder.
        under = Path(data_dir) / given
        if under.exists():
            source = str(under)
    args = {"path": source, "format": fmt, **({"setting": setting} if setting is not None else {})}
    model = ModelSpec(kind=REPLAY, name=name, args=args)
    task_args = dict(task_args or {})
    resolved = resolve_tasks([task], task_args, registry, expand_decoding=False)
    if "n_samples" not in task_args and any("n_samples" in r.config.params for r in resolved):
        adapter_cls = registry.model(REPLAY)
        task_args["n_samples"] = adapter_cls.samples_per_input(model)  # type: ignore[attr-defined]
    return RunOptions(
        tasks=[task],
        model=model,
        task_args=task_args,
        seed=seed,
        output_dir=output_dir,
        data_dir=data_dir,
    )
