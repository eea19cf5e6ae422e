"""Normalised instance types, one per task family.

Loaders turn each data set's release format into these, so that requests, scorers and the results writer never
see a data set's own quirks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Instance:
    """One evaluation item. ``id`` is stable across runs: it keys the response store used for resuming."""

    #: The item's name, unique within the task (checked after loading) and the same on every run: it keys the stored
    #: responses (resuming, re-scoring), seeds the item's random stream, and finds a replayed model's outputs.
    id: str

    def inputs(self) -> dict[str, Any]:
        """What the model is shown, as written to ``samples_<task>.jsonl``."""
        return {}

    def human(self) -> dict[str, Any]:
        """The human data the model is compared against, as written to ``samples_<task>.jsonl``."""
        return {}

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ClozeInstance(Instance):
    """A next-word position: the context before it, the corpus word, and the human guesses with counts (or only
    their proportions, ``counts_known`` False)."""

    #: The text before the position, as the corpus prints it: what the model continues (no template is added).
    context: str = ""
    #: The corpus word at the position, written by the ``exact`` word rule (``harness.api.normalise_word``).
    target: str = ""
    #: The corpus token as printed, with case and punctuation (``There,``): the gold of the paper-faithful ECE.
    target_raw: str = ""
    #: Guess (``exact`` rule, never empty) -> how many people gave it; with ``counts_known`` False, the share of
    #: people who gave it instead (the shares sum to 1). Order matters: the paper-faithful ECE breaks ties between top
    #: guesses by it (the Provo loader lists the most frequent first, ties by word).
    human_counts: dict[str, float] = field(default_factory=dict)
    #: True: ``human_counts`` are numbers of people. False: the data gave only proportions of people (no number of
    #: people); ``human_counts`` then hold those proportions (they sum to 1), and no scorer makes people up from them:
    #: what splits, resamples or counts individual people is unavailable, with the reason (``docs/metrics.md``).
    counts_known: bool = True
    #: Loader-specific extras (Provo: ``text_id``, ``word_num``, raw and dropped response counts), JSON values:
    #: written as they are to the item's record in ``samples_<task>.jsonl``; no scorer reads them.
    meta: dict[str, Any] = field(default_factory=dict)

    def inputs(self) -> dict[str, Any]:
        return {"context": self.context}

    def human(self) -> dict[str, Any]:
        record: dict[str, Any] = {"counts": dict(self.human_counts), "total": sum(self.human_counts.values())}
        if not self.counts_known:
            record["counts_known"] = False
        return record


@dataclass(frozen=True)
class GenerationInstance(Instance):
    """An input with several human productions of the same kind (translations, simplifications, stories, replies).

    ``source`` is the text the productions answer (a source sentence, a story prompt); a dialogue has ``turns``
    instead (earliest first, speakers alternating) and an empty ``source``. Prompts are rendered from these by the
    task (``harness.prompts.generation``), never by the loader, so one instance serves causal, chat and seq2seq models
    alike. ``language`` is the language of the productions (what the syntactic probe tags); ``references`` keep the
    release's order.
    """

    #: The text the productions answer (a source sentence, a story prompt), before any template; empty for a
    #: dialogue. The task's ``{source}`` placeholder.
    source: str = ""
    #: A dialogue's context, earliest turn first, speakers alternating; the model replies to the last. Empty for
    #: anything else. The task joins them with ``turn_separator`` for ``{source}`` and makes them chat turns.
    turns: tuple[str, ...] = ()
    #: The human productions (translations, simplifications, stories, replies), in the release's order: what the
    #: model's samples are compared with.
    references: tuple[str, ...] = ()
    #: Language code of the productions and of the model's outputs (``en``, ``de``, ``fr``): the variability
    #: probes pick their spaCy pipeline (tokenizer, tagger) by it.
    language: str = "en"
    #: Loader-specific extras (WMT'14: ``sentence_number``; DailyDialog++: ``topic``), JSON values: written as they
    #: are to the item's record in ``samples_<task>.jsonl``; no scorer reads them.
    meta: dict[str, Any] = field(default_factory=dict)

    def inputs(self) -> dict[str, Any]:
        return {"turns": list(self.turns)} if self.turns else {"source": self.source}

    def human(self) -> dict[str, Any]:
        return {"references": list(self.references), "language": self.language}


@dataclass(frozen=True)
class ChoiceInstance(Instance):
    """A multiple-choice item with the choices of many people.

    ``options`` keep the release's order (option 1 first); ``target`` is the index of the intended (e.g.
    pragmatic) option in that order and ``human_counts[k]`` how many people chose option ``k`` (the share of people
    where ``counts_known`` is False). ``scenario`` is the
    context together with its question, as shown to participants; ``description`` is the task description a
    prompt opens with. Prompts are rendered by the task (``harness.prompts.choice``), which also shuffles the
    option order, so one instance serves every way of asking.
    """

    #: The group the item belongs to (pragmatics: ``Irony``, ``Humour``, ...): the choice scorers report every
    #: metric per phenomenon too (``<name>/<phenomenon>``); empty: no per-group metrics.
    phenomenon: str = ""
    #: The item's number in its release, within its phenomenon (the pragmatics ``id`` is ``<phenomenon>-<item_id>``).
    item_id: int = 0
    #: The task description a prompt opens with (``{description}`` in the task's templates).
    description: str = ""
    #: The context together with its question, as shown to participants (``{scenario}``); the prior prompt I0 of
    #: the prior-corrected scores leaves it out.
    scenario: str = ""
    #: The option texts in the release's order (option 1 first). Every option index (``target``, ``human_counts``,
    #: ``Classification.option``, ``OptionProbsResponse.orders``) is a position in this order.
    options: tuple[str, ...] = ()
    #: The release's finer label of each option (``Correct``, ``IncorrectLiteral``, ...), one per option in the
    #: same order; written to ``samples_<task>.jsonl``, not read by the scorers.
    option_types: tuple[str, ...] = ()
    #: Index (from 0) in ``options`` of the intended (e.g. pragmatic) option: what accuracy counts as right. None
    #: where the data names no target (a label distribution): the metrics defined against a target (accuracy,
    #: ``p_target``, the binomial fit, the robustness report's target columns) are left out for it.
    target: int | None = 0
    #: How many people chose each option: one count per option, in the same order; with ``counts_known`` False, the
    #: share of people who chose it instead (the shares sum to 1).
    human_counts: tuple[float, ...] = ()
    #: True: ``human_counts`` are numbers of people. False: the data gave only proportions of people (no number of
    #: people); ``human_counts`` then hold those proportions (they sum to 1), and no scorer makes people up from them:
    #: what splits, resamples or counts individual people is unavailable, with the reason (``docs/metrics.md``).
    counts_known: bool = True
    #: Loader-specific extras (pragmatics: ``task_code``, ``maxim``, ``label_simple``, ``human_n``), JSON values:
    #: written as they are to the item's record in ``samples_<task>.jsonl``; no scorer reads them.
    meta: dict[str, Any] = field(default_factory=dict)

    def inputs(self) -> dict[str, Any]:
        return {
            "phenomenon": self.phenomenon,
            "item_id": self.item_id,
            "description": self.description,
            "scenario": self.scenario,
            "options": list(self.options),
        }

    def human(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "counts": list(self.human_counts),
            "total": sum(self.human_counts),
            "target": self.target,
            "option_types": list(self.option_types),
        }
        if not self.counts_known:
            record["counts_known"] = False
        return record
