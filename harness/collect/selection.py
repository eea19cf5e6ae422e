"""Which stored answers an export keeps, and why the others are left out.

Why one place: every analysis of a study must drop the same answers, so the rules live here and every export
format reads the answers they keep. Kept: answers to main items, by participants not excluded, that are real
answers. Left out and counted: practice and attention-check answers (never data), every answer of an excluded
participant, and empty or timed-out answers (missing, not a response: a skipped word is not a guess of "").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.collect.items import Item

#: The reasons a stored answer is not exported, as the manifest counts them.
LEFT_OUT = ("practice_and_catch", "excluded_participants", "empty", "timed_out")


@dataclass(frozen=True)
class Answer:
    """One exported response: a real answer to a main item's step by a participant who is not excluded."""

    item: Item
    step: int
    answer: str
    #: The which-one game's probability that the true token is the original (already read from the order shown).
    judgment: float | None
    shown_order: str | None
    #: The platform id, or its pseudonym.
    participant: str
    client_ms: int | None
    #: What the server measured: from the participant's previous stored answer (or consent) to this one.
    server_ms: int | None
    #: The response's number in the database (the order answers were received in).
    rid: int


def select_answers(
    kind: str, items: dict[str, Item], rows: list[dict[str, Any]], name: Callable[[str], str]
) -> tuple[list[Answer], dict[str, int]]:
    """The exported answers among ``rows`` (``StudyStore.responses()``), and how many were left out for each of
    :data:`LEFT_OUT`. A which-one round is missing when it has no judgment; other kinds when the answer is empty."""
    counts = dict.fromkeys(LEFT_OUT, 0)
    judged = kind == "which_one_game"
    answers = []
    for row in rows:
        if row["role"] != "main":
            counts["practice_and_catch"] += 1
        elif row["status"] == "excluded":
            counts["excluded_participants"] += 1
        elif row["timed_out"]:
            counts["timed_out"] += 1
        elif (row["judgment"] is None) if judged else not row["answer"]:
            counts["empty"] += 1
        else:
            answers.append(
                Answer(
                    item=items[row["item_id"]],
                    step=int(row["step"]),
                    answer=str(row["answer"]),
                    judgment=None if row["judgment"] is None else float(row["judgment"]),
                    shown_order=row["shown_order"],
                    participant=name(str(row["external_id"])),
                    client_ms=None if row["client_ms"] is None else int(row["client_ms"]),
                    server_ms=None if row["server_ms"] is None else int(row["server_ms"]),
                    rid=int(row["rid"]),
                )
            )
    return answers, counts
