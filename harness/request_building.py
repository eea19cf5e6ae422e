"""How a task turns an instance into a request, and how a stored response is read back, per request kind."""

from __future__ import annotations

from typing import Any

from harness.errors import HarnessError
from harness.instances import ClozeInstance, Instance
from harness.models import ModelAdapter
from harness.requests import SampleWordsRequest, SampleWordsResponse
from harness.task_config import TaskConfig


def build_request(config: TaskConfig, instance: Instance, seed: int) -> SampleWordsRequest:
    if config.request == "sample_words":
        if not isinstance(instance, ClozeInstance):
            raise HarnessError(
                f"task {config.task}: loader '{config.loader}' gave {type(instance).__name__}, "
                "but sample_words requests need cloze instances"
            )
        p = config.params
        return SampleWordsRequest(
            context=instance.context,
            n=p["n_samples"],
            seed=seed,
            temperature=float(p["temperature"]),
            mode=p["mode"],
            max_new_tokens=p["max_new_tokens"],
        )
    raise HarnessError(f"task {config.task}: no request builder for '{config.request}'")


def answer_many(adapter: ModelAdapter, kind: str, requests: list[Any]) -> list[dict[str, Any]]:
    """Send a group of requests; the JSON records of the responses are what the store keeps."""
    if kind == "sample_words":
        responses = adapter.sample_words_many(requests)
        if len(responses) != len(requests):
            raise HarnessError(f"model {adapter.spec.label} answered {len(responses)} of {len(requests)} requests")
        return [r.to_record() for r in responses]
    raise HarnessError(f"no dispatcher for request kind '{kind}'")


def response_from_record(kind: str, record: dict[str, Any]) -> Any:
    if kind == "sample_words":
        return SampleWordsResponse.from_record(record)
    raise HarnessError(f"no response type for request kind '{kind}'")
