"""What reading the raw shapes costs (docs/your-data.md, "The raw files researchers hold"), on generated files of a
size a large study leaves behind, written to a temporary folder (nothing is read from the data root):

1. ``participants``: a crowdsourcing export of ``--people`` rows (an id, a status, 25 metadata columns) by
   ``--items`` item columns with their paired input columns, read as a cloze task grouped by the input text;
2. ``packed``: ``--items`` x 10 positions, each cell packing ``--people`` / 10 comma-separated responses, some in
   quotes with a comma inside, with a count column checked;
3. ``passages``: 50 text files of 2,000 words (CRLF, a BOM) beside a long table of every position's responses.

Each is ``load_generic_cloze`` from the files to the instances, the best of ``--repeats`` runs (the first run of a
process pays the imports; the best is the steady cost), with the answers read per second.

    .venv/bin/python benchmarks/bench_raw_shapes.py
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.plugins.loaders.generic.cloze import load_generic_cloze  # noqa: E402

PASSAGE_WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "then", "—", "slept."]
WORDS = ["mat", "floor", "rug", "bed", "sofa", "chair", "table", "well, then", "door", "window"]


def participants_file(root: Path, people: int, items: int, rng: random.Random) -> tuple[dict[str, Any], int]:
    meta = [f"Meta{k}" for k in range(25)]
    inputs = [f"Input.sentence{i}" for i in range(1, items + 1)]
    answers = [f"Answer.sentence{i}" for i in range(1, items + 1)]
    with open(root / "batch.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["WorkerId", "AssignmentStatus", *meta, *inputs, *answers])
        for p in range(people):
            status = "Rejected" if p % 50 == 0 else "Approved"
            texts = [f"Item {i} is a sentence that ends before its" for i in range(1, items + 1)]
            writer.writerow([f"W{p:05d}", status, *["x" * 12] * 25, *texts, *(rng.choice(WORDS) for _ in answers)])
    options = {
        "files": "batch.csv",
        "filter": "{{ AssignmentStatus == 'Approved' }}",
        "human": {
            "shape": "participants",
            "participant": "WorkerId",
            "responses": "Answer.sentence*",
            "item_columns": {"sentence": "Input.sentence*"},
        },
        "group_by": "sentence",
        "context": "sentence",
    }
    return options, sum(1 for p in range(people) if p % 50) * items


def packed_file(root: Path, people: int, items: int, rng: random.Random) -> tuple[dict[str, Any], int]:
    per_cell = max(people // 10, 1)
    with open(root / "packed.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["item", "context", "answers", "n"])
        for i in range(items * 10):
            pieces = [rng.choice(WORDS) for _ in range(per_cell)]
            cell = ", ".join(f'"{w}"' if "," in w else w for w in pieces)
            writer.writerow([i, f"Context number {i} ends before its", cell, per_cell])
    options = {
        "files": "packed.csv",
        "id": "item",
        "context": "context",
        "human": {"shape": "list", "responses": "answers", "packed": ",", "n_people": "n"},
    }
    return options, items * 10 * per_cell


def passages_files(root: Path, people: int, items: int, rng: random.Random) -> tuple[dict[str, Any], int]:
    (root / "texts").mkdir()
    n_texts, n_words, per_position = 50, 2000, 40
    for t in range(1, n_texts + 1):
        words = [rng.choice(PASSAGE_WORDS) for _ in range(n_words)]
        lines = [" ".join(words[k : k + 12]) for k in range(0, n_words, 12)]
        (root / "texts" / f"text_{t}.txt").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode())
    answers = 0
    with open(root / "positions.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text_id", "word_num", "response", "count"])
        for t in range(1, n_texts + 1):
            for position in range(2, n_words + 1, 20):
                for word in rng.sample(WORDS, 4):
                    writer.writerow([t, position, word, per_position // 4])
                    answers += per_position // 4
    options = {
        "files": "positions.csv",
        "group_by": ["text_id", "word_num"],
        "passages": {"files": "texts/*.txt", "id": "text_*.txt", "key": "text_id", "position": "word_num"},
        "human": {"shape": "long", "responses": "response", "counts": "count"},
    }
    return options, answers


def best_of(repeats: int, run: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=2000, help="participants (rows) of the participants file")
    parser.add_argument("--items", type=int, default=100, help="items (columns) of the participants file")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("shape         instances   answers   file MB   best s   answers/s")
    for name, make in (("participants", participants_file), ("packed", packed_file), ("passages", passages_files)):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            options, answers = make(root, args.people, args.items, random.Random(0))
            size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
            seconds, loaded = best_of(args.repeats, lambda: load_generic_cloze(options, root))  # noqa: B023
            print(
                f"{name:<12}  {len(loaded.instances):>9,}  {answers:>8,}  {size:>8.1f}  {seconds:>7.2f}  "
                f"{answers / seconds:>10,.0f}"
            )


if __name__ == "__main__":
    main()
