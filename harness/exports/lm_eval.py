"""Export a finished run in lm-evaluation-harness's output layout, as its ``EvaluationTracker`` writes it.

Files, under ``<out>/<model_name_sanitized>/`` (lm-eval's ``sanitize_model_name`` of ``<kind>:<name>``, so
``mock:a`` -> ``mock__a`` and ``hf:smollm2-135m`` -> ``hf__smollm2-135m``, the harness's own folder names; a
human-only run is ``human``):

- ``results_<stamp>.json``: lm-eval's top-level keys (``results``, ``group_subtasks``, ``configs``, ``versions``,
  ``n-shot``, ``higher_is_better``, ``n-samples``, ``config``, ``git_hash``, ``date``, ``pretty_env_info``,
  ``transformers_version``, ``lm_eval_version``, ``upper_git_hash``, ``task_hashes``, ``model_source``,
  ``model_name``, ``model_name_sanitized``, ``system_instruction``(``_sha``), ``fewshot_as_multiturn``,
  ``chat_template``(``_sha``), ``start_time``, ``end_time``, ``total_evaluation_time_seconds``), plus ``harness``:
  what lm-eval has no key for (every metric's confidence interval with its level ``ci_level``, and n, controls,
  notes, reports, data sources, library versions, format version). ``results[task]`` is the run's own lm-eval-form
  entry (``"<metric>,none"``, ``"<metric>_stderr,none"``) with lm-eval's ``name`` and ``sample_len``; ``date`` is a
  Unix time as in lm-eval;
  ``task_hashes`` is lm-eval's (sha256 of every sample's ``doc_hash + prompt_hash + target_hash``), not the
  harness's data-file hash (that is under ``harness.data_hashes``).
- ``samples_<task>_<stamp>.jsonl``: one line per instance with ``doc_id``, ``doc``, ``target``, ``arguments``,
  ``resps``, ``filtered_resps``, ``filter`` (``"none"``, matching the ``",none"`` of the results keys),
  ``metrics`` (the names), ``doc_hash``, ``prompt_hash``, ``target_hash``, then every per-instance value at top
  level under its name (nested values flattened with ``/``: ``string.prob/acc``, the aggregated metrics' names).

``<stamp>`` is the harness's own file stamp of the run (``2026-11-23T16-05-03.123456``), or the run's date in
lm-eval's ``isoformat().replace(":", "-")`` form for a run written before timestamped files.

The mapping of requests and responses (``arguments`` ``{"gen_args_<i>": {"arg_0": ..., "arg_1": ...}}`` and
``resps``/``filtered_resps``, stringified as lm-eval's ``sanitize_list`` does):

- ``generate``: one request, ``arg_0`` the prompt, ``arg_1`` the rest of the request under lm-eval's
  ``generation_kwargs`` names where it has one (``until`` = stop strings, ``max_gen_toks``, ``temperature``,
  ``top_p``, ``top_k``, ``typical_p``, ``do_sample``, ``repeats`` = n samples; ``seed``, ``messages``,
  ``source``, ``chat`` as they are). ``resps = [[text_1, ..., text_n]]`` (the n samples as the repeats of the
  request) and ``filtered_resps = [[text_1, ..., text_n]]``: the harness scores the whole set, as lm-eval's
  ``take_first_k`` filter with k = n would pass it on, not only the first sample.
- ``sample_words``: one request, ``arg_0`` the context, ``arg_1`` the sampling settings (``max_gen_toks``,
  ``temperature``, ``do_sample``, ``repeats`` = n, ``mode``, ``seed``). ``resps = [[word, word, ...]]``: every
  sampled word as often as it was drawn, most frequent first (the harness keeps counts, not the draw order);
  rejected samples (no complete word) are not listed. ``filtered_resps`` = the same words.
- ``multiple_choice``: one request per option, as lm-eval's multiple choice: ``arg_0`` the item's prompt (the
  text the harness hashes into ``prompt_hash``: the first of the item's bundled requests), ``arg_1`` = ``" "`` +
  the option. ``resps[i] = [[score, "None"], ...]``: option i's score in each of the item's option orders
  (lm-eval's repeats) under the ``string.prob`` system, the option's summed token log-probability as a
  continuation, which is lm-eval's log-likelihood (another system when the run has no string scoring: the one
  named in ``configs[task].metadata.resps_system``); ``filtered_resps[i] = [mean over orders, "None"]``. The
  second element, lm-eval's ``is_greedy``, is not measured and is ``"None"``. ``target`` is the index of the
  target option, as lm-eval's multiple-choice target.
- a human-only run sent no requests: ``arguments = {}``, ``resps = filtered_resps = []``.

Hashes are lm-eval's (sha256 hex, ``lm_eval.utils.hash_string``): ``doc_hash`` and ``prompt_hash`` are the run's
own where its samples have them (the harness computes them as lm-eval does: the document as the loader gave it,
``json.dumps(doc, indent=2, ensure_ascii=False)``, and the prompt, which is ``arguments.gen_args_0.arg_0`` here);
for samples written before the harness recorded them they are computed here from the exported ``doc`` and
``arg_0`` (``""`` when no request was sent). ``target_hash`` is ``lm_eval_hash(target)`` of the exported
``target`` (``""`` when the task has none), so for multiple choice it is not the harness's (whose samples have no
``target``).

Not carried over (all in the run's samples files and in the inspect export): the people's data (``human``,
``meta``), the instance ``id`` and ``seed`` apart from the request, the raw response, and for multiple choice the
exact bundle of every method's requests in every option order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import HarnessError
from harness.exports.common import (
    OUTPUT_TYPES,
    as_mapping,
    choice_system,
    export_tasks,
    file_stamp,
    flat_values,
    is_human_only,
    mean,
    model_kind_and_name,
    multiple_choice_target,
    option_scores,
    prompt_text,
    request_kind,
    run_config,
    run_date,
    sampled_words,
    task_config,
)
from harness.files import atomic_write_text
from harness.outputs.results import lm_eval_hash, metrics_with_levels

#: The keys of an lm-eval sample record; a per-instance value of one of these names would be lost.
SAMPLE_KEYS = (
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
)

#: Request fields that lm-eval's ``generation_kwargs`` name otherwise.
_GEN_KWARGS = {"stop": "until", "max_new_tokens": "max_gen_toks", "n": "repeats"}

#: Keys of a harness results file that lm-eval has no place for, kept under ``harness``.
_HARNESS_KEYS = ("format_version", "metrics", "controls", "headline", "notes", "unavailable", "reports", "scorers")
_HARNESS_TASK_KEYS = ("data_sources", "responses", "timing")


def sanitize_model_name(model_name: str) -> str:
    """``lm_eval.utils.sanitize_model_name``.

    >>> sanitize_model_name("mock:a")
    'mock__a'
    """
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", model_name)


def handle_non_serializable(o: Any) -> Any:
    """``lm_eval.utils.handle_non_serializable`` for what a parsed JSON file can hold (sets, else ``str``)."""
    return list(o) if isinstance(o, set) else str(o)


def sanitize_list(sub: Any) -> Any:
    """``lm_eval.utils.sanitize_list``: nested lists with every leaf as a string, as lm-eval writes responses.

    >>> sanitize_list([[-1.5, None]])
    [['-1.5', 'None']]
    """
    if isinstance(sub, list):
        return [sanitize_list(item) for item in sub]
    if isinstance(sub, tuple):
        return tuple(sanitize_list(item) for item in sub)
    return str(sub)


def _dumps(data: Any, **kwargs: Any) -> str:
    return json.dumps(data, default=handle_non_serializable, ensure_ascii=False, **kwargs)


def generation_kwargs(request: Mapping[str, Any]) -> dict[str, Any]:
    """A stored request's settings (everything but its prompt) under lm-eval's ``generation_kwargs`` names.

    >>> generation_kwargs({"prompt": "x", "stop": ["\\n"], "n": 3, "decoding": {"temperature": 1.0}})
    {'until': ['\\n'], 'repeats': 3, 'temperature': 1.0, 'do_sample': True}
    """
    kwargs: dict[str, Any] = {}
    for key, value in request.items():
        if key in ("prompt", "context"):
            continue
        if key == "decoding" and isinstance(value, Mapping):
            kwargs.update(value)
            continue
        kwargs[_GEN_KWARGS.get(key, key)] = value
    temperature = kwargs.get("temperature")
    if isinstance(temperature, int | float) and not isinstance(temperature, bool):
        kwargs["do_sample"] = temperature > 0
    return kwargs


def _requests(
    kind: str | None, record: Mapping[str, Any], system: str | None
) -> tuple[list[tuple[Any, ...]], list[Any], list[Any]]:
    """(arguments, resps, filtered_resps) of one instance, per the mapping in the module docstring."""
    response = record.get("response")
    if not isinstance(response, Mapping):
        return [], [], []
    request = as_mapping(record.get("arguments"))
    prompt = prompt_text(request) or ""
    if kind == "generate" and isinstance(response.get("texts"), list):
        texts = [str(t) for t in response["texts"]]
        return [(prompt, generation_kwargs(request))], [texts], [texts]
    if kind == "sample_words":
        words = sampled_words(response)
        return [(prompt, generation_kwargs(request))], [words], [words]
    options = as_mapping(record.get("doc")).get("options")
    if kind == "multiple_choice" and isinstance(options, list):
        arguments: list[tuple[Any, ...]] = [(prompt, f" {option}") for option in options]
        orders = option_scores(record, system, len(options))
        if orders is None:
            return arguments, [[] for _ in options], [[] for _ in options]
        resps = [[[order[i], None] for order in orders] for i in range(len(options))]
        filtered = [[mean([order[i] for order in orders]), None] for i in range(len(options))]
        return arguments, resps, filtered
    # A request kind this exporter does not know (a plugin's): the request as it is, the response as one string.
    text = _dumps(dict(response), sort_keys=True)
    return [(prompt, generation_kwargs(request))], [[text]], [[text]]


def _target(kind: str | None, record: Mapping[str, Any]) -> str:
    if "target" in record and record["target"] is not None:
        return str(record["target"])
    if kind == "multiple_choice":
        index = multiple_choice_target(record)
        if index is not None:
            return str(index)
    return ""


def _own_hash(record: Mapping[str, Any], key: str, text: str) -> str:
    """The run's own hash ``key`` of an instance when its samples record has one, else ``lm_eval_hash(text)``."""
    value = record.get(key)
    return value if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) else lm_eval_hash(text)


