"""Reading the official Hu et al. release (format ``hu``): the ``fj_raw_data`` item files and the trial-level
choices in ``human_data/fj``, counted per item, into :class:`Item` records.

The ``.txt`` files are spreadsheet exports: tab-separated, no header, some with CR line endings, and a cell holding
quotes is wrapped in quotes with the inner ones doubled, so they are read as tab-separated CSV; a Maxims scenario
even holds a CR inside its quoted cell. Their columns differ by phenomenon (Maxims scenarios and options have no
task-code column, Metaphor's simple key repeats the option text, Deceits' and Metaphor's complex keys repeat the
scenario), so each file is read by name through ``_COLUMNS`` and a row with another number of cells is an error
rather than a silently shifted column. CoherenceInference has no options file: every item asks whether two sentences
are "Coherent" (option 1) or "Incoherent" (option 2), its simple key names the right one, and the wrong one is typed
``IncorrectCoherent`` or ``IncorrectIncoherent`` (after its text) as in the derived JSONL. The
``Deceits*_Control.txt`` files hold literal control items with no human data and are not read. Texts are stripped of
whitespace at both ends (cells end in spaces and stray CRs) and otherwise kept exactly as released.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from harness.api import DataNotFoundError, HarnessError, shorten_repr
from harness.plugins.loaders.pragmatics_items import Item, check_one_correct
from harness.plugins.loaders.pragmatics_release import (
    COHERENCE_OPTIONS,
    HU_DIR,
    HU_REPO_URL,
    HUMAN_DIR,
    N_OPTIONS,
    RAW_DIR,
    TASK_CODES,
)
from harness.plugins.loaders.text_files import read_utf8

# The cells of each item file, by phenomenon where it differs from the default ("_" cells are read but unused).
_DEFAULT_COLUMNS: dict[str, tuple[str, ...]] = {
    "Scenarios": ("code", "item", "text"),
    "Options": ("code", "item", "option", "text"),
    "KeySimple": ("code", "item", "option", "label"),
    "KeyComplex": ("code", "item", "option", "label"),
}
_COLUMNS: dict[tuple[str, str], tuple[str, ...]] = {
    ("Maxims", "Scenarios"): ("item", "text"),
    ("Maxims", "Options"): ("item", "option", "text"),
    ("Maxims", "KeyComplex"): ("code", "item", "option", "label", "maxim"),
    ("Metaphor", "KeySimple"): ("code", "item", "option", "_", "label"),
    ("Metaphor", "KeyComplex"): ("code", "item", "option", "_", "_", "_", "label"),
    ("Deceits", "KeyComplex"): ("code", "item", "option", "label", "_", "_"),
    ("CoherenceInference", "KeySimple"): ("code", "item", "label"),
}


def hu_paths(root: Path, phenomenon: str, instructions: bool) -> dict[str, Path]:
    """The files read for one phenomenon, keyed by kind."""
    raw = root / RAW_DIR
    kinds = ["Scenarios", "KeySimple"]
    if phenomenon != "CoherenceInference":  # it has neither: both follow from its simple key
        kinds += ["Options", "KeyComplex"]
    if instructions:
        kinds.append("Instructions")
    paths = {kind: raw / f"{phenomenon}{kind}.txt" for kind in kinds}
    paths["Human"] = root / HUMAN_DIR / f"Human_{phenomenon}.csv"
    return paths


def read_hu(
    root: Path, phenomena: tuple[str, ...], instructions: bool, files: list[Path], note: str = ""
) -> list[Item]:
    """All items of the requested phenomena from the official release, in instance order."""
    per_phenomenon = {p: hu_paths(root, p, instructions) for p in phenomena}
    wanted = [path for paths in per_phenomenon.values() for path in paths.values()]
    missing = [str(path.relative_to(root)) for path in wanted if not path.is_file()]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise DataNotFoundError(
            f"pragmatics-mcq data (format hu) incomplete under {root}: missing {shown}. The official files are "
            f"fj_raw_data/ and human_data/fj/ of {HU_REPO_URL}, in {HU_DIR}/ there; 'harness data fetch "
            "pragmatics-mcq' downloads them." + note
        )
    items: list[Item] = []
    for phenomenon, paths in per_phenomenon.items():
        items.extend(_read_hu_phenomenon(phenomenon, paths))
        files.extend(paths.values())
    return items


_Table = dict[int, dict[int, dict[str, str]]]  # item -> option number -> named cells


def _read_hu_phenomenon(phenomenon: str, paths: dict[str, Path]) -> list[Item]:
    """One phenomenon's items: scenario, options and keys joined on (item, option), then the counted choices."""
    n_options = N_OPTIONS[phenomenon]
    scenarios: dict[int, str] = {}
    for where, item, _, row in _rows(paths["Scenarios"], phenomenon, "Scenarios"):
        if item in scenarios:
            raise HarnessError(f"{where}: item {item} repeated")
        scenarios[item] = row["text"]
    if phenomenon == "CoherenceInference":
        options, simple, complex_ = _coherence_tables(paths["KeySimple"])
        tables = {"KeySimple": simple}
    else:
        tables = {kind: _table(paths[kind], phenomenon, kind) for kind in ("Options", "KeySimple", "KeyComplex")}
        options, simple, complex_ = tables["Options"], tables["KeySimple"], tables["KeyComplex"]
    numbers = list(range(1, n_options + 1))
    for kind, table in tables.items():
        extra = sorted(set(table) - set(scenarios))
        if extra:
            raise HarnessError(f"{paths[kind]}: item {extra[0]}: not in {paths['Scenarios'].name}")
        for item_id in sorted(scenarios):
            got = sorted(table.get(item_id, {}))
            if got != numbers:
                raise HarnessError(
                    f"{paths[kind]}: item {item_id}: option numbers {got}, expected 1 to {n_options} for {phenomenon}"
                )
    counts = _count_choices(paths["Human"], phenomenon, set(scenarios))
    instructions = ""
    if "Instructions" in paths:
        instructions = read_utf8(paths["Instructions"], "data file").strip()

    items: list[Item] = []
    for item_id in sorted(scenarios):
        label_simple = [simple[item_id][k]["label"] for k in numbers]
        check_one_correct(label_simple, f"{paths['KeySimple']}: item {item_id}")
        maxim = None
        if phenomenon == "Maxims":
            maxims = {complex_[item_id][k]["maxim"] for k in numbers}
            if len(maxims) != 1:
                raise HarnessError(f"{paths['KeyComplex']}: item {item_id}: maxims {sorted(maxims)}, expected one")
            (maxim,) = maxims
        items.append(
            Item(
                phenomenon=phenomenon,
                item_id=item_id,
                task_code=TASK_CODES[phenomenon],
                scenario=scenarios[item_id],
                options=[options[item_id][k]["text"] for k in numbers],
                label_simple=label_simple,
                label_complex=[complex_[item_id][k]["label"] for k in numbers],
                counts=counts.get(item_id, [0] * n_options),
                instructions=instructions,
                maxim=maxim,
                counts_from=str(paths["Human"]),
            )
        )
    return items


