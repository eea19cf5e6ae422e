"""Map a free-generation answer to one of a multiple-choice item's options, or to none.

Free generation lets the model answer in its own words, so before its answers can be counted as choices each one
has to be mapped to an option automatically. The mapping is pluggable: a plugin registers an
:class:`AnswerClassifier` subclass through the ``register_answer_classifiers`` hook, and the free-generation scorer
takes its ``name`` as its ``classifier`` argument. The built-in :class:`MatchThenSimilarityClassifier`
(``match_similarity``) tries the cheap, exact evidence first and falls back to embeddings:

1. **Label** (only when the prompt showed the options with labels): the stripped answer *is* a label or *starts*
   with one followed by a delimiter: ``3``, ``3)``, ``3.``, ``(3)``, ``[3]``, ``3 - ...``, ``3\\n...``, or a
   keyword form such as ``Option 3``, ``Answer: C``, ``The answer is (C)``. A label followed only by a space and
   more text (``3 people came``, ``A man walked in``) is text, not a label, because nothing marks it as one.
2. **Alias** (only with the ``aliases`` argument): the normalised answer is a declared stand-in for an option's
   text, e.g. ``yes`` for ``Coherent`` when the question is a yes/no one and the options are words.
3. **Text**: on normalised texts (NFKC, lowercase, typographic quotes made plain, whitespace collapsed,
   punctuation stripped at both ends), and with every containment on word boundaries (so ``coherent`` is not
   found inside ``incoherent``), in this order:

   a. the answer equals exactly one option;
   b. the answer contains the full text of exactly one option. Options whose text lies inside another contained
      option's text are dropped first, so the longer, more specific option wins;
   c. the answer lies inside exactly one option and is at least 60 % of that option's length in characters
      (:data:`CONTAINED_MIN_RATIO`): a clipped copy of an option counts, a stray shared word does not.

   Several candidates at any step make the answer ambiguous, and it goes on to similarity rather than being
   guessed.
4. **Similarity**: answers and options are embedded with sentence-transformers (unit-length vectors, so the dot
   product is the cosine); the most similar option is the answer's if its cosine is at least ``threshold``,
   otherwise the answer is unclassified. Every text that needs embedding in one :meth:`classify` call is embedded
   once, in batches.

An answer that is empty after normalisation is unclassified without being embedded: an empty text still has an
embedding, and it would be similar to something.

Default threshold: calibrated against the free-production answers of Tsvilodub et al. (2024), which the study
mapped to options by hand (``reference_outputs/tsvilodub2024/results/free``): 3,331 distinct answers of
flan-t5-xl, Llama-2-7b, gpt-3.5-turbo-instruct and text-davinci-002 on the six interpretation phenomena (the
prompts did not show the options, so no labels; the study's ``error``, 12.1 % of answers, counts as unclassified).
``agreement``: same option as the study, or both none; ``acc``: agreement among answers both mapped; then the
classifier's unclassified rate and the share of the study's ``error`` / mapped answers it leaves unclassified::

    python benchmarks/calibrate_classifier.py --data-dir ../shared/data    # MiniLM, CPU, about 2 minutes

    threshold  agreement  acc(both)  unclassified  study-error unclassified  study-mapped unclassified
    0.20       0.470      0.461      0.114         0.665                     0.038
    0.25       0.470      0.464      0.144         0.727                     0.064
    0.30       0.464      0.468      0.181         0.772                     0.100
    0.40       0.427      0.477      0.287         0.809                     0.215
    0.50       0.373      0.502      0.459         0.893                     0.400
    0.60       0.280      0.513      0.673         0.950                     0.635
    0.70       0.202      0.558      0.850         0.985                     0.832
    0.80       0.145      0.735      0.965         0.995                     0.961

Agreement peaks flat at 0.20-0.25 (1,566 and 1,565 of 3,331) and falls steadily above: a higher threshold buys
little accuracy among the answers it keeps and discards most answers the study could map. ``DEFAULT_THRESHOLD``
is 0.25, the upper end of the peak, because there it leaves more of the study's unmappable answers unclassified
(73 % against 67 %) for the same agreement, and its unclassified rate (14 %) is closest to the study's (12 %).
The calibration also says how far to trust the mapping: the most similar option is the study's option for less
than half of the answers at any threshold (chance is 20-25 %), so free-generation results should be reported with
``how`` counts and read as coarse.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

# The base class and its item and result types live in the core; they are importable from here too.
from harness.api import (
    AnswerClassifier,
    Classification,
    ClassifyItem,
    ModelLoadError,
    Option,
    Options,
    optional,
    positive_int,
    sentence_encoders,
)
from harness.scorers.probes.semantic import DEFAULT_MODEL, device_spec, model_id, resolve_model

#: Cosine an answer needs with its most similar option to be classified by similarity (calibration above).
DEFAULT_THRESHOLD = 0.25
#: Step 2c: an answer inside one option must be at least this share of the option's length (characters).
CONTAINED_MIN_RATIO = 0.6

HOWS: tuple[str, ...] = ("label", "alias", "text", "similarity", "unclassified")


def normalise(text: str) -> str:
    """Lowercase, plain quotes, single spaces, no punctuation at the ends: what text matching compares."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.translate(_QUOTES)
    text = " ".join(text.split())
    return text.strip(_END_PUNCTUATION)


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00b4": "'", "`": "'"})
_END_PUNCTUATION = string.punctuation + string.whitespace + "\u2026\u2013\u2014"
#: Markdown emphasis and quotes around a whole answer (``**3**``, ``"C"``) hide a label; they are dropped first.
_WRAPPERS = "*_\"'`"
#: Keyword forms: ``Option 3``, ``Answer: C``, ``The correct answer is (C)``, ``Choice no. 2``.
_KEYWORD = (
    r"(?:the\s+)?(?:(?:correct|right|best|final)\s+)?(?:option|answer|choice)"
    r"(?:\s+(?:is|would\s+be|number|no\.?|#))*\s*[:=#-]?\s*"
)


