"""What the word rule costs (docs/your-data.md, "Words"): the people's side on the full Provo data, and one word
decision of the model's side per segmenter on English and Chinese sample prefixes.

1. ``apply_word_rule`` over all 2,687 Provo positions (107,710 responses) under ``exact``: the time a run now spends
   putting the people's responses through the rule the model's samples follow (once per run, before any model).
2. ``decide_and_close`` (what the trie sampler calls for every open child) on every prefix of real continuations:
   English Provo-like text under ``spaces``; Chinese text under ``spaces`` (what it cost before a segmenter, when a
   sample ran to its token budget), ``characters`` and ``jieba`` (a dictionary segmenter's first call builds its
   dictionary: reported apart). Microseconds per decision, the median of ``--repeats`` runs.

    .venv/bin/python benchmarks/bench_word_rule.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.kinds.words import apply_word_rule  # noqa: E402
from harness.registry.manager import get_registry  # noqa: E402
from harness.words.rules import decide_and_close  # noqa: E402
from harness.words.segmenters import SEGMENTER_EXTRAS, first_segment  # noqa: E402

ENGLISH = [
    " There are now rumblings that Apple might soon invade the smart watch space, though the company is",
    " With schools still closed, cars still buried and streets still blocked, the city has turned",
    " The kittens were playing in the garden when their mother came back with",
]
CHINESE = [
    "我今天早上在学校门口吃了一个很大的苹果，然后去上课。",
    "研究生命的起源是科学家们一直关心的问题。",
    "他每天都去公园跑步，风雨无阻，已经坚持了十年。",
]


def prefixes(texts: list[str]) -> list[str]:
    return [text[:k] for text in texts for k in range(1, len(text) + 1)]


def per_decision(texts: list[str], segmenter: str, repeats: int) -> float:
    """Median microseconds per ``decide_and_close`` over every prefix of ``texts``."""
    cases = prefixes(texts)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for k, text in enumerate(cases):
            decide_and_close(text, ended=False, depth=k % 16 + 1, mode="exact", max_new_tokens=32, segmenter=segmenter)
        times.append((time.perf_counter() - start) / len(cases) * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    data = get_registry().loader("provo")({"path": "provo"}, args.data_dir)
    runs = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        prepared = apply_word_rule("provo", data, "exact", "spaces")
        runs.append(time.perf_counter() - start)
    words = prepared.source["words"]
    print(
        f"people's side, Provo ({len(data.instances)} positions, {words['n_responses']} responses, "
        f"{words['n_cut']} cut): {statistics.median(runs) * 1000:.0f} ms"
    )
    print(f"english, spaces: {per_decision(ENGLISH, 'spaces', args.repeats):.2f} us per decision")
    for segmenter in ("spaces", "characters", "jieba", "fugashi"):
        extra = SEGMENTER_EXTRAS.get(segmenter)
        if extra:
            try:
                start = time.perf_counter()
                first_segment("苹果", segmenter)
                print(f"{segmenter}: dictionary loaded in {time.perf_counter() - start:.2f} s")
            except Exception as exc:  # the extra is not installed
                print(f"{segmenter}: skipped ({exc})")
                continue
        print(f"chinese, {segmenter}: {per_decision(CHINESE, segmenter, args.repeats):.2f} us per decision")


if __name__ == "__main__":
    main()
