"""The response store keeps every finished record across kills, and never mixes configurations."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.outputs.store import ResponseStore


def test_roundtrip_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    store = ResponseStore(path, "fp1", {"task": "t"})
    store.append("a", 1, {"counts": {"x": 2}})
    store.append("b", 2, {"counts": {"y": 1}})
    again = ResponseStore(path, "fp1", {"task": "t"})
    assert "a" in again and "b" in again and "c" not in again
    assert again.get("b") == {"id": "b", "seed": 2, "response": {"counts": {"y": 1}}}


def test_partial_last_line_from_a_kill_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    store = ResponseStore(path, "fp1", {})
    store.append("a", 1, {"v": 1})
    with path.open("ab") as f:
        f.write(b'{"id": "b", "seed": 2, "resp')  # a write cut short by SIGKILL
    again = ResponseStore(path, "fp1", {})
    assert list(again.records) == ["a"]
    again.append("b", 2, {"v": 2})
    assert list(ResponseStore(path, "fp1", {}).records) == ["a", "b"]


def test_other_configuration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    ResponseStore(path, "fp1", {})
    with pytest.raises(HarnessError, match="another configuration"):
        ResponseStore(path, "fp2", {})


def test_corruption_in_the_middle_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"fingerprint": "fp1"}\nnot json\n{"id": "a", "seed": 1, "response": {}}\n')
    with pytest.raises(HarnessError, match=r"r.jsonl: line 2: not JSON"):
        ResponseStore(path, "fp1", {})
