"""How a task turns an instance into a request, and how a stored response is read back, per request kind."""

from __future__ import annotations

from typing import Any

from harness.errors import HarnessError
from harness.instances import ClozeInstance, GenerationInstance, Instance
from harness.models import ModelAdapter
from harness.prompting import render_input
from harness.requests import (
    DecodingConfig,
    GenerateRequest,
    GenerateResponse,
    SampleWordsRequest,
    SampleWordsResponse,
)
from harness.task_config import TaskConfig


def build_request(config: TaskConfig, instance: Instance, seed: int) -> SampleWordsRequest | GenerateRequest:
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
    if config.request == "generate":
        if not isinstance(instance, GenerationInstance):
            raise HarnessError(
                f"task {config.task}: loader '{config.loader}' gave {type(instance).__name__}, "
                "but generate requests need generation instances"
            )
        p = config.params
        decodings = p["decoding"]
        if len(decodings) != 1:
            raise HarnessError(f"task {config.task}: one decoding setting per request, got {decodings}")
        rendered = render_input(instance, p)
        return GenerateRequest(
            prompt=rendered.prompt,
            n=p["n_samples"],
            seed=seed,
            decoding=DecodingConfig.parse(decodings[0]),
            max_new_tokens=p["max_new_tokens"],
            stop=tuple(p["stop"]),
            messages=rendered.messages,
            source=rendered.source,
            chat=bool(p["chat"]),
        )
    raise HarnessError(f"task {config.task}: no request builder for '{config.request}'")


def answer_many(adapter: ModelAdapter, kind: str, requests: list[Any]) -> list[dict[str, Any]]:
    """Send a group of requests; the JSON records of the responses are what the store keeps."""
    if kind == "sample_words":
        responses = adapter.sample_words_many(requests)
        if len(responses) != len(requests):
            raise HarnessError(f"model {adapter.spec.label} answered {len(responses)} of {len(requests)} requests")
        return [r.to_record() for r in responses]
    if kind == "generate":
        answers = adapter.generate_many(requests)
        if len(answers) != len(requests):
            raise HarnessError(f"model {adapter.spec.label} answered {len(answers)} of {len(requests)} requests")
        for request, answer in zip(requests, answers, strict=True):
            if len(answer.texts) != request.n:
                raise HarnessError(f"model {adapter.spec.label} returned {len(answer.texts)} of {request.n} samples")
        return [a.to_record() for a in answers]
    raise HarnessError(f"no dispatcher for request kind '{kind}'")


def response_from_record(kind: str, record: dict[str, Any]) -> Any:
    if kind == "sample_words":
        return SampleWordsResponse.from_record(record)
    if kind == "generate":
        return GenerateResponse.from_record(record)
    raise HarnessError(f"no response type for request kind '{kind}'")
