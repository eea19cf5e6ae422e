"""What both exports read from a finished run: the tasks to export, the model, the run's date and file stamp,
each instance's prompt and per-instance values, and lm-eval's hash.

Everything here is a pure function of the parsed results file and samples records; nothing reads a file. Both the
layout before timestamped files (``results.json`` and ``samples_<task>.jsonl``, samples without ``arguments`` or
hashes) and the current one (``results_<date>.json``, ``samples_<task>_<date>.jsonl``) are accepted.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any

from harness.errors import HarnessError

#: lm-eval's file timestamp at the end of a results or samples file name (``..._2026-11-23T16-05-03.123456.json``).
_STAMP_RE = re.compile(r"_(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(?:\.\d+)?)\.jsonl?$")

#: Request kinds as lm-eval names a task's ``output_type``.
OUTPUT_TYPES = {"generate": "generate_until", "sample_words": "generate_until", "multiple_choice": "multiple_choice"}

#: The multiple-choice system whose per-option scores stand for lm-eval's per-option log-likelihoods: the sum of
#: the option's token log-probabilities as a continuation of the prompt (``docs/multiple-choice.md``).
CHOICE_SYSTEM = "string.prob"

Scalar = str | int | float | bool | None


def as_mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a field a file may lack or hold in another shape)."""
    return value if isinstance(value, Mapping) else {}