def _label_pattern(label: str) -> re.Pattern[str]:
    """A label at the start of an answer, marked as a label by a keyword, brackets or a delimiter after it."""
    lab = re.escape(label.strip())
    keyword = rf"{_KEYWORD}[(\[]?{lab}[)\]]?(?!\w)"
    bracketed = rf"\(\s*{lab}\s*\)|\[\s*{lab}\s*\]"
    # A bare label needs a closing bracket, punctuation followed by a space or the end, a spaced dash, a line
    # break, or nothing after it; "3 people" and "3.5" stay text.
    bare = rf"{lab}(?:[)\]]|[.:,;!?](?=\s|$)|\s*[-\u2013\u2014]\s|\s*\n|\s*$)"
    return re.compile(rf"^(?:{keyword}|{bracketed}|{bare})", re.IGNORECASE)


def match_label(answer: str, labels: Sequence[str]) -> int | None:
    """The index of the one label the answer is or starts with, else None (none, or several)."""
    text = answer.strip().strip(_WRAPPERS).strip()
    hits = [k for k, label in enumerate(labels) if label.strip() and _label_pattern(label).match(text)]
    return hits[0] if len(hits) == 1 else None


def _contains(haystack: str, needle: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack) is not None


def match_text(answer: str, options: Sequence[str]) -> int | None:
    """The option the answer's text identifies under rules 2a-2c of the module docstring, else None."""
    ans = normalise(answer)
    opts = [normalise(o) for o in options]
    if not ans:
        return None
    equal = [k for k, o in enumerate(opts) if o and o == ans]
    if equal:
        return equal[0] if len(equal) == 1 else None
    inside_answer = [k for k, o in enumerate(opts) if o and _contains(ans, o)]
    # The longer of two nested options is the more specific match; drop options that lie inside another.
    inside_answer = [
        k
        for k in inside_answer
        if not any(j != k and opts[j] != opts[k] and _contains(opts[j], opts[k]) for j in inside_answer)
    ]
    if inside_answer:
        return inside_answer[0] if len(inside_answer) == 1 else None
    around_answer = [k for k, o in enumerate(opts) if o and _contains(o, ans)]
    if len(around_answer) == 1 and len(ans) >= CONTAINED_MIN_RATIO * len(opts[around_answer[0]]):
        return around_answer[0]
    return None


def _aliases(value: Any) -> dict[str, str]:
    """A mapping of answer to option text."""
    if not (isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
        raise ValueError("expected a mapping of answer to option text")
    return dict(value)


def _threshold(value: Any) -> float:
    """A cosine in [-1, 1]; -1 classifies every non-empty answer (what the calibration script records)."""
    if isinstance(value, bool):
        raise ValueError("expected a cosine in [-1, 1], got a boolean")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"expected a cosine in [-1, 1], got {value!r}") from None
    if not (math.isfinite(number) and -1.0 <= number <= 1.0):
        raise ValueError(f"expected a cosine in [-1, 1], got {value!r}")
    return number


