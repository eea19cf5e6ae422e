"""How a multiple-choice task shows an item to a model: one prompt structure per item, shared by every method.

A prompt is the task description, the scenario (context and question) and, for the methods that show them, the
options with labels, then the answer cue::

    {description}

    {scenario}

    {options}Answer:

``{options}`` renders as ``Options:\\n1) ...\\n2) ...\\n`` (labels follow the positions of a shuffled order) or as
nothing. The *prior* prompt I0 of the prior-corrected scores is the same template with the scenario removed, so it
keeps the description, the options (when shown) and the cue. Runs of blank lines left by an empty field collapse
to one. Option orders are permutations drawn per item and order index from ``order_seed``: every method sees the
same order for the same index, and an order never depends on the model or on the run seed.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.instances import ChoiceInstance
from harness.seeding import derive_seed

CHOICE_FIELDS: tuple[str, ...] = ("description", "scenario", "options")
RATING_FIELDS: tuple[str, ...] = ("description", "scenario", "option", "rating_labels")
LABEL_STYLES: tuple[str, ...] = ("numbers", "letters")

DEFAULT_PROMPT_TEMPLATE = "{description}\n\n{scenario}\n\n{options}Answer:"
DEFAULT_RATING_TEMPLATE = (
    "{description}\n\n{scenario}\n\nHow would you rate the following answer: {option}\n"
    "Choose one of the following response options: {rating_labels}\nAnswer:"
)


def option_order(instance: ChoiceInstance, index: int, order_seed: int) -> list[int]:
    """The ``index``-th presented order of the item's options, as original option indices (position -> option)."""
    rng = np.random.default_rng(derive_seed("option-order", order_seed, instance.id, index))
    return [int(k) for k in rng.permutation(len(instance.options))]


def option_labels(n: int, style: str) -> list[str]:
    """``1..n`` or ``A..``; the label of position k (labels follow positions, not options)."""
    if style == "numbers":
        return [str(k + 1) for k in range(n)]
    if style == "letters":
        return list(string.ascii_uppercase[:n])
    raise ValueError(f"label style must be one of {', '.join(LABEL_STYLES)}, got {style!r}")


def _collapse(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text).lstrip("\n")


def options_block(options: Sequence[str], order: Sequence[int], labels: Sequence[str]) -> str:
    return "Options:\n" + "".join(f"{label}) {options[k]}\n" for label, k in zip(labels, order, strict=True))


def render_choice_prompt(
    instance: ChoiceInstance,
    params: Mapping[str, Any],
    order: Sequence[int] | None,
    *,
    prior: bool = False,
) -> str:
    """The prompt I (or, with ``prior``, I0: no scenario). ``order`` None hides the options."""
    if order is None:
        block = ""
    else:
        labels = option_labels(len(order), str(params.get("label_style", "numbers")))
        block = options_block(instance.options, order, labels)
    fields = {
        "description": instance.description,
        "scenario": "" if prior else instance.scenario.strip(),
        "options": block,
    }
    return _collapse(str(params.get("prompt_template", DEFAULT_PROMPT_TEMPLATE)).format_map(fields))


def render_rating_prompt(
    instance: ChoiceInstance, params: Mapping[str, Any], option: str, rating_labels: Sequence[str]
) -> str:
    """The prompt asking for a rating of one option on a five-point scale named by ``rating_labels``."""
    fields = {
        "description": instance.description,
        "scenario": instance.scenario.strip(),
        "option": option,
        "rating_labels": ", ".join(rating_labels),
    }
    return _collapse(str(params.get("rating_template", DEFAULT_RATING_TEMPLATE)).format_map(fields))
