"""``word_distribution``: the model's next-word distribution computed exactly, up to a stated residual mass.

Why: ``sample_words`` estimates the distribution from ``n`` samples, and the TVD of an estimate is biased upward
(a word seen once in 40 samples gets 2.5% however rare it is). Here a local model expands its token trie best-first
by probability, with the word rule of ``mode=exact`` (``harness.words.rules.decide_word``), until the mass it has not
resolved into a word or a rejection is at most ``epsilon``. Every reported probability is then a lower bound off by
at most ``residual`` in total, so a TVD computed from it is exact within a stated interval (``scorers.exact``).

The same request also gives what the further analyses of the next-word study need from the model, so one run
serves them all:

- ``surface``: for each word asked about (the human guesses and the corpus word) and each sampled or greedy word,
  the log-probability of its canonical token sequence (``" " + word`` after a context that ends without
  whitespace), the log-probability that a word ends there (the next token starts with whitespace or ends the
  sequence: Pimentel & Meister 2024's end-of-word correction for tokenizers that mark the *beginning* of words),
  and its first token with that token's probability (the token-level analysis);
- ``top_tokens``: the most probable next tokens (top-1 next-token accuracy);
- ``greedy``: the word greedy token-by-token decoding gives (the study's biased estimator includes it);
- ``sampled``: ``n_samples`` words drawn by the ordinary sampler with the request's seed, so exact and sampled
  TVD are compared on the same contexts, and the biased estimator has the study's sample support.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from harness.decoding import DecodingConfig, sampling_temperature
from harness.errors import HarnessError
from harness.instances import ClozeInstance, Instance
from harness.kinds.base import RequestKind, add_counts
from harness.kinds.sample_words import check_words, top_shares
from harness.kinds.words import apply_word_rule
from harness.options import Option, Options, int_range, number_range, positive_int
from harness.requests.sample_words import MAX_WORD_TOKENS
from harness.requests.word_distribution import WordDistributionRequest, WordDistributionResponse

if TYPE_CHECKING:
    from harness.data.loaders import LoadedData
    from harness.models import ModelAdapter
    from harness.scoring.base import Scorer
    from harness.task_config import TaskConfig


def asked_words(instance: ClozeInstance) -> tuple[str, ...]:
    """The words whose surface probability a request asks for: every human guess and the corpus word, sorted."""
    words = set(instance.human_counts)
    if instance.target:
        words.add(instance.target)
    return tuple(sorted(w for w in words if w))


class WordDistributionKind(RequestKind):
    name = "word_distribution"
    request_type = WordDistributionRequest
    response_type = WordDistributionResponse
    instance_type = ClozeInstance
    view = "cloze"
    params: ClassVar[Options] = Options(
        Option(
            "epsilon",
            number_range(0.0, 0.999, as_float=True),
            0.05,
            "stop when the unresolved probability mass is at most this (the TVD bound's width)",
        ),
        Option("max_expansions", positive_int, 20000, "trie nodes run through the model per context, at most"),
        Option("n_samples", int_range(0, 1_000_000), 1000, "words also sampled per context (0: none)"),
        Option("temperature", sampling_temperature, 1.0, "softmax temperature (> 0)"),
        Option(
            "max_new_tokens",
            int_range(1, MAX_WORD_TOKENS),
            32,
            "tokens a word may take before its sequence counts as truncated",
        ),
    )

    def prepare_data(self, config: TaskConfig, data: LoadedData) -> LoadedData:
        """The people's responses through the rule the exact distribution uses: the first word, cut at spaces
        (``harness.kinds.words``; a script without spaces is refused: use ``sample_words`` with a segmenter)."""
        return apply_word_rule(config.task, data, "exact", "spaces")

    def build(
        self, config: TaskConfig, instance: Instance, seed: int, scorers: Sequence[Scorer]
    ) -> WordDistributionRequest:
        self.check_instance(config, instance)
        assert isinstance(instance, ClozeInstance)
        p = config.params
        return WordDistributionRequest(
            context=instance.context,
            words=asked_words(instance),
            epsilon=float(p["epsilon"]),
            max_expansions=int(p["max_expansions"]),
            n_samples=int(p["n_samples"]),
            seed=seed,
            temperature=float(p["temperature"]),
            max_new_tokens=int(p["max_new_tokens"]),
            instance_id=instance.id,
        )

    def check_response(self, adapter: ModelAdapter, request: Any, response: Any) -> None:
        check_words(adapter, self.name, [*response.probs, *response.sampled], "exact")
        total = math.fsum(response.probs.values()) + math.fsum(response.rejected.values()) + response.residual
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise HarnessError(
                f"model {adapter.spec.label}: word_distribution masses sum to {total:.6f}, not 1 "
                f"(instance {request.instance_id or request.context[-40:]!r})"
            )
        missing = [w for w in request.words if w not in response.surface]
        if missing:
            raise HarnessError(
                f"model {adapter.spec.label}: word_distribution gave no surface probability for {missing[:3]}"
            )
        if sum(response.sampled.values()) > request.n_samples:
            raise HarnessError(f"model {adapter.spec.label}: more sampled words than the {request.n_samples} asked")

    def summarize(self, summary: dict[str, Any], record: dict[str, Any]) -> None:
        """Trie nodes expanded, token positions evaluated, and the largest residual left (how exact the run is)."""
        add_counts(summary, record, ("expansions", "tokens_evaluated"))
        residual = float(record.get("residual", 0.0))
        summary["max_residual"] = max(float(summary.get("max_residual", 0.0)), residual)

    def decoding_label(self, params: dict[str, Any], variant: str | None) -> str | None:
        label = DecodingConfig(temperature=float(params.get("temperature", 1.0))).label
        return f"{label}, exact to {params.get('epsilon', 0.05)}"

    def human_view(self, sample: dict[str, Any]) -> Any:
        return top_shares(sample.get("human", {}).get("counts", {}))

    def model_view(self, sample: dict[str, Any], method: str | None) -> Any:
        probs = (sample.get("response") or {}).get("probs", {})
        ranked = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0]))[:15]
        return {word: round(float(p), 5) for word, p in ranked}
