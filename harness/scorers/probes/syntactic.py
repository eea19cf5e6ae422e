"""Syntactic probe: n-gram distance over Universal POS tags (``token.pos_``), as in the original study.

Same distance as the lexical probe (``harness.scorers.probes.lexical``), over the POS tag sequence of each text instead
of its words. The tagger is the language's spaCy pipeline, tried in the order given by ``pipelines``; when none loads
the probe raises :class:`ProbeUnavailable` naming the language and the packages tried. There is deliberately no
fallback (no blank pipeline, no other language's tagger): a syntactic distance from the wrong tagger would look like
a result and mean nothing.
"""

from __future__ import annotations

from harness.scorers.probes import spacy_docs
from harness.scorers.probes.base import ProbeUnavailable
from harness.scorers.probes.lexical import NgramProbe
from harness.scorers.probes.spacy_docs import Pipeline


class PosNgramProbe(NgramProbe):
    """POS n-gram distances (``unigram``, ``bigram``, ``trigram`` by default) between texts.

    Args (keyword, as in a task YAML): ``n``, ``pipelines`` (language -> spaCy packages to try in order, merged into
    ``spacy_docs.DEFAULT_PIPELINES``), ``max_tokens``, ``truncate_tokenizer``, ``batch_size``, as for
    :class:`~harness.scorers.probes.lexical.NgramProbe`.
    """

    name = "syntactic"
    units = "token.pos_ (Universal POS)"

    def _pipeline(self, language: str) -> Pipeline:
        if language not in self._pipelines:
            found = spacy_docs.candidates(language, self.pipelines)
            if found is None:
                raise ProbeUnavailable(
                    f"syntactic probe: no spaCy pipeline configured for language {language!r} "
                    f"(configured: {', '.join(sorted(self.pipelines))}; add one with the probe's `pipelines` argument)"
                )
            pipeline, reasons = spacy_docs.first_loadable(found[1], need_tags=True)
            if pipeline is None:
                raise ProbeUnavailable(
                    f"syntactic probe: no POS tagger for language {language!r}: tried {', '.join(found[1])}; "
                    f"{'; '.join(reasons)}. Install one of them (e.g. `python -m spacy download {found[1][0]}`)"
                )
            self._pipelines[language] = pipeline
        return self._pipelines[language]

    def _sequences(self, pipeline: Pipeline, texts: list[str]) -> list[tuple[str, ...]]:
        return spacy_docs.pos_tags(pipeline, texts, self.batch_size)
