"""The cloze kinds' export (passage cloze, sentence completion): the responses one row each, the Provo norms layout,
and a task file, so that a collected study runs through the harness as it is.

* ``responses.csv``: one row per response (``text_id, word_num, context, target_word, response, participant,
  client_ms, server_ms``), the response as typed;
* ``provo/Provo_Corpus-Predictability_Norms.csv``: the official OSF norms layout the ``provo`` loader reads
  (``plugins/loaders/provo_readers.py``, ``read_official``), one row per position and distinct response with its
  count, so ``harness run --tasks provo --human-only --data-dir OUT`` evaluates on the collected norms exactly as on
  Provo's (the passage is the item's words joined by single spaces, word numbers as in the items);
* ``<study>.yaml`` (the study's name as written, capitals kept; the task inside is named in lower case): a task over
  ``responses.csv`` with the ``generic_cloze`` loader (docs/your-data.md), the built-in Provo task's request and
  scorers, so ``harness run --tasks OUT/<study>.yaml --human-only`` runs too. The loader
  reads every cell as written, so an answer ``007`` or ``3.50`` is compared with the word ``007`` or ``3.50`` as
  typed, and text ids ``01`` and ``1`` stay two texts; only ``word_num`` is declared a number (``columns``).

Why both: the norms file is the format a published cloze study is shared in and that the Provo task reads; the task
file is how a study that is not about Provo's passages becomes a task of its own, with its own name.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

from harness.collect.flow import StudyFlow
from harness.collect.items import Item, target, view
from harness.collect.selection import Answer
from harness.files import atomic_write_text

RESPONSES = "responses.csv"
NORMS = "provo/Provo_Corpus-Predictability_Norms.csv"
RESPONSE_COLUMNS = (
    "text_id", "word_num", "context", "target_word", "response", "participant", "client_ms", "server_ms"
)  # fmt: skip
#: The official norms' columns this export can fill (its Sentence_Number and Word_In_Sentence_Number need the
#: corpus's own sentence division, which a study does not give; the loader does not read them).
NORMS_COLUMNS = (
    "Word_Unique_ID", "Text_ID", "Text", "Word_Number", "Word", "Response", "Response_Count", "Total_Response_Count",
    "Response_Proportion",
)  # fmt: skip
#: The Provo task's request and scorers (tasks/provo.yaml), for the generic task file.
TASK_TAIL = """request: sample_words
params:
  n_samples: 1000
  temperature: 1.0
  mode: exact
  max_new_tokens: 32
scorers:
  - tvd
  - name: human_control
    args: {n_splits: 10}
  - name: ece
    args: {n_bins: 10, n_splits: 10}
  - top1
  - entropy
"""


def write_cloze(
    flow: StudyFlow, main: list[Item], answers: list[Answer], out_dir: Path
) -> tuple[list[str], dict[str, Any]]:
    """The three files of a cloze study; the manifest gets the Provo text numbers (when the study's text ids are
    not already the positive integers the norms layout needs) and the commands that evaluate the export."""
    numbers = provo_text_ids(main)
    atomic_write_text(out_dir / RESPONSES, _responses_csv(answers))
    atomic_write_text(out_dir / NORMS, _norms_csv(main, answers, numbers))
    task_file = f"{flow.study.name}.yaml"
    task_name = task_name_for(flow.study.name)
    atomic_write_text(out_dir / task_file, _task_yaml(flow, task_file, task_name, RESPONSES))
    extra: dict[str, Any] = {
        "task": task_name,
        "commands": [
            f"harness run --tasks provo --human-only --data-dir {out_dir}",
            f"harness run --tasks {out_dir / task_file} --human-only --data-dir {out_dir}",
        ],
    }
    if any(str(number) != item.item_id for item, number in zip(main, numbers, strict=True)):
        extra["provo_text_ids"] = {item.item_id: number for item, number in zip(main, numbers, strict=True)}
    return [RESPONSES, NORMS, task_file], extra


def provo_text_ids(main: list[Item]) -> list[int]:
    """The norms' ``Text_ID`` of each item: its own id when every id is a positive integer written plainly (Provo's
    1..55), else the items' numbers in the study's order from 1 (the manifest maps them back)."""
    ids = [item.payload["text_id"] for item in main]
    if all(isinstance(t, str) and t.isdigit() and not t.startswith("0") for t in ids):
        return [int(t) for t in ids]
    return list(range(1, len(main) + 1))


def task_name_for(study_name: str) -> str:
    """The task name of the generic task file: the study's name in lower case (task names are), with ``-collected``
    added when that is a registered task's name (``provo``), which a task file may not take."""
    from harness.registry.manager import get_registry

    name = study_name.lower()
    return f"{name}-collected" if name in get_registry().tasks else name


