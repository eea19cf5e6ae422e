"""Validate the relative-judgment perplexity estimator (``harness/analyses/relative_judgments``) model against model, as
Shlegeris et al. (2022, section 4) validated theirs: a language model plays the judge, so its true loss is known.

Why: no human judgments of this kind exist here, and the estimator is biased for few rounds per position and noisy
when the generator differs much from the judge; a judge whose ``H`` is known measures both.

- Judge ``H``: SmolLM2-135M-Instruct (fp32, loaded by ``harness.plugins.hf.loading.model``) next-token distributions
after the
  first ``--limit`` contexts of the ``provo`` task (its own loader); the true token is the first token of the next
  word of the passage, as the tokenizer splits ``context + " " + word`` after the context's own tokens.
- Generators ``G``: the same model at other temperatures (default 2.0 and 0.7, so ``G != H``), plus temperature 1.0
  (``G = H``), where every weight is exactly ``1 / H(t)``: a sanity check that must come out exact with no variance.
- ``K`` tokens are sampled from ``G`` per position (nested: the estimate for ``K`` uses the first ``K`` samples),
  each judged with the calibrated answer ``H(t) / (H(t) + H(s))``; the rounds are written in the documented format
  (``docs/human-perplexity.md``), once exact and once mapped to the paper's allowed answers (as a human would
  answer), read back with ``read_rounds`` and estimated; the estimate is compared with ``-mean log H(t)``.

Usage (from the repository root; about 40 s on 2 CPU cores once the model's conversion cache exists)::

    .venv/bin/python benchmarks/validate_relative_judgments.py --out runs/validate_relative_judgments.json
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, log_softmax

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.analyses.relative_judgments import (  # noqa: E402
    Estimate,
    Round,
    dumps_round,
    estimate,
    read_rounds,
    round_to_allowed,
)
from harness.data.loaders import resolve_data_dir  # noqa: E402
from harness.files import atomic_write_text, write_json  # noqa: E402
from harness.registry.manager import get_registry  # noqa: E402
from harness.registry.task_loading import resolve_tasks  # noqa: E402
from harness.run.task_data import load_task_data  # noqa: E402

#: The temperature at which the generator is the judge itself (``G = H``).
SANITY_TEMPERATURE = 1.0


@dataclass(frozen=True)
class Position:
    """One judged position: the context, the true next token and the judge's next-token log-probabilities."""

    position_id: str
    context: str
    true_id: int
    true_token: str
    #: The model's fp32 logits after the context, as float64 (``H = softmax(logits)``).
    logits: NDArray[np.float64]

    @property
    def log_h(self) -> NDArray[np.float64]:
        return np.asarray(log_softmax(self.logits), dtype=np.float64)


def load_contexts(data_dir: Path, limit: int) -> list[Any]:
    """The first ``limit`` instances of the ``provo`` task, read by the task's own loader."""
    registry = get_registry()
    (task,) = resolve_tasks(["provo"], {}, registry, expand_decoding=False)
    return list(load_task_data(task, registry, data_dir, limit).instances)


def judge_positions(loaded: Any, instances: Sequence[Any]) -> tuple[list[Position], int]:
    """The judge's next-token logits at each instance, and how many positions needed a forward pass of their own.

    The contexts of one passage are prefixes of each other, so one forward pass over the passage's longest text
    gives every position's distribution wherever a context's tokens are a prefix of that text's tokens (checked);
    any other context is run on its own."""
    import torch

    from harness.plugins.hf.shared.tokens import encode_context

    tokenizer, model = loaded.tokenizer, loaded.model

    def encode(text: str) -> list[int]:
        return encode_context(tokenizer, model, text, 1)

    @torch.inference_mode()
    def logits_of(ids: list[int]) -> NDArray[np.float64]:
        out = model(torch.tensor([ids], device=loaded.device)).logits[0]
        return np.asarray(out.float().cpu().numpy(), dtype=np.float64)

    passages: dict[Any, list[Any]] = {}
    for inst in instances:
        passages.setdefault(inst.meta.get("text_id", inst.id), []).append(inst)
    positions: list[Position] = []
    own_passes = 0
    for group in passages.values():
        longest = max(group, key=lambda i: len(i.context))
        shared_ids = encode(f"{longest.context} {longest.target_raw}")
        shared = logits_of(shared_ids)
        for inst in group:
            ctx = encode(inst.context)
            full = encode(f"{inst.context} {inst.target_raw}")
            if full[: len(ctx)] == ctx and len(full) > len(ctx):
                true_id = full[len(ctx)]
            else:  # the word's tokens do not follow the context's: take the word's own first token
                true_id = [int(t) for t in tokenizer(f" {inst.target_raw}", add_special_tokens=False)["input_ids"]][0]
            if shared_ids[: len(ctx)] == ctx:
                row = shared[len(ctx) - 1]
            else:
                own_passes += 1
                row = logits_of(ctx)[-1]
            token = str(tokenizer.decode([true_id], skip_special_tokens=False, clean_up_tokenization_spaces=False))
            positions.append(Position(str(inst.id), inst.context, int(true_id), token, row))
    return positions, own_passes


