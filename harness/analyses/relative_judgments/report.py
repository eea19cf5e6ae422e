"""The estimate as text, and the ``harness human-perplexity`` command: read the rounds, estimate, print, write."""

from __future__ import annotations

from pathlib import Path

from harness.analyses.relative_judgments.estimator import INTERVAL_SES, Estimate, estimate
from harness.analyses.relative_judgments.rounds import read_rounds
from harness.files import write_json


def _interval_text(interval: tuple[float, float] | None, fmt: str) -> str:
    return "(no interval from one position)" if interval is None else f"[{interval[0]:{fmt}}, {interval[1]:{fmt}}]"


def format_estimate(est: Estimate) -> str:
    """The estimate as a few lines of text: counts, loss and perplexity with their intervals, the two standard
    errors, and the difference from the generator where the rounds allow it."""
    counts = sorted({p.n_rounds for p in est.positions})
    per = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    judged = "judgments rounded to the nearest allowed answer" if est.rounded else "judgments as given"
    judges = f", {len(est.judges)} judge{'s' if len(est.judges) != 1 else ''}" if est.judges else ""
    lines = [
        f"{est.source}: {est.n_rounds:,} rounds at {est.n_positions:,} positions "
        f"({per} per position{judges}); {judged}",
        f"loss        {est.loss:.4f} nats  {_interval_text(est.interval, '.4f')}  "
        f"(+- {INTERVAL_SES:g} standard errors over positions)",
        f"perplexity  {est.perplexity:.3f}  {_interval_text(est.perplexity_interval, '.3f')}",
    ]
    se_pos = "n/a" if est.se_positions is None else f"{est.se_positions:.4f}"
    se_smp = "n/a (a position has one round)" if est.se_sampling is None else f"{est.se_sampling:.4f}"
    lines.append(f"standard error over positions {se_pos} nats; from the sampled tokens alone {se_smp} nats")
    if est.difference_from_generator is not None:
        lines.append(
            f"minus the generator's loss ({est.generator_loss:.4f} nats on these positions): "
            f"{est.difference_from_generator:+.4f} nats {_interval_text(est.difference_interval, '+.4f')}"
        )
    return "\n".join(lines)


def command(path: Path, *, rounded: bool = False, json_out: Path | None = None) -> int:
    """``harness human-perplexity ROUNDS.jsonl [--rounded] [--json OUT]``: read, estimate, print, write."""
    est = estimate(read_rounds(path), rounded=rounded, source=str(path))
    print(format_estimate(est))
    if json_out is not None:
        write_json(Path(json_out), est.to_json())
        print(f"wrote {json_out}")
    return 0
