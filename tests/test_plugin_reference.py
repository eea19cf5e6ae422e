"""docs/plugins.md's reference of the types a plugin reads and returns is generated from the types, and complete."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness import api
from harness.api_reference import BEGIN, END, GROUPS, field_comments, field_meanings, render, replace_block

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "plugins.md"


def test_the_page_holds_the_reference_generated_from_the_types() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert block == render(), "docs/plugins.md is stale: run python -m harness.api_reference --write docs/plugins.md"


def test_every_dataclass_of_the_api_is_in_the_reference() -> None:
    listed = {cls for _, _, types in GROUPS for cls in types}
    exported = {getattr(api, name) for name in api.__all__}
    dataclasses_exported = {obj for obj in exported if isinstance(obj, type) and dataclasses.is_dataclass(obj)}
    assert sorted(c.__name__ for c in dataclasses_exported - listed) == []


@pytest.mark.parametrize("cls", [cls for _, _, types in GROUPS for cls in types], ids=lambda c: c.__name__)
def test_every_field_says_what_it_means(cls: type) -> None:
    comments = field_meanings(cls)
    missing = [f.name for f in dataclasses.fields(cls) if not comments.get(f.name)]
    assert missing == [], f"{cls.__name__}: fields without a #: comment: {missing}"


def test_a_field_comment_and_the_block_replacement_work_on_a_small_case() -> None:
    class_comments = field_comments(api.LoadedData)
    assert sorted(class_comments) == ["data_hash", "instances", "source"]
    # A comment of two lines is joined into one.
    assert class_comments["source"].startswith("Human-readable description of what was read (paths, format), for ")
    assert "\n" not in class_comments["source"] and "#:" not in class_comments["source"]
    page = f"intro\n{BEGIN}\nold\n{END}\nafter\n"
    assert replace_block(page, f"{BEGIN}\nnew\n{END}") == f"intro\n{BEGIN}\nnew\n{END}\nafter\n"
    with pytest.raises(ValueError, match="no generated block"):
        replace_block("no markers", "x")