def _table(path: Path, phenomenon: str, kind: str) -> _Table:
    """An options or key file by item and option number. The keys are not in option order, so no order is assumed."""
    table: _Table = {}
    for where, item, option, row in _rows(path, phenomenon, kind):
        if option is None:  # pragma: no cover - every layout of these kinds has an option column
            raise HarnessError(f"{where}: no option number")
        if option in table.setdefault(item, {}):
            raise HarnessError(f"{where}: item {item} option {option} repeated")
        table[item][option] = row
    return table


def _coherence_tables(path: Path) -> tuple[_Table, _Table, _Table]:
    """Options, simple and complex keys of CoherenceInference, all made from its simple key.

    Each row names the right answer; the other option is typed ``Incorrect<its text>`` (``IncorrectIncoherent``
    for a coherent pair), as the derived JSONL types it, so the two formats agree.
    """
    options: _Table = {}
    simple: _Table = {}
    complex_: _Table = {}
    for where, item, _, row in _rows(path, "CoherenceInference", "KeySimple"):
        if item in simple:
            raise HarnessError(f"{where}: item {item} repeated")
        answer = row["label"]
        if answer not in COHERENCE_OPTIONS:
            raise HarnessError(f"{where}: item {item}: key {shorten_repr(answer)}, expected Coherent or Incoherent")
        options[item], simple[item], complex_[item] = {}, {}, {}
        for k, text in enumerate(COHERENCE_OPTIONS, start=1):
            options[item][k] = {"text": text}
            simple[item][k] = {"label": "Correct" if text == answer else "Incorrect"}
            complex_[item][k] = {"label": "Correct" if text == answer else f"Incorrect{text}"}
    return options, simple, complex_


