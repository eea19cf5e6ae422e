"""Does the model compute the same numbers on CUDA as on the CPU? (issue: faster next words, GPU part)

Sampling cannot be compared draw by draw across devices (the last bits of every matrix product differ, and a draw
near a boundary then lands on the next token), so this script compares what is deterministic, in float32 on both:

* the exact next-word distribution (``word_distribution``, ``harness.plugins.hf.trie.word_distribution``) of real Provo
contexts:
  the largest difference of any word's probability and of the residual;
* the log-likelihood of the corpus word after each context (``loglikelihood``, ``harness.plugins.hf.queries.scoring``).

A correct CUDA path agrees to about 1e-5 (float32 rounding through 30 layers); a wrong one (a missed device move, a
mask built on the wrong rows) is off by far more. The statistical tests of the sampler and the generator on CUDA are
the real-model tests run with ``HARNESS_TEST_DEVICE=cuda`` (``benchmarks/gpu_suite.sh``).

Example (on a machine with a GPU)::

    python benchmarks/check_cuda_matches_cpu.py --contexts 8
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.plugins.hf.loading.model import load_hf_model  # noqa: E402
from harness.plugins.hf.queries.scoring import QueryScorer  # noqa: E402
from harness.plugins.hf.trie.word_distribution import ExactWordSearch  # noqa: E402
from harness.requests import LoglikelihoodRequest  # noqa: E402
from harness.requests.word_distribution import WordDistributionRequest  # noqa: E402


def provo_contexts(data_dir: Path, k: int) -> list[dict[str, Any]]:
    """``k`` Provo positions (context and corpus word), evenly spaced over the corpus."""
    with (data_dir / "provo" / "provo_positions.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return [rows[i * len(rows) // k] for i in range(k)]


def answers(model_name: str, device: str, contexts: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    """Exact distributions and corpus-word log-likelihoods of ``contexts`` on one device, in float32."""
    loaded = load_hf_model(model_name, device=device, dtype="float32")
    search = ExactWordSearch(loaded.model, loaded.tokenizer, batch_size=64, device=loaded.device)
    scorer = QueryScorer(loaded.model, loaded.tokenizer, device=loaded.device, batch_size=64)
    distributions = [
        search.distribution(
            WordDistributionRequest(context=c["context"], epsilon=args.epsilon, max_expansions=args.max_expansions)
        )
        for c in contexts
    ]
    queries = [LoglikelihoodRequest(context=c["context"], continuation=" " + str(c["target_word"])) for c in contexts]
    return {"distributions": distributions, "loglikelihoods": scorer.loglikelihood_many(queries)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2-135m", help="hf model name (default: the packaged SmolLM2)")
    p.add_argument("--contexts", type=int, default=8, help="N Provo contexts, evenly spaced (default 8)")
    p.add_argument("--epsilon", type=float, default=0.2, help="exact search's residual target (default 0.2)")
    p.add_argument("--max-expansions", type=int, default=300, help="exact search's node cap (default 300)")
    p.add_argument("--data-dir", default=os.environ.get("HARNESS_DATA_DIR", str(REPO.parent / "shared" / "data")))
    p.add_argument("--tolerance", type=float, default=1e-4, help="largest difference that passes (default 1e-4)")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("CUDA is not available: nothing to compare", file=sys.stderr)
        return 2
    contexts = provo_contexts(Path(args.data_dir), args.contexts)
    cpu, cuda = (answers(args.model, device, contexts, args) for device in ("cpu", "cuda"))
    worst_prob = worst_residual = worst_ll = 0.0
    same_words = 0
    for a, b in zip(cpu["distributions"], cuda["distributions"], strict=True):
        words = set(a.probs) | set(b.probs)
        same_words += set(a.probs) == set(b.probs)
        worst_prob = max(worst_prob, max(abs(a.probs.get(w, 0.0) - b.probs.get(w, 0.0)) for w in words))
        worst_residual = max(worst_residual, abs(a.residual - b.residual))
    for a, b in zip(cpu["loglikelihoods"], cuda["loglikelihoods"], strict=True):
        worst_ll = max(worst_ll, abs(a.total - b.total))
    ok = max(worst_prob, worst_residual) <= args.tolerance and worst_ll <= 10 * args.tolerance
    print(
        f"CUDA vs CPU, float32, {args.model}, {len(contexts)} Provo contexts: exact distributions with the same "
        f"words {same_words}/{len(contexts)}, largest word-probability difference {worst_prob:.2e}, residual "
        f"{worst_residual:.2e}; largest corpus-word log-likelihood difference {worst_ll:.2e} -> "
        f"{'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
