"""Export a finished run as inspect_ai eval logs: one JSON log (format version 2) per task, which
``inspect_ai.log.read_eval_log``, ``list_eval_logs`` and ``inspect view`` read.

The log is written as plain JSON shaped like inspect_ai's pydantic models (``EvalLog``, ``EvalSpec``,
``EvalSample``, ...), so exporting needs no inspect_ai installed; ``tests/test_exports.py`` reads every export
back with inspect_ai's own reader, which validates it against those models. File names follow inspect's own
(``<created>_<task>_<task_id>.json``, each part with ``_ / : +`` replaced by ``-``), so ``list_eval_logs`` finds
them and reads task and id from the name. Ids are derived from the run (its file stamp and model) and the task,
so exporting one run twice writes the same files.

What each part holds:

- ``eval``: ``task`` (the harness task, decoding variant included: ``asset-valid@top_p=0.9``), ``task_version``,
  ``created`` (the run's date), ``model`` (``<kind>/<name>``, e.g. ``mock/a``; a human-only run is inspect's
  ``none/none``), ``model_args``, ``model_generate_config`` (max tokens, stop strings, number of samples and,
  where the task has one decoder, its temperature, top-p and top-k), ``task_args`` (the request parameters),
  ``task_args_passed`` (``--task-args``), ``dataset`` (name, size, the evaluated instances' ids), ``config``
  (``limit``, one epoch), ``revision`` (the run's ``git_hash``), ``metadata.harness`` (everything else the
  results file says about the task: configuration, run settings, data sources and hashes, response totals,
  controls, notes, reports, library versions).
- ``plan``: one step, the request kind (``harness/generate``, ``harness/sample_words``,
  ``harness/multiple_choice``) with the task's request parameters.
- ``results``: one ``EvalScore`` per harness metric (scorer ``harness``, the score named after the metric) with
  the metrics ``value``, ``stderr``, ``ci_low``, ``ci_high`` (each with the interval's level as ``params.level``,
  0.9 for 90%) and, where the metric averages over human splits, ``spread``; ``scored_samples`` is the metric's n;
  ``metadata`` holds its direction (``higher_is_better``), its interval's level (``ci_level``) and its human
  control. ``headline`` points at the task's first headline metric.
- ``stats``: start and end times; token usage for API models.
- ``samples``: one per instance (epoch 1): ``id`` (the harness's instance id), ``input`` (the prompt; for a
  human-only run, the instance's inputs as text), ``choices`` (the options, multiple choice), ``target`` (the
  task's target word; the references of a generation task; the target option's letter for multiple choice),
  ``messages`` (the prompt as sent, then the model's first answer), ``output`` (every answer: the n texts of a
  ``generate`` request with why each ended, the distinct words of ``sample_words`` most frequent first, the
  option a multiple-choice system chose), and ``scores.harness``: ``value`` = every per-instance value that is a
  single number, boolean or string (nested values flattened with ``/``, the aggregated metrics' names, e.g.
  ``string.prob/acc``), ``metadata`` = the per-instance values that are lists (per-split values, per-order
  scores, classified answers), ``answer`` = the model's first answer. ``metadata`` keeps the instance as the
  harness wrote it: ``doc``, ``human``, ``meta``, ``seed``, ``arguments`` (the exact request), ``response`` (as
  stored), ``reports`` and the lm-eval hashes.

Not carried over: inspect's event transcript (the harness records no events) and per-sample timing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import __version__
from harness.exports.common import (
    as_mapping,
    choice_system,
    export_tasks,
    file_stamp,
    flat_values,
    is_human_only,
    is_scalar,
    model_kind_and_name,
    multiple_choice_target,
    prompt_text,
    request_kind,
    run_config,
    run_date,
    task_config,
)
from harness.files import atomic_write_text
from harness.outputs.results import metrics_with_levels

#: The eval log format version written (inspect_ai's ``EvalLog.version``).
LOG_VERSION = 2
#: The scorer every sample score and aggregated score is filed under.
SCORER = "harness"
#: inspect_ai's model name for an eval without a model.
NO_MODEL = "none/none"

_ID_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_STOP_REASONS = {"eos": "stop", "stop": "stop", "length": "max_tokens"}


def stable_id(*parts: str) -> str:
    """A 22-character id in the alphabet of inspect's ids (``shortuuid``), derived from ``parts``.

    >>> len(stable_id("run", "x")), stable_id("run", "x") == stable_id("run", "x")
    (22, True)
    """
    number = int.from_bytes(hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest(), "big")
    chars = []
    for _ in range(22):
        number, digit = divmod(number, len(_ID_ALPHABET))
        chars.append(_ID_ALPHABET[digit])
    return "".join(chars)


def clean_filename_component(component: str) -> str:
    """inspect_ai's ``clean_filename_component``: ``_ / : +`` become ``-``, so the name splits on ``_``.

    >>> clean_filename_component("asset-valid@top_p=0.9")
    'asset-valid@top-p=0.9'
    """
    return component.replace("_", "-").replace("/", "-").replace(":", "-").replace("+", "-")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return None


def _metric(name: str, value: float, level: float | None = None) -> dict[str, Any]:
    """An inspect ``EvalMetric``; an interval's ends carry its level as the parameter ``level`` (0.9: 90%)."""
    return {"name": name, "value": value, "params": {} if level is None else {"level": level}}


