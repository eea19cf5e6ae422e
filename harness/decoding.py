"""How each next token is drawn: one ``DecodingConfig`` for every request kind that samples.

Temperature is settled here, once: it must be > 0 everywhere. There is no "temperature 0 means greedy" shortcut;
greedy decoding is ``top_k=1`` (a ``generate`` decoding setting), which says what it does.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from harness.errors import shorten, shorten_repr
from harness.options import number

#: Decoding parameters in the order their labels are written (``temperature=0.7+top_p=0.9``).
DECODING_KEYS: tuple[str, ...] = ("temperature", "top_k", "top_p", "typical_p")
#: Temperatures below this only overflow the scaled logits (a logit of 20 at temperature 1e-300 is infinite), and
#: sampling at 0.01 is already all but greedy; greedy decoding itself is ``top_k=1``.
MIN_TEMPERATURE = 0.01
#: Above this every token is all but equally likely: the setting is a typo, not an experiment.
MAX_TEMPERATURE = 100.0
#: More than any vocabulary; a larger ``top_k`` is a typo.
MAX_TOP_K = 1_000_000
#: Decoding settings one task may sweep (each is its own run).
MAX_DECODING_SETTINGS = 64
#: How greedy decoding is spelled, for the messages that refuse a temperature.
GREEDY_HINT = "greedy decoding is the generate setting top_k=1 (decoding: top_k=1)"


def temperature_problem(value: float) -> str | None:
    """Why ``value`` cannot be a sampling temperature, or None if it can."""
    if not value > 0:
        return f"temperature must be > 0 ({GREEDY_HINT})"
    if not math.isfinite(value) or not MIN_TEMPERATURE <= value <= MAX_TEMPERATURE:
        return (
            f"temperature must be from {MIN_TEMPERATURE:g} to {MAX_TEMPERATURE:g} (lower ones only overflow the "
            f"logits; {GREEDY_HINT})"
        )
    return None


def sampling_temperature(value: Any) -> int | float:
    """A temperature option (``harness.options`` style): a number from ``MIN_TEMPERATURE`` to ``MAX_TEMPERATURE``;
    an integer stays an integer.

    >>> sampling_temperature(0.7), sampling_temperature("1")
    (0.7, 1)
    """
    try:
        got = number(value)
    except ValueError:
        got = None
    if got is None or temperature_problem(float(got)):
        raise ValueError(
            f"expected a positive number from {MIN_TEMPERATURE:g} to {MAX_TEMPERATURE:g}, got {shorten_repr(value)} "
            f"(lower ones only overflow the logits; {GREEDY_HINT})"
        )
    return got


sampling_temperature.type_name = f"{MIN_TEMPERATURE:g} <= number <= {MAX_TEMPERATURE:g}"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class DecodingConfig:
    """How each next token is drawn. With every field at its default: ancestral (unbiased) sampling from the model.

    The transformations apply in the order ``generate`` applies them: temperature, then top-k, then nucleus
    (top-p), then locally typical sampling; a value at its default is off (``top_k=0``, ``top_p=1``,
    ``typical_p=1``, ``temperature=1``).
    """

    #: Divides the logits before anything else: from 0.01 to 100; below 1 sharpens, above 1 flattens. There is no
    #: "0 means greedy": greedy decoding is ``top_k=1``.
    temperature: float = 1.0
    #: Keep only the ``top_k`` most probable tokens (0 to 1,000,000); 0: off, 1: greedy.
    top_k: int = 0
    #: Nucleus sampling: keep the fewest most probable tokens whose probabilities add up to at least ``top_p``
    #: (above 0, at most 1); 1: off.
    top_p: float = 1.0
    #: Locally typical sampling (Meister et al.; ``transformers``' ``TypicalLogitsWarper``): keep the tokens
    #: whose surprisal is closest to the entropy until their mass reaches ``typical_p`` (above 0, at most 1); 1: off.
    typical_p: float = 1.0

    def __post_init__(self) -> None:
        problem = temperature_problem(self.temperature)
        if problem:
            raise ValueError(f"{problem}, got {shorten_repr(self.temperature)}")
        if not 0 <= self.top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be from 0 to {MAX_TOP_K}, got {shorten_repr(self.top_k)}")
        for key in ("top_p", "typical_p"):
            value = getattr(self, key)
            if not 0 < value <= 1:
                raise ValueError(f"{key} must be in (0, 1], got {shorten_repr(value)}")

    @property
    def is_ancestral(self) -> bool:
        return self == DecodingConfig()

    @property
    def label(self) -> str:
        """``ancestral``, or the parameters that differ from ancestral sampling: ``temperature=0.7+top_p=0.9``."""
        default = DecodingConfig()
        parts = [
            f"{k}={_format_number(getattr(self, k))}" for k in DECODING_KEYS if getattr(self, k) != getattr(default, k)
        ]
        return "+".join(parts) if parts else "ancestral"

    @classmethod
    def parse(cls, text: str) -> DecodingConfig:
        """Read a label back: ``ancestral``, ``top_p=0.9``, ``temperature=0.7+top_k=50``. ValueError names the part."""
        text = str(text).strip()
        if text in ("ancestral", ""):
            return cls()
        values: dict[str, Any] = {}
        for part in text.split("+"):
            key, sep, value = part.strip().partition("=")
            key = key.strip()
            shown = shorten_repr(part, 60)
            if not sep or key not in DECODING_KEYS:
                raise ValueError(f"{shown}: expected one of {', '.join(DECODING_KEYS)} as key=value, or 'ancestral'")
            if key in values:
                raise ValueError(f"{shown}: {key} given twice")
            try:
                values[key] = int(value) if key == "top_k" else float(value)
            except ValueError:
                wanted = "a number (an integer)" if key == "top_k" else "a number"
                raise ValueError(f"{shown}: {shorten_repr(value.strip(), 40)} is not {wanted}") from None
        return cls(**values)

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


def _format_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and not isinstance(value, float) else repr(float(value))


def decoding_labels(value: Any) -> list[str]:
    """The decoding settings of a sweep, as canonical labels (``ancestral``, ``top_p=0.9``).

    A list in YAML, or one string with settings separated by ``;`` (what ``--task-args decoding=...`` gives).
    Raises ValueError naming the setting that does not parse.

    >>> decoding_labels("ancestral; top_p=0.9")
    ['ancestral', 'top_p=0.9']
    """
    items = value.split(";") if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ValueError("a decoding setting or a list of them")
    if len(items) > MAX_DECODING_SETTINGS:
        raise ValueError(f"at most {MAX_DECODING_SETTINGS} decoding settings, got {len(items)}")
    labels: list[str] = []
    for item in items:
        if not isinstance(item, (str, int, float)) or isinstance(item, bool):
            raise ValueError(f"{shorten(item, 40)}: expected a setting such as top_p=0.9")
        label = DecodingConfig.parse(str(item)).label
        if label in labels:
            raise ValueError(f"each decoding setting once, {label!r} is given twice")
        labels.append(label)
    return labels
