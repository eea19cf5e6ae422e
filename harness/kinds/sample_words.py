"""``sample_words``: many next words after one context, the cloze task's request (see ``docs/word-sampling.md``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from harness.decoding import DecodingConfig, sampling_temperature
from harness.errors import HarnessError
from harness.instances import ClozeInstance, Instance
from harness.kinds.base import RequestKind, add_counts, add_usage_of
from harness.kinds.words import apply_word_rule
from harness.options import Option, Options, int_range, one_of, positive_int
from harness.requests.sample_words import MAX_WORD_TOKENS, SampleWordsRequest, SampleWordsResponse
from harness.words.rules import WORD_MODES, word_rule_problem
from harness.words.segmenters import SEGMENTERS

if TYPE_CHECKING:
    from harness.data.loaders import LoadedData
    from harness.models import ModelAdapter
    from harness.scoring.base import Scorer
    from harness.task_config import TaskConfig

#: Words kept per context and side for the leaderboard's bar charts (the papers show the 15 most probable).
TOP_WORDS = 15


def check_words(adapter: ModelAdapter, kind: str, words: Iterable[str], mode: str, segmenter: str = "spaces") -> None:
    """Refuse, in one line naming the adapter and the word, the first word the rule ``mode`` does not write so."""
    for word in words:
        problem = word_rule_problem(word, mode, segmenter)
        if problem:
            raise HarnessError(
                f"model {adapter.spec.label} answered a {kind} request with {problem}; an adapter returns words "
                "through harness.api.rule_word (docs/plugins.md, 'Words')"
            )


def top_shares(counts: dict[str, int], k: int = TOP_WORDS) -> dict[str, float]:
    """The ``k`` most frequent words with their shares (ties by word), for the leaderboard's bar charts."""
    total = sum(counts.values())
    if not total:
        return {}
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return {word: round(count / total, 5) for word, count in ranked}


class SampleWordsKind(RequestKind):
    name = "sample_words"
    request_type = SampleWordsRequest
    response_type = SampleWordsResponse
    instance_type = ClozeInstance
    view = "cloze"
    params: ClassVar[Options] = Options(
        Option("n_samples", positive_int, 1000, "next words drawn per context"),
        Option("temperature", sampling_temperature, 1.0, "softmax temperature (> 0; there is no greedy shortcut)"),
        Option(
            "mode",
            one_of(*WORD_MODES),
            "exact",
            "the word rule, for people and model alike: exact: the first word; whole: the whole response (to the end "
            "of the line); paper: the study's rule",
        ),
        Option(
            "segmenter",
            one_of(*SEGMENTERS),
            "spaces",
            "where a word ends: spaces; characters; jieba (Chinese, extra zh); fugashi (Japanese, extra ja)",
        ),
        Option(
            "max_new_tokens",
            int_range(1, MAX_WORD_TOKENS),
            32,
            "tokens a sample may use before it is rejected (paper: 5)",
        ),
    )

    instance_params = ("mode", "segmenter")

    def prepare_data(self, config: TaskConfig, data: LoadedData) -> LoadedData:
        """The people's responses through the task's word rule, the one the model's samples follow
        (``harness.kinds.words``)."""
        p = config.params
        if p.get("mode") == "paper" and p.get("segmenter", "spaces") != "spaces":
            raise HarnessError(
                f"task {config.task}: params.segmenter: the study's word rule (mode: paper) cuts at spaces only"
            )
        return apply_word_rule(config.task, data, p.get("mode", "exact"), p.get("segmenter", "spaces"))

    def build(self, config: TaskConfig, instance: Instance, seed: int, scorers: Sequence[Scorer]) -> SampleWordsRequest:
        self.check_instance(config, instance)
        assert isinstance(instance, ClozeInstance)
        p = config.params
        return SampleWordsRequest(
            context=instance.context,
            n=p["n_samples"],
            seed=seed,
            temperature=float(p["temperature"]),
            mode=p["mode"],
            segmenter=p["segmenter"],
            max_new_tokens=p["max_new_tokens"],
            instance_id=instance.id,
        )

    def check_response(self, adapter: ModelAdapter, request: Any, response: Any) -> None:
        """Every counted word is already written by the task's word rule (``harness.words.rules.rule_word``)."""
        check_words(adapter, self.name, response.counts, request.mode, request.segmenter)

    def summarize(self, summary: dict[str, Any], record: dict[str, Any]) -> None:
        """Samples asked for, token positions evaluated, words listed, API usage, and rejections by reason."""
        add_counts(summary, record, ("n_requested", "tokens_evaluated", "listed"))
        add_usage_of(summary, record)
        for reason, count in record.get("rejected", {}).items():
            rejected = summary.setdefault("rejected", {})
            rejected[reason] = rejected.get(reason, 0) + int(count)

    def decoding_label(self, params: dict[str, Any], variant: str | None) -> str | None:
        label = DecodingConfig(temperature=float(params.get("temperature", 1.0))).label
        if params.get("mode", "exact") != "exact":
            label = f"{label}, mode={params['mode']}"
        if params.get("segmenter", "spaces") != "spaces":
            label = f"{label}, segmenter={params['segmenter']}"
        return label

    def human_view(self, sample: dict[str, Any]) -> Any:
        return top_shares(sample.get("human", {}).get("counts", {}))

    def model_view(self, sample: dict[str, Any], method: str | None) -> Any:
        return top_shares((sample.get("response") or {}).get("counts", {}))
