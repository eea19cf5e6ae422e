"""Damaged results and samples files given to ``harness score`` and ``harness leaderboard``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.malformed.case import Case, then, write_bytes
from tests.malformed.runs import RUN, edit_results, edit_samples, finished_run

SCORE = ("score", "{tmp}/" + RUN, "--output-dir", "{tmp}/out")
BOARD = ("leaderboard", "{tmp}/" + RUN, "{tmp}/runs/human", "-o", "{tmp}/board", "--no-plots")
PROTECT = ("runs/**/*",)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set (or, with ``...``, delete) a dotted field of a results file."""

    def change(results: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = results
        for key in parents:
            node = node[key]
        if value is ...:
            del node[last]
        else:
            node[last] = value

    return change


#: (case id, change to the model run's results file, what the error line must name)
RESULTS_DAMAGE: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("no-metrics", _set("metrics", ...), "field 'metrics' missing"),
    ("no-configs", _set("configs", ...), "field 'configs' missing"),
    ("no-config", _set("config", ...), "field 'config' missing"),
    ("no-task-hashes", _set("task_hashes", ...), "field 'task_hashes' missing"),
    ("configs-list", _set("configs", ["provo"]), "field 'configs': expected an object"),
    ("configs-empty", _set("configs", {}), "field 'configs' is empty"),
    ("config-no-request", _set("configs.provo.request", ...), "field 'configs.provo'"),
    ("metric-string", _set("metrics.provo.tvd.value", "0.5"), "field 'metrics.provo.tvd.value': expected a number"),
    ("metric-null", _set("metrics.provo.tvd.value", None), "field 'metrics.provo.tvd.value'"),
    ("metric-record-list", _set("metrics.provo.tvd", [0.5]), "field 'metrics.provo.tvd.value'"),
    ("metrics-task-list", _set("metrics.provo", []), "field 'metrics.provo': expected an object"),
    ("n-samples-number", _set("n-samples.provo", 2), "field 'n-samples.provo': expected an object"),
    ("limit-string", _set("config.limit", "two"), "field 'config.limit'"),
    ("limit-zero", _set("config.limit", 0), "field 'config.limit'"),
    ("seed-string", _set("config.random_seed", "zero"), "field 'config.random_seed'"),
    ("human-only-string", _set("config.human_only", "no"), "field 'config.human_only'"),
    ("unknown-task-hash", _set("task_hashes.other", "sha256:0"), "field 'task_hashes.other': task not in 'configs'"),
]

CASES: list[Case] = []
for name, change, expect in RESULTS_DAMAGE:
    CASES.append(Case(f"score-results-{name}", SCORE, expect, prepare=edit_results(change), protect=PROTECT))
    CASES.append(Case(f"leaderboard-results-{name}", BOARD, expect, prepare=edit_results(change), protect=PROTECT))

