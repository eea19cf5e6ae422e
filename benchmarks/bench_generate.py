"""Speed of the batched ``n``-sample generator against one plain ``generate`` call per prompt, on ASSET sources.

For each group of ``--group-size`` inputs (64, as ``harness run`` hands them to the ``hf`` adapter) the script times

* ``batched``: ``BatchGenerator.generate_many`` on the group (each prompt encoded once, its ``n`` samples decoded as
  rows attending to it, rows of all prompts in the same forward passes, finished rows dropped);
* ``generate``: for each prompt of the group, ``model.generate(do_sample=True, top_k=0, top_p=1.0,
  num_return_sequences=n, max_new_tokens, stop_strings=..., tokenizer=...)``, the plain way to get the same samples
  (ancestral sampling; ``top_k=0`` because ``generate`` defaults to 50).

The two run interleaved, group by group, so a change of machine load during the run hits both. Both stop a sample at
end-of-sequence, at the stop string (a newline) or after ``max_new_tokens``; tokens generated are counted by the same
rule for both (``harness.plugins.hf.generate.text.scan_row``: up to and including the end-of-sequence or stop token).
The batched generator's decoding passes read each prompt's keys/values through
``harness.plugins.hf.shared.prefix_attention``; ``generate`` runs through the same registered attention, which is
transformers' ``sdpa`` for any pass without a prefix layout. (Until 2026-11-25 this script switched the model to
``sdpa`` for ``generate``, which made the batched generator ignore its prompts; the generator now switches the attention
back before every batch.)

Example (the measurement ``docs/generation.md`` reports)::

    python benchmarks/bench_generate.py --limit 200 --n 10 --max-new-tokens 100 --threads 2

Every number printed is measured; nothing is extrapolated.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.plugins.hf.adapter import DEFAULT_CONTEXTS_PER_PASS  # noqa: E402
from harness.plugins.hf.generate.generator import DEFAULT_BATCH_SIZE, BatchGenerator  # noqa: E402
from harness.plugins.hf.generate.text import scan_row  # noqa: E402
from harness.plugins.hf.loading.model import load_hf_model  # noqa: E402
from harness.plugins.hf.shared.tokens import ContinuationDecoder  # noqa: E402
from harness.requests import GenerateRequest  # noqa: E402

PROMPT = "Simplify the following sentence.\nSentence: {source}\nSimplified sentence:"
STOP = ("\n",)


@dataclass
class Totals:
    """Wall and CPU seconds, tokens generated (as ``n_tokens`` counts them) and token positions evaluated."""

    wall: float = 0.0
    cpu: float = 0.0
    tokens: int = 0
    positions: int = 0

    def add(self, wall: float, cpu: float, tokens: int, positions: int) -> None:
        self.wall += wall
        self.cpu += cpu
        self.tokens += tokens
        self.positions += positions


def data_dir(option: str | None) -> Path:
    """``--data-dir``, else ``$HARNESS_DATA_DIR``, else ``../shared/data`` beside the repository."""
    if option:
        return Path(option)
    env = os.environ.get("HARNESS_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


def read_sources(path: Path, limit: int) -> list[str]:
    """The first ``limit`` source sentences of the ASSET validation file."""
    sources: list[str] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if len(sources) >= limit:
                break
            sources.append(str(json.loads(line)["source"]))
    return sources


def cpu_name() -> str:
    """The CPU model from ``/proc/cpuinfo`` where there is one (timings are only comparable on the same CPU)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f" ({os.cpu_count()} logical CPUs)"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def time_batched(generator: BatchGenerator, requests: list[GenerateRequest]) -> tuple[float, float, int, int]:
    cpu, start = time.process_time(), time.perf_counter()
    responses = generator.generate_many(requests)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall, cpu, sum(sum(r.n_tokens) for r in responses), sum(r.tokens_evaluated for r in responses)


