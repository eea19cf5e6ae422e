"""When and how long to wait before asking an API again.

Hosted APIs rate-limit and local servers fall over; a long run must ride that out without hammering the server and
without waiting forever. Waits grow exponentially with "equal jitter" (half fixed, half random, so that many
concurrent requests that failed together do not come back together), a server's ``Retry-After`` is honoured as a
floor, and every retry spends from one budget shared by the whole run, so that a server that is down ends the run
with a clear error instead of an endless loop.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass, field

from harness.api import HarnessError

#: HTTP statuses worth asking again: timeouts, conflicts, rate limits and server-side errors.
RETRYABLE_STATUS: frozenset[int] = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524})


class RetryBudgetSpent(HarnessError):
    """The run's retry budget is spent; what was answered before is stored and a rerun sends only the rest."""


@dataclass
class RetryPolicy:
    """Per-request attempts, the shared budget, and the backoff curve (seconds)."""

    max_attempts: int = 8
    budget: int = 200
    base_delay: float = 0.5
    max_delay: float = 30.0
    #: A ``Retry-After`` longer than this is still honoured, but capped, so a misconfigured server cannot park the
    #: run for an hour on one response.
    max_retry_after: float = 120.0
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (``attempt`` counts from 1).

        >>> p = RetryPolicy(base_delay=1.0, max_delay=8.0, rng=random.Random(0))
        >>> 0.5 <= p.delay(1) <= 1.0 and 4.0 <= p.delay(4) <= 8.0 and 4.0 <= p.delay(10) <= 8.0
        True
        >>> p.delay(1, retry_after=3.0) >= 3.0
        True
        """
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        wait = ceiling / 2 + self.rng.uniform(0, ceiling / 2)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_retry_after))
        return wait


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds (``"2"``, ``"0.5"``) or an HTTP date.

    >>> parse_retry_after("2"), parse_retry_after("0.25"), parse_retry_after(None), parse_retry_after("soon")
    (2.0, 0.25, None, None)
    >>> parse_retry_after("Thu, 01 Jan 1970 00:00:10 GMT", now=4.0)
    6.0
    """
    if value is None:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


class RetryBudget:
    """Retries left for the whole run. Used from one event loop, so a plain counter is enough."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.spent = 0

    def spend(self, what: str, reason: str) -> None:
        """Take one retry, or raise :class:`RetryBudgetSpent` naming the request and the last error."""
        if self.spent >= self.total:
            raise RetryBudgetSpent(
                f"API retry budget spent ({self.total} retries; raise it with --model-args retry_budget=N): "
                f"last failure on {what}: {reason}. Every response received so far is stored: run the same "
                "command again to send only what is missing"
            )
        self.spent += 1
