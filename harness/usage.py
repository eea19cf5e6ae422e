"""API usage totals (requests, prompt and completion tokens), added up the same way by adapters and the runner."""

from __future__ import annotations

from typing import Any


def add_usage(total: dict[str, int], usage: dict[str, Any]) -> None:
    """Add one API usage record (``requests``, ``prompt_tokens``, ``completion_tokens``) into a running total.

    >>> total = {"requests": 1}; add_usage(total, {"requests": 2, "prompt_tokens": 5}); total
    {'requests': 3, 'prompt_tokens': 5}
    """
    for key, value in usage.items():
        total[key] = total.get(key, 0) + int(value)
