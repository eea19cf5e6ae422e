"""Sending API calls: bounded concurrency, retries, and a store that keeps every response the moment it arrives.

Every call is keyed by its endpoint, its exact JSON body (seed included) and its sample index. A response is
written to the store (``harness.outputs.store.ResponseStore``: one fsynced JSON line each) before anything else happens,
so a run killed at any point, or ended by a spent retry budget, has lost at most the calls in flight; the rerun
finds the rest in the store and sends only what is missing. An identical rerun sends nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import openai

from harness.api import HarnessError, ResponseStore
from harness.plugins.openai_api.retry import RETRYABLE_STATUS, RetryBudget, RetryPolicy, parse_retry_after

Endpoint = Literal["completions", "chat"]


@dataclass(frozen=True)
class ApiCall:
    """One HTTP request to ``/completions`` or ``/chat/completions``. ``body`` is exactly what is sent."""

    endpoint: Endpoint
    body: dict[str, Any]
    #: Which sample of a request this call draws: part of the key, so that a server which ignores ``seed`` still
    #: gets (and the store still keeps) one call per sample.
    sample: int = 0

    @property
    def key(self) -> str:
        blob = json.dumps({"endpoint": self.endpoint, "body": self.body, "sample": self.sample}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    @property
    def seed(self) -> int:
        return int(self.body.get("seed", 0))


@dataclass
class TransportStats:
    """What this process did: calls sent (first attempts), answered from the store, retried, and why."""

    sent: int = 0
    from_store: int = 0
    retries: int = 0
    failures: dict[str, int] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "from_store": self.from_store,
            "retries": self.retries,
            "failures": dict(sorted(self.failures.items())),
        }


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class ApiTransport:
    """Answers batches of :class:`ApiCall` through an OpenAI client, from the store where it can."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        store_path: Path,
        store_fingerprint: str,
        concurrency: int,
        timeout: float,
        policy: RetryPolicy,
    ) -> None:
        self.base_url = base_url
        self._api_key = api_key
        self.concurrency = concurrency
        self.timeout = timeout
        self.policy = policy
        self.budget = RetryBudget(policy.budget)
        self.stats = TransportStats()
        self.store = ResponseStore(store_path, store_fingerprint, {"what": "API responses, keyed by call"})

    def redact(self, text: str) -> str:
        """``text`` with the API key blanked out: server error messages sometimes quote it back."""
        key = self._api_key
        if key and len(key) >= 4:
            text = text.replace(key, "***")
        return text

    def run(self, calls: Sequence[ApiCall]) -> list[dict[str, Any]]:
        """The JSON response of each call, in order. Calls with equal keys are sent once."""
        if not calls:
            return []
        return asyncio.run(self._run_all(list(calls)))

    async def _run_all(self, calls: list[ApiCall]) -> list[dict[str, Any]]:
        unique: dict[str, ApiCall] = {}
        for call in calls:
            unique.setdefault(call.key, call)
        responses: dict[str, dict[str, Any]] = {}
        pending: list[ApiCall] = []
        for key, call in unique.items():
            if key in self.store:
                responses[key] = self.store.get(key)["response"]
                self.stats.from_store += 1
            else:
                pending.append(call)
        if pending:
            client = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self._api_key, max_retries=0, timeout=self.timeout
            )
            gate = asyncio.Semaphore(self.concurrency)
            try:
                tasks = [asyncio.ensure_future(self._answer(client, gate, call)) for call in pending]
                try:
                    for call, result in zip(pending, await asyncio.gather(*tasks), strict=True):
                        responses[call.key] = result
                except BaseException:
                    for task in tasks:
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    raise
            finally:
                await client.close()
        return [responses[call.key] for call in calls]

    async def _answer(self, client: openai.AsyncOpenAI, gate: asyncio.Semaphore, call: ApiCall) -> dict[str, Any]:
        what = f"{call.endpoint} call (seed {call.seed}, sample {call.sample})"
        attempt = 0
        while True:
            attempt += 1
            try:
                async with gate:
                    if attempt == 1:
                        self.stats.sent += 1
                    response = await self._send(client, call)
            except _Retryable as exc:
                kind = exc.reason.split(":", 1)[0]
                self.stats.failures[kind] = self.stats.failures.get(kind, 0) + 1
                if attempt >= self.policy.max_attempts:
                    raise HarnessError(
                        f"{what} failed {attempt} times (raise --model-args max_attempts=N to try longer); last "
                        f"failure: {self.redact(exc.reason)}. Every response received so far is stored: run the "
                        "same command again to send only what is missing"
                    ) from None
                self.budget.spend(what, self.redact(exc.reason))
                self.stats.retries += 1
                await asyncio.sleep(self.policy.delay(attempt, exc.retry_after))
                continue
            self.store.append(call.key, call.seed, response)
            return response

    async def _send(self, client: openai.AsyncOpenAI, call: ApiCall) -> dict[str, Any]:
        path = "/completions" if call.endpoint == "completions" else "/chat/completions"
        try:
            payload = await client.post(path, body=call.body, cast_to=dict)
        except openai.APIStatusError as exc:
            status = exc.status_code
            message = self.redact(_error_message(exc))
            if status in RETRYABLE_STATUS or status >= 500:
                retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
                raise _Retryable(f"HTTP {status}: {message}", retry_after) from None
            raise HarnessError(f"{self.base_url}{path}: HTTP {status}: {message}") from None
        except openai.APITimeoutError:
            raise _Retryable(f"timeout: no answer within {self.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise _Retryable(f"connection: {type(cause).__name__}: {self.redact(str(cause))}") from None
        except (openai.APIError, ValueError) as exc:
            # A body cut short parses as broken JSON (ValueError) or fails the client's response checks.
            raise _Retryable(f"malformed response: {type(exc).__name__}: {self.redact(str(exc))}") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list):
            raise _Retryable(f"malformed response: no 'choices' in {self.redact(str(payload))[:200]}")
        return payload


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(exc.message)
