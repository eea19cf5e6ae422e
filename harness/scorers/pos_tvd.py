"""``pos_tvd``: syntactic TVD, the next-word comparison one level up (Ilia & Aziz 2024, section 5).

Two distributions can share no word and still agree on what comes next grammatically (``dog`` vs ``cat``: both
nouns). Each word, a human guess or a model word, is tagged in its context: the context plus the word is run
through a spaCy pipeline (the packaged English one by default, with its parser on, because its attribute ruler
uses dependency labels to map tags to Universal POS) and the word's tag is the POS of the first token that starts
at or after the word. Summing counts per tag gives a POS distribution for the model and for the humans, and:

- ``pos_tvd``: TVD(model POS, human POS) (lower is better; a model with no accepted word scores 1);
- ``pos_tvd_human_halves``: TVD between the POS distributions of two random halves of the humans (the control,
  averaged over ``n_splits`` splits, as ``human_control`` does for words);
- ``pos_tvd_model_half``: TVD(model POS, POS of half A), the like-for-like comparison with the control.

Every distinct (context, word) pair of the task is tagged once, in one batch, when the scorer prepares; a word is
tagged in the context it was produced for, so ``saw`` after "I" and after "the" can get different tags.

Human data given only as proportions (``counts_known`` False): ``pos_tvd`` sums the proportions per tag; the two
metrics on halves of the people are None for such an instance, and the scorer's ``notes`` say so.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

import numpy as np

from harness.api import ClozeInstance, Instance, Metric, Option, Options, counts_known, positive_int, text
from harness.scorers.cloze import ClozeScorer, human_splits
from harness.scorers.distributions import Counts, counts_by_group, counts_tvd
from harness.scorers.probes import spacy_docs
from harness.scorers.tvd import EMPTY_MODEL_TVD

#: The tag of a word whose tokens could not be found after its context (should not happen; counted, not hidden).
UNFOUND = "X"


def package_list(value: Any) -> tuple[str, ...]:
    """spaCy package names tried in order: a list, or a string separated by ``;`` or spaces."""
    items = value.replace(";", " ").split() if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items:
        raise ValueError(f"expected a list of spaCy package names, got {value!r}")
    return tuple(text(item) for item in items)


package_list.type_name = "list of str"  # type: ignore[attr-defined]


def tagged_text(context: str, word: str) -> tuple[str, int]:
    """The text that is tagged for ``word`` after ``context``, and the offset where the word starts."""
    head = context.rstrip()
    return (f"{head} {word}", len(head) + 1) if head else (word, 0)


class PosTvdScorer(ClozeScorer):
    """Model-vs-human TVD over the Universal POS tags of the next words, with its split-half control."""

    name: ClassVar[str] = "pos_tvd"
    extras: ClassVar[tuple[str, ...]] = ("probes",)
    headline: ClassVar[tuple[str, ...] | None] = ("pos_tvd", "pos_tvd_human_halves")
    options: ClassVar[Options] = Options(
        Option("pipelines", package_list, spacy_docs.DEFAULT_PIPELINES["en"], "spaCy packages tried in order"),
        Option("n_splits", positive_int, 10, "random human half-splits for the control"),
        Option("batch_size", positive_int, 256, "texts per spaCy batch"),
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.tags: dict[tuple[str, str], str] = {}
        self.pipeline: spacy_docs.Pipeline | None = None

    def describe(self) -> dict[str, Any]:
        return self.pipeline.describe() if self.pipeline is not None else {}

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        self.note_people(instances, "pos_tvd_human_halves and pos_tvd_model_half (random halves of the people)")
        self.pipeline = pipeline = spacy_docs.require_tagger(self.args["pipelines"])
        pairs: dict[tuple[str, str], None] = {}
        for instance, response in zip(instances, responses, strict=True):
            cloze = self.cloze(instance)
            words = list(cloze.human_counts)
            if response is not None:
                words += list(self.model_counts(response))
            for word in words:
                if (cloze.context, word) not in self.tags:
                    pairs[(cloze.context, word)] = None
        todo = list(pairs)
        texts = [tagged_text(context, word) for context, word in todo]
        docs = pipeline.nlp.pipe([t for t, _ in texts], batch_size=self.args["batch_size"])
        for pair, (_, start), doc in zip(todo, texts, docs, strict=True):
            self.tags[pair] = next((tok.pos_ for tok in doc if tok.idx >= start), UNFOUND)

    def pos_counts(self, context: str, counts: Counts) -> dict[str, int | float]:
        """Word counts summed per POS tag of each word in ``context``."""
        return counts_by_group(counts, {word: self.tags[(context, word)] for word in counts})

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze: ClozeInstance = self.cloze(instance)
        human = self.pos_counts(cloze.context, cloze.human_counts)
        # Proportions cannot be split into halves of people: no control for such an instance (never invented).
        splits = human_splits(cloze.human_counts, self.args["n_splits"], rng) if counts_known(cloze) else []
        halves = [(self.pos_counts(cloze.context, a), self.pos_counts(cloze.context, b)) for a, b in splits]
        row: dict[str, Any] = {
            "pos_human": human,
            "pos_tvd_human_halves": float(np.mean([counts_tvd(a, b) for a, b in halves if a and b] or [np.nan])),
        }
        if np.isnan(row["pos_tvd_human_halves"]):
            row["pos_tvd_human_halves"] = None  # fewer than two guesses: no halves
        if response is not None:
            model = self.pos_counts(cloze.context, self.model_counts(response))
            row["pos_model"] = model
            row["pos_tvd"] = counts_tvd(model, human) if model else EMPTY_MODEL_TVD
            model_half = [counts_tvd(model, a) if model else EMPTY_MODEL_TVD for a, _ in halves if a]
            row["pos_tvd_model_half"] = float(np.mean(model_half)) if model_half else None
        return row

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        return {"pos_tvd": "pos_tvd_human_halves", "pos_tvd_model_half": "pos_tvd_human_halves"}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        return self.present_means(per_instance, ("pos_tvd", "pos_tvd_model_half", "pos_tvd_human_halves"), False, rng)
