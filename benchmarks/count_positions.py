"""How many token positions a finished ``provo`` run of the ``hf`` adapter really ran through the model.

A response's ``tokens_evaluated`` counts its context's tokens plus its trie nodes, so the sum over a run counts every
context in full. The sampler reads a context whose tokens begin a longer context of the same block off that
context's pass, so the model ran fewer context positions than that. This script re-forms the run's blocks (blocks of
``contexts_per_pass`` in instance order, as the runner cuts them) and applies the sampler's own rule
(``harness.plugins.hf.trie.cache.carriers``) to count the passes and tokens that encoded the contexts. The result is the
``--positions`` to give ``benchmarks/bench_matmul.py`` for the floor of that run.

Example (what ``docs/word-sampling.md`` reports)::

    python benchmarks/count_positions.py runs/full/hf__smollm2-135m
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.plugins.hf.loading.model import load_hf_model  # noqa: E402
from harness.plugins.hf.shared.tokens import encode_context  # noqa: E402
from harness.plugins.hf.trie.cache import carriers  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path, help="a finished run's model folder (holding results.json and samples_provo_*)")
    args = p.parse_args()
    results = json.loads((args.run / "results.json").read_text())
    info = results["config"]["model_info"]
    samples = sorted(args.run.glob("samples_provo_*.jsonl"))
    if not samples:
        sys.exit(f"{args.run}: no samples_provo_*.jsonl (is this a finished provo run's model folder?)")
    records = [json.loads(line) for line in samples[-1].read_text().splitlines()]
    loaded = load_hf_model(info["name"], device="cpu")
    contexts = [
        encode_context(loaded.tokenizer, loaded.model, r["arguments"]["context"], r["arguments"]["max_new_tokens"])
        for r in records
    ]
    counted = sum(r["response"]["tokens_evaluated"] for r in records)
    context_tokens = sum(len(c) for c in contexts)
    size = int(info["contexts_per_pass"])
    passes = carried = 0
    for start in range(0, len(contexts), size):
        block = contexts[start : start + size]
        for carrier, _ in carriers(block):
            passes += 1
            carried += len(block[carrier])
    print(f"{len(records)} contexts, blocks of {size}")
    print(f"positions counted (tokens_evaluated): {counted:,}")
    print(f"context tokens: {context_tokens:,}; trie nodes: {counted - context_tokens:,}")
    print(f"context passes run: {passes:,}, {carried:,} tokens in all")
    print(f"positions run through the model: {counted - context_tokens + carried:,}")


if __name__ == "__main__":
    main()