def export_tasks(results: Mapping[str, Any], samples: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """The tasks to export: those ``samples`` has, each of which the results file must hold (a merged or an
    invocation's file may hold more tasks than the caller passes samples for)."""
    known = results.get("configs")
    if not isinstance(known, Mapping) or not isinstance(results.get("results"), Mapping):
        raise HarnessError("results: 'configs' or 'results' missing; is this a results file written by harness run?")
    if not samples:
        raise HarnessError("nothing to export: no task's samples given")
    for task, records in samples.items():
        if task not in known:
            raise HarnessError(f"task {task!r}: samples given but the results file has no such task")
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise HarnessError(f"task {task!r}: samples must be a list of records (JSON objects)")
    return list(samples)


def task_config(results: Mapping[str, Any], task: str) -> dict[str, Any]:
    config = results["configs"].get(task)
    return dict(config) if isinstance(config, Mapping) else {}


def run_config(results: Mapping[str, Any], task: str) -> dict[str, Any]:
    """The settings ``task`` was run with: in a merged ``results.json`` its own invocation's (``run_config``),
    else the file's ``config``."""
    own = as_mapping(results.get("run_config")).get(task)
    if isinstance(own, Mapping):
        return dict(own)
    config = results.get("config")
    return dict(config) if isinstance(config, Mapping) else {}


def is_human_only(config: Mapping[str, Any]) -> bool:
    return bool(config.get("human_only")) or config.get("model") in (None, "human")


def model_kind_and_name(config: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of the run's model, e.g. ``("mock", "a")``; a human-only run is ``("human", "human")``."""
    if is_human_only(config):
        return "human", "human"
    kind = str(config.get("model"))
    name = config.get("model_name")
    return kind, str(name) if name not in (None, "") else kind


def run_date(results: Mapping[str, Any]) -> dt.datetime:
    """When the run started (UTC): the results file's ``date``; the Unix epoch if it has none that parses."""
    text = results.get("date")
    if isinstance(text, str):
        try:
            moment = dt.datetime.fromisoformat(text)
        except ValueError:
            moment = None
        if moment is not None:
            utc = dt.timezone.utc
            return moment.replace(tzinfo=utc) if moment.tzinfo is None else moment.astimezone(utc)
    if isinstance(text, int | float) and not isinstance(text, bool):
        return dt.datetime.fromtimestamp(float(text), dt.timezone.utc)
    return dt.datetime.fromtimestamp(0, dt.timezone.utc)


def file_stamp(results: Mapping[str, Any], tasks: list[str]) -> str:
    """The lm-eval timestamp to name exported files by: the harness's own stamp of the newest of ``tasks``'
    files (named in ``sources`` or ``samples_files``), else the run's ``date`` in lm-eval's form
    (``datetime.isoformat().replace(":", "-")``). Exporting one run twice gives the same names.

    >>> file_stamp({"samples_files": {"provo": "samples_provo_2026-11-23T16-05-03.123456.jsonl"}}, ["provo"])
    '2026-11-23T16-05-03.123456'
    >>> file_stamp({"date": "2026-11-23T16:05:03+00:00"}, ["provo"])
    '2026-11-23T16-05-03'
    """
    names: list[Any] = []
    for task in tasks:
        source = as_mapping(results.get("sources")).get(task)
        if isinstance(source, Mapping):
            names += [source.get("results"), source.get("samples")]
        names.append(as_mapping(results.get("samples_files")).get(task))
    stamps = [m.group(1) for name in names if isinstance(name, str) and (m := _STAMP_RE.search(name))]
    if stamps:
        return max(stamps)
    return run_date(results).replace(tzinfo=None).isoformat().replace(":", "-")


def prompt_text(arguments: Any) -> str | None:
    """The text a stored request puts before the model, as the harness hashes it into ``prompt_hash``
    (``RequestKind.prompt_text``): ``prompt``, else ``context``, else the first (by key) of a bundle's requests."""
    if not isinstance(arguments, Mapping):
        return None
    for key in ("prompt", "context"):
        if isinstance(arguments.get(key), str):
            return str(arguments[key])
    bundled = arguments.get("requests")
    if isinstance(bundled, Mapping) and bundled:
        return prompt_text(bundled[sorted(bundled)[0]])
    return None


def flat_values(values: Any, prefix: str = "") -> dict[str, Any]:
    """An instance's per-instance values with nested objects flattened into ``/`` names, the names the run's
    aggregated metrics use (``{"string.prob": {"acc": 1.0}}`` -> ``{"string.prob/acc": 1.0}``); lists stay lists.

    >>> flat_values({"tvd": 0.5, "string.prob": {"acc": 1.0, "p": [0.6, 0.4]}})
    {'tvd': 0.5, 'string.prob/acc': 1.0, 'string.prob/p': [0.6, 0.4]}
    """
    out: dict[str, Any] = {}
    if not isinstance(values, Mapping):
        return out
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flat_values(value, name + "/"))
        else:
            out[name] = value
    return out


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def choice_system(records: list[dict[str, Any]]) -> str | None:
    """The multiple-choice system whose per-order, per-option ``scores`` the exports show as the model's
    per-option scores: ``string.prob`` when the run has it, else the first system with scores; None if none has."""
    for record in records:
        metrics = record.get("metrics")
        if not isinstance(metrics, Mapping):
            continue
        with_scores = [k for k, v in metrics.items() if isinstance(v, Mapping) and isinstance(v.get("scores"), list)]
        if with_scores:
            return CHOICE_SYSTEM if CHOICE_SYSTEM in with_scores else with_scores[0]
    return None


def option_scores(record: Mapping[str, Any], system: str | None, n_options: int) -> list[list[float]] | None:
    """``system``'s scores of one item: one list per option order, each in the original option order."""
    if system is None:
        return None
    values = as_mapping(record.get("metrics")).get(system)
    rows = values.get("scores") if isinstance(values, Mapping) else None
    if not isinstance(rows, list) or not rows:
        return None
    if not all(isinstance(r, list) and len(r) == n_options for r in rows):
        return None
    return [[float(x) for x in r] for r in rows]


def mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else float("nan")


def multiple_choice_target(record: Mapping[str, Any]) -> int | None:
    """The index of a multiple-choice item's target option (``human.target``), when the item has options."""
    human = record.get("human")
    options = as_mapping(record.get("doc")).get("options")
    target = human.get("target") if isinstance(human, Mapping) else None
    if isinstance(options, list) and isinstance(target, int) and not isinstance(target, bool):
        return target if 0 <= target < len(options) else None
    return None


def request_kind(results: Mapping[str, Any], task: str, records: list[dict[str, Any]]) -> str | None:
    """The task's request kind (``request`` in its configuration); for a configuration without one, guessed
    from the stored responses' shape."""
    kind = task_config(results, task).get("request")
    if isinstance(kind, str):
        return kind
    for record in records:
        response = record.get("response")
        if isinstance(response, Mapping):
            if "texts" in response:
                return "generate"
            if "counts" in response:
                return "sample_words"
            if "answers" in response:
                return "multiple_choice"
    return None


def sampled_words(response: Mapping[str, Any]) -> list[str]:
    """The words a ``sample_words`` response drew, each as often as it was drawn (most frequent first, ties by
    word: the harness keeps counts, not the order of the draws); rejected samples drew no word and are not listed."""
    counts = response.get("counts")
    if not isinstance(counts, Mapping):
        return []
    ranked = sorted(((str(w), int(c)) for w, c in counts.items()), key=lambda wc: (-wc[1], wc[0]))
    return [word for word, count in ranked for _ in range(count)]
