"""Damaged response stores met by a resumed ``harness run`` and by ``harness store check|repair``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.malformed.case import Case, then, write_bytes
from tests.malformed.runs import RUN, edit_store, finished_run, store

RUN_AGAIN = (
    "run", "--tasks", "provo", "--model", "mock:m", "--task-args", "n_samples=20", "--limit", "2",
    "--data-dir", "{data}", "--output-dir", "{tmp}/runs",
)  # fmt: skip
PROTECT = ("runs/**/*",)


def _record(lines: list[str], i: int) -> dict:
    return json.loads(lines[i])


def _conflict(lines: list[str]) -> list[str]:
    record = _record(lines, -1)
    record["response"]["counts"] = {"other": 20}
    return [*lines, json.dumps(record)]


def _second_header(lines: list[str]) -> list[str]:
    return [*lines, lines[0]]


def _header_last(lines: list[str]) -> list[str]:
    return [*lines[1:], lines[0]]


CASES = [
    Case(
        "store-headerless", RUN_AGAIN, "line 1: no header line", prepare=edit_store(lambda ls: ls[1:]), protect=PROTECT
    ),
    Case(
        "store-conflicting-duplicate",
        RUN_AGAIN,
        "again, with another response than line",
        prepare=edit_store(_conflict),
        protect=PROTECT,
    ),
    Case(
        "store-list-record",
        RUN_AGAIN,
        "expected a JSON object, got list",
        prepare=edit_store(lambda ls: [*ls, "[]"]),
        protect=PROTECT,
    ),
    Case(
        "store-string-record",
        RUN_AGAIN,
        "expected a JSON object, got str",
        prepare=edit_store(lambda ls: [*ls, '"text"']),
        protect=PROTECT,
    ),
    Case(
        "store-no-response",
        RUN_AGAIN,
        "record without field 'response'",
        prepare=edit_store(lambda ls: [*ls, '{"id": "x", "seed": 1}']),
        protect=PROTECT,
    ),
    Case(
        "store-no-seed",
        RUN_AGAIN,
        "record without field 'seed'",
        prepare=edit_store(lambda ls: [*ls, '{"id": "x", "response": {}}']),
        protect=PROTECT,
    ),
    Case(
        "store-no-id",
        RUN_AGAIN,
        "record without field 'id'",
        prepare=edit_store(lambda ls: [*ls, '{"seed": 1, "response": {}}']),
        protect=PROTECT,
    ),
    Case(
        "store-not-json-middle",
        RUN_AGAIN,
        "line 2: not JSON",
        prepare=edit_store(lambda ls: [ls[0], "{broken", *ls[1:]]),
        protect=PROTECT,
    ),
    Case(
        "store-not-utf8",
        RUN_AGAIN,
        "line 1: not valid UTF-8 (invalid start byte at byte offset 17)",
        prepare=edit_store(raw=b'{"fingerprint": "\xff"}\n'),
        protect=PROTECT,
    ),
    Case("store-second-header", RUN_AGAIN, "a second header line", prepare=edit_store(_second_header), protect=PROTECT),
    Case(
        "store-header-not-first",
        RUN_AGAIN,
        "the header is not the first line",
        prepare=edit_store(_header_last),
        protect=PROTECT,
    ),
    Case(
        "store-other-fingerprint",
        RUN_AGAIN,
        "written by a run with another configuration",
        prepare=edit_store(lambda ls: ['{"fingerprint": "0000000000000000"}', *ls[1:]]),
        protect=PROTECT,
    ),
    Case(
        "store-response-not-object",
        RUN_AGAIN,
        "'response' is not an object but list",
        prepare=edit_store(lambda ls: [*ls[:-1], json.dumps({**_record(ls, -1), "response": [1]})]),
        protect=PROTECT,
    ),
    Case(
        "store-response-wrong-shape",
        RUN_AGAIN,
        "'response' is not a sample_words response",
        prepare=edit_store(lambda ls: [*ls[:-1], json.dumps({**_record(ls, -1), "response": {"n": 1}})]),
        protect=PROTECT,
    ),
    Case(
        "store-is-folder",
        RUN_AGAIN,
        "expected the response store file",
        prepare=then(finished_run, lambda tmp: _replace_with_folder(tmp)),
        protect=("runs/**/results*.json",),
    ),
    Case("store-check-missing", ("store", "check", "{tmp}/nowhere.jsonl"), "nowhere.jsonl: not found"),
    Case(
        "store-check-no-stores",
        ("store", "check", "{tmp}/empty"),
        "no response stores",
        prepare=lambda tmp: (tmp / "empty").mkdir(),
    ),
    Case(
        "store-repair-not-json",
        ("store", "repair", "{tmp}/" + RUN),
        "cannot be repaired without guessing",
        prepare=edit_store(lambda ls: [*ls, "{broken"]),
        protect=PROTECT,
    ),
    Case(
        "store-repair-no-fields",
        ("store", "repair", "{tmp}/" + RUN),
        "cannot be repaired without guessing",
        prepare=edit_store(lambda ls: [*ls, '{"id": "x"}']),
        protect=PROTECT,
    ),
    Case(
        "store-repair-headerless-unnamed",
        ("store", "repair", "{tmp}/odd.jsonl"),
        "cannot be repaired",
        files={"odd.jsonl": '{"id": "a", "seed": 1, "response": {}}\n'},
        protect=("odd.jsonl",),
    ),
    Case(
        "store-check-not-utf8",
        ("store", "check", "{tmp}/bad.jsonl"),
        "bad.jsonl: line 1: not valid UTF-8 (invalid start byte at byte offset 0)",
        prepare=write_bytes("bad.jsonl", b"\x80\n"),
        protect=("bad.jsonl",),
    ),
]


def _replace_with_folder(tmp: Path) -> None:
    path = store(tmp)
    path.unlink()
    path.mkdir()
