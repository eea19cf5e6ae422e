"""``generic_generation``: generation tasks (translation, simplification, stories, dialogue) over any data set
with several human productions per input, for ``generate``.

The input is a column or a template over several columns (``source``), or a dialogue's turns (``turns``, a list
column, earliest first); the productions (``human``) are texts, kept in the data's order. A production given with
a count is repeated that many times (identical productions by different people are part of the variability);
proportions cannot be, since the probes compare individual productions. Productions are stripped of surrounding
whitespace and dropped (and counted in ``n_human_missing``) when the normalisation's ``no_answer`` says so; case
and punctuation are kept unless the task says otherwise, as the model's outputs are compared as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.api import GenerationInstance, HarnessError, LoadedData, Option, Options, optional, takes_options
from harness.plugins.loaders.generic.build import (
    BASE_OPTIONS,
    GenericLoader,
    Group,
    Tally,
    instance_id,
    meta_of,
    text,
)
from harness.plugins.loaders.generic.fields import Field, RowError, column_or_template, text_or_template
from harness.plugins.loaders.generic.normalise import Normaliser

LOADER = "generic_generation"
DEFAULTS = Normaliser(case="keep", punctuation="keep")

OPTIONS = BASE_OPTIONS | Options(
    Option("source", optional(column_or_template("source")), None, "the input: a column or a template"),
    Option("turns", optional(column_or_template("turns", native=True)), None, "a dialogue: a list column of turns"),
    Option(
        "language",
        text_or_template("language"),
        Field("language", constant="en", given="en"),
        "language code of the productions (en, de, ...)",
    ),
)


def _check(parsed: Mapping[str, Any]) -> None:
    if (parsed["source"] is None) == (parsed["turns"] is None):
        raise HarnessError(f"data options of loader '{LOADER}': give exactly one of 'source' and 'turns'")
    if parsed["human"].uses_proportions():
        raise HarnessError(
            f"data options of loader '{LOADER}': 'human': generation needs the productions themselves, "
            "not their proportions (the probes compare individual texts)"
        )


def generation_instance(
    group: Group, parsed: Mapping[str, Any], normaliser: Normaliser, tally: Tally
) -> GenerationInstance:
    where = group.where
    turns: tuple[str, ...] = ()
    source = ""
    if parsed["turns"] is not None:
        value = group.same(parsed["turns"])
        if not isinstance(value, (list, tuple)) or not value:
            raise RowError(f"{where}: field 'turns': expected a non-empty list of turns")
        turns = tuple(text(t, where, f"turns[{k}]").strip() for k, t in enumerate(value))
    else:
        source = text(group.same(parsed["source"]), where, "source").strip()
    found = group.productions(parsed["human"])
    references: list[str] = []
    missing = 0
    for response, count in found.items:
        kept = normaliser.apply(str(response))
        if kept is None:
            missing += int(count)
        else:
            references.extend([kept] * int(count))
    if not references:
        raise RowError(f"{where}: field 'human.responses': no human productions left (empty or no answer)")
    language = text(group.same(parsed["language"]), where, "language")
    meta = meta_of(parsed["meta"], group)
    if missing:
        meta["n_human_missing"] = missing
    return GenerationInstance(
        id=instance_id(parsed["id"], group),
        source=source,
        turns=turns,
        references=tuple(references),
        language=language,
        meta=meta,
    )


GENERIC = GenericLoader(LOADER, OPTIONS, DEFAULTS, ("human",), generation_instance, _check)


@takes_options(OPTIONS, name=LOADER, check_data=GENERIC.check_data)
def load_generic_generation(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """Generation instances from the rows the options name (``docs/your-data.md``)."""
    return GENERIC.load_parsed(options, data_dir)
