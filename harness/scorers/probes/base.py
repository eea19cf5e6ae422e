"""The probe interface shared by the lexical, syntactic and semantic probes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from harness.api import OptionError, Options


class ProbeUnavailable(Exception):
    """A probe cannot run for a language (no tagger, no embedding model); the message says why.

    The scorer reports the probe as unavailable for the task with this reason, so the probe is never silently
    skipped or replaced by something else.
    """


class Probe(ABC):
    """Pairwise distances between texts on one level of language, for one or more measures.

    ``measures`` names the distances a probe gives (``unigram``, ``bigram``, ``trigram`` for n-grams; ``cosine``
    for embeddings): each becomes its own set of metrics. Distances lie in [0, 1] for n-gram measures and [0, 2]
    for cosine distance; NaN marks a pair the measure is undefined for (two texts without any n-gram of that
    order), which the scorer counts and leaves out (or, with its ``undefined: zero`` argument, sets to 0).
    """

    #: Short name used in metric names (``lexical``, ``syntactic``, ``semantic``).
    name: str = ""
    #: The keyword arguments the constructor accepts (task YAML ``args`` of the scorer that uses the probe).
    options: ClassVar[Options] = Options()

    @classmethod
    def parse_options(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        """``given`` checked against ``options``, converted, with the defaults of the rest.

        A typo in a task YAML must not be ignored: an unknown or bad argument is a ``ValueError`` naming the probe
        and the argument (``lexical probe: unknown option 'max_token' (accepted: ...)``).
        """
        try:
            return cls.options.parse(given, f"{cls.name} probe")
        except OptionError as exc:
            raise ValueError(str(exc)) from None

    @property
    @abstractmethod
    def measures(self) -> tuple[str, ...]:
        """Names of the distances this probe gives, in report order."""

    @abstractmethod
    def prepare(self, texts: Sequence[str], language: str) -> None:
        """Compute and cache the features of every distinct text in ``texts`` (in batches).

        Called once per run with every text the scorer will compare, so that tagging and embedding are batched and
        each distinct text is processed once. Raises :class:`ProbeUnavailable` when the probe cannot handle
        ``language``. ``distances`` also works on texts that were not prepared (it prepares them on demand).
        """

    @abstractmethod
    def distances(self, a: Sequence[str], b: Sequence[str], language: str) -> dict[str, np.ndarray]:
        """For each measure, the ``[len(a), len(b)]`` matrix of distances between ``a[i]`` and ``b[j]``."""

    def describe(self) -> dict[str, object]:
        """Provenance recorded in results (pipeline names and versions, embedding model, truncation)."""
        return {"probe": self.name}
