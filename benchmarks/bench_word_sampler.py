"""Speed of the trie next-word sampler against plain ``generate`` on real Provo contexts with SmolLM2-135M-Instruct.

For each context the script times

* ``trie paper``: ``TrieWordSampler`` in paper mode (5 tokens), ``n`` samples;
* ``trie exact``: the same in exact mode (``--exact-max-new-tokens``, default 32);
* ``generate``: ``model.generate(do_sample=True, top_k=0, top_p=1.0, num_return_sequences=n, max_new_tokens=5)``,
  the plain way to get the same ``n`` paper-mode samples (only sampling is timed, not word extraction, which
  favours ``generate``).

and prints wall times, the speed-up and the token positions each evaluated. ``generate`` runs the context once per
sample: ``n * (context + 5 - 1)`` positions (the 5th token is sampled from the 4th step's logits, so it needs no
forward pass); the trie runs the context once plus one position per trie node it expands.

Example (what ``docs/word-sampling.md`` reports)::

    python benchmarks/bench_word_sampler.py --contexts 5 --n 1000 --threads 2 --generate-contexts 2

Plain ``generate`` at ``n=1000`` takes minutes per context on 2 CPU cores; ``--generate-contexts`` limits it to the
first few contexts (the trie still runs on all). Every number printed is measured; nothing is extrapolated.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.plugins.hf.loading.model import load_hf_model  # noqa: E402
from harness.plugins.hf.shared.tokens import ContinuationDecoder, encode_context, eos_token_ids  # noqa: E402
from harness.plugins.hf.trie.word_sampler import DEFAULT_BATCH_SIZE, TrieWordSampler  # noqa: E402
from harness.requests import SampleWordsRequest  # noqa: E402
from harness.scoring.stats import homogeneity_pvalue  # noqa: E402
from harness.words.rules import decide_word  # noqa: E402


@dataclass
class Row:
    label: str
    context_tokens: int
    paper_s: float
    paper_positions: int
    exact_s: float
    exact_positions: int
    top_words: str
    paper_cpu: float = 0.0
    paper_counts: dict[str, int] | None = None
    generate_s: float | None = None
    generate_cpu: float | None = None
    generate_positions: int | None = None


def data_dir(option: str | None) -> Path:
    """``--data-dir``, else ``$HARNESS_DATA_DIR``, else ``../shared/data`` beside the repository."""
    if option:
        return Path(option)
    env = os.environ.get("HARNESS_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


def pick_contexts(path: Path, k: int) -> list[dict[str, Any]]:
    """``k`` positions spread over the passages: evenly spaced passages, the middle word position of each."""
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    by_text: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_text.setdefault(int(row["text_id"]), []).append(row)
    texts = sorted(by_text)
    k = max(1, min(k, len(texts)))
    chosen = [texts[round(i * (len(texts) - 1) / max(1, k - 1))] for i in range(k)] if k > 1 else [texts[0]]
    picked = []
    for text_id in chosen:
        positions = sorted(by_text[text_id], key=lambda r: int(r["word_num"]))
        picked.append(positions[len(positions) // 2])
    return picked


def cpu_name() -> str:
    """The CPU model from ``/proc/cpuinfo`` where there is one (timings are only comparable on the same CPU)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f" ({os.cpu_count()} logical CPUs)"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device: torch.device) -> str:
    """The GPU's name on CUDA, else the CPU's (timings are only comparable on the same device)."""
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (host: {cpu_name()})"
    return cpu_name()


