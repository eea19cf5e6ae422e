"""Reader for the per-option probabilities released with Hu et al. (2023), ``jennhu/lm-pragmatics`` (``hu2023``).

The files (``pragmatics-mcq/reference_outputs/hu2023/model_data/`` in the data folder; see its ``SOURCE.md``) are
``<Phenomenon>[_no-story]_<model>_seed<S>_examples0.csv``, one per phenomenon, model and seed. Each row is one
item asked once: ``prompt`` lists the options in a shuffled order, ``randomized_option_order`` says which original
option stood at each presented position (position j, counted from 1, showed original option
``randomized_option_order[j-1]``), and ``distribution`` is the model's probability of each presented position's
label (``{'1': p1, ..., 'K': pK}``, renormalised over the K labels). The 5 seeds are 5 option orders of the same
items.

``setting`` picks the model: its name as in the file names (``text-davinci-002``, ``flan-t5-xl``, ...), with
``/no-story`` for Hu et al.'s runs whose prompts left out the story (``text-davinci-002/no-story``; the harness
still compares them with the choices of people who read the story). A folder holding one setting only needs none.

Per item, each seed's distribution is mapped from the presented order back to the original option order, which is
the pragmatics loader's instance order (``option_num``), and becomes one option order of the item; the item's
reported distribution is the mean over its seeds (``mcq_reported`` averages the orders the same way). The number of
seeds per item is recorded (``orders_per_item`` in the results' ``model_info.source_meta``). Instance ids are the
loader's ``<Phenomenon>-<item_id>``: the files' ``phenomenon`` column holds the task code (``IV``) and is checked
against the file name's phenomenon. The option texts are read from each prompt's numbered list and the target
from ``original_labels_complex`` (the option labelled ``Correct...``); both are kept so that the replay adapter can
leave out, with a warning, an item whose options or target are not the instance's. On the released files every
item matches, and ``answer`` is the argmax of ``distribution`` on every row (no ties); Maxims item 13 has no rows
(Hu et al.'s prompts drop it), so a run lists it as missing.
"""

from __future__ import annotations

import ast
import csv
import io
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.api import HarnessError, read_utf8, shorten_repr
from harness.plugins.loaders.pragmatics_release import PHENOMENA, TASK_CODES
from harness.plugins.replay.outputs import RecordedChoices, RecordedOutputs

FORMAT = "hu2023"
NO_STORY = "no-story"
#: ``<Phenomenon>[_no-story]_<model>_seed<S>_examples<E>.csv``
FILE_NAME = re.compile(
    r"^(?P<phenomenon>[A-Za-z]+)(?P<no_story>_no-story)?_(?P<model>.+)_seed(?P<seed>\d+)_examples(?P<examples>\d+)\.csv$"
)
COLUMNS = ("phenomenon", "item_id", "randomized_option_order", "original_labels_complex", "prompt", "distribution")
_OPTION_LINE = re.compile(r"^(\d+)\) ?(.*)$", re.S)
#: Longest ``distribution`` or option-order cell read (the released ones are under 200 characters).
MAX_CELL = 10_000


@dataclass(frozen=True)
class _FileInfo:
    path: Path
    phenomenon: str
    model: str
    no_story: bool
    seed: int
    examples: int

    @property
    def setting(self) -> str:
        return f"{self.model}/{NO_STORY}" if self.no_story else self.model


def parse_name(path: Path) -> _FileInfo | None:
    """What a released file's name says, or None for another file."""
    match = FILE_NAME.match(path.name)
    if match is None or match["phenomenon"] not in PHENOMENA:
        return None
    return _FileInfo(
        path,
        match["phenomenon"],
        match["model"],
        match["no_story"] is not None,
        int(match["seed"]),
        int(match["examples"]),
    )


def is_hu2023(path: Path) -> bool:
    """Whether ``path`` is one of the released files, or a folder holding some (for format detection)."""
    if path.is_dir():
        return any(parse_name(p) is not None for p in path.iterdir())
    return parse_name(path) is not None