def eval_score(name: str, record: Mapping[str, Any], control: Any) -> dict[str, Any]:
    """One aggregated harness metric as an inspect ``EvalScore``."""
    value = _number(record.get("value"))
    metrics = {"value": _metric("value", value if value is not None else math.nan)}
    stderr = _number(record.get("stderr"))
    if stderr is not None:
        metrics["stderr"] = _metric("stderr", stderr)
    ci = record.get("ci")
    level = _number(record.get("ci_level"))
    if isinstance(ci, list) and len(ci) == 2 and all(_number(x) is not None for x in ci):
        metrics["ci_low"] = _metric("ci_low", float(ci[0]), level)
        metrics["ci_high"] = _metric("ci_high", float(ci[1]), level)
    spread = _number(record.get("spread"))
    if spread is not None:
        metrics["spread"] = _metric("spread", spread)
    n = record.get("n")
    metadata: dict[str, Any] = {"higher_is_better": record.get("higher_is_better")}
    if "ci_low" in metrics:
        metadata["ci_level"] = level
    if control is not None:
        metadata["control"] = control
    return {
        "name": name,
        "scorer": SCORER,
        "scored_samples": n if isinstance(n, int) and not isinstance(n, bool) else None,
        "params": {},
        "metrics": metrics,
        "metadata": metadata,
    }


def _message(role: str, content: str, source: str | None, ident: str, model: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"id": ident, "content": content, "role": role}
    if source is not None:
        message["source"] = source
    if model is not None:
        message["model"] = model
    return message


def _output(kind: str | None, record: Mapping[str, Any], system: str | None) -> tuple[str, list[tuple[str, str]]]:
    """(the first answer, every answer with its stop reason) of one instance's stored response."""
    response = record.get("response")
    if not isinstance(response, Mapping):
        return "", []
    if kind == "generate" and isinstance(response.get("texts"), list):
        texts = [str(t) for t in response["texts"]]
        given = response.get("finish_reasons")
        reasons = [str(r) for r in given] if isinstance(given, list) else []
        reasons += ["unknown"] * (len(texts) - len(reasons))
        answers = [(t, _STOP_REASONS.get(r, "unknown")) for t, r in zip(texts, reasons, strict=False)]
        return (texts[0] if texts else ""), answers
    if kind == "sample_words" and isinstance(response.get("counts"), Mapping):
        ranked = sorted(((str(w), int(c)) for w, c in response["counts"].items()), key=lambda wc: (-wc[1], wc[0]))
        answers = [(word, "stop") for word, _ in ranked]
        return (ranked[0][0] if ranked else ""), answers
    options = as_mapping(record.get("doc")).get("options")
    if kind == "multiple_choice" and isinstance(options, list) and system is not None:
        values = as_mapping(record.get("metrics")).get(system)
        p = values.get("p") if isinstance(values, Mapping) else None
        if isinstance(p, list) and len(p) == len(options) and p:
            chosen = max(range(len(p)), key=lambda i: float(p[i]))
            return str(options[chosen]), [(str(options[chosen]), "stop")]
        return "", []
    text = json.dumps(dict(response), ensure_ascii=False, sort_keys=True)
    return text, [(text, "unknown")]


def _input_messages(request: Mapping[str, Any], text: str, ident: str) -> list[dict[str, Any]]:
    turns = request.get("messages")
    messages: list[dict[str, Any]] = []
    if isinstance(turns, list) and turns and request.get("chat"):
        for i, turn in enumerate(turns):
            if isinstance(turn, list | tuple) and len(turn) == 2 and turn[0] in ("system", "user", "assistant"):
                messages.append(_message(str(turn[0]), str(turn[1]), "input", f"{ident}-in{i}"))
    return messages or [_message("user", text, "input", f"{ident}-in0")]


def _doc_text(doc: Any) -> str:
    """An instance's inputs as text, for an instance no prompt was built for (a human-only run)."""
    if not isinstance(doc, Mapping):
        return ""
    return "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in doc.items())


