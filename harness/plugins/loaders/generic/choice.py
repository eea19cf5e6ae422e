"""``generic_choice``: multiple-choice tasks over any data set of people's choices, for ``multiple_choice``.

An item is a text shown to the model (``text``: a column, or a template joining several, e.g. a premise and a
hypothesis), its options, the people's choices and the target (intended) option. The options are a list column,
a list template, or fixed in the task file: a list of texts, or a mapping from the keys the data uses to the text
shown to the model (``{e: entailment, n: neutral, c: contradiction}``). The people's choices (``human``) and the
target name options by key (``option_keys``, by default the mapping's keys or the option texts); without ``target``
or ``target_index`` the item has no target, and the metrics defined against one are left out; a ``counts`` (or
``proportions``) list alone gives one number per option, in option order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.api import ChoiceInstance, HarnessError, LoadedData, Option, Options, optional, shorten_repr, takes_options
from harness.plugins.loaders.generic.build import (
    BASE_OPTIONS,
    GenericLoader,
    Group,
    Tally,
    instance_id,
    meta_of,
    text,
    whole_number,
)
from harness.plugins.loaders.generic.fields import Field, RowError, column_or_template, list_field, text_or_template
from harness.plugins.loaders.generic.human import Productions, option_counts, people, recover_counts, weights_label
from harness.plugins.loaders.generic.normalise import Normaliser

LOADER = "generic_choice"
DEFAULTS = Normaliser(case="keep", punctuation="keep")


@dataclass(frozen=True)
class FixedOptions:
    """Options fixed in the task file as a mapping: the texts shown to the model and the keys the data uses."""

    texts: tuple[str, ...]
    keys: tuple[str, ...]


def _options(value: Any) -> Field:
    if isinstance(value, Mapping):
        if not value or not all(isinstance(k, (str, int)) and isinstance(v, str) and v for k, v in value.items()):
            raise ValueError(f"expected a mapping of keys to option texts, got {shorten_repr(value)}")
        fixed = FixedOptions(tuple(value.values()), tuple(str(k) for k in value))
        return Field("options", constant=fixed, given=str(value))
    return list_field("options")(value)


_options.type_name = "column | template | list | {key: text}"  # type: ignore[attr-defined]

OPTIONS = BASE_OPTIONS | Options(
    Option("text", optional(column_or_template("text")), None, "what the item asks: a column or a template"),
    Option(
        "description",
        text_or_template("description"),
        Field("description", constant=""),
        "the task description a prompt opens with",
    ),
    Option("options", optional(_options), None, "the options (required): column, template, list or mapping"),
    Option("option_keys", optional(list_field("option_keys")), None, "the keys the data names options by"),
    Option("option_types", optional(list_field("option_types")), None, "a finer label per option (kept)"),
    Option("target", optional(column_or_template("target")), None, "the target option's key"),
    Option("target_index", optional(column_or_template("target_index", native=True)), None, "or its index from 0"),
    Option("group", optional(column_or_template("group")), None, "the item's group (metrics per group)"),
    Option("item_id", optional(column_or_template("item_id", native=True)), None, "the item's number"),
)


def _check(parsed: Mapping[str, Any]) -> None:
    if parsed["target"] is not None and parsed["target_index"] is not None:
        raise HarnessError(f"data options of loader '{LOADER}': give 'target' or 'target_index', not both")


def _texts(value: Any, where: str, name: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not value:
        raise RowError(f"{where}: field '{name}': expected a non-empty list, got {shorten_repr(value)}")
    return tuple(text(v, where, f"{name}[{k}]") for k, v in enumerate(value))


def choice_instance(group: Group, parsed: Mapping[str, Any], normaliser: Normaliser, tally: Tally) -> ChoiceInstance:
    where = group.where
    options_field: Field = parsed["options"]
    value = group.same(options_field)
    keys: tuple[str, ...] | None = None
    if isinstance(value, FixedOptions):
        options, keys = value.texts, value.keys
    else:
        options = _texts(value, where, "options")
    if len(options) < 2:
        raise RowError(f"{where}: field 'options': an item needs at least 2 options, got {len(options)}")
    if parsed["option_keys"] is not None:
        keys = _texts(group.same(parsed["option_keys"]), where, "option_keys")
        if len(keys) != len(options):
            raise RowError(f"{where}: field 'option_keys': {len(keys)} keys for {len(options)} options")
    keys = keys or options
    index_of = {normaliser.steps(k): i for i, k in enumerate(keys)}
    if len(index_of) != len(keys):
        raise RowError(f"{where}: field 'option_keys': two options have the same key ({', '.join(keys)})")

    def option_index(key: Any, field: str) -> int | None:
        kept = normaliser.apply(text(key, where, field, required=False))
        if kept is None:
            return None
        found = index_of.get(kept)
        if found is None:
            raise RowError(
                f"{where}: field '{field}': {shorten_repr(key)} is not an option key (keys: {', '.join(keys)})"
            )
        return found

    target: int | None = None  # neither given: the data names no target (a label distribution)
    if parsed["target"] is not None:
        target = option_index(group.same(parsed["target"]), "target")
        if target is None:
            raise RowError(f"{where}: field 'target': empty")
    elif parsed["target_index"] is not None:
        raw = group.same(parsed["target_index"])
        expected = f"an index from 0 to {len(options) - 1}"
        target = whole_number(raw, where, "target_index", expected)
        if not 0 <= target < len(options):
            raise RowError(f"{where}: field 'target_index': expected {expected}, got {shorten_repr(raw)}")

    counts, known, reason, missing = _choice_counts(group, parsed, option_index, len(options))
    tally.counted(known, reason)
    types: tuple[str, ...] = ()
    if parsed["option_types"] is not None:
        types = _texts(group.same(parsed["option_types"]), where, "option_types")
        if len(types) != len(options):
            raise RowError(f"{where}: field 'option_types': {len(types)} types for {len(options)} options")
    item_id = tally.next_number()
    if parsed["item_id"] is not None:
        item_id = whole_number(group.same(parsed["item_id"]), where, "item_id")
    meta = meta_of(parsed["meta"], group)
    if missing:
        meta["n_human_missing"] = missing
    phenomenon = text(group.same(parsed["group"]), where, "group", required=False) if parsed["group"] else ""
    return ChoiceInstance(
        id=instance_id(parsed["id"], group),
        phenomenon=phenomenon,
        item_id=item_id,
        description=text(group.same(parsed["description"]), where, "description", required=False),
        scenario=text(group.same(parsed["text"]), where, "text"),
        options=options,
        option_types=types,
        target=target,
        human_counts=counts,
        meta=meta,
        **({} if known else {"counts_known": False}),
    )


def _choice_counts(
    group: Group, parsed: Mapping[str, Any], option_index: Any, n_options: int
) -> tuple[tuple[Any, ...], bool, str, float]:
    """Per-option counts (or proportions), whether they are counts, why not, and the weight of no-answers."""
    spec = parsed["human"]
    where = group.where
    aligned = option_counts(spec, group.first(), where)
    found = Productions(proportions=spec.uses_proportions())
    if aligned is not None:
        if len(group.rows) > 1:
            raise RowError(f"{where}: field 'human': one number per option needs one row per item (no group_by)")
        if len(aligned) != n_options:
            raise RowError(f"{where}: field 'human': {len(aligned)} numbers for {n_options} options")
        found.items = list(enumerate(aligned))
        found.n_people = people(spec, group.first(), where)
        found.read_at(where, weights_label(spec))
        by_index = True
    else:
        found = group.productions(spec)
        by_index = False
    counted = recover_counts(found)
    totals = [0.0] * n_options
    missing = 0.0
    for response, weight in counted.items:
        index = response if by_index else option_index(response, "human.responses")
        if index is None:
            missing += weight
        else:
            totals[index] += weight
    if sum(totals) <= 0:
        raise RowError(f"{where}: field 'human': no choices (every count is 0 or no answer)")
    number = int if counted.counts_known else float
    return tuple(number(t) for t in totals), counted.counts_known, counted.reason, number(missing)


GENERIC = GenericLoader(LOADER, OPTIONS, DEFAULTS, ("text", "options", "human"), choice_instance, _check)


@takes_options(OPTIONS, name=LOADER, check_data=GENERIC.check_data)
def load_generic_choice(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """Multiple-choice instances from the rows the options name (``docs/your-data.md``)."""
    return GENERIC.load_parsed(options, data_dir)
