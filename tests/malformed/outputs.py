"""Output paths that cannot be written: a file where a folder goes, a folder under a file, a damaged results
file already in the output folder."""

from __future__ import annotations

from pathlib import Path

from tests.malformed.case import Case, then, write_bytes
from tests.malformed.runs import RUN, finished_run

MOCK_RUN = ("run", "--tasks", "provo", "--model", "mock:m", "--limit", "2", "--data-dir", "{data}")
HUMAN_RUN = ("run", "--tasks", "provo", "--human-only", "--limit", "2", "--data-dir", "{data}")


OLD = "runs/mock__m/results_2020-01-01T00-00-00.000000.json"


def _damage_invocation(tmp: Path) -> None:
    """An older invocation's results file in the folder, damaged."""
    finished_run(tmp)
    (tmp / OLD).write_text("{}")


def _damage_merged(tmp: Path) -> None:
    finished_run(tmp)
    (tmp / RUN / "results.json").write_bytes(b"\xff\xfe")


CASES = [
    Case(
        "run-output-is-file",
        (*MOCK_RUN, "--output-dir", "{tmp}/out"),
        "--output-dir",
        files={"out": "x"},
        protect=("out",),
    ),
    Case(
        "run-output-model-folder-is-file",
        (*MOCK_RUN, "--output-dir", "{tmp}/out"),
        "is a file, expected a folder",
        files={"out/mock__m": "x"},
        protect=("out/mock__m",),
    ),
    Case(
        "run-output-under-file",
        (*MOCK_RUN, "--output-dir", "{tmp}/file/below"),
        "a part of the path is a file",
        files={"file": "x"},
        protect=("file",),
    ),
    Case(
        "human-output-is-file",
        (*HUMAN_RUN, "--output-dir", "{tmp}/out"),
        "is a file, expected a folder",
        files={"out/human": "x"},
        protect=("out/human",),
    ),
    Case(
        "human-output-under-file",
        (*HUMAN_RUN, "--output-dir", "{tmp}/f/g"),
        "a part of the path is a file",
        files={"f": "x"},
    ),
    Case(
        "score-output-is-file",
        ("score", "{tmp}/" + RUN, "--output-dir", "{tmp}/out"),
        "--output-dir",
        prepare=then(finished_run, write_bytes("out", "x")),
        protect=("out", "runs/**/*"),
    ),
    Case(
        "leaderboard-output-is-file",
        ("leaderboard", "{tmp}/" + RUN, "-o", "{tmp}/board"),
        "-o",
        prepare=then(finished_run, write_bytes("board", "x")),
        protect=("board", "runs/**/*"),
    ),
    Case(
        "leaderboard-output-under-file",
        ("leaderboard", "{tmp}/" + RUN, "-o", "{tmp}/board/x"),
        "a part of the path is a file",
        prepare=then(finished_run, write_bytes("board", "x")),
        protect=("board",),
    ),
    Case(
        "run-into-folder-with-damaged-results",
        (*MOCK_RUN, "--task-args", "n_samples=20", "--output-dir", "{tmp}/runs"),
        "field 'metrics' missing",
        prepare=_damage_invocation,
        protect=(OLD, "runs/mock__m/results.json"),
    ),
    Case(
        "run-into-folder-with-damaged-merged-results",
        (*MOCK_RUN, "--task-args", "n_samples=20", "--output-dir", "{tmp}/runs"),
        "not valid UTF-8",
        prepare=_damage_merged,
        protect=("runs/mock__m/results.json",),
    ),
    Case(
        "store-folder-under-file",
        (*MOCK_RUN, "--output-dir", "{tmp}/runs"),
        "cannot create the store's folder",
        files={"runs/mock__m/responses": "x"},
        protect=("runs/mock__m/responses",),
    ),
]