def _target(kind: str | None, record: Mapping[str, Any]) -> str | list[str]:
    if isinstance(record.get("target"), str):
        return str(record["target"])
    if kind == "multiple_choice":
        index = multiple_choice_target(record)
        if index is not None:
            return chr(ord("A") + index)
    human = record.get("human")
    references = human.get("references") if isinstance(human, Mapping) else None
    if isinstance(references, list) and references and all(isinstance(r, str) for r in references):
        return list(references)
    return ""


def _usage(usage: Any) -> dict[str, int] | None:
    if not isinstance(usage, Mapping):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    out: dict[str, Any] = {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion}
    if isinstance(usage.get("cost_usd"), int | float):
        out["total_cost"] = float(usage["cost_usd"])
    return out


def eval_sample(
    kind: str | None, record: Mapping[str, Any], system: str | None, model: str, key: str
) -> dict[str, Any]:
    """One harness samples record as an inspect ``EvalSample``."""
    request = as_mapping(record.get("arguments"))
    doc = as_mapping(record.get("doc"))
    sample_id = record.get("id", record.get("doc_id"))
    ident = stable_id("sample", key, str(sample_id))
    prompt = prompt_text(request)
    text = prompt if prompt is not None else _doc_text(doc)
    completion, answers = _output(kind, record, system)
    messages = _input_messages(request, text, ident)
    replies = [_message("assistant", a, "generate", f"{ident}-out{i}", model) for i, (a, _) in enumerate(answers)]
    choices = [{"message": m, "stop_reason": reason} for m, (_, reason) in zip(replies, answers, strict=True)]
    if replies:
        messages.append(replies[0])
    values = flat_values(record.get("metrics"))
    score: dict[str, Any] = {
        "value": {k: v for k, v in values.items() if is_scalar(v)},
        "answer": completion if choices else None,
        "metadata": {k: v for k, v in values.items() if not is_scalar(v)} or None,
        "history": [],
    }
    metadata = {
        k: record[k]
        for k in ("doc_id", "doc", "human", "meta", "seed", "arguments", "response", "reports")
        if k in record
    }
    metadata.update({k: record[k] for k in ("doc_hash", "prompt_hash", "target_hash") if k in record})
    response = as_mapping(record.get("response"))
    usage = _usage(response.get("usage"))
    output: dict[str, Any] = {"model": model, "choices": choices, "completion": completion}
    if usage is not None:
        output["usage"] = usage
    options = doc.get("options") if kind == "multiple_choice" else None
    sample: dict[str, Any] = {
        "id": sample_id if isinstance(sample_id, str | int) and not isinstance(sample_id, bool) else str(sample_id),
        "epoch": 1,
        "input": text,
        "choices": [str(o) for o in options] if isinstance(options, list) else None,
        "target": _target(kind, record),
        "messages": messages,
        "output": output,
        "scores": {SCORER: score},
        "metadata": metadata,
        "store": {},
        "events": [],
        "model_usage": {model: usage} if usage is not None else {},
        "uuid": ident,
    }
    return sample


