"""How a task turns an instance into a request, and how a stored response is read back, per request kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.errors import HarnessError
from harness.instances import ChoiceInstance, ClozeInstance, GenerationInstance, Instance
from harness.models import ModelAdapter
from harness.prompting import render_input
from harness.requests import (
    Answer,
    DecodingConfig,
    GenerateRequest,
    GenerateResponse,
    MultipleChoiceRequest,
    MultipleChoiceResponse,
    Query,
    SampleWordsRequest,
    SampleWordsResponse,
    add_usage,
    query_kind,
)
from harness.scoring import Scorer
from harness.task_config import TaskConfig


def build_request(
    config: TaskConfig, instance: Instance, seed: int, scorers: list[Scorer] | None = None
) -> SampleWordsRequest | GenerateRequest | MultipleChoiceRequest:
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
    if config.request == "multiple_choice":
        if not isinstance(instance, ChoiceInstance):
            raise HarnessError(
                f"task {config.task}: loader '{config.loader}' gave {type(instance).__name__}, "
                "but multiple_choice requests need choice instances"
            )
        queries: dict[str, Query] = {}
        for scorer in scorers or []:
            for key, query in scorer.queries(instance, config.params, seed).items():
                queries[f"{scorer.name}:{key}"] = query
        return MultipleChoiceRequest(queries)
    raise HarnessError(f"task {config.task}: no request builder for '{config.request}'")


def _answer_queries(adapter: ModelAdapter, requests: list[MultipleChoiceRequest]) -> list[dict[str, Any]]:
    """Answer the queries of a block of items: each distinct query once, grouped by kind, one adapter call per kind."""
    unique: dict[str, list[Any]] = {}
    index: dict[Any, int] = {}
    for request in requests:
        for query in request.queries.values():
            if query not in index:
                bucket = unique.setdefault(query_kind(query), [])
                index[query] = len(bucket)
                bucket.append(query)
    answers: dict[str, list[Any]] = {}
    methods: dict[str, Callable[[list[Any]], list[Any]]] = {
        "loglikelihood": adapter.loglikelihood_many,
        "next_token": adapter.next_token_many,
        "similarity": adapter.similarity_many,
        "generate": adapter.generate_many,
    }
    for kind, queries in unique.items():
        got = methods[kind](queries)
        if len(got) != len(queries):
            raise HarnessError(f"model {adapter.spec.label} answered {len(got)} of {len(queries)} {kind} queries")
        if kind == "generate":
            for query, answer in zip(queries, got, strict=True):
                if len(answer.texts) != query.n:
                    raise HarnessError(f"model {adapter.spec.label} returned {len(answer.texts)} of {query.n} samples")
        answers[kind] = got
    records = []
    billed: set[Any] = set()
    for request in requests:
        found: dict[str, Answer] = {
            key: answers[query_kind(query)][index[query]] for key, query in request.queries.items()
        }
        record = MultipleChoiceResponse(found).to_record()
        # API usage is billed once per distinct query: to the first item of the block that asked it.
        usage: dict[str, int] = {}
        for query in request.queries.values():
            answer = answers[query_kind(query)][index[query]]
            if answer.usage is not None and query not in billed:
                billed.add(query)
                add_usage(usage, answer.usage)
        for answer_record in record["answers"].values():
            answer_record.pop("usage", None)
        if usage:
            record["usage"] = usage
        records.append(record)
    return records


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
    if kind == "multiple_choice":
        return _answer_queries(adapter, requests)
    raise HarnessError(f"no dispatcher for request kind '{kind}'")


def response_from_record(kind: str, record: dict[str, Any]) -> Any:
    if kind == "sample_words":
        return SampleWordsResponse.from_record(record)
    if kind == "generate":
        return GenerateResponse.from_record(record)
    if kind == "multiple_choice":
        return MultipleChoiceResponse.from_record(record)
    raise HarnessError(f"no response type for request kind '{kind}'")