def write_rounds(
    positions: Sequence[Position],
    temperature: float,
    k_max: int,
    seed: int,
    decode: Any,
    exact_path: Path,
    rounded_path: Path,
    judge: str,
) -> None:
    """Sample ``k_max`` tokens per position from ``G = softmax(logits / temperature)``, judge each with the
    calibrated answer, and write the rounds twice: judgments exact, and mapped to the allowed answers."""
    exact_lines, rounded_lines = [], []
    for index, pos in enumerate(positions):
        rng = np.random.default_rng([seed, index, int(round(temperature * 1000))])
        log_h = pos.log_h
        log_g = np.asarray(log_softmax(pos.logits / temperature), dtype=np.float64)
        g = np.exp(log_g)
        sampled = rng.choice(g.size, size=k_max, p=g / g.sum())
        # H(t) / (H(t) + H(s)) = 1 / (1 + exp(log H(s) - log H(t))), exact to the last bit when s = t (0.5).
        judgments = expit(log_h[pos.true_id] - log_h[sampled])
        rounded = round_to_allowed(judgments)
        for i, (s, r, r_rounded) in enumerate(zip(sampled, judgments, rounded, strict=True)):
            common = {
                "position_id": pos.position_id,
                "context": pos.context,
                "true_token": pos.true_token,
                "sampled_token": decode(int(s)),
                "generator_prob": float(g[s]),
                "judge": judge,
                "generator_true_prob": float(g[pos.true_id]),
            }
            exact_lines.append(dumps_round(Round(**common, judgment=float(r), meta={"sample": i})))
            rounded_lines.append(dumps_round(Round(**common, judgment=float(r_rounded), meta={"sample": i})))
    atomic_write_text(exact_path, "".join(line + "\n" for line in exact_lines))
    atomic_write_text(rounded_path, "".join(line + "\n" for line in rounded_lines))


def first_k(rounds: Sequence[Round], k: int) -> list[Round]:
    """The rounds of the first ``k`` samples of every position (the ``meta.sample`` index written with each)."""
    return [r for r in rounds if r.meta is not None and r.meta["sample"] < k]


def summary(est: Estimate) -> dict[str, Any]:
    """The numbers a table row shows of one estimate."""
    return {
        "loss": est.loss,
        "interval": list(est.interval) if est.interval else None,
        "se_positions": est.se_positions,
        "se_sampling": est.se_sampling,
        "perplexity": est.perplexity,
        "perplexity_interval": list(est.perplexity_interval) if est.perplexity_interval else None,
        "difference_from_generator": est.difference_from_generator,
        "se_difference": est.se_difference,
    }