def synchronize(device: torch.device) -> None:
    """Wait for the GPU's queued work, so a host clock reads the time the work took (no-op on a CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_generate(
    model: Any, ids: list[int], n: int, max_new_tokens: int, pad: int, seed: int
) -> tuple[float, float, int]:
    """Wall and CPU time of plain sampling, and the positions it evaluated: ``n * (context + steps - 1)``."""
    device = next(model.parameters()).device
    torch.manual_seed(seed)
    synchronize(device)
    cpu = time.process_time()
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            torch.tensor([ids], device=device),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=device),
            do_sample=True,
            top_k=0,
            top_p=1.0,
            temperature=1.0,
            max_new_tokens=max_new_tokens,
            num_return_sequences=n,
            pad_token_id=pad,
        )
    synchronize(device)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    steps = out.shape[1] - len(ids)  # every row runs every step: finished rows are padded, not dropped
    return seconds, cpu, n * (len(ids) + steps - 1)


def paper_word(tokens: list[int], decoder: ContinuationDecoder, eos: set[int], max_new_tokens: int) -> str:
    """The paper-mode word of one whole sample, by the rule the trie applies prefix by prefix."""
    for depth in range(1, len(tokens) + 1):
        ended = tokens[depth - 1] in eos
        text = decoder(tokens[: depth - 1] if ended else tokens[:depth])
        kind, value = decide_word(text, ended=ended, depth=depth, mode="paper", max_new_tokens=max_new_tokens)
        if kind != "open":
            return value
    return decide_word(decoder(tokens), ended=True, depth=len(tokens), mode="paper", max_new_tokens=max_new_tokens)[1]


def time_vllm(
    path: str, dtype: str, contexts: list[str], rows: list[Row], tokenizer: Any, model: Any, args: argparse.Namespace
) -> None:
    """vLLM's offline ``LLM.generate`` with ``n`` samples of ``--max-new-tokens`` tokens per context, prefix caching
    on: what a user would otherwise run for paper mode. Times each context's call (words are extracted afterwards,
    untimed) and tests its words against the trie's paper-mode words (chi-square homogeneity)."""
    try:
        from vllm import LLM, SamplingParams
    except ImportError:
        print("# vLLM: skipped (vllm is not installed; it needs a CUDA machine: pip install vllm)")
        return
    llm = LLM(model=path, dtype=dtype, enable_prefix_caching=True, seed=args.seed, gpu_memory_utilization=0.5)
    eos = set(eos_token_ids(model, tokenizer))
    params = SamplingParams(
        n=args.n, max_tokens=args.max_new_tokens, temperature=1.0, top_p=1.0, top_k=-1, seed=args.seed, detokenize=False
    )
    warm = encode_context(tokenizer, model, "Warm up", args.max_new_tokens)
    llm.generate([{"prompt_token_ids": warm}], params, use_tqdm=False)
    print("| context | vLLM s | trie paper s | speed-up of the trie | words: homogeneity p vs trie |")
    print("|---|---|---|---|---|")
    total_vllm = total_trie = 0.0
    for context, row in zip(contexts, rows, strict=True):
        ids = encode_context(tokenizer, model, context, args.max_new_tokens)
        start = time.perf_counter()
        (out,) = llm.generate([{"prompt_token_ids": ids}], params, use_tqdm=False)
        seconds = time.perf_counter() - start
        decoder = ContinuationDecoder(tokenizer, ids)
        words: dict[str, int] = {}
        for completion in out.outputs:
            word = paper_word(list(completion.token_ids), decoder, eos, args.max_new_tokens)
            words[word] = words.get(word, 0) + 1
        p_value = homogeneity_pvalue(words, row.paper_counts or {})
        total_vllm, total_trie = total_vllm + seconds, total_trie + row.paper_s
        shown = f"{p_value:.3g}" if p_value is not None else "-"
        print(f"| {row.label} | {seconds:.3f} | {row.paper_s:.3f} | {seconds / row.paper_s:.1f}x | {shown} |")
    print(f"vLLM: {total_vllm:.2f} s for {len(rows)} contexts vs trie paper {total_trie:.2f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", help="folder holding provo/provo_positions.jsonl (default: $HARNESS_DATA_DIR)")
    p.add_argument("--contexts", type=int, default=5, help="Provo positions, spread over passages (default 5)")
    p.add_argument("--n", type=int, default=1000, help="samples per context (default 1000)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    p.add_argument("--max-new-tokens", type=int, default=5, help="paper-mode tokens (default 5)")
    p.add_argument("--exact-max-new-tokens", type=int, default=32, help="exact-mode token cap (default 32)")
    p.add_argument(
        "--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help=f"trie rows per pass (default {DEFAULT_BATCH_SIZE})"
    )
    p.add_argument(
        "--generate-contexts",
        type=int,
        default=None,
        help="run plain generate on only the first N contexts (default: all; 0 skips it)",
    )
    p.add_argument(
        "--lockstep",
        action="store_true",
        help="also time the exact-mode requests of all contexts answered together (sample_many), as `harness run` does",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--model", default="smollm2-135m", help="hf model name (default: the packaged SmolLM2-135M-Instruct)"
    )
    p.add_argument("--device", default="cpu", help="cpu | cuda | auto (default cpu)")
    p.add_argument("--dtype", default="float32", help="float32 | bfloat16 | float16 (default float32)")
    p.add_argument(
        "--vllm",
        action="store_true",
        help="also time vLLM's offline LLM.generate(n, max_tokens=--max-new-tokens) with prefix caching on the same "
        "contexts (paper mode's job; skipped with a message when vllm is not installed)",
    )
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    positions_file = data_dir(args.data_dir) / "provo" / "provo_positions.jsonl"
    if not positions_file.is_file():
        print(f"Provo positions not found at {positions_file} (use --data-dir or HARNESS_DATA_DIR)", file=sys.stderr)
        return 2
    contexts = pick_contexts(positions_file, args.contexts)
    n_generate = len(contexts) if args.generate_contexts is None else min(args.generate_contexts, len(contexts))

    start = time.perf_counter()
    loaded = load_hf_model(args.model, device=args.device, dtype=args.dtype)
    load_s = time.perf_counter() - start
    model, tokenizer = loaded.model, loaded.tokenizer
    sampler = TrieWordSampler(model, tokenizer, batch_size=args.batch_size, device=loaded.device)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    # Warm-up: the first forward passes pay one-off allocation and kernel selection costs.
    sampler.sample(SampleWordsRequest(context="Warm up", n=50, seed=0, mode="paper", max_new_tokens=3))
    time_generate(model, tokenizer("Warm up")["input_ids"], 8, 2, pad, 0)

    print(
        f"# next-word sampling benchmark: {args.model} ({args.dtype}, {loaded.device}) on {device_name(loaded.device)}"
    )
    print(f"# torch {torch.__version__}, {args.threads} threads, n={args.n}, trie batch {args.batch_size}")
    print(f"# model load {load_s:.1f} s from {loaded.path}; load average {os.getloadavg()[0]:.2f}")
    rows: list[Row] = []
    exact_requests: list[SampleWordsRequest] = []
    paper_requests: list[SampleWordsRequest] = []
    for i, ctx in enumerate(contexts):
        label = f"{ctx['text_id']}:{ctx['word_num']}"
        ids = encode_context(tokenizer, model, ctx["context"], args.max_new_tokens)
        paper_req = SampleWordsRequest(
            context=ctx["context"], n=args.n, seed=args.seed, mode="paper", max_new_tokens=args.max_new_tokens
        )
        exact_req = SampleWordsRequest(
            context=ctx["context"], n=args.n, seed=args.seed, mode="exact", max_new_tokens=args.exact_max_new_tokens
        )
        exact_requests.append(exact_req)
        paper_requests.append(paper_req)
        c0, t0 = time.process_time(), time.perf_counter()
        paper = sampler.sample(paper_req)
        c1, t1 = time.process_time(), time.perf_counter()
        exact = sampler.sample(exact_req)
        t2 = time.perf_counter()
        top = sorted(paper.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        row = Row(
            label=label,
            context_tokens=len(ids),
            paper_s=t1 - t0,
            paper_cpu=c1 - c0,
            paper_positions=paper.tokens_evaluated,
            exact_s=t2 - t1,
            exact_positions=exact.tokens_evaluated,
            top_words=", ".join(f"{w} {c}" for w, c in top),
            paper_counts=paper.counts,
        )
        if i < n_generate:
            row.generate_s, row.generate_cpu, row.generate_positions = time_generate(
                model, ids, args.n, args.max_new_tokens, pad, args.seed
            )
        rows.append(row)
        print(f"# done {label}: context {len(ids)} tokens", file=sys.stderr, flush=True)

    header = (
        "| context | ctx tok | trie paper s | trie paper pos | trie exact s | trie exact pos "
        "| generate s | generate pos | speed-up (time) | fewer positions | paper top words |"
    )
    print(header)
    print("|" + "|".join("---" for _ in range(header.count("|") - 1)) + "|")
    for r in rows:
        gen_s = f"{r.generate_s:.1f}" if r.generate_s is not None else "-"
        gen_pos = f"{r.generate_positions}" if r.generate_positions is not None else "-"
        speed = f"{r.generate_s / r.paper_s:.0f}x" if r.generate_s is not None else "-"
        fewer = f"{r.generate_positions / r.paper_positions:.0f}x" if r.generate_positions is not None else "-"
        print(
            f"| {r.label} | {r.context_tokens} | {r.paper_s:.2f} | {r.paper_positions} | {r.exact_s:.2f} "
            f"| {r.exact_positions} | {gen_s} | {gen_pos} | {speed} | {fewer} | {r.top_words} |"
        )
    timed = [r for r in rows if r.generate_s is not None]
    print()
    print(
        f"trie paper: mean {statistics.mean(r.paper_s for r in rows):.2f} s/context, "
        f"{statistics.mean(r.paper_positions for r in rows):.0f} positions; "
        f"trie exact: mean {statistics.mean(r.exact_s for r in rows):.2f} s/context, "
        f"{statistics.mean(r.exact_positions for r in rows):.0f} positions"
    )
    if timed:
        gen = sum(r.generate_s or 0.0 for r in timed)
        trie = sum(r.paper_s for r in timed)
        gen_cpu = sum(r.generate_cpu or 0.0 for r in timed)
        trie_cpu = sum(r.paper_cpu for r in timed)
        print(
            f"generate (n={args.n}, {len(timed)} context(s)): {gen:.1f} s wall vs trie paper {trie:.2f} s "
            f"-> {gen / trie:.0f}x faster; CPU time {gen_cpu:.1f} s vs {trie_cpu:.2f} s -> {gen_cpu / trie_cpu:.0f}x; "
            f"positions {sum(r.generate_positions or 0 for r in timed)} vs {sum(r.paper_positions for r in timed)} "
            f"-> {sum(r.generate_positions or 0 for r in timed) / sum(r.paper_positions for r in timed):.0f}x fewer"
        )
    if args.lockstep:
        t0 = time.perf_counter()
        together = sampler.sample_many(exact_requests)
        elapsed = time.perf_counter() - t0
        alone = sum(r.exact_s for r in rows)
        print(
            f"trie exact, {len(exact_requests)} contexts in lockstep: {elapsed:.2f} s "
            f"({elapsed / len(exact_requests):.2f} s/context, {sum(r.tokens_evaluated for r in together)} positions) "
            f"vs {alone:.2f} s one by one -> {alone / elapsed:.1f}x"
        )
        if timed:
            # generate's job (paper mode, the same contexts) answered as `harness run` answers it: in one group.
            synchronize(loaded.device)
            t0 = time.perf_counter()
            sampler.sample_many(paper_requests[: len(timed)])
            synchronize(loaded.device)
            paper_together = time.perf_counter() - t0
            gen = sum(r.generate_s or 0.0 for r in timed)
            print(
                f"trie paper, the {len(timed)} contexts generate ran, in lockstep: {paper_together:.2f} s vs generate "
                f"{gen:.1f} s -> {gen / paper_together:.1f}x faster"
            )
    if args.vllm:
        time_vllm(loaded.path, args.dtype, [c["context"] for c in contexts], rows, tokenizer, model, args)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