def sample_record(kind: str | None, record: Mapping[str, Any], system: str | None, task: str) -> dict[str, Any]:
    """One harness samples record as lm-eval's ``EvaluationTracker.save_results_samples`` writes a sample."""
    doc = as_mapping(record.get("doc"))
    target = _target(kind, record)
    arguments, resps, filtered = _requests(kind, record, system)
    values = flat_values(record.get("metrics"))
    sample: dict[str, Any] = {
        "doc_id": record.get("doc_id"),
        "doc": doc,
        "target": target,
        "arguments": {
            f"gen_args_{i}": {f"arg_{j}": value for j, value in enumerate(args)} for i, args in enumerate(arguments)
        },
        "resps": sanitize_list(resps),
        "filtered_resps": sanitize_list(filtered),
        "filter": "none",
        "metrics": list(values),
        "doc_hash": _own_hash(record, "doc_hash", _dumps(doc, indent=2, sort_keys=True)),
        "prompt_hash": _own_hash(record, "prompt_hash", str(arguments[0][0]) if arguments else ""),
        "target_hash": lm_eval_hash(target),
    }
    for name, value in values.items():
        if name in SAMPLE_KEYS:
            raise HarnessError(f"task {task}: a per-instance value is named {name!r}, a key of lm-eval's samples")
        sample[name] = value
    return sample