def validate(args: argparse.Namespace, rounds_dir: Path) -> dict[str, Any]:
    import torch

    from harness.plugins.hf.loading.model import load_hf_model

    torch.set_num_threads(args.threads)
    data_dir, _ = resolve_data_dir(args.data_dir)
    start = time.perf_counter()
    instances = load_contexts(data_dir, args.limit)
    loaded = load_hf_model(args.model, device="cpu", dtype="float32")
    positions, own_passes = judge_positions(loaded, instances)
    true_losses = np.array([-p.log_h[p.true_id] for p in positions])
    true_loss = float(np.mean(true_losses))
    k_max = max(args.ks)

    def decode(token: int) -> str:
        return str(loaded.tokenizer.decode([token], skip_special_tokens=False, clean_up_tokenization_spaces=False))

    rows: list[dict[str, Any]] = []
    for temperature in [*args.temperatures, SANITY_TEMPERATURE]:
        label = f"T={temperature:g}" + (" (G = H)" if temperature == SANITY_TEMPERATURE else "")
        exact_path = rounds_dir / f"rounds_T{temperature:g}.jsonl"
        rounded_path = rounds_dir / f"rounds_T{temperature:g}_rounded.jsonl"
        write_rounds(positions, temperature, k_max, args.seed, decode, exact_path, rounded_path, args.model)
        exact_all, rounded_all = read_rounds(exact_path), read_rounds(rounded_path)
        for k in args.ks:
            exact = estimate(first_k(exact_all, k), source=str(exact_path))
            rounded = estimate(first_k(rounded_all, k), source=str(rounded_path))
            # The rounded file read as given must equal the exact file estimated with --rounded.
            again = estimate(first_k(exact_all, k), rounded=True)
            if not math.isclose(again.loss, rounded.loss, rel_tol=1e-12, abs_tol=1e-12):
                raise AssertionError(f"{label} K={k}: rounded file {rounded.loss} != --rounded {again.loss}")
            interval = exact.interval
            rows.append(
                {
                    "generator": label,
                    "temperature": temperature,
                    "K": k,
                    "positions": exact.n_positions,
                    "rounds": exact.n_rounds,
                    "true_loss": true_loss,
                    "true_perplexity": math.exp(true_loss),
                    "estimate": summary(exact),
                    "rounded": summary(rounded),
                    "true_loss_in_interval": bool(interval and interval[0] <= true_loss <= interval[1]),
                }
            )
    sanity = [r for r in rows if r["temperature"] == SANITY_TEMPERATURE]
    worst = max(abs(r["estimate"]["loss"] - true_loss) for r in sanity)
    if worst > 1e-9:
        raise AssertionError(f"G = H must give the exact loss; off by {worst:.3g} nats")
    return {
        "model": args.model,
        "dtype": "float32",
        "task": "provo",
        "positions": len(positions),
        "positions_with_own_forward_pass": own_passes,
        "ks": list(args.ks),
        "seed": args.seed,
        "true_loss": true_loss,
        "true_perplexity": math.exp(true_loss),
        "sanity_g_equals_h_max_abs_error": worst,
        "rows": rows,
        "seconds": round(time.perf_counter() - start, 1),
    }


def _fmt(summary: dict[str, Any]) -> str:
    interval = summary["interval"]
    text = f"{summary['loss']:.3f}"
    return text + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


def format_table(result: dict[str, Any]) -> str:
    header = (
        f"{'generator':<14} {'K':>4} {'positions':>9} {'true loss':>9}  {'estimated loss [+-2 SE]':<26} "
        f"{'SE sampling':>11}  {'rounded estimate [+-2 SE]':<26}"
    )
    lines = [header, "-" * len(header)]
    for row in result["rows"]:
        se = row["estimate"]["se_sampling"]
        lines.append(
            f"{row['generator']:<14} {row['K']:>4} {row['positions']:>9} {row['true_loss']:>9.3f}  "
            f"{_fmt(row['estimate']):<26} {'n/a' if se is None else f'{se:.3f}':>11}  {_fmt(row['rounded']):<26}"
        )
    return "\n".join(lines)


def _positive_ints(text: str) -> list[int]:
    values = [int(v) for v in text.split(",") if v.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got '{text}'")
    return values


def _temperatures(text: str) -> list[float]:
    values = [float(v) for v in text.split(",") if v.strip()]
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"expected temperatures > 0 separated by commas, got '{text}'")
    return values


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--data-dir", help="data root holding provo/ (default: $HARNESS_DATA_DIR)")
    p.add_argument(
        "--model", default="smollm2-135m", help="the judge and generator, an hf: name (default smollm2-135m)"
    )
    p.add_argument("--limit", type=int, default=200, help="the first N contexts of the provo task (default 200)")
    p.add_argument("--ks", type=_positive_ints, default=[1, 10, 100], help="rounds per position (default 1,10,100)")
    p.add_argument(
        "--temperatures", type=_temperatures, default=[2.0, 0.7], help="generator temperatures (default 2.0,0.7)"
    )
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    p.add_argument("--rounds-dir", help="keep the rounds files here (default: a temporary folder, removed)")
    p.add_argument("--out", help="write the table's numbers as JSON to this file")
    args = p.parse_args(argv)
    os.environ.setdefault("HARNESS_NO_PROGRESS", "1")
    if args.rounds_dir:
        rounds_dir = Path(args.rounds_dir)
        rounds_dir.mkdir(parents=True, exist_ok=True)
        result = validate(args, rounds_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="relative-judgments-") as tmp:
            result = validate(args, Path(tmp))
    print(
        f"judge H = {result['model']} (fp32) on the first {result['positions']} provo contexts; "
        f"true loss -mean log H(t) = {result['true_loss']:.4f} nats (perplexity {result['true_perplexity']:.2f}); "
        f"G = H sanity: max |error| {result['sanity_g_equals_h_max_abs_error']:.2g} nats"
    )
    print(format_table(result))
    print(f"{result['seconds']} s")
    if args.out:
        write_json(Path(args.out), result)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
