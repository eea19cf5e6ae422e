"""What the LM head and softmax of one forward pass cost through fresh tensors and through reused buffers.

The word sampler needs the full softmax of every row of every pass. Through the model's forward each pass allocates
its logits and then its probabilities afresh (100 MB each for 512 rows of SmolLM2's 49,152 tokens in float32); on a
CPU memory of that size comes straight from the kernel and page-faults on first touch. ``NextTokenHead`` writes the
same products into buffers kept across passes. This script times both on the real model's head, on random hidden
states, and counts the page faults (minor faults of this process) per pass:

* ``fresh``: ``torch.softmax(lm_head(hidden).float(), -1)``, what a pass through ``model(...)`` does;
* ``buffers``: ``NextTokenHead.probabilities(hidden, 1.0)``;

and checks that both give the same probabilities bit for bit.

Example (what ``docs/word-sampling.md`` reports)::

    python benchmarks/bench_next_token_head.py --rows 512 --dtype float32
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.plugins.hf.loading.model import load_hf_model  # noqa: E402
from harness.plugins.hf.shared.next_token_head import NextTokenHead  # noqa: E402


def timed(step: Callable[[], torch.Tensor], reps: int) -> tuple[float, float]:
    """Mean milliseconds and minor page faults per call, after two warm-up calls."""
    for _ in range(2):
        step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    for _ in range(reps):
        step()
    seconds = (time.perf_counter() - start) / reps
    return seconds * 1e3, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / reps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2-135m", help="hf model (default: the packaged smollm2-135m)")
    p.add_argument("--rows", type=int, default=512, help="rows of one pass (default 512, the CPU batch size)")
    p.add_argument("--dtype", default="float32", help="float32 | bfloat16 (default float32)")
    p.add_argument("--reps", type=int, default=10, help="timed calls per variant and round (default 10)")
    p.add_argument("--rounds", type=int, default=3, help="rounds, alternating the two variants (default 3)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    model = load_hf_model(args.model, device="cpu", dtype=args.dtype).model
    if not NextTokenHead.supports(model):
        sys.exit(f"{args.model}: its head is not a plain linear layer, so NextTokenHead does not serve it")
    head = NextTokenHead(model)
    lm_head = model.get_output_embeddings()
    hidden = torch.randn(args.rows, 1, lm_head.in_features).to(lm_head.weight.dtype)

    def fresh() -> torch.Tensor:
        return torch.softmax(lm_head(hidden)[:, -1, :].float(), dim=-1)

    def buffers() -> torch.Tensor:
        return head.probabilities(hidden[:, -1], 1.0)

    with torch.inference_mode():
        same = torch.equal(fresh(), buffers())
        print(f"{args.model}, {args.dtype}, {args.rows} rows: identical probabilities: {same}")
        print("| round | fresh ms | fresh faults | buffers ms | buffers faults |")
        print("|---|---|---|---|---|")
        for r in range(args.rounds):
            fresh_ms, fresh_faults = timed(fresh, args.reps)
            buffer_ms, buffer_faults = timed(buffers, args.reps)
            print(f"| {r + 1} | {fresh_ms:.1f} | {fresh_faults:.0f} | {buffer_ms:.1f} | {buffer_faults:.0f} |")
    if not same:
        sys.exit("the two paths differ: NextTokenHead no longer reproduces the model's probabilities")


if __name__ == "__main__":
    main()
