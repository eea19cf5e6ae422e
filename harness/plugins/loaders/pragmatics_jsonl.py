"""Reading the derived ``pragmatics_items_human_counts.jsonl`` (format ``jsonl``) into :class:`Item` records,
checked as the official files are (options 1..n, one Correct, counts summing to N).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.api import HarnessError, shorten_repr
from harness.plugins.loaders.pragmatics_items import Item, check_one_correct
from harness.plugins.loaders.pragmatics_release import N_OPTIONS, PHENOMENA
from harness.plugins.loaders.text_files import file_lines, json_int, jsonl_records


def read_jsonl(path: Path, phenomena: tuple[str, ...]) -> list[Item]:
    """The derived JSONL's items of the requested phenomena, in instance order. Records have no ``id``: they are
    keyed by (phenomenon, item_id), which is checked here."""
    required = ("phenomenon", "task_code", "item_id", "instructions", "scenario", "options")
    seen: dict[tuple[str, int], str] = {}
    items: list[Item] = []
    for where, record in jsonl_records(
        path, file_lines(path), (*required, "target_option_num", "human_n"), unique_id=False
    ):
        phenomenon = record["phenomenon"]
        if phenomenon not in PHENOMENA:
            raise HarnessError(f"{where}: field 'phenomenon': unknown phenomenon {shorten_repr(phenomenon)}")
        item_id = json_int(record["item_id"], where, "item_id")
        if (phenomenon, item_id) in seen:
            first = seen[(phenomenon, item_id)].rsplit(" ", 1)[-1]
            raise HarnessError(f"{where}: {phenomenon} item {item_id} repeated (first at line {first})")
        seen[(phenomenon, item_id)] = where
        if phenomenon in phenomena:
            items.append(_jsonl_item(record, where))
    absent = [p for p in phenomena if not any(item.phenomenon == p for item in items)]
    if absent:
        raise HarnessError(f"{path}: no items for {', '.join(absent)}")
    items.sort(key=lambda item: (PHENOMENA.index(item.phenomenon), item.item_id))
    return items


def _jsonl_item(record: dict[str, Any], line: str) -> Item:
    """One record as an item, checked as the official files are (options 1..n, one Correct, counts summing to N)."""
    phenomenon = record["phenomenon"]
    where = f"{line}: {phenomenon} item {record['item_id']}"
    strings = {name: record[name] for name in ("task_code", "instructions", "scenario")}
    if "maxim" in record:
        strings["maxim"] = record["maxim"]
    for name, value in strings.items():
        if not isinstance(value, str) or not value.strip():
            raise HarnessError(f"{where}: field '{name}': expected a non-empty string")
    options = record["options"]
    n_options = N_OPTIONS[phenomenon]
    if not isinstance(options, list) or len(options) != n_options:
        got = f"{len(options)} options" if isinstance(options, list) else repr(options)[:40]
        raise HarnessError(f"{where}: field 'options': expected a list of {n_options} options, got {got}")
    columns: dict[str, list[Any]] = {"text": [], "label_simple": [], "label_complex": [], "human_count": []}
    for k, option in enumerate(options):
        if not isinstance(option, dict) or option.get("option_num") != k + 1:
            raise HarnessError(f"{where}: field 'options[{k}]': expected an object with option_num {k + 1}")
        for name, values in columns.items():
            value = option.get(name)
            if name == "human_count":
                values.append(json_int(value, where, f"options[{k}].human_count"))
            elif isinstance(value, str) and value.strip():
                values.append(value.strip())
            else:
                raise HarnessError(f"{where}: field 'options[{k}].{name}': expected a non-empty string")
    check_one_correct(columns["label_simple"], where)
    target = json_int(record["target_option_num"], where, "target_option_num")
    if not 1 <= target <= n_options or columns["label_simple"][target - 1] != "Correct":
        raise HarnessError(f"{where}: field 'target_option_num': {target} is not the Correct option")
    human_n = json_int(record["human_n"], where, "human_n")
    if human_n != sum(columns["human_count"]):
        raise HarnessError(f"{where}: field 'human_n': {human_n}, but the counts sum to {sum(columns['human_count'])}")
    return Item(
        phenomenon=phenomenon,
        item_id=record["item_id"],
        task_code=strings["task_code"].strip(),
        scenario=strings["scenario"].strip(),
        options=columns["text"],
        label_simple=columns["label_simple"],
        label_complex=columns["label_complex"],
        counts=columns["human_count"],
        instructions=strings["instructions"].strip(),
        maxim=strings["maxim"].strip() if "maxim" in strings else None,
        counts_from=line,
    )
