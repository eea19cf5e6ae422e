"""The harness's own format for outputs made elsewhere: JSON Lines, one instance per line (``docs/importing.md``).

::

    {"harness_outputs": 1, "model": "my-model-7b"}                 optional first line: what made the outputs
    {"id": "1-2", "words": {"are": 31, "is": 9}}                    next words with counts (cloze tasks)
    {"id": "1-2", "texts": [" are now", " is the"], "ended": false} raw continuations, cut by the task's word rule
    {"id": "17", "texts": ["Le chat dort."], "ended": true}          generations (generation tasks)
    {"id": "IR_3", "option_probs": [0.1, 0.7, 0.2]}                  multiple choice, in the item's option order

``ended`` (default true) says whether each text ended where the model stopped; false means it was cut off after
a token budget, so a last word with nothing after it may be incomplete (the exact word rule rejects it as
truncated). ``listed: true`` marks texts that each list many guesses (``"1. later\\n2. ago"``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from harness.api import HarnessError, read_jsonl, shorten_repr
from harness.plugins.replay.outputs import RecordedEntry, RecordedOutputs

FORMAT = "jsonl"
#: The fields an instance line may have besides ``id`` (exactly one of the first three).
PAYLOADS = ("words", "texts", "option_probs")
EXTRAS = ("ended", "listed", "context")


def read_generic(path: Path) -> RecordedOutputs:
    outputs = RecordedOutputs(FORMAT, [path])
    for line_no, record in enumerate(read_jsonl(path), start=1):
        where = f"{path}: line {line_no}"
        if line_no == 1 and "harness_outputs" in record:
            outputs.meta = {str(k): str(v) for k, v in record.items() if k != "harness_outputs"}
            continue
        instance_id = record.get("id")
        if not isinstance(instance_id, (str, int)) or isinstance(instance_id, bool):
            raise HarnessError(f"{where}: 'id' must be a string or an integer, got {shorten_repr(instance_id)}")
        unknown = sorted(set(record) - {"id", *PAYLOADS, *EXTRAS})
        if unknown:
            raise HarnessError(f"{where}: unknown field {unknown[0]!r} (expected id, one of {', '.join(PAYLOADS)})")
        given = [key for key in PAYLOADS if key in record]
        if len(given) != 1:
            raise HarnessError(f"{where}: expected exactly one of {', '.join(PAYLOADS)}, got {given or 'none'}")
        key = str(instance_id)
        if key in outputs.entries:
            raise HarnessError(f"{where}: instance {key!r} appears twice")
        outputs.entries[key] = _entry(record, given[0], where)
    if not outputs.entries:
        raise HarnessError(f"{path}: no instance lines")
    return outputs


def _entry(record: dict[str, Any], payload: str, where: str) -> RecordedEntry:
    for flag in ("ended", "listed"):
        if flag in record and not isinstance(record[flag], bool):
            raise HarnessError(f"{where}: '{flag}' must be true or false, got {shorten_repr(record[flag])}")
    context = record.get("context")
    if context is not None and not isinstance(context, str):
        raise HarnessError(f"{where}: 'context' must be a string")
    value = record[payload]
    if payload == "words":
        if not isinstance(value, dict) or not value:
            raise HarnessError(f"{where}: 'words' must be a non-empty object of word -> count")
        for word, count in value.items():
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise HarnessError(f"{where}: 'words': count of {word!r} must be a positive integer")
        return RecordedEntry(words={str(w): int(c) for w, c in value.items()}, context=context)
    if payload == "texts":
        if not isinstance(value, list) or not value or not all(isinstance(t, str) for t in value):
            raise HarnessError(f"{where}: 'texts' must be a non-empty list of strings")
        return RecordedEntry(
            texts=tuple(value),
            ended=bool(record.get("ended", True)),
            listed=bool(record.get("listed", False)),
            context=context,
        )
    if not isinstance(value, list) or len(value) < 2:
        raise HarnessError(f"{where}: 'option_probs' must be a list of at least 2 probabilities")
    for p in value:
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not math.isfinite(p) or p < 0:
            raise HarnessError(f"{where}: 'option_probs' must hold non-negative numbers, got {shorten_repr(p)}")
    if sum(value) <= 0:
        raise HarnessError(f"{where}: 'option_probs' sum to 0")
    return RecordedEntry(option_probs=tuple(float(p) for p in value), context=context)
