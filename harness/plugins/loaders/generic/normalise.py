"""A study's response normalisation: case, punctuation, spelling variants, and responses that mean "no answer".

Why these four: they are what a cloze study's coding manual decides before any analysis (Luke & Christianson
merge case and punctuation variants and correct spelling; studies code "?", "idk" or an empty box as no answer).
They run in this order on each human response: surrounding whitespace is removed; case is folded (``case:
fold``); a response then equal to one of ``no_answer`` (compared after the same steps, so ``?`` can be one) is
dropped and counted; punctuation and symbols are removed (``punctuation: strip``, hyphens inside words kept, as in
``harness.api.normalise_word``); ``replacements`` (compared after all these steps) maps a variant to its response.

For the next-word kinds the task's word rule (``exact``) is applied after all of this, because the model's words
go through it too: ``case: keep`` or ``punctuation: keep`` there decide only what ``no_answer`` and
``replacements`` see (``US`` -> ``United States`` but not ``us``), since the rule folds case and removes
punctuation before words are compared.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.api import (
    HarnessError,
    decode_utf8,
    load_yaml,
    read_bytes,
    resolve_data_file,
    shorten_repr,
    strip_punctuation,
)

#: The largest replacements file read (a spelling list is kilobytes; anything near this is the wrong file).
MAX_REPLACEMENTS_BYTES = 64 << 20


@dataclass(frozen=True)
class Normaliser:
    case: str = "keep"
    punctuation: str = "keep"
    no_answer: frozenset[str] = frozenset({""})
    replacements: Mapping[str, str] = field(default_factory=dict)
    #: The replacements file read, if any.
    replacements_file: Path | None = None
    #: The SHA-256 of that file's bytes, taken when it was read: part of the data's identity.
    replacements_sha256: str | None = None

    def apply(self, response: str) -> str | None:
        """The normalised response, or None when it means "no answer": one of ``no_answer``, or empty whatever the
        list says (an empty box, an empty piece of a packed cell: a person without an answer, never a word)."""
        text = self.folded(response)
        if not text or text in self.no_answer:
            return None
        text = self._punctuation(text)
        return self.replacements.get(text, text)

    def folded(self, text: str) -> str:
        """Whitespace and case: what ``no_answer`` is compared with (punctuation kept, so ``?`` can mean none)."""
        text = text.strip()
        return text.casefold() if self.case == "fold" else text

    def steps(self, text: str) -> str:
        """Every step: what ``replacements`` and option keys are compared with."""
        return self._punctuation(self.folded(text))

    def _punctuation(self, text: str) -> str:
        return strip_punctuation(text) if self.punctuation == "strip" else text

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"case": self.case, "punctuation": self.punctuation, "no_answer": sorted(self.no_answer)}
        if self.replacements_file is not None:
            out["replacements"] = {"file": str(self.replacements_file), "n": len(self.replacements)}
        elif self.replacements:
            out["replacements"] = {"n": len(self.replacements)}
        return out


#: The keys of a ``normalise`` mapping.
NORMALISE_KEYS = ("case", "punctuation", "no_answer", "replacements")
_CASES = ("fold", "keep")
_PUNCTUATION = ("strip", "keep")


def normaliser_option() -> Any:
    """Converter for a loader's ``normalise`` option; the file is read when the loader runs (it needs the data root)."""

    def convert(value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise ValueError(
                f"expected a mapping {{case, punctuation, no_answer, replacements}}, got {shorten_repr(value)}"
            )
        unknown = sorted(str(k) for k in value if k not in NORMALISE_KEYS)
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} (accepted: {', '.join(NORMALISE_KEYS)})")
        for key, choices in (("case", _CASES), ("punctuation", _PUNCTUATION)):
            if key in value and value[key] not in choices:
                raise ValueError(f"'{key}': expected {' or '.join(choices)}, got {shorten_repr(value[key])}")
        answers = value.get("no_answer", [""])
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise ValueError(f"'no_answer': expected a list of texts, got {shorten_repr(answers)}")
        replacements = value.get("replacements")
        if replacements is not None and not isinstance(replacements, (str, Mapping)):
            raise ValueError(f"'replacements': expected a mapping or a file path, got {shorten_repr(replacements)}")
        if isinstance(replacements, Mapping) and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in replacements.items()
        ):
            raise ValueError("'replacements': expected texts mapped to texts")
        return dict(value)

    convert.type_name = "{case, punctuation, no_answer, replacements}"  # type: ignore[attr-defined]
    return convert


def build_normaliser(given: Mapping[str, Any] | None, defaults: Normaliser, data_dir: Path) -> Normaliser:
    """The normaliser for a task: the kind's defaults, then what the task file gave (a replacements file is a data
    path as ``files`` are: under the data root, ``task:`` or ``package:``)."""
    given = given or {}
    case = given.get("case") or defaults.case
    punctuation = given.get("punctuation") or defaults.punctuation
    base = Normaliser(case, punctuation)
    no_answer = frozenset(base.folded(a) for a in given.get("no_answer", sorted(defaults.no_answer)))
    raw = given.get("replacements")
    file: Path | None = None
    digest: str | None = None
    if isinstance(raw, str):
        file = resolve_data_file(raw, data_dir, "normalise.replacements")
        raw, digest = read_replacements(file)
    replacements = {base.steps(k): v.strip() for k, v in (raw or {}).items()}
    return Normaliser(case, punctuation, no_answer, replacements, file, digest)


def read_replacements(path: Path) -> tuple[dict[str, str], str]:
    """A spelling list: two columns (variant, response) of a CSV/TSV file with a header, or a JSON/YAML mapping;
    with the SHA-256 of the bytes read (the file is read once)."""
    if not path.is_file():
        raise HarnessError(f"data option 'normalise.replacements': {path} not found")
    data = read_bytes(path, "replacements file", MAX_REPLACEMENTS_BYTES)
    return _replacements(decode_utf8(data, path), path), hashlib.sha256(data).hexdigest()


def _replacements(text: str, path: Path) -> dict[str, str]:
    suffix = path.suffix.lower()
    if suffix in (".json", ".yaml", ".yml"):
        try:
            data = json.loads(text) if suffix == ".json" else load_yaml(text)
        except Exception as exc:
            raise HarnessError(
                f"{path}: not a valid {suffix[1:].upper()} mapping: {shorten_repr(str(exc), 120)}"
            ) from None
        if not isinstance(data, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise HarnessError(f"{path}: expected a mapping of variant spellings to responses (texts to texts)")
        return dict(data)
    if suffix not in (".csv", ".tsv"):
        raise HarnessError(f"{path}: replacements must be a .csv, .tsv, .json or .yaml file")
    reader = csv.reader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ",")
    rows = list(reader)
    out: dict[str, str] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) != 2:
            raise HarnessError(f"{path}: line {number}: expected 2 columns (variant, response), got {len(row)}")
        out[row[0]] = row[1]
    return out