def task_hash(samples: list[dict[str, Any]]) -> str:
    """lm-eval's ``task_hashes`` entry: sha256 of every sample's ``doc_hash + prompt_hash + target_hash``."""
    return lm_eval_hash("".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in samples))


def _generation_kwargs_of(kind: str | None, params: Mapping[str, Any]) -> dict[str, Any] | None:
    if kind not in ("generate", "sample_words"):
        return None
    renamed = {"max_new_tokens": "max_gen_toks", "stop": "until"}
    keep = ("max_new_tokens", "stop", "temperature", "decoding", "mode")
    return {renamed.get(k, k): v for k, v in params.items() if k in keep}


def lm_eval_config(results: Mapping[str, Any], task: str, kind: str | None, system: str | None) -> dict[str, Any]:
    """lm-eval's task configuration (``TaskConfig.to_dict()``) from the harness's, which it keeps in
    ``metadata``."""
    config = task_config(results, task)
    params = as_mapping(config.get("params"))
    data = as_mapping(config.get("data"))
    repeats = params.get("n_samples", params.get("option_orders", 1))
    directions = as_mapping(as_mapping(results.get("higher_is_better")).get(task))
    metadata: dict[str, Any] = {"version": config.get("version"), "harness_config": config}
    metadata["run_config"] = run_config(results, task)
    if kind == "multiple_choice":
        metadata["resps_system"] = system
    return {
        "task": task,
        "tag": config.get("tags", []),
        "dataset_path": data.get("path"),
        "test_split": data.get("split"),
        "doc_to_text": params.get("prompt_template"),
        "description": config.get("description", ""),
        "target_delimiter": " ",
        "fewshot_delimiter": "\n\n",
        "num_fewshot": 0,
        "metric_list": [{"metric": name, "higher_is_better": better} for name, better in directions.items()],
        "output_type": OUTPUT_TYPES.get(kind or "", kind),
        "generation_kwargs": _generation_kwargs_of(kind, params),
        "repeats": repeats if isinstance(repeats, int) else 1,
        "should_decontaminate": False,
        "metadata": metadata,
    }


def _epoch(results: Mapping[str, Any]) -> float:
    return run_date(results).timestamp()


