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

from harness.data import LoadedData, takes_options
from harness.errors import HarnessError
from harness.instances import GenerationInstance, Instance
from harness.options import Option, Options, optional
from plugins.loaders.generic.build import (
    COMMON_OPTIONS,
    Group,
    build_all,
    data_check,
    groups,
    instance_id,
    meta_of,
    require,
    text,
    with_extra_files,
)
from plugins.loaders.generic.fields import Field, RowError, column_or_template, text_or_template
from plugins.loaders.generic.normalise import Normaliser, build_normaliser
from plugins.loaders.generic.table import SOURCE_OPTIONS, read_table

LOADER = "generic_generation"
DEFAULTS = Normaliser(case="keep", punctuation="keep")

OPTIONS = (
    SOURCE_OPTIONS
    | COMMON_OPTIONS
    | Options(
        Option("source", optional(column_or_template("source")), None, "the input: a column or a template"),
        Option("turns", optional(column_or_template("turns", native=True)), None, "a dialogue: a list column of turns"),
        Option(
            "language",
            text_or_template("language"),
            Field("language", constant="en", given="en"),
            "language code of the productions (en, de, ...)",
        ),
    )
)


def _load(options: Mapping[str, Any], data_dir: Path, max_rows: int | None = None) -> LoadedData:
    """Generation instances from the rows the options name (see ``docs/your-data.md``)."""
    parsed = OPTIONS.parse(options, f"data options of loader '{LOADER}'")
    require(parsed, ("human",), LOADER)
    if (parsed["source"] is None) == (parsed["turns"] is None):
        raise HarnessError(f"data options of loader '{LOADER}': give exactly one of 'source' and 'turns'")
    if parsed["human"].uses_proportions():
        raise HarnessError(
            f"data options of loader '{LOADER}': 'human': generation needs the productions themselves, "
            "not their proportions (the probes compare individual texts)"
        )
    table = read_table(options, data_dir, LOADER, max_rows=max_rows)
    normaliser = build_normaliser(parsed["normalise"], DEFAULTS, data_dir)

    def build(group: Group) -> GenerationInstance:
        return generation_instance(group, parsed, normaliser)

    instances: list[Instance] = list(build_all(groups(table, parsed["group_by"]), build, LOADER))
    source = {"loader": LOADER, **table.source, "normalise": normaliser.describe(), "n_instances": len(instances)}
    return LoadedData(instances, with_extra_files(table.data_hash, normaliser), source)


def generation_instance(group: Group, parsed: Mapping[str, Any], normaliser: Normaliser) -> GenerationInstance:
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


@takes_options(OPTIONS, name=LOADER, check_data=data_check(_load))
def load_generic_generation(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """The ``generation`` instances of a task's data (``docs/your-data.md``)."""
    return _load(options, data_dir)
