"""``generate``: ``n`` independent samples for one input with one decoding setting (see ``docs/generation.md``).

A task kind (translations, simplifications, stories, dialogue replies: a decoding sweep becomes one run per
setting) and also a request a multiple-choice scorer can ask for inside its bundle (free generation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from harness.decoding import DecodingConfig, decoding_labels
from harness.errors import HarnessError, shorten_repr
from harness.instances import GenerationInstance, Instance
from harness.kinds.base import RequestKind
from harness.options import Option, Options, boolean, int_range, optional, positive_int, text
from harness.prompts.generation import PROMPT_FIELDS, render_input, template_fields
from harness.requests.generate import GenerateRequest, GenerateResponse

if TYPE_CHECKING:
    from harness.models import ModelAdapter
    from harness.scoring.base import Scorer
    from harness.task_config import TaskConfig

#: Model outputs kept per instance for the leaderboard's generation view.
MAX_TEXTS = 20
#: The longest sample a task may ask for, in tokens (more than any model's context window here).
MAX_NEW_TOKENS = 100_000


def prompt_template(fields: Sequence[str]) -> Any:
    """A converter for a ``str.format`` template whose placeholders are among ``fields``."""

    def check(value: Any) -> str:
        wanted = f"a string whose {{placeholders}} are among {', '.join(fields)}"
        if not isinstance(value, str):
            raise ValueError(f"{wanted}, got {shorten_repr(value)} ({type(value).__name__})")
        try:
            names = template_fields(value)
        except ValueError as exc:
            raise ValueError(f"{wanted}, got {shorten_repr(value)} ({exc})") from None
        if not set(names) <= set(fields):
            unknown = sorted(set(names) - set(fields))
            raise ValueError(f"{wanted}, got {shorten_repr(value)} (unknown {{{shorten_repr(unknown[0], 40)}}})")
        return value

    return check


def _decoding(value: Any) -> list[str]:
    try:
        return decoding_labels(value)
    except ValueError as exc:
        raise ValueError(
            f"{exc} (a decoding setting is ancestral, or temperature=T, top_k=K, top_p=P, typical_p=P joined with '+', "
            "e.g. top_k=50+temperature=0.7; a list of settings, separated by ';' on the command line)"
        ) from None


def _stop_list(value: Any) -> list[str]:
    if isinstance(value, list) and all(isinstance(x, str) and x for x in value):
        return value
    raise ValueError(f"a list of non-empty strings, got {shorten_repr(value)}")


class GenerateKind(RequestKind):
    name = "generate"
    request_type = GenerateRequest
    response_type = GenerateResponse
    instance_type = GenerationInstance
    view = "generation"
    params: ClassVar[Options] = Options(
        Option("n_samples", positive_int, 10, "samples per input"),
        Option("decoding", _decoding, ["ancestral"], "decoding settings; each is its own run", type="decoding list"),
        Option("max_new_tokens", int_range(1, MAX_NEW_TOKENS), 100, "token cap per sample"),
        Option("stop", _stop_list, [], "strings that end a sample (cut off with what follows)", type="list of str"),
        Option("prompt_template", prompt_template(PROMPT_FIELDS), "{source}", "prompt for causal LMs", type="template"),
        Option("chat", boolean, False, "use the model's chat template when it has one"),
        Option("chat_template", optional(prompt_template(PROMPT_FIELDS)), None, "user turn (default: prompt_template)"),
        Option("system_prompt", optional(text), None, "system turn of chat prompts"),
        Option("seq2seq_prefix", text, "", "prefix of the encoder input of sequence-to-sequence models"),
        Option("turn_separator", text, "\n", "joins dialogue turns in {source}"),
    )

    def build(self, config: TaskConfig, instance: Instance, seed: int, scorers: Sequence[Scorer]) -> GenerateRequest:
        self.check_instance(config, instance)
        assert isinstance(instance, GenerationInstance)
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
            instance_id=instance.id,
            input=rendered.input,
        )

    def variants(self, config: TaskConfig) -> list[tuple[str, TaskConfig]]:
        """One run per decoding setting: ``wmt14-en-de@top_p=0.9``."""
        return [
            (label, replace(config, params={**config.params, "decoding": [label]}))
            for label in config.params["decoding"]
        ]

    def check_response(self, adapter: ModelAdapter, request: Any, response: Any) -> None:
        if len(response.texts) != request.n:
            raise HarnessError(f"model {adapter.spec.label} returned {len(response.texts)} of {request.n} samples")

    def summarize(self, summary: dict[str, Any], record: dict[str, Any]) -> None:
        """Token positions evaluated, API usage, samples, tokens generated and why samples ended."""
        super().summarize(summary, record)
        summary["n_samples"] = summary.get("n_samples", 0) + len(record["texts"])
        summary["tokens_generated"] = summary.get("tokens_generated", 0) + sum(int(k) for k in record["n_tokens"])
        finished = summary.setdefault("finish_reasons", {})
        for reason in record["finish_reasons"]:
            finished[reason] = finished.get(reason, 0) + 1

    def decoding_label(self, params: dict[str, Any], variant: str | None) -> str | None:
        return variant or ",".join(params.get("decoding", []))

    def human_view(self, sample: dict[str, Any]) -> Any:
        return list(sample.get("human", {}).get("references", []))

    def model_view(self, sample: dict[str, Any], method: str | None) -> Any:
        return list((sample.get("response") or {}).get("texts", []))[:MAX_TEXTS]
