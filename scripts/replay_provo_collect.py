"""Replay the Provo cloze norms through ``harness collect``, and check the export evaluates exactly as Provo does.

    HARNESS_DATA_DIR=../shared/data .venv/bin/python scripts/replay_provo_collect.py            # all 55 passages
    .venv/bin/python scripts/replay_provo_collect.py --data-dir ../shared/data --text-ids 36,37 --via flow

A passage-cloze study is made over Provo's passages (``provo_passages.csv``), each wanting as many participants as
its position with the most responses has (``provo_cloze_responses.csv``), one passage per participant, guesses from
word 2, empty answers allowed. Scripted participants then take part through the real server over HTTP (``--via
http``, concurrent, as ``benchmarks/collect_load.py``'s participants) or through the study flow directly
(``--via flow``): each answers every position of the passage it was given with the next unused Provo response for
that position, or an empty answer where none is left. (The participant's page does not say which passage it shows,
so a scripted participant reads the item it was given from the database; its answers go over HTTP.)

The export (``harness collect export``'s files) is then evaluated with the human-only ``provo`` task, and so is the
original data restricted to the same passages (a copy of the long-format tables with only their rows); the two
results' human metrics must agree to 1e-9 and every position's human counts must be identical. Prints the timing
and a JSON comparison; exit status 1 on a difference. ``tests/test_collect_export.py`` runs this on a few passages.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sqlite3
import sys
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.collect_load import Server, Tally, play  # noqa: E402

RESPONSES = "provo_cloze_responses.csv"
PASSAGES = "provo_passages.csv"
TOLERANCE = 1e-9


def read_provo(
    data_dir: Path, text_ids: list[int] | None = None
) -> tuple[dict[int, str], dict[tuple[int, int], list[str]]]:
    """The passages, and every position's responses one per person (each distinct response repeated its count)."""
    wanted = set(text_ids) if text_ids else None
    with (data_dir / "provo" / PASSAGES).open(encoding="utf-8", newline="") as f:
        passages = {int(r["text_id"]): r["passage"] for r in csv.DictReader(f)}
    responses: dict[tuple[int, int], list[str]] = {}
    with (data_dir / "provo" / RESPONSES).open(encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            key = (int(r["text_id"]), int(r["word_num"]))
            if wanted is None or key[0] in wanted:
                responses.setdefault(key, []).extend([r["response"]] * int(r["response_count"]))
    if wanted is not None:
        passages = {t: p for t, p in passages.items() if t in wanted}
    return passages, responses


def write_study(folder: Path, passages: dict[int, str], responses: dict[tuple[int, int], list[str]]) -> Path:
    """The study file and its texts (with each passage's number of participants)."""
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", "text", "participants"])
    for text_id, passage in sorted(passages.items()):
        most = max((len(v) for (t, _), v in responses.items() if t == text_id), default=1)
        writer.writerow([text_id, passage, most])
    (folder / "texts.csv").write_text(buffer.getvalue(), encoding="utf-8")
    study = folder / "provo-replay.yaml"
    study.write_text(
        "study: provo-replay\nkind: passage_cloze\n"
        "texts: {file: texts.csv, participants: participants}\n"
        "items_per_participant: 1\nfirst_word: 2\nallow_skip: true\n"
        "time_limits: {session_minutes: 600}\n"
        "consent: I agree to take part.\ninstructions: Guess each next word of the passage.\n",
        encoding="utf-8",
    )
    return study


def participants_needed(study: Path) -> int:
    with (study.parent / "texts.csv").open(encoding="utf-8", newline="") as f:
        return sum(int(r["participants"]) for r in csv.DictReader(f))


class Pools:
    """The responses not yet given, per position: each is typed by exactly one scripted participant."""

    def __init__(self, responses: dict[tuple[int, int], list[str]]) -> None:
        self.left = {key: deque(values) for key, values in responses.items()}
        self.lock = threading.Lock()

    def take(self, text_id: int, word_num: int) -> str:
        with self.lock:
            queue = self.left.get((text_id, word_num))
            return queue.popleft() if queue else ""

    def remaining(self) -> int:
        return sum(len(q) for q in self.left.values())


def replay_flow(study: Path, db: Path, pools: Pools) -> dict[str, Any]:
    """Every participant through the study flow itself (no HTTP), one after another."""
    from harness.collect.prepare import open_study

    flow = open_study(study, db)
    started = time.monotonic()
    answers = 0
    for i in range(participants_needed(study)):
        person = flow.join(f"r{i:05d}")
        flow.consent(person)
        state = flow.state(person)
        while state["phase"] == "item":
            item = (
                flow.store.read()
                .execute("SELECT item_id FROM assignments WHERE pid = ? AND seq = ?", (person.pid, state["seq"]))
                .fetchone()[0]
            )
            answer = pools.take(int(item), int(state["view"]["position"]))
            state = flow.answer(person, state["seq"], state["step"], answer, 1000)["state"]
            answers += 1
    flow.store.close()
    return {"via": "flow", "answers": answers, "seconds": round(time.monotonic() - started, 2)}


def replay_http(study: Path, db: Path, pools: Pools, workers: int, log: Path) -> dict[str, Any]:
    """Every participant through the real server over HTTP, ``workers`` at a time."""
    server = Server(study, db, log)
    server.start()
    local = threading.local()

    def item_of(external_id: str, seq: int) -> int:
        if not hasattr(local, "db"):
            local.db = sqlite3.connect(db, timeout=60)
        row = local.db.execute(
            "SELECT a.item_id FROM assignments a JOIN participants p USING (pid) WHERE p.external_id = ? AND a.seq = ?",
            (external_id, seq),
        ).fetchone()
        return int(row[0])

    def answer_for(external_id: str, state: dict[str, Any]) -> str:
        return pools.take(item_of(external_id, int(state["seq"])), int(state["view"]["position"]))

    tally = Tally()
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [
                pool.submit(play, lambda: server.url, f"r{i:05d}", tally, answer_for)
                for i in range(participants_needed(study))
            ]
            for future in futures:
                future.result()
    finally:
        server.stop()
    seconds = time.monotonic() - started
    return {
        "via": "http",
        "answers": len(tally.acknowledged),
        "requests": tally.requests,
        "seconds": round(seconds, 2),
        "requests_per_second": round(tally.requests / seconds, 1) if seconds else None,
    }


def restricted_copy(data_dir: Path, text_ids: list[int], folder: Path) -> Path:
    """The original long-format tables with only the rows of ``text_ids``: the reference the export must equal."""
    wanted = {str(t) for t in text_ids}
    (folder / "provo").mkdir(parents=True, exist_ok=True)
    for name in (RESPONSES, PASSAGES):
        lines = (data_dir / "provo" / name).read_text(encoding="utf-8").splitlines(keepends=True)
        rows = [line for line in lines[1:] if line.split(",", 1)[0] in wanted]
        (folder / "provo" / name).write_text(lines[0] + "".join(rows), encoding="utf-8")
    return folder


def human_run(data_dir: Path, out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The human-only ``provo`` run on ``data_dir``: its metrics, and each position's human counts and meta."""
    from harness.run.options import RunOptions
    from harness.run.runner import run

    results = run(RunOptions(tasks=["provo"], model=None, output_dir=out, data_dir=str(data_dir)))
    samples = sorted((out / "human").glob("samples_provo_*.jsonl"))[-1]
    positions = {}
    for line in samples.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        meta = record.get("meta", {})
        positions[record["id"]] = {
            "counts": record["human"]["counts"],
            "target": record["target"],
            "n_human_raw": meta.get("n_human_raw"),
            "n_unique_raw": meta.get("n_unique_raw"),
        }
    return results["metrics"]["provo"], positions


def compare(
    export: tuple[dict[str, Any], dict[str, Any]], original: tuple[dict[str, Any], dict[str, Any]]
) -> dict[str, Any]:
    """Every human metric's numbers (value, interval, standard error, spread, n) and every position's counts."""
    (metrics_a, positions_a), (metrics_b, positions_b) = export, original
    differences = []
    largest = 0.0
    for name in sorted(set(metrics_a) | set(metrics_b)):
        a, b = metrics_a.get(name), metrics_b.get(name)
        if a is None or b is None:
            differences.append(f"{name}: only in the {'original' if a is None else 'export'}")
            continue
        for key in sorted(set(a) | set(b)):
            for x, y in zip(_numbers(a.get(key)), _numbers(b.get(key)), strict=False):
                gap = abs(x - y) if math.isfinite(x) and math.isfinite(y) else (0.0 if x == y else math.inf)
                largest = max(largest, gap)
                if gap > TOLERANCE:
                    differences.append(f"{name}.{key}: {x} (export) vs {y} (original)")
            if len(_numbers(a.get(key))) != len(_numbers(b.get(key))):
                differences.append(f"{name}.{key}: {a.get(key)} vs {b.get(key)}")
    differing = sorted(k for k in set(positions_a) | set(positions_b) if positions_a.get(k) != positions_b.get(k))
    return {
        "metrics": len(metrics_b),
        "metrics_compared": {name: metrics_a[name].get("value") for name in sorted(metrics_a)},
        "largest_difference": largest,
        "metric_differences": differences,
        "positions_export": len(positions_a),
        "positions_original": len(positions_b),
        "positions_differing": differing[:20],
        "n_positions_differing": len(differing),
        "equal": not differences and not differing,
    }


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _numbers(v)]
    return []


def replay(data_dir: Path, folder: Path, text_ids: list[int] | None, via: str, workers: int) -> dict[str, Any]:
    """The whole check in ``folder``; the JSON summary."""
    from harness.collect.export import export_study
    from harness.collect.prepare import open_existing

    started = time.monotonic()
    passages, responses = read_provo(data_dir, text_ids)
    ids = sorted(passages)
    study = write_study(folder / "study", passages, responses)
    db = folder / "study" / "provo-replay.sqlite"
    pools = Pools(responses)
    total = sum(len(v) for v in responses.values())
    if via == "http":
        timing = replay_http(study, db, pools, workers, folder / "server.log")
    else:
        timing = replay_flow(study, db, pools)
    flow, _ = open_existing(study, db)
    manifest = export_study(flow, folder / "export", hash_ids=False)
    flow.store.close()
    exported = human_run(folder / "export", folder / "runs-export")
    original = human_run(restricted_copy(data_dir, ids, folder / "original"), folder / "runs-original")
    return {
        "passages": len(ids),
        "participants": participants_needed(study),
        "provo_responses": total,
        "responses_left_unused": pools.remaining(),
        "responses_exported": manifest["counts"]["responses_exported"],
        "missing_answers": manifest["counts"]["missing"],
        "replay": timing,
        "comparison": compare(exported, original),
        "seconds_total": round(time.monotonic() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("HARNESS_DATA_DIR", "../shared/data")))
    parser.add_argument("--text-ids", help="comma-separated passage ids (default: all 55)")
    parser.add_argument("--via", choices=("http", "flow"), default="http", help="the real server (default) or the flow")
    parser.add_argument("--workers", type=int, default=32, help="participants at once over HTTP (default 32)")
    parser.add_argument("--folder", type=Path, help="keep the study, database, export and runs here")
    args = parser.parse_args()
    os.environ.setdefault("HARNESS_NO_PROGRESS", "1")
    text_ids = [int(t) for t in args.text_ids.split(",")] if args.text_ids else None
    with tempfile.TemporaryDirectory(prefix="provo-replay-") as tmp:
        summary = replay(args.data_dir, args.folder or Path(tmp), text_ids, args.via, args.workers)
    print(json.dumps(summary, indent=2))
    timing, comparison = summary["replay"], summary["comparison"]
    print(
        f"{summary['passages']} passages, {summary['participants']} participants, {timing['answers']} answers via "
        f"{timing['via']} in {timing['seconds']} s; total {summary['seconds_total']} s; human metrics "
        f"{'EQUAL' if comparison['equal'] else 'DIFFERENT'} (largest difference {comparison['largest_difference']:.3g})"
    )
    return 0 if summary["comparison"]["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
