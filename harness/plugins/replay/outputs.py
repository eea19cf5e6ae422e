"""Outputs a model produced elsewhere, read into one shape whatever file they came from.

Why one shape: the released generations of the papers (GPT-2's word samples, BLOOM's raw continuations, ChatGPT's
replies and lists, per-option probabilities) and a user's own files all become, per instance id, one of three
things the ``replay`` adapter can answer requests with:

* ``words``: next words with counts, already cut from their continuations by whoever produced them (only where
  the raw text was not released: the study's GPT-2 files);
* ``texts``: raw continuations or replies, cut into words by the harness's own rules (``harness.words.rules``), exact or
  paper, whichever the task asks for; ``ended`` says whether each text ended where the model stopped (a chat reply)
  or was cut off after a token budget (a 5-token continuation), which the exact rule needs to know;
* ``option_probs``: a probability per option of a multiple-choice item, in the instance's own option order.

``listed`` marks texts that are one reply listing many guesses (``1. later\\n2. ago ...``), parsed line by line.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path


@dataclass(frozen=True)
class RecordedEntry:
    """What was recorded for one instance (exactly one of the fields is set)."""

    words: dict[str, int] | None = None
    texts: tuple[str, ...] | None = None
    #: Whether each text ended where the model stopped (true) or was cut off after a token budget (false).
    ended: bool = False
    #: The texts are replies that each list many guesses.
    listed: bool = False
    option_probs: tuple[float, ...] | None = None
    #: The context (or prompt) the outputs answered, where the source records it: checked against the task's.
    context: str | None = None

    @property
    def n_outputs(self) -> int:
        """Samples recorded: words counted, texts, or 1 for a probability distribution."""
        if self.words is not None:
            return sum(self.words.values())
        if self.texts is not None:
            return len(self.texts)
        return 1


@dataclass(frozen=True)
class RecordedChoices(RecordedEntry):
    """A multiple-choice item's recorded distributions: one per option order the source asked in, each in the
    instance's option order (``option_probs`` is their mean), with the option texts and target the source shows,
    which the replay adapter checks against the instance."""

    orders: tuple[tuple[float, ...], ...] = ()
    options: tuple[str, ...] = ()
    target: int | None = None

    @property
    def n_outputs(self) -> int:
        return len(self.orders)


@dataclass
class RecordedOutputs:
    """Every instance's recorded outputs from one source, and where they came from (for the results)."""

    format: str
    sources: list[Path]
    entries: dict[str, RecordedEntry] = field(default_factory=dict)
    #: What else the source says (the model that produced it, the setting read), copied into the results.
    meta: dict[str, str] = field(default_factory=dict)
    #: Instances the source holds more than once: id -> whether every copy was the same. The first copy is
    #: kept (the released BLOOM and ChatGPT files repeat 13 positions each; the study scored every copy).
    duplicates: dict[str, bool] = field(default_factory=dict)

    def add(self, key: str, entry: RecordedEntry) -> None:
        """Keep the first entry of an instance; note a repeat and whether it differs."""
        if key in self.entries:
            self.duplicates[key] = self.duplicates.get(key, True) and self.entries[key] == entry
            return
        self.entries[key] = entry

    @cached_property
    def sha256(self) -> str:
        """Read once: the fingerprint of every task's store and the results' provenance all ask for it."""
        return files_sha256(self.sources)

    @property
    def typical_n(self) -> int:
        """The most common number of outputs per instance, the larger on a tie (what the run reports as its samples
        per input)."""
        sizes: dict[int, int] = {}
        for entry in self.entries.values():
            sizes[entry.n_outputs] = sizes.get(entry.n_outputs, 0) + 1
        return max(sizes, key=lambda n: (sizes[n], n)) if sizes else 0


def files_sha256(paths: list[Path]) -> str:
    """One SHA-256 over the files' names and bytes, in the order given (a folder's files are read sorted)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()