def time_generate(
    generator: BatchGenerator, request: GenerateRequest, pad: int, seed: int
) -> tuple[float, float, int, int]:
    """One plain ``generate`` call for ``request``: wall, CPU, tokens generated, positions evaluated.

    ``generate`` keeps finished rows in the batch (padded) until every row of the prompt stopped, and runs the
    prompt once per sample: it evaluates ``n * (prompt + steps - 1)`` positions.
    """
    model, tokenizer = generator.model, generator.tokenizer
    ids = generator.prompt_ids(request)
    torch.manual_seed(seed)
    cpu, start = time.process_time(), time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            torch.tensor([ids], device=generator.device),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=generator.device),
            do_sample=True,
            top_k=0,
            top_p=1.0,
            temperature=1.0,
            num_return_sequences=request.n,
            max_new_tokens=request.max_new_tokens,
            stop_strings=list(request.stop),
            tokenizer=tokenizer,
            pad_token_id=pad,
        )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    decoder = ContinuationDecoder(tokenizer, ids)
    rows = out[:, len(ids) :].tolist()
    tokens = sum(scan_row(row, decoder, generator.eos, request.stop, request.max_new_tokens)[2] for row in rows)
    steps = len(rows[0])
    return wall, cpu, tokens, request.n * (len(ids) + steps - 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", help="folder holding asset/asset_valid.jsonl (default: $HARNESS_DATA_DIR)")
    p.add_argument("--limit", type=int, default=200, help="ASSET inputs, from the start of the file (default 200)")
    p.add_argument("--n", type=int, default=10, help="samples per input (default 10)")
    p.add_argument("--max-new-tokens", type=int, default=100, help="token cap per sample (default 100)")
    p.add_argument(
        "--group-size",
        type=int,
        default=DEFAULT_CONTEXTS_PER_PASS,
        help=f"inputs per generate_many call (default {DEFAULT_CONTEXTS_PER_PASS}, the hf adapter's)",
    )
    p.add_argument(
        "--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help=f"rows per pass (default {DEFAULT_BATCH_SIZE})"
    )
    p.add_argument("--dtype", default="float32", help="float32 | bfloat16 | float16 (default float32)")
    p.add_argument("--device", default="cpu", help="cpu | cuda | auto (default cpu)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    p.add_argument(
        "--baseline-limit",
        type=int,
        default=None,
        help="time plain generate on only the first N inputs (default: all; 0 skips it)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--model", default="smollm2-135m", help="hf model name (default: the packaged SmolLM2-135M-Instruct)"
    )
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    asset = data_dir(args.data_dir) / "asset" / "asset_valid.jsonl"
    if not asset.is_file():
        print(f"ASSET validation file not found at {asset} (use --data-dir or HARNESS_DATA_DIR)", file=sys.stderr)
        return 2
    sources = read_sources(asset, args.limit)
    n_baseline = len(sources) if args.baseline_limit is None else min(args.baseline_limit, len(sources))

    start = time.perf_counter()
    loaded = load_hf_model(args.model, device=args.device, dtype=args.dtype)
    load_s = time.perf_counter() - start
    generator = BatchGenerator(loaded.model, loaded.tokenizer, device=loaded.device, batch_size=args.batch_size)
    tokenizer = loaded.tokenizer
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    requests = [
        GenerateRequest(
            prompt=PROMPT.format(source=source),
            n=args.n,
            seed=args.seed + i,
            max_new_tokens=args.max_new_tokens,
            stop=STOP,
        )
        for i, source in enumerate(sources)
    ]

    # Warm-up: the first forward passes pay one-off allocation and kernel selection costs.
    warm = GenerateRequest(prompt="Warm up", n=4, seed=0, max_new_tokens=4, stop=STOP)
    generator.generate_many([warm, warm])
    time_generate(generator, warm, pad, 0)

    print(f"# generation benchmark: {args.model} ({args.dtype}, {loaded.device}) on {cpu_name()}")
    print(
        f"# torch {torch.__version__}, {args.threads} threads; {len(sources)} ASSET inputs x n={args.n}, "
        f"max_new_tokens={args.max_new_tokens}, stop={list(STOP)}; groups of {args.group_size}, "
        f"{args.batch_size} rows per pass; generator mode: {generator.mode}"
    )
    print(f"# model load {load_s:.1f} s from {loaded.path}; load average {os.getloadavg()[0]:.2f}")
    print("| inputs | batched s | batched tokens | generate s | generate tokens | speed-up |")
    print("|---|---|---|---|---|---|")
    batched, plain, batched_timed = Totals(), Totals(), Totals()
    for g in range(0, len(requests), args.group_size):
        group = requests[g : g + args.group_size]
        result = time_batched(generator, group)
        batched.add(*result)
        print(f"# inputs {g}-{g + len(group) - 1}: batched {result[0]:.1f} s", file=sys.stderr, flush=True)
        timed = [r for k, r in enumerate(group) if g + k < n_baseline]
        if not timed:
            print(f"| {g}-{g + len(group) - 1} | {result[0]:.1f} | {result[2]} | - | - | - |", flush=True)
            continue
        if len(timed) == len(group):
            batched_timed.add(*result)
        group_plain = Totals()
        for k, request in enumerate(timed):
            group_plain.add(*time_generate(generator, request, pad, args.seed + g + k))
        plain.add(group_plain.wall, group_plain.cpu, group_plain.tokens, group_plain.positions)
        speed = f"{group_plain.wall / result[0]:.1f}x" if len(timed) == len(group) else "-"
        print(
            f"| {g}-{g + len(group) - 1} | {result[0]:.1f} | {result[2]} | {group_plain.wall:.1f} "
            f"| {group_plain.tokens} | {speed} |",
            flush=True,
        )

    print()
    print(
        f"batched: {batched.wall:.1f} s wall, {batched.cpu:.1f} s CPU, {batched.tokens} tokens generated "
        f"({batched.tokens / batched.wall:.1f} tokens/s), {batched.positions} positions evaluated"
    )
    if plain.wall:
        print(
            f"generate ({n_baseline} inputs): {plain.wall:.1f} s wall, {plain.cpu:.1f} s CPU, {plain.tokens} tokens "
            f"generated ({plain.tokens / plain.wall:.1f} tokens/s), {plain.positions} positions evaluated"
        )
        if batched_timed.wall:
            print(
                f"speed-up on the {n_baseline} inputs timed both ways: {plain.wall / batched_timed.wall:.2f}x wall, "
                f"{plain.cpu / batched_timed.cpu:.2f}x CPU; positions {plain.positions / batched_timed.positions:.1f}x "
                f"fewer; tokens/s {batched_timed.tokens / batched_timed.wall:.1f} vs "
                f"{plain.tokens / plain.wall:.1f}"
            )
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