class MatchThenSimilarityClassifier(AnswerClassifier):
    """Label match, then text match, then embedding similarity with a threshold (see the module docstring).

    Args (keyword, from the free-generation scorer's ``classifier_args``):
        model: sentence-transformers model: ``all-MiniLM-L6-v2`` (default; the packaged copy offline), a local
            path or a hub id.
        threshold: cosine the most similar option needs (default :data:`DEFAULT_THRESHOLD`).
        device: ``auto`` (default: cuda if available, else cpu), ``cpu``, ``cuda``, ``cuda:1``, ...
        batch_size: texts per encoding batch (default 64).
        aliases: answers that stand for an option's text, e.g. ``{"yes": "Coherent", "no": "Incoherent"}`` for
            a yes/no question whose options are words; matched on normalised text, after labels and before text
            matching, and only when the item has an option with that text (so other items are unaffected).
    """

    name = "match_similarity"
    extras: ClassVar[tuple[str, ...]] = ("probes",)  # sentence-transformers embeds answers and options
    options: ClassVar[Options] = Options(
        Option("model", model_id, DEFAULT_MODEL, "sentence-transformers model: alias, local path or hub id", "str"),
        Option("threshold", _threshold, DEFAULT_THRESHOLD, "cosine the most similar option needs", "-1 <= x <= 1"),
        Option("device", device_spec, "auto", "auto (cuda if available, else cpu), cpu, cuda, cuda:1, ...", "str"),
        Option("batch_size", positive_int, 64, "texts per encoding batch"),
        Option(
            "aliases",
            optional(_aliases),
            None,
            "answers that stand for an option's text, e.g. {yes: Coherent}",
            "mapping or null",
        ),
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.aliases = {normalise(k): normalise(v) for k, v in (self.settings["aliases"] or {}).items()}
        self.threshold: float = self.settings["threshold"]
        self.batch_size: int = self.settings["batch_size"]
        self.model_name: str = self.settings["model"]
        self.device_name: str = self.settings["device"]
        self.resolved, self.source = resolve_model(self.model_name)
        self._device: str | None = None

    def _model(self) -> Any:
        """The sentence-transformers model, loaded on first use and shared with the semantic probe per process
        (``harness.scoring.sentence_encoders``); :class:`ModelLoadError` with the reason when it cannot load."""
        if self._device is None:
            self._device = sentence_encoders.resolve_device(self.device_name)
        try:
            return sentence_encoders.load(self.resolved, self._device)
        except sentence_encoders.EncoderLoadError as exc:
            raise ModelLoadError(
                f"answer classifier '{self.name}': model {self.model_name!r} ({self.source}: {self.resolved}) "
                f"could not be loaded on {self._device}: {exc}"
            ) from exc.__cause__

    def _embed(self, texts: list[str]) -> dict[str, np.ndarray]:
        unique = list(dict.fromkeys(texts))
        if not unique:
            return {}
        vectors = sentence_encoders.encode(self._model(), unique, batch_size=self.batch_size, dtype=np.float64)
        return dict(zip(unique, vectors, strict=True))

    def classify(self, items: list[ClassifyItem]) -> list[Classification]:
        results: list[Classification | None] = []
        pending: list[int] = []
        for i, item in enumerate(items):
            if not normalise(item.text) or not item.options:
                results.append(Classification(None, "unclassified"))
                continue
            if item.labels is not None:
                k = match_label(item.text, item.labels)
                if k is not None:
                    results.append(Classification(k, "label"))
                    continue
            alias = self.aliases.get(normalise(item.text))
            if alias is not None:
                matches = [j for j, option in enumerate(item.options) if normalise(option) == alias]
                if len(matches) == 1:
                    results.append(Classification(matches[0], "alias"))
                    continue
            k = match_text(item.text, item.options)
            if k is not None:
                results.append(Classification(k, "text"))
                continue
            results.append(None)
            pending.append(i)
        if pending:
            vectors = self._embed([t for i in pending for t in (items[i].text, *items[i].options)])
            for i in pending:
                answer = vectors[items[i].text]
                sims = np.stack([vectors[o] for o in items[i].options]) @ answer
                best = int(np.argmax(sims))
                cosine = float(sims[best])
                option = best if cosine >= self.threshold else None
                results[i] = Classification(option, "similarity" if option is not None else "unclassified", cosine)
        return [r for r in results if r is not None]

    def describe(self) -> dict[str, Any]:
        return {
            "classifier": self.name,
            "model": self.model_name,
            "resolved": self.resolved,
            "source": self.source,
            "device": self._device or self.device_name,
            "normalized": True,
            "threshold": self.threshold,
            "contained_min_ratio": CONTAINED_MIN_RATIO,
            "aliases": dict(self.aliases),
            "batch_size": self.batch_size,
        }