def read_hu2023(path: Path, setting: str | None) -> RecordedOutputs:
    """The distributions of one model (``setting``) from a ``model_data`` folder or from one of its files."""
    files = _select(path, setting)
    chosen = files[0].setting
    examples = sorted({f.examples for f in files})
    if len(examples) > 1:
        raise HarnessError(
            f"{path}: setting {chosen!r} has files for {len(examples)} numbers of in-context examples "
            f"({', '.join(map(str, examples))}); give one file, or a folder with one"
        )
    per_item: dict[str, dict[int, tuple[tuple[float, ...], tuple[str, ...], int]]] = {}
    for info in files:
        for item_id, seed, probs, options, target in _read_file(info):
            key = f"{info.phenomenon}-{item_id}"
            seeds = per_item.setdefault(key, {})
            if seed in seeds:
                raise HarnessError(f"{info.path}: item {item_id} seed {seed} is also in another row or file")
            first = next(iter(seeds.values()), None)
            if first is not None and (_normalised(options) != _normalised(first[1]) or target != first[2]):
                raise HarnessError(
                    f"{info.path}: item {item_id} seed {seed}: its options or target differ from seed "
                    f"{next(iter(seeds))}'s once mapped back to the original order"
                )
            seeds[seed] = (probs, options, target)
    if not per_item:
        raise HarnessError(f"{path}: no items for setting {chosen!r}")
    outputs = RecordedOutputs(FORMAT, [f.path for f in files])
    n_orders: Counter[int] = Counter()
    for key in sorted(per_item, key=_item_order):
        seeds = per_item[key]
        orders = tuple(seeds[s][0] for s in sorted(seeds))
        mean = tuple(sum(column) / len(orders) for column in zip(*orders, strict=True))
        _, options, target = seeds[min(seeds)]
        outputs.entries[key] = RecordedChoices(option_probs=mean, orders=orders, options=options, target=target)
        n_orders[len(orders)] += 1
    outputs.meta = {
        "model": files[0].model,
        "setting": chosen,
        "story": "no" if files[0].no_story else "yes",
        "examples": str(examples[0]),
        "seeds": ",".join(str(s) for s in sorted({f.seed for f in files})),
        "orders_per_item": ", ".join(f"{n} ({count} items)" for n, count in sorted(n_orders.items(), reverse=True)),
        "combined": "each seed's distribution mapped to the original option order; mean over seeds",
    }
    return outputs


def _select(path: Path, setting: str | None) -> list[_FileInfo]:
    """The files of ``setting`` (every file of a folder that holds one setting only), in name order."""
    if setting is not None and "/" in setting and not setting.endswith(f"/{NO_STORY}"):
        raise HarnessError(f"--model-args setting: expected MODEL or MODEL/{NO_STORY}, got {setting!r}")
    if path.is_dir():
        files = sorted((f for f in map(parse_name, path.iterdir()) if f is not None), key=lambda f: f.path.name)
        if not files:
            raise HarnessError(f"{path}: no <Phenomenon>_<model>_seed<S>_examples<E>.csv files (format {FORMAT})")
    else:
        info = parse_name(path)
        if info is None:
            raise HarnessError(
                f"{path}: not a {FORMAT} file name (<Phenomenon>[_no-story]_<model>_seed<S>_examples<E>.csv)"
            )
        files = [info]
    settings = sorted({f.setting for f in files})
    if setting is None:
        if len(settings) > 1:
            raise HarnessError(
                f"--model-args setting: {path} holds {len(settings)} models; name one with setting= "
                f"({', '.join(settings)})"
            )
        setting = settings[0]
    if setting not in settings:
        raise HarnessError(f"--model-args setting: {path} has no files for {setting!r} (it has {', '.join(settings)})")
    return [f for f in files if f.setting == setting]


def _item_order(key: str) -> tuple[int, int]:
    phenomenon, _, item = key.rpartition("-")
    return PHENOMENA.index(phenomenon), int(item)


