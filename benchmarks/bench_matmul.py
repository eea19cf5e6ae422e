"""How fast this machine runs a model's matrix products, and what that says a full Provo run can cost at best.

Every trie node the word sampler runs is one position through every linear layer of the model (attention
projections, MLP, LM head); those products are almost all of its arithmetic. This script times each distinct
``nn.Linear`` shape of the model at a few row counts, in each dtype, into a preallocated output (as the sampler's
LM head writes into a reused buffer, so page faults on fresh memory are not counted), and reports:

* GFLOP/s per shape and row count;
* the rate of one whole position (all linear layers, weighted by how often each shape occurs) at each row count;
* the least time ``--positions`` positions can take at the 512-row rate, the best a run can do on this machine
  with no other cost at all. A full Provo run at n = 1,000 runs about 1.06 million positions
  (``benchmarks/count_positions.py`` counts them for a finished run).

Example (what ``docs/word-sampling.md`` reports)::

    python benchmarks/bench_matmul.py --positions 1056571

Run it on a quiet machine: it measures the CPU, and anything else running halves what it sees.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.plugins.hf.loading.model import load_hf_model  # noqa: E402


def linear_shapes(model: torch.nn.Module) -> Counter[tuple[int, int]]:
    """``(in_features, out_features)`` of every linear layer, with how many layers have it."""
    return Counter((m.in_features, m.out_features) for m in model.modules() if isinstance(m, torch.nn.Linear))


def rate(rows: int, shape: tuple[int, int], dtype: torch.dtype, seconds: float) -> tuple[float, float]:
    """GFLOP/s of ``[rows, in] x [in, out]`` into a reused output, and the time of one product in ms."""
    k, n = shape
    a = torch.randn(rows, k).to(dtype)
    w = torch.randn(n, k).to(dtype)
    out = torch.empty(rows, n, dtype=dtype)
    for _ in range(2):
        torch.mm(a, w.t(), out=out)
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        torch.mm(a, w.t(), out=out)
        reps += 1
    each = (time.perf_counter() - start) / reps
    return 2 * rows * k * n / each / 1e9, each * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2-135m", help="hf model whose linear layers are timed")
    p.add_argument("--dtypes", default="float32,bfloat16", help="comma-separated (default float32,bfloat16)")
    p.add_argument("--rows", default="512,256,64,16", help="row counts (default 512,256,64,16)")
    p.add_argument(
        "--positions", type=int, default=1_056_571, help="positions of the run to bound (default: the full fp32 run's)"
    )
    p.add_argument("--seconds", type=float, default=0.5, help="time per measurement (default 0.5)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    shapes = linear_shapes(load_hf_model(args.model, device="cpu").model)
    flops_per_position = sum(2 * k * n * count for (k, n), count in shapes.items())
    rows_list = [int(r) for r in args.rows.split(",")]
    print(f"{args.model}: {sum(shapes.values())} linear layers, {flops_per_position / 1e9:.3f} GFLOP per position")
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        print(f"\n{dtype_name}")
        print("| shape (in x out) | layers | " + " | ".join(f"{r} rows GFLOP/s" for r in rows_list) + " |")
        print("|---|---|" + "---|" * len(rows_list))
        position_seconds = dict.fromkeys(rows_list, 0.0)
        for shape, count in sorted(shapes.items()):
            cells = []
            for rows in rows_list:
                gflops, ms = rate(rows, shape, dtype, args.seconds)
                position_seconds[rows] += count * ms / 1e3 / rows
                cells.append(f"{gflops:.0f}")
            print(f"| {shape[0]} x {shape[1]} | {count} | " + " | ".join(cells) + " |")
        for rows in rows_list:
            print(
                f"one position at {rows} rows: {position_seconds[rows] * 1e3:.3f} ms "
                f"({flops_per_position / position_seconds[rows] / 1e9:.0f} GFLOP/s over all linear layers)"
            )
        best = position_seconds[max(rows_list)] * args.positions
        print(f"{args.positions:,} positions at the {max(rows_list)}-row rate: {best / 60:.1f} min at best")


if __name__ == "__main__":
    main()
