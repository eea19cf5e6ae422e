"""The ``run_stats`` of a pool's workers (requests sent, answered from a store, retried), added up for
``results.json``'s ``api_calls``, those of the workers that died included.

Why: each worker reports its counts so far with its load and with every block it answers
(:class:`~harness.executors.worker.BlockAnswer`), and the driver keeps the latest report of every worker it started.
A worker that dies takes with it only the counts of the block it was answering, whose answer never arrived (the
worker that answers it again counts it).
"""

from __future__ import annotations

from typing import Any


class WorkerCounts:
    """The latest ``run_stats`` of each worker the pool started, by the worker's serial number."""

    def __init__(self) -> None:
        self._latest: dict[int, dict[str, Any]] = {}

    def report(self, worker: int, stats: dict[str, Any] | None) -> None:
        """Worker ``worker``'s counts so far (they only grow, so the latest replaces the earlier)."""
        if stats is not None:
            self._latest[worker] = stats

    def total(self) -> dict[str, Any] | None:
        """Every worker's latest counts, summed; None when no worker reported any (an adapter without counts)."""
        merged: dict[str, Any] | None = None
        for stats in self._latest.values():
            merged = sum_stats(merged or {}, stats)
        return merged


def sum_stats(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two workers' ``run_stats`` added up: numbers summed, nested objects merged the same way, else the first."""
    out = dict(a)
    for key, value in b.items():
        if key not in out:
            out[key] = value
        elif isinstance(value, dict) and isinstance(out[key], dict):
            out[key] = sum_stats(out[key], value)
        elif isinstance(value, int | float) and isinstance(out[key], int | float) and not isinstance(value, bool):
            out[key] = out[key] + value
    return out