def _normalised(texts: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(" ".join(t.split()) for t in texts)


def _read_file(info: _FileInfo) -> list[tuple[int, int, tuple[float, ...], tuple[str, ...], int]]:
    """``(item_id, seed, probabilities, option texts, target)`` per item row, all in the original option order."""
    path = info.path
    reader = csv.DictReader(io.StringIO(read_utf8(path, "outputs file"), newline=""))
    rows: list[tuple[int, int, tuple[float, ...], tuple[str, ...], int]] = []
    try:
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise HarnessError(f"{path}: line 1: column {missing[0]!r} missing (format {FORMAT})")
        for row in reader:
            where = f"{path}: line {reader.line_num}"
            if str(row.get("is_example", "False")).strip() == "True":
                continue  # an in-context example, not an item asked
            if row["phenomenon"] != TASK_CODES[info.phenomenon]:
                raise HarnessError(
                    f"{where}: phenomenon {shorten_repr(row['phenomenon'])}, expected "
                    f"{TASK_CODES[info.phenomenon]!r} for {info.phenomenon}"
                )
            item_id = _int(row["item_id"], where, "item_id")
            seed = info.seed
            if row.get("seed") not in (None, "") and _int(row["seed"], where, "seed") != seed:
                raise HarnessError(f"{where}: seed {row['seed']}, but the file name says seed {seed}")
            order = _order(row["randomized_option_order"], where)
            k = len(order)
            shown = _distribution(row["distribution"], k, where)
            shown_options = _prompt_options(row["prompt"], k, where)
            labels = _literal(row["original_labels_complex"], where, "original_labels_complex")
            if not isinstance(labels, list) or len(labels) != k or not all(isinstance(x, str) for x in labels):
                raise HarnessError(f"{where}: original_labels_complex is not a list of {k} labels")
            targets = [i for i, label in enumerate(labels) if label.startswith("Correct")]
            if len(targets) != 1:
                raise HarnessError(f"{where}: {len(targets)} Correct options in original_labels_complex")
            probs = [0.0] * k
            options = [""] * k
            for position, original in enumerate(order):
                probs[original - 1] = shown[position]
                options[original - 1] = shown_options[position]
            rows.append((item_id, seed, tuple(probs), tuple(options), targets[0]))
    except csv.Error as exc:
        raise HarnessError(f"{path}: line {reader.line_num}: not readable as CSV ({exc})") from None
    return rows


def _int(cell: str | None, where: str, name: str) -> int:
    text = (cell or "").strip()
    if not text.isdigit() or len(text) > 9:
        raise HarnessError(f"{where}: {name} {shorten_repr(cell)}: expected a non-negative integer")
    return int(text)


def _literal(cell: str | None, where: str, name: str) -> Any:
    """A Python literal cell (the files were written from pandas: lists and dicts as their repr)."""
    text = cell or ""
    if len(text) > MAX_CELL:
        raise HarnessError(f"{where}: {name} is {len(text)} characters long (a damaged file?)")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise HarnessError(f"{where}: {name} {shorten_repr(text)} is not a Python literal") from None


def _order(cell: str | None, where: str) -> list[int]:
    order = _literal(cell, where, "randomized_option_order")
    if (
        not isinstance(order, list)
        or len(order) < 2
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in order)
        or sorted(order) != list(range(1, len(order) + 1))
    ):
        raise HarnessError(f"{where}: randomized_option_order {shorten_repr(cell)} is not a permutation of 1..K")
    return order


def _distribution(cell: str | None, k: int, where: str) -> list[float]:
    """The probabilities of presented positions 1..k."""
    value = _literal(cell, where, "distribution")
    keys = [str(j) for j in range(1, k + 1)]
    if not isinstance(value, dict) or sorted(value, key=str) != sorted(keys):
        raise HarnessError(f"{where}: distribution {shorten_repr(cell)}: expected the keys '1' to '{k}'")
    probs = [value[key] for key in keys]
    for p in probs:
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not math.isfinite(p) or p < 0:
            raise HarnessError(f"{where}: distribution holds {shorten_repr(p)}, not a probability")
    if sum(probs) <= 0:
        raise HarnessError(f"{where}: distribution sums to 0")
    return [float(p) for p in probs]


def _prompt_options(prompt: str | None, k: int, where: str) -> list[str]:
    """The option texts of the prompt's last numbered list (``1) ...`` to ``k) ...`` just before ``Answer:``), in
    the presented order."""
    lines = (prompt or "").split("\n")
    cues = [i for i, line in enumerate(lines) if line.startswith("Answer:")]
    found: list[tuple[int, str]] = []
    if cues:
        for line in reversed(lines[: cues[-1]]):
            match = _OPTION_LINE.match(line)
            if match is None:
                break
            found.append((int(match[1]), match[2]))
            if match[1] == "1":
                break
    found.reverse()
    if [n for n, _ in found] != list(range(1, k + 1)):
        raise HarnessError(f"{where}: the prompt does not list options 1) to {k}) before 'Answer:'")
    return [text.strip() for _, text in found]