for name, data, expect in [
    ("not-json", b"{not json", "not JSON (line 1, column 2"),
    ("not-utf8", b'{"metrics": "\xff\xfe"}', "line 1: not valid UTF-8 (invalid start byte at byte offset 13)"),
    ("array", b"[1, 2, 3]", "expected a JSON object (a results file), got list"),
    ("empty", b"", "not JSON (line 1, column 1"),
    ("deep", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
]:
    from tests.malformed.runs import write_results

    CASES.append(Case(f"score-results-{name}", SCORE, expect, prepare=write_results(data), protect=PROTECT))
    CASES.append(Case(f"leaderboard-results-{name}", BOARD, expect, prepare=write_results(data), protect=PROTECT))


def _drop_id(records: list[Any]) -> list[Any]:
    del records[0]["id"]
    return records


def _response(value: Any) -> Callable[[list[Any]], list[Any]]:
    def change(records: list[Any]) -> list[Any]:
        records[1]["response"] = value
        return records

    return change


def _counts_strings(records: list[Any]) -> list[Any]:
    records[0]["response"]["counts"] = {"the": "many"}
    return records


CASES += [
    Case(
        "score-samples-missing",
        SCORE,
        "not found; ",
        prepare=then(
            finished_run, _remove_samples := lambda tmp: [p.unlink() for p in (tmp / RUN).glob("samples_*.jsonl")]
        ),
        protect=("runs/**/results*.json",),
    ),
    Case(
        "score-samples-not-json",
        SCORE,
        "line 1: not JSON",
        prepare=edit_samples(lambda r: r, raw=b"{oops\n"),
        protect=PROTECT,
    ),
    Case(
        "score-samples-not-utf8",
        SCORE,
        "line 1: not valid UTF-8 (invalid continuation byte at byte offset 8)",
        prepare=edit_samples(lambda r: r, raw=b'{"id": "\xc3"}\n'),
        protect=PROTECT,
    ),
    Case(
        "score-samples-list-line",
        SCORE,
        "line 1: expected a JSON object, got list",
        prepare=edit_samples(lambda r: r, raw=b"[1]\n"),
        protect=PROTECT,
    ),
    Case("score-samples-no-id", SCORE, "record 1: field 'id' missing", prepare=edit_samples(_drop_id), protect=PROTECT),
    Case(
        "score-samples-response-list",
        SCORE,
        "record 2: 'response' must be an object",
        prepare=edit_samples(_response([1, 2])),
        protect=PROTECT,
    ),
    Case(
        "score-samples-response-no-counts",
        SCORE,
        "'response' is not a sample_words response",
        prepare=edit_samples(_response({"n_requested": 20})),
        protect=PROTECT,
    ),
    Case(
        "score-samples-counts-strings",
        SCORE,
        "'response' is not a sample_words response",
        prepare=edit_samples(_counts_strings),
        protect=PROTECT,
    ),
    Case(
        "score-samples-lost-instance",
        SCORE,
        "holds 1 instances that are not the 2",
        prepare=edit_samples(lambda r: r[:1]),
        protect=PROTECT,
    ),
    Case(
        "score-samples-reordered",
        SCORE,
        "same ids in the same order",
        prepare=edit_samples(lambda r: r[::-1]),
        protect=PROTECT,
    ),
    Case(
        "score-samples-no-response",
        SCORE,
        "has no response",
        prepare=edit_samples(
            _response_removed := lambda r: [{k: v for k, v in rec.items() if k != "response"} for rec in r]
        ),
        protect=PROTECT,
    ),
    Case("score-target-missing", ("score", "{tmp}/nothing-here"), "nothing-here: not found"),
    Case(
        "score-target-empty-folder",
        ("score", "{tmp}/empty"),
        "no results.json or results_<date>.json here",
        prepare=lambda tmp: (tmp / "empty").mkdir(),
    ),
    Case("score-target-other-file", ("score", "{tmp}/notes.txt"), "notes.txt: not JSON", files={"notes.txt": "hello"}),
    Case(
        "score-unknown-task",
        (*SCORE, "--tasks", "asset-valid"),
        "--tasks: 'asset-valid' is not in",
        prepare=finished_run,
        protect=PROTECT,
    ),
    Case("score-unknown-scorer", (*SCORE, "--scorers", "+nonsense"), "nonsense", prepare=finished_run, protect=PROTECT),
    Case(
        "score-remove-absent-scorer",
        (*SCORE, "--scorers", "-lexical"),
        "has no scorer 'lexical' to remove",
        prepare=finished_run,
        protect=PROTECT,
    ),
    Case(
        "score-request-param",
        (*SCORE, "--task-args", "n_samples=5"),
        "is a request parameter",
        prepare=finished_run,
        protect=PROTECT,
    ),
    Case(
        "leaderboard-empty-folder",
        ("leaderboard", "{tmp}/empty", "-o", "{tmp}/board"),
        "no results.json or results_<date>.json here",
        prepare=lambda tmp: (tmp / "empty").mkdir(),
    ),
    Case("leaderboard-results-folder-missing", ("leaderboard", "{tmp}/missing", "-o", "{tmp}/board"), "missing"),
    Case(
        "score-samples-is-folder",
        SCORE,
        "is a folder, expected a file",
        prepare=then(finished_run, lambda tmp: [(p.unlink(), p.mkdir()) for p in (tmp / RUN).glob("samples_*.jsonl")]),
        protect=("runs/**/results*.json",),
    ),
    Case(
        "score-results-json-is-folder",
        ("score", "{tmp}/runs/x/results.json"),
        "results.json",
        prepare=then(write_bytes("runs/x/placeholder", b""), lambda tmp: (tmp / "runs/x/results.json").mkdir()),
    ),
]