def _rows(path: Path, phenomenon: str, kind: str) -> list[tuple[str, int, int | None, dict[str, str]]]:
    """``(where, item, option number or None, named cells)`` for each row of an item file.

    Cells are stripped; ``_`` columns (texts the file repeats from another) are dropped. A task code other than
    the phenomenon's means another phenomenon's file, so it is an error.
    """
    columns = _COLUMNS.get((phenomenon, kind), _DEFAULT_COLUMNS[kind])
    code = TASK_CODES[phenomenon]
    # newline="" splits lines at CR, LF and CRLF alike and leaves a CR inside a quoted cell to the csv module;
    # strict makes a stray quote an error instead of a cell that runs on.
    text = read_utf8(path, "data file")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", strict=True)
    out: list[tuple[str, int, int | None, dict[str, str]]] = []
    try:
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue
            where = f"{path}: line {reader.line_num}"
            if len(cells) != len(columns):
                named = ", ".join(c for c in columns if c != "_")
                raise HarnessError(f"{where}: {len(cells)} tab-separated cells, expected {len(columns)} ({named}, ...)")
            row = {name: cell.strip() for name, cell in zip(columns, cells, strict=True) if name != "_"}
            if "code" in row and row["code"] != code:
                raise HarnessError(
                    f"{where}: task code {shorten_repr(row['code'])}, expected {code!r} for {phenomenon}"
                )
            empty = [name for name in ("text", "label", "maxim") if row.get(name) == ""]
            if empty:
                raise HarnessError(f"{where}: the {empty[0]} cell is empty")
            broken = [name for name, cell in row.items() if "\n" in cell or "\r" in cell]
            if broken:  # no released cell has one once stripped; a quote opened and never closed makes one
                raise HarnessError(f"{where}: a line break inside the {broken[0]} cell (an unclosed quote?)")
            item = _number(row["item"], where, "item")
            option = _number(row["option"], where, "option") if "option" in row else None
            out.append((where, item, option, row))
    except csv.Error as exc:  # text after a closing quote, or a quote never closed
        raise HarnessError(f"{path}: line {reader.line_num}: not readable as tab-separated cells ({exc})") from None
    return out


def _number(cell: str, where: str, name: str) -> int:
    if not cell.isdigit():
        raise HarnessError(f"{where}: {name} {shorten_repr(cell)}: expected a positive integer")
    return int(cell)


def _count_choices(path: Path, phenomenon: str, items: set[int]) -> dict[int, list[int]]:
    """Per item, how many participants chose each option (``Answer<k>``, or Coherent/Incoherent as options 1/2).

    The trials' ``Correct`` cells are not read: the key decides which option is the target.
    """
    n_options, code = N_OPTIONS[phenomenon], TASK_CODES[phenomenon]
    if phenomenon == "CoherenceInference":
        chosen = {name: k for k, name in enumerate(COHERENCE_OPTIONS, start=1)}
    else:
        chosen = {f"Answer{k}": k for k in range(1, n_options + 1)}
    reader = csv.DictReader(io.StringIO(read_utf8(path, "data file"), newline=""))
    try:
        fieldnames = reader.fieldnames or []
    except csv.Error as exc:
        raise HarnessError(f"{path}: line 1: not readable as CSV ({exc})") from None
    missing = [name for name in ("itemNum", "Task", "OptionChosen") if name not in fieldnames]
    if missing:
        raise HarnessError(f"{path}: line 1: column {shorten_repr(missing[0])} missing")
    counts: dict[int, list[int]] = {}
    try:
        for row in reader:
            where = f"{path}: line {reader.line_num}"
            if row["Task"] != code:
                raise HarnessError(f"{where}: Task {shorten_repr(row['Task'])}, expected {shorten_repr(code)}")
            item = _number(row["itemNum"] or "", where, "itemNum")
            if item not in items:
                raise HarnessError(f"{where}: item {item}: not in {phenomenon}Scenarios.txt")
            option = chosen.get(row["OptionChosen"] or "")
            if option is None:
                raise HarnessError(
                    f"{where}: OptionChosen {shorten_repr(row['OptionChosen'])}, expected one of {', '.join(chosen)}"
                )
            counts.setdefault(item, [0] * n_options)[option - 1] += 1
    except csv.Error as exc:
        raise HarnessError(f"{path}: line {reader.line_num}: not readable as CSV ({exc})") from None
    return counts
