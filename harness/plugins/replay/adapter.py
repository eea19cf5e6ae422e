"""``--model replay:NAME --model-args path=FILE[,format=...][,setting=...]``: recorded outputs as a model.

Why an adapter rather than a separate scoring path: outputs made elsewhere then go through everything a sampled run
goes through (the response store, every scorer, ``harness score``, the leaderboard, the exports), so an imported
system and a local model are scored by the very same code. ``harness import`` is this adapter with the run's
options filled in from the file (``docs/importing.md``).

Requests are answered by instance id (requests carry it), never by context: Provo contexts repeat ("There",
"The"). Where the source records the context it answered, it is checked against the task's, so outputs matched to
the wrong instances stop the run instead of being scored. A source that covers only some instances restricts the
run to those (``covered_instances``); the runner reports the rest as missing.

Raw texts are cut into words by the task's word rule (``mode``: exact or paper), like a sampled run's continuations.

Multiple choice: recorded per-option probabilities (``option_probs`` in the JSON Lines format, Hu et al.'s released
distributions in ``hu2023``) answer ``option_probs`` requests, which the ``mcq_reported`` scorer asks
(``tasks/pragmatics-mcq-reported.yaml``). An item whose recorded number of options, option texts or target (where
the source records them) are not the instance's is reported and left out, as a clashing context is.
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any, ClassVar

from harness.api import (
    ChoiceInstance,
    GenerateRequest,
    GenerateResponse,
    HarnessError,
    Instance,
    ModelAdapter,
    ModelSpec,
    Option,
    OptionProbsRequest,
    OptionProbsResponse,
    Options,
    SampleWordsRequest,
    SampleWordsResponse,
    final_word,
    one_of,
    optional,
    parse_word_list,
    recorded_word,
    resolve_data_dir,
    text,
)
from harness.plugins.replay.formats import FORMATS, read_outputs
from harness.plugins.replay.outputs import RecordedChoices, RecordedEntry, RecordedOutputs


def _settings(spec: ModelSpec) -> dict[str, Any]:
    settings = ReplayAdapter.options.parse(spec.args, f"--model-args for {spec.label}")
    if not settings["path"]:
        raise HarnessError(f"--model-args for {spec.label}: path= is required (the outputs file or folder)")
    return settings


def source_path(value: str) -> Path:
    """``path=`` as given, or under the data folder (``$HARNESS_DATA_DIR``) when it is not found as given, so
    ``path=provo/reference_outputs/...`` works from any folder."""
    path = Path(value).expanduser()
    if path.exists() or path.is_absolute():
        return path
    data_dir, _ = resolve_data_dir(None)
    under_data = data_dir / path
    return under_data if under_data.exists() else path


def recorded(spec: ModelSpec) -> RecordedOutputs:
    settings = _settings(spec)
    return read_outputs(source_path(settings["path"]).resolve(), settings["format"], settings["setting"])


def _shown(path: Path) -> str:
    """A source file as the results name it: relative to the data folder when it lies there (the same on every
    machine), else as resolved."""
    data_dir = resolve_data_dir(None)[0].resolve()
    try:
        return f"<data>/{path.resolve().relative_to(data_dir).as_posix()}"
    except ValueError:
        return str(path)


def _normalised(context: str) -> str:
    return " ".join(context.split())


class ReplayAdapter(ModelAdapter):
    supported_requests: ClassVar[frozenset[str]] = frozenset({"sample_words", "generate", "option_probs"})
    options: ClassVar[Options] = Options(
        Option("path", text, "", "the outputs file or folder (relative paths are also looked up in the data folder)"),
        Option("format", one_of(*FORMATS), "auto", "how the file is written (auto: recognised from its name)"),
        Option(
            "setting",
            optional(text),
            None,
            "which of a file's settings to read (provo-chatgpt: diverse, ...; hu2023: the model, e.g. gpt2/no-story)",
        ),
    )

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self.settings = _settings(spec)
        self.outputs = recorded(spec)
        self.group_size = 64

    @classmethod
    def covered_instances(cls, spec: ModelSpec, instances: list[Instance]) -> Collection[str] | None:
        """Instances with recorded outputs that were recorded for the instance's text (``_instance_clash``: the
        context, or the options and target, where the source records them): outputs recorded for another text under
        the same id are reported and left out, not scored."""
        outputs = recorded(spec)
        left_out = []
        for inst in instances:
            entry = outputs.entries.get(inst.id)
            problem = None if entry is None else _instance_clash(entry, inst)
            if problem is not None:
                noun = "item" if isinstance(inst, ChoiceInstance) else "instance"
                print(f"warning: {spec.label}: {noun} {inst.id}: {problem}; left out", file=sys.stderr)
                left_out.append(inst.id)
        return frozenset(outputs.entries) - set(left_out)

    @classmethod
    def samples_per_input(cls, spec: ModelSpec) -> int:
        """The most common number of outputs per instance (``harness import`` reports it as ``n_samples``)."""
        return max(1, recorded(spec).typical_n)

    @classmethod
    def identity(cls, spec: ModelSpec) -> dict[str, Any]:
        return {"source_sha256": recorded(spec).sha256}

    def info(self) -> dict[str, Any]:
        outputs = self.outputs
        return {
            "kind": self.spec.kind,
            "name": self.spec.name,
            "source": [_shown(p) for p in outputs.sources],
            "source_sha256": outputs.sha256,
            "format": outputs.format,
            **({"setting": self.settings["setting"]} if self.settings["setting"] else {}),
            **({"source_meta": dict(outputs.meta)} if outputs.meta else {}),
            "n_instances": len(outputs.entries),
            **(
                {
                    "duplicates": {
                        "n": len(outputs.duplicates),
                        "identical": sum(outputs.duplicates.values()),
                        "ids": sorted(outputs.duplicates),
                    }
                }
                if outputs.duplicates
                else {}
            ),
        }

    def _entry(self, instance_id: str, context: str | None) -> RecordedEntry:
        """The outputs recorded for an instance; ``context`` (a cloze context) is checked where both are known."""
        if not instance_id:
            raise HarnessError(f"model {self.spec.label}: the request carries no instance id to look its outputs up")
        entry = self.outputs.entries.get(instance_id)
        if entry is None:
            raise HarnessError(f"model {self.spec.label}: {self.outputs.sources[0]} has no outputs for {instance_id!r}")
        problem = None if context is None else _context_clash(entry, context)
        if problem is not None:
            raise HarnessError(
                f"model {self.spec.label}: instance {instance_id}: {problem}; are the ids of the right task?"
            )
        return entry

    def sample_words_many(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        return [self._words(request) for request in requests]

    def _words(self, request: SampleWordsRequest) -> SampleWordsResponse:
        entry = self._entry(request.instance_id, request.context)
        counts: dict[str, int] = {}
        rejected: dict[str, int] = {}

        def add(outcome: tuple[str, str], count: int = 1) -> None:
            bucket = counts if outcome[0] == "word" else rejected
            bucket[outcome[1]] = bucket.get(outcome[1], 0) + count

        listed = None
        if entry.words is not None:
            for word, count in entry.words.items():
                add(recorded_word(word, request.mode, request.segmenter), count)
        elif entry.texts is not None and entry.listed:
            words = [w for reply in entry.texts for w in parse_word_list(reply, request.mode, request.segmenter)]
            listed = len(words)
            for word in words:
                add(("word", word))
        elif entry.texts is not None:
            for reply in entry.texts:
                add(final_word(reply, ended=entry.ended, mode=request.mode, segmenter=request.segmenter))
        else:
            raise HarnessError(f"model {self.spec.label}: instance {request.instance_id}: no words or texts recorded")
        n = sum(counts.values()) + sum(rejected.values())
        # ``counts`` keeps the source's order (generation order; a word list's order): the paper ECE's tie order.
        return SampleWordsResponse(
            counts=counts, n_requested=n, rejected=rejected, listed=listed, first_seen=list(counts)
        )

    def generate_many(self, requests: list[GenerateRequest]) -> list[GenerateResponse]:
        responses = []
        for request in requests:
            # A generation's prompt is rendered by the task's template, so it is not compared with a recorded one.
            entry = self._entry(request.instance_id, None)
            if entry.texts is None or entry.listed:
                raise HarnessError(f"model {self.spec.label}: instance {request.instance_id}: no texts recorded")
            texts = list(entry.texts)
            reason = "eos" if entry.ended else "length"
            responses.append(
                GenerateResponse(texts=texts, finish_reasons=[reason] * len(texts), n_tokens=[0] * len(texts))
            )
        return responses

    def option_probs_many(self, requests: list[OptionProbsRequest]) -> list[OptionProbsResponse]:
        responses = []
        for request in requests:
            entry = self._entry(request.instance_id, None)
            if entry.option_probs is None:
                raise HarnessError(
                    f"model {self.spec.label}: instance {request.instance_id}: no option probabilities recorded"
                )
            problem = _options_clash(entry, request.options)
            if problem is not None:
                raise HarnessError(f"model {self.spec.label}: item {request.instance_id}: {problem}")
            orders = entry.orders if isinstance(entry, RecordedChoices) else (entry.option_probs,)
            responses.append(OptionProbsResponse([list(order) for order in orders]))
        return responses

    def close(self) -> None:
        """Nothing is held."""


def _options_clash(entry: RecordedEntry, options: tuple[str, ...]) -> str | None:
    """Why recorded option probabilities cannot be an item's with these options (None if they can)."""
    if entry.option_probs is None:
        return None
    if len(entry.option_probs) != len(options):
        return f"{len(entry.option_probs)} option probabilities recorded, the item has {len(options)} options"
    if isinstance(entry, RecordedChoices) and entry.options:
        for k, (recorded, ours) in enumerate(zip(entry.options, options, strict=True), start=1):
            if _normalised(recorded) != _normalised(ours):
                return f"the outputs' option {k} is {recorded[:60]!r}, the item's is {ours[:60]!r}"
    return None


def _choice_clash(entry: RecordedEntry, item: ChoiceInstance) -> str | None:
    """``_options_clash``, and a recorded target that is not the item's."""
    problem = _options_clash(entry, item.options)
    target = entry.target if isinstance(entry, RecordedChoices) else None
    if problem is None and target is not None and target != item.target:
        theirs = "none" if item.target is None else f"option {item.target + 1}"
        problem = f"the outputs' target is option {target + 1}, the item's is {theirs}"
    return problem


def _context_clash(entry: RecordedEntry, context: str) -> str | None:
    """Why outputs recorded for a context cannot answer ``context`` (None if they can, or record no context)."""
    if entry.context is None or _normalised(entry.context) == _normalised(context):
        return None
    return f"the outputs answer the context {entry.context[-60:]!r}, the task's is {context[-60:]!r}"


def _instance_clash(entry: RecordedEntry, instance: Instance) -> str | None:
    """Why an instance's recorded outputs were recorded for another text: its context (cloze) or its options and
    target (multiple choice). The one check behind ``covered_instances`` and the answer-time check."""
    if isinstance(instance, ChoiceInstance):
        return _choice_clash(entry, instance)
    context = getattr(instance, "context", None)
    return _context_clash(entry, context) if isinstance(context, str) else None