def _word(answer: Answer) -> tuple[int, str, str]:
    """The word number, its context and the true word of an answer to a cloze step, as the participant saw them."""
    shown = view(answer.item, answer.step)
    return int(shown["position"]), str(shown["context"]), str(target(answer.item, answer.step))


def _csv(rows: list[list[Any]], header: tuple[str, ...]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _responses_csv(answers: list[Answer]) -> str:
    rows = []
    for a in answers:
        word_num, context, word = _word(a)
        times = ["" if ms is None else ms for ms in (a.client_ms, a.server_ms)]
        rows.append([a.item.payload["text_id"], word_num, context, word, a.answer, a.participant, *times])
    return _csv(rows, RESPONSE_COLUMNS)


def _norms_csv(main: list[Item], answers: list[Answer], numbers: list[int]) -> str:
    """One row per (text, word, distinct response as typed), positions in word order, responses most frequent
    first (ties in the order first given), as the official file lists them."""
    by_position: dict[tuple[str, int], Counter[str]] = {}
    for a in answers:
        by_position.setdefault((a.item.item_id, _word(a)[0]), Counter())[a.answer] += 1
    rows = []
    for item, number in zip(main, numbers, strict=True):
        words = item.payload["words"]
        text = " ".join(words)
        for word_num in range(item.payload["first"], len(words) + 1):
            counts = by_position.get((item.item_id, word_num))
            if not counts:
                continue
            total = sum(counts.values())
            for response, n in counts.most_common():
                rows.append([f"{number}-{word_num}", number, text, word_num, words[word_num - 1], response, n, total,
                             round(n / total, 4)])  # fmt: skip
    return _csv(rows, NORMS_COLUMNS)


def _task_yaml(flow: StudyFlow, task_file: str, task_name: str, responses: str) -> str:
    """The generic task file; its comment names it as written (``task_file``, the study's name as given), which is
    not its task name (``task_name_for``: lower case, perhaps with ``-collected``)."""
    study = flow.study
    # JSON strings are YAML strings: the paths and texts below are quoted safely whatever they hold.
    return (
        f"# Written by 'harness collect export' from study {study.name} (version {study.digest}).\n"
        f"# Its data path is relative to the data root: run it with --data-dir set to the export's folder, e.g.\n"
        f"#   harness run --tasks EXPORT/{task_file} --human-only --data-dir EXPORT\n"
        f"task: {task_name}\n"
        "version: 1\n"
        f"description: {json.dumps(f'Cloze responses collected with harness collect (study {study.name}, {study.kind}, version {study.digest}).')}\n"  # noqa: E501
        "tags: [cloze, next-word, variability, collected]\n"
        "loader: generic_cloze\n"
        "data:\n"
        f"  files: {json.dumps(responses)}\n"
        "  # Cells are read as written (a text id 01, an answer 007 or 3.50 stay so); word_num is a number.\n"
        "  columns: {word_num: int}\n"
        "  group_by: [text_id, word_num]\n"
        '  id: "{{ text_id }}-{{ word_num }}"\n'
        "  context: context\n"
        "  target: target_word\n"
        "  meta: [text_id, word_num]\n"
        "  human: {shape: long, responses: response}\n" + TASK_TAIL
    )