def export(results: dict[str, Any], samples: Mapping[str, list[dict[str, Any]]], out_dir: Path) -> list[Path]:
    """Write ``results_<stamp>.json`` and ``samples_<task>_<stamp>.jsonl`` under ``out_dir/<model>/``."""
    tasks = export_tasks(results, samples)
    config = as_mapping(results.get("config"))
    kind_name = model_kind_and_name(config)
    model_name = "human" if is_human_only(config) else f"{kind_name[0]}:{kind_name[1]}"
    sanitized = sanitize_model_name(model_name)
    stamp = file_stamp(results, tasks)
    folder = out_dir / sanitized

    logged: dict[str, list[dict[str, Any]]] = {}
    configs: dict[str, Any] = {}
    for task in tasks:
        kind = request_kind(results, task, samples[task])
        system = choice_system(samples[task]) if kind == "multiple_choice" else None
        logged[task] = [sample_record(kind, r, system, task) for r in samples[task]]
        configs[task] = lm_eval_config(results, task, kind, system)

    entries: dict[str, Any] = {}
    for task in tasks:
        own = dict(as_mapping(results["results"].get(task)))
        alias = own.pop("alias", task)
        entries[task] = {"name": task, "alias": alias, "sample_len": len(logged[task]), **own}

    def per_task(key: str) -> dict[str, Any]:
        table = results.get(key)
        return {t: table[t] for t in tasks if isinstance(table, Mapping) and t in table}

    info = as_mapping(config.get("model_info"))
    library = as_mapping(results.get("library_versions"))
    seconds = results.get("total_evaluation_time_seconds")
    start = _epoch(results)
    elapsed = float(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool) else 0.0
    lm_config: dict[str, Any] = {
        "model": kind_name[0],
        "model_args": config.get("model_args"),
        "model_num_parameters": info.get("parameters"),
        "model_dtype": info.get("dtype"),
        "batch_size": config.get("batch_size"),
        "batch_sizes": [],
        "device": config.get("device"),
        "use_cache": None,
        "limit": config.get("limit"),
        "bootstrap_iters": None,
        "gen_kwargs": None,
        "random_seed": config.get("random_seed"),
        "numpy_seed": None,
        "torch_seed": None,
        "fewshot_seed": None,
        # The harness's own settings, which lm-eval has no key for.
        **{k: v for k, v in config.items() if k not in ("model", "model_args", "batch_size", "device", "limit")},
    }
    harness_extra: dict[str, Any] = {"version": __version__}
    for key in _HARNESS_KEYS:
        if key == "format_version":
            if key in results:
                harness_extra[key] = results[key]
        elif key == "metrics":  # every interval with its level, also for a run written before results.json had it
            harness_extra[key] = {t: metrics_with_levels(results, t) for t in per_task(key)}
        else:
            harness_extra[key] = per_task(key)
    for key in _HARNESS_TASK_KEYS:
        harness_extra[key] = per_task(key)
    harness_extra["data_hashes"] = per_task("task_hashes")
    harness_extra["library_versions"] = dict(library)
    harness_extra["date"] = results.get("date")

    document: dict[str, Any] = {
        "results": entries,
        "group_subtasks": {task: [] for task in tasks},
        "configs": dict(sorted(configs.items())),
        "versions": dict(sorted(per_task("versions").items())),
        "n-shot": {task: 0 for task in sorted(tasks)},
        "higher_is_better": dict(sorted(per_task("higher_is_better").items())),
        "n-samples": per_task("n-samples"),
        "config": lm_config,
        "git_hash": results.get("git_hash"),
        "date": start,
        "pretty_env_info": f"N/A (exported from variability-harness {__version__})",
        "transformers_version": library.get("transformers", "N/A"),
        "lm_eval_version": "N/A",
        "upper_git_hash": None,
        "task_hashes": {task: task_hash(logged[task]) for task in tasks},
        "model_source": kind_name[0],
        "model_name": model_name,
        "model_name_sanitized": sanitized,
        "system_instruction": None,
        "system_instruction_sha": None,
        "fewshot_as_multiturn": False,
        "chat_template": None,
        "chat_template_sha": None,
        "start_time": start,
        "end_time": start + elapsed,
        "total_evaluation_time_seconds": str(seconds) if seconds is not None else None,
        "harness": harness_extra,
    }
    written: list[Path] = []
    path = folder / f"results_{stamp}.json"
    atomic_write_text(path, _dumps(document, indent=2))
    written.append(path)
    for task in tasks:
        path = folder / f"samples_{task.replace('/', '-')}_{stamp}.jsonl"
        atomic_write_text(path, "".join(_dumps(s) + "\n" for s in logged[task]))
        written.append(path)
    return written
