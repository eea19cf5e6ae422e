"""How each next token is drawn: one ``DecodingConfig`` for every request kind that samples.

Temperature is settled here, once: it must be > 0 everywhere. There is no "temperature 0 means greedy" shortcut;
greedy decoding is ``top_k=1`` (a ``generate`` decoding setting), which says what it does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: Decoding parameters in the order their labels are written (``temperature=0.7+top_p=0.9``).
DECODING_KEYS: tuple[str, ...] = ("temperature", "top_k", "top_p", "typical_p")


@dataclass(frozen=True)
class DecodingConfig:
    """How each next token is drawn. All defaults is ancestral (unbiased) sampling from the model's distribution.

    The transformations apply in the order ``generate`` applies them: temperature, then top-k, then nucleus
    (top-p), then locally typical sampling; a value at its default is off (``top_k=0``, ``top_p=1``,
    ``typical_p=1``, ``temperature=1``).
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    typical_p: float = 1.0

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0 (greedy decoding is top_k=1), got {self.temperature}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        for key in ("top_p", "typical_p"):
            value = getattr(self, key)
            if not 0 < value <= 1:
                raise ValueError(f"{key} must be in (0, 1], got {value}")

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
            if not sep or key not in DECODING_KEYS:
                raise ValueError(f"{part!r}: expected one of {', '.join(DECODING_KEYS)} as key=value, or 'ancestral'")
            if key in values:
                raise ValueError(f"{part!r}: {key} given twice")
            try:
                values[key] = int(value) if key == "top_k" else float(value)
            except ValueError:
                raise ValueError(f"{part!r}: {value!r} is not a number") from None
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
    labels: list[str] = []
    for item in items:
        label = DecodingConfig.parse(str(item)).label
        if label in labels:
            raise ValueError(f"each decoding setting once, {label!r} is given twice")
        labels.append(label)
    return labels
