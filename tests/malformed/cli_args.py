"""Command-line arguments: argparse's own errors (one line, like every other), ``--limit``, ``--seed``,
``--batch-size``, ``--model``, ``--tasks``, ``--task-args`` and ``--data-dir``."""

from __future__ import annotations

from tests.malformed.case import FIXTURES, Case, write_bytes

DATA = ("--data-dir", str(FIXTURES))
OUT = ("--output-dir", "{tmp}/out")
MOCK = ("--model", "mock:t")


def run(*args: str) -> tuple[str, ...]:
    """``harness run`` of the Provo task on the fixture data with the mock model, ``args`` added."""
    return ("run", "--tasks", "provo", *MOCK, *DATA, *OUT, "--limit", "2", *args)


def task_args(value: str) -> tuple[str, ...]:
    return run("--task-args", value)


CASES: list[Case] = [
    # ------------------------------------------------------------------------------------ argparse, one line
    Case("cli-no-command", (), "the following arguments are required: command"),
    Case("cli-unknown-command", ("frobnicate",), "argument command: invalid choice: 'frobnicate'"),
    Case(
        "cli-unknown-option", ("run", "--tasks", "provo", *MOCK, "--frobnicate"), "unrecognized arguments: --frobnicate"
    ),
    Case("cli-run-no-tasks", ("run", *MOCK), "the following arguments are required: --tasks"),
    Case("cli-run-no-model", ("run", "--tasks", "provo"), "one of the arguments --model --human-only is required"),
    Case("cli-run-model-and-human", ("run", "--tasks", "provo", *MOCK, "--human-only"), "not allowed with argument"),
    Case("cli-tasks-no-value", ("run", *MOCK, "--tasks"), "argument --tasks: expected one argument"),
    Case("cli-limit-text", run("--limit", "abc"), "argument --limit: invalid int value: 'abc'"),
    Case("cli-limit-fraction", run("--limit", "1.5"), "argument --limit: invalid int value: '1.5'"),
    Case("cli-limit-huge-text", run("--limit", "9" * 100_000), "argument --limit: invalid int value"),
    Case("cli-seed-text", run("--seed", "abc"), "argument --seed: invalid int value: 'abc'"),
    Case("cli-seed-float", run("--seed", "1e3"), "argument --seed: invalid int value: '1e3'"),
    Case(
        "cli-batch-size-zero", run("--batch-size", "0"), "argument --batch-size: expected a positive integer or 'auto'"
    ),
    Case("cli-batch-size-negative", run("--batch-size", "-4"), "argument --batch-size: expected a positive integer"),
    Case("cli-batch-size-text", run("--batch-size", "many"), "argument --batch-size: expected a positive integer"),
    Case("cli-device-bad", run("--device", "gpu"), "argument --device: invalid choice: 'gpu'"),
    Case("cli-ls-bad-choice", ("ls", "everything"), "argument what: invalid choice: 'everything'"),
    Case("cli-validate-no-files", ("validate",), "the following arguments are required: files"),
    # ------------------------------------------------------------------------------------------ run checks
    Case("cli-limit-zero", run("--limit", "0"), "--limit: expected a positive integer, got 0"),
    Case("cli-limit-negative", run("--limit", "-1"), "--limit: expected a positive integer, got -1"),
    Case(
        "cli-model-no-kind",
        ("run", "--tasks", "provo", "--model", "nokind", *DATA, *OUT),
        "--model: expected KIND:NAME",
    ),
    Case(
        "cli-model-empty-name",
        ("run", "--tasks", "provo", "--model", "mock:", *DATA, *OUT),
        "--model: expected KIND:NAME",
    ),
    Case(
        "cli-model-empty-kind", ("run", "--tasks", "provo", "--model", ":x", *DATA, *OUT), "--model: expected KIND:NAME"
    ),
    Case("cli-model-unknown-kind", ("run", "--tasks", "provo", "--model", "unknown:x", *DATA, *OUT), "unknown"),
    Case(
        "cli-human-only-model-args",
        ("run", "--tasks", "provo", "--human-only", "--model-args", "dim=2", *DATA, *OUT),
        "--model-args: not used with --human-only",
    ),
    Case(
        "cli-tasks-unknown", ("run", "--tasks", "nope", *MOCK, *DATA, *OUT), "--tasks: unknown task 'nope' (registered:"
    ),
    Case("cli-tasks-unknown-second", ("run", "--tasks", "provo,provoo", *MOCK, *DATA, *OUT), "unknown task 'provoo'"),
    Case(
        "cli-tasks-twice", ("run", "--tasks", "provo,provo", *MOCK, *DATA, *OUT), "--tasks: task 'provo' is given twice"
    ),
    Case(
        "cli-tasks-missing-yaml", ("run", "--tasks", "{tmp}/nope.yaml", *MOCK, *DATA, *OUT), "nope.yaml does not exist"
    ),
    Case("cli-tasks-empty", ("run", "--tasks", "", *MOCK, *DATA, *OUT), "--tasks"),
    Case("cli-tasks-only-commas", ("run", "--tasks", " , ", *MOCK, *DATA, *OUT), "--tasks"),
    Case(
        "cli-data-dir-empty",
        ("run", "--tasks", "provo", *MOCK, "--data-dir", "", *OUT),
        "--data-dir: expected a folder, got an empty path",
    ),
    Case(
        "cli-data-dir-is-file",
        ("run", "--tasks", "provo", *MOCK, "--data-dir", "{tmp}/file.txt", *OUT),
        "file.txt is a file, expected the folder that holds the data sets",
        {"file.txt": "not a folder\n"},
        protect=("file.txt",),
    ),
    Case(
        "cli-data-dir-missing",
        ("run", "--tasks", "provo", *MOCK, "--data-dir", "{tmp}/nowhere", *OUT),
        "nowhere/provo/: looked for",
    ),
    # ------------------------------------------------------------------------------------------- --task-args
    Case("task-args-no-equals", task_args("n_samples"), "--task-args: field 'n_samples': key=value"),
    Case("task-args-no-key", task_args("=1"), "--task-args: field '=1': key=value"),
    Case("task-args-twice", task_args("n_samples=1,n_samples=2"), "--task-args: field 'n_samples': each key once"),
    Case("task-args-unknown-param", task_args("top_k=5"), "field 'params.top_k': no such parameter"),
    Case("task-args-unknown-scorer", task_args("nope.key=1"), "--task-args: field 'nope.key': a scorer listed in"),
    Case("task-args-unknown-scorer-arg", task_args("tvd.bogus=1"), "field 'scorers[0].args'"),
    Case(
        "task-args-bad-scorer-arg",
        task_args("tvd.n_resamples=0"),
        "argument 'n_resamples': expected a positive integer",
    ),
    Case(
        "task-args-n-samples-huge",
        task_args("n_samples=1e20"),
        "field 'params.n_samples': a positive integer <= 1000000, got '1e20'",
    ),
    Case(
        "task-args-n-samples-text",
        task_args("n_samples=abc"),
        "field 'params.n_samples': a positive integer, got 'abc'",
    ),
    Case("task-args-n-samples-empty", task_args("n_samples="), "field 'params.n_samples': a positive integer, got ''"),
    Case("task-args-n-samples-nan", task_args("n_samples=nan"), "field 'params.n_samples'"),
    Case(
        "task-args-temperature-tiny", task_args("temperature=1e-300"), "greedy decoding is the generate setting top_k=1"
    ),
    Case("task-args-temperature-inf", task_args("temperature=inf"), "field 'params.temperature'"),
    Case("task-args-temperature-nan", task_args("temperature=.nan"), "field 'params.temperature'"),
    Case(
        "task-args-max-new-tokens-huge",
        task_args("max_new_tokens=1000000000"),
        "field 'params.max_new_tokens': a positive integer <= 1024",
    ),
    Case("task-args-alias", task_args("n_samples=&a [*a]"), "field 'params.n_samples': a positive integer"),
    Case("task-args-deep", task_args("n_samples=" + "[" * 5000), "field 'params.n_samples': a positive integer"),
    Case("task-args-huge-value", task_args("mode=" + "x" * 200_000), "field 'params.mode': one of 'exact', 'paper'"),
    Case(
        "task-args-generate-top-p",
        (
            "run",
            "--tasks",
            "asset-valid",
            *MOCK,
            "--data-dir",
            str(FIXTURES / "asset"),
            *OUT,
            "--task-args",
            "decoding=top_p=2",
        ),
        "top_p must be in (0, 1]",
    ),
    Case(
        "task-args-generate-temperature-tiny",
        (
            "run",
            "--tasks",
            "asset-valid",
            *MOCK,
            "--data-dir",
            str(FIXTURES / "asset"),
            *OUT,
            "--task-args",
            "decoding=temperature=1e-300",
        ),
        "greedy decoding is the generate setting top_k=1",
    ),
    Case(
        "validate-second-file-bad",
        ("validate", str(FIXTURES.parents[1] / "harness" / "tasks" / "provo.yaml"), "{tmp}/bad.yaml"),
        "bad.yaml: field 'version'",
        prepare=write_bytes(
            "bad.yaml", "task: bad\nversion: -1\nloader: provo\nrequest: sample_words\nscorers: [tvd]\n"
        ),
    ),
]
