"""The pragmatics item record both formats are read into, and the checks every item passes whichever format it came
from (exactly one Correct option; the same number of human responses for every item).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.api import HarnessError, shorten_repr
from harness.plugins.loaders.pragmatics_release import SIMPLE_LABELS


@dataclass
class Item:
    """One item as read from either format, before it becomes an instance."""

    phenomenon: str
    item_id: int
    task_code: str
    scenario: str
    options: list[str]
    label_simple: list[str]
    label_complex: list[str]
    counts: list[int]
    #: What the participants were told; empty where it was not read (``descriptions: tsvilodub``, ``hu`` format).
    instructions: str = ""
    maxim: str | None = None
    #: Where the counts were read ("PATH" of the trials or "PATH: line N" of the JSONL), for the errors about them.
    counts_from: str = ""


def check_one_correct(labels: list[str], where: str) -> None:
    """Both formats' check: a target is only defined when exactly one option is keyed Correct."""
    bad = [label for label in labels if label not in SIMPLE_LABELS]
    if bad:
        raise HarnessError(f"{where}: simple label {shorten_repr(bad[0])}, expected Correct or Incorrect")
    n_correct = labels.count("Correct")
    if n_correct != 1:
        raise HarnessError(f"{where}: {n_correct} Correct options, expected exactly one")


def check_same_n(items: list[Item]) -> int:
    """Every participant answered every item, so another total means lost, extra or misnumbered trials."""
    if not items:
        return 0
    first = items[0]
    n = sum(first.counts)
    for item in items:
        total = sum(item.counts)
        if total != n:
            raise HarnessError(
                f"{item.counts_from}: {item.phenomenon} item {item.item_id}: {total} human responses, "
                f"expected {n} like {first.phenomenon} item {first.item_id}"
            )
    return n