def generate_config(kind: str | None, params: Mapping[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """inspect's ``GenerateConfig`` of a task: what every instance's request shares."""
    if kind not in ("generate", "sample_words"):
        return {}
    config: dict[str, Any] = {}
    if isinstance(params.get("max_new_tokens"), int):
        config["max_tokens"] = params["max_new_tokens"]
    if isinstance(params.get("stop"), list) and params["stop"]:
        config["stop_seqs"] = [str(s) for s in params["stop"]]
    if isinstance(params.get("n_samples"), int):
        config["num_choices"] = params["n_samples"]
    first = next((r["arguments"] for r in records if isinstance(r.get("arguments"), Mapping)), None)
    decoding = first.get("decoding") if isinstance(first, Mapping) else None
    if not isinstance(decoding, Mapping) and isinstance(first, Mapping):
        decoding = first
    if isinstance(decoding, Mapping):
        if _number(decoding.get("temperature")) is not None:
            config["temperature"] = float(decoding["temperature"])
        if _number(decoding.get("top_p")) is not None:
            config["top_p"] = float(decoding["top_p"])
        if isinstance(decoding.get("top_k"), int) and decoding["top_k"] > 0:
            config["top_k"] = decoding["top_k"]
    return config


def _per_task(results: Mapping[str, Any], key: str, task: str) -> Any:
    table = results.get(key)
    return table.get(task) if isinstance(table, Mapping) else None


def eval_log(
    results: Mapping[str, Any], task: str, records: list[dict[str, Any]], run_key: str
) -> tuple[str, dict[str, Any]]:
    """(file name, log) of one task."""
    config = task_config(results, task)
    params = as_mapping(config.get("params"))
    data = as_mapping(config.get("data"))
    settings = run_config(results, task)
    human_only = is_human_only(settings)
    kind_name = model_kind_and_name(settings)
    model = NO_MODEL if human_only else f"{kind_name[0]}/{kind_name[1]}"
    kind = request_kind(results, task, records)
    system = choice_system(records) if kind == "multiple_choice" else None
    started = run_date(results)
    created = started.isoformat()
    seconds = _number(results.get("total_evaluation_time_seconds")) or 0.0
    completed = (started + dt.timedelta(seconds=seconds)).isoformat()
    task_id = stable_id("task", run_key, task)
    key = f"{run_key}\x1f{task}"
    samples = [eval_sample(kind, r, system, model, key) for r in records]

    metrics = metrics_with_levels(results, task)
    controls = as_mapping(_per_task(results, "controls", task))
    scores = [eval_score(name, m, controls.get(name)) for name, m in metrics.items() if isinstance(m, Mapping)]
    headline_names = [n for n in (_per_task(results, "headline", task) or []) if n in metrics]
    headline = {"scorer": SCORER, "score": headline_names[0], "metric": "value"} if headline_names else None

    n_samples = as_mapping(_per_task(results, "n-samples", task))
    limit = settings.get("limit")
    usage = _usage(as_mapping(_per_task(results, "responses", task)).get("usage"))
    harness_meta: dict[str, Any] = {
        "version": __version__,
        "format_version": results.get("format_version"),
        "request": kind,
        "human_only": human_only,
        "task_config": config,
        "run_config": settings,
        "n_samples": n_samples,
        "data_hash": _per_task(results, "task_hashes", task),
        "git_hash": results.get("git_hash"),
        "library_versions": results.get("library_versions"),
    }
    for name in ("data_sources", "responses", "unavailable", "notes", "reports", "controls", "scorers", "timing"):
        value = _per_task(results, name, task)
        if value is not None:
            harness_meta[name] = value
    if system is not None:
        harness_meta["choice_system"] = system
    spec: dict[str, Any] = {
        "eval_id": stable_id("eval", run_key, task),
        "run_id": stable_id("run", run_key),
        "created": created,
        "task": task,
        "task_id": task_id,
        "task_version": config.get("version", 0) if isinstance(config.get("version", 0), int | str) else 0,
        "task_display_name": task,
        "task_description": config.get("description") if isinstance(config.get("description"), str) else None,
        "task_attribs": {},
        "task_args": dict(params),
        "task_args_passed": dict(as_mapping(settings.get("task_args"))),
        "tags": [str(t) for t in config.get("tags", [])] if isinstance(config.get("tags"), list) else None,
        "dataset": {
            "name": data.get("path") if isinstance(data.get("path"), str) else config.get("loader"),
            "samples": n_samples["original"] if isinstance(n_samples.get("original"), int) else len(samples),
            "sample_ids": [s["id"] for s in samples],
            "shuffled": False,
        },
        "model": model,
        "model_generate_config": generate_config(kind, params, records),
        "model_args": dict(as_mapping(settings.get("model_args"))),
        "config": {"limit": limit if isinstance(limit, int) else None, "epochs": 1, "log_samples": True},
        "packages": {"variability-harness": __version__},
        "metadata": {"harness": harness_meta},
        "scorers": [{"name": SCORER, "options": {"scorers": config.get("scorers", [])}, "metadata": {}}],
        "headline_metric": headline,
    }
    if isinstance(results.get("git_hash"), str):
        spec["revision"] = {"type": "git", "origin": "", "commit": results["git_hash"]}
    log: dict[str, Any] = {
        "version": LOG_VERSION,
        "status": "success",
        "eval": spec,
        "plan": {
            "name": "plan",
            "steps": [{"solver": f"harness/{kind}", "params": dict(params), "params_passed": dict(params)}],
            "config": {},
        },
        "results": {
            "total_samples": len(samples),
            "completed_samples": len(samples),
            "scores": scores,
            "headline": headline,
        },
        "stats": {
            "started_at": created,
            "completed_at": completed,
            "model_usage": {model: usage} if usage is not None else {},
        },
        "invalidated": False,
        "tags": [],
        "metadata": {},
        "samples": samples,
    }
    name = f"{clean_filename_component(created)}_{clean_filename_component(task)}_{task_id}.json"
    return name, log


def export(results: dict[str, Any], samples: Mapping[str, list[dict[str, Any]]], out_dir: Path) -> list[Path]:
    """Write one inspect eval log per task into ``out_dir``."""
    tasks = export_tasks(results, samples)
    config = as_mapping(results.get("config"))
    run_key = f"{file_stamp(results, tasks)}\x1f{':'.join(model_kind_and_name(config))}"
    written: list[Path] = []
    for task in tasks:
        name, log = eval_log(results, task, samples[task], run_key)
        path = out_dir / name
        atomic_write_text(path, json.dumps(log, indent=2, ensure_ascii=False) + "\n")
        written.append(path)
    return written
