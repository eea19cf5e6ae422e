"""``generic_cloze``: next-word (cloze) tasks over any data set of human guesses, for ``sample_words`` and
``word_distribution``.

Each instance is a context, optionally the corpus word that followed it, and the people's guesses. Guesses go
through the task's normalisation (``normalise``: case folded and punctuation removed by default) and
``normalise_word``, a phrase kept whole; the request kind then cuts each one by the task's word rule, the function
the model's words go through (``harness.kinds.words``: a phrase counts as its first word unless ``mode: whole``),
so that the two are comparable; guesses that become the same word are merged. The counts are listed most frequent
first, ties by word, as the Provo loader does (the paper-faithful ECE breaks ties by this order).

The context is a field of the rows (``context``: a column or a template), or is read from the study's passages
(``passages``: text files, or a column, with each row's text id and word position; ``passages.py``), which also
give the corpus word at the position unless ``target`` names it. The two are exclusive.

Each instance's ``meta`` holds the columns the task names, then ``n_human_raw`` (people with an answer, before
the word rule), ``n_human_dropped`` (answers the word rule leaves empty), ``n_human_missing`` (``no_answer``
responses) and ``n_unique_raw`` (distinct answers as written), as the Provo loader records them; the kind adds
``n_human_cut`` (responses the word rule cut to their first word).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.api import (
    ClozeInstance,
    HarnessError,
    LoadedData,
    Option,
    Options,
    normalise_word,
    optional,
    takes_options,
)
from harness.plugins.loaders.generic.build import (
    BASE_OPTIONS,
    GenericLoader,
    Group,
    Tally,
    instance_id,
    meta_of,
    text,
)
from harness.plugins.loaders.generic.fields import RowError, column_or_template
from harness.plugins.loaders.generic.human import recover_counts
from harness.plugins.loaders.generic.normalise import Normaliser
from harness.plugins.loaders.generic.passages import Passages, passages_option, read_passages

LOADER = "generic_cloze"
#: A cloze study's usual coding: case and punctuation variants are one answer, an empty box is no answer.
DEFAULTS = Normaliser(case="fold", punctuation="strip")

OPTIONS = BASE_OPTIONS | Options(
    Option("context", optional(column_or_template("context")), None, "the text before the position (or passages)"),
    Option("target", optional(column_or_template("target")), None, "the corpus word that followed, if known"),
    Option("passages", optional(passages_option), None, "the context (and target) from the study's passages"),
)


def _context_or_passages(parsed: Mapping[str, Any]) -> None:
    if parsed["context"] is not None and parsed["passages"] is not None:
        raise HarnessError(
            f"data options of loader '{LOADER}': give 'context' or 'passages', not both (with 'passages' the "
            "context is the passage's words before the position)"
        )
    if parsed["context"] is None and parsed["passages"] is None:
        raise HarnessError(
            f"data options of loader '{LOADER}': 'context' is required, or 'passages' to read it from the study's "
            "passages (see docs/your-data.md)"
        )


def cloze_instance(
    group: Group, parsed: Mapping[str, Any], normaliser: Normaliser, tally: Tally, passages: Passages | None = None
) -> ClozeInstance:
    where = group.where
    if passages is None:
        context = text(group.same(parsed["context"]), where, "context", required=False)
        target_raw = text(group.same(parsed["target"]), where, "target", required=False)
    else:
        context, printed = passages.locate(group)
        given = parsed["target"]
        target_raw = printed if given is None else text(group.same(given), where, "target", required=False)
    found = group.productions(parsed["human"])
    counted = recover_counts(found)
    counts: dict[str, float] = {}
    raw = missing = dropped = 0.0
    unique: set[Any] = set()
    for response, weight in counted.items:
        kept = normaliser.apply(str(response))
        if kept is None:
            missing += weight
            continue
        raw += weight
        unique.add(response)
        word = normalise_word(kept)
        if word:
            counts[word] = counts.get(word, 0.0) + weight
        else:
            dropped += weight
    if not counts or sum(counts.values()) <= 0:
        raise RowError(f"{where}: field 'human.responses': no human responses left (empty, no answer, or counts of 0)")
    tally.counted(counted.counts_known, counted.reason)
    number = int if counted.counts_known else float
    ordered = {w: number(c) for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}
    meta = meta_of(parsed["meta"], group)
    meta.update(
        n_human_raw=number(raw),
        n_human_dropped=number(dropped),
        n_human_missing=number(missing),
        n_unique_raw=len(unique),
    )
    return ClozeInstance(
        id=instance_id(parsed["id"], group),
        context=context,
        target=normalise_word(target_raw),
        target_raw=target_raw,
        human_counts=ordered,
        meta=meta,
        **({} if counted.counts_known else {"counts_known": False}),
    )


GENERIC = GenericLoader(LOADER, OPTIONS, DEFAULTS, ("human",), cloze_instance, _context_or_passages)


def _loader(parsed: Mapping[str, Any], data_dir: Path) -> tuple[GenericLoader, Passages | None]:
    """The loader for these parsed options: with ``passages``, one whose instances read the passages, read once
    here."""
    _context_or_passages(parsed)
    if parsed["passages"] is None:
        return GENERIC, None
    passages = read_passages(parsed["passages"], data_dir)

    def build(group: Group, parsed: Mapping[str, Any], normaliser: Normaliser, tally: Tally) -> ClozeInstance:
        return cloze_instance(group, parsed, normaliser, tally, passages)

    return replace(GENERIC, build=build), passages


def check_generic_cloze(
    options: Mapping[str, Any], data_dir: Path, prepare: Callable[[LoadedData], LoadedData] | None = None
) -> str:
    """``harness validate``'s check (``GenericLoader.check_data``), with the passages read."""
    parsed = OPTIONS.parse(options, f"data options of loader '{LOADER}'")
    return _loader(parsed, data_dir)[0].check_data(options, data_dir, prepare)


@takes_options(OPTIONS, name=LOADER, check_data=check_generic_cloze)
def load_generic_cloze(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """Cloze instances from the rows the options name (``docs/your-data.md``)."""
    loader, passages = _loader(options, data_dir)
    loaded = loader.load_parsed(options, data_dir)
    if passages is None:
        return loaded
    source = {**loaded.source, "passages": passages.source()}
    return LoadedData(loaded.instances, passages.data_hash(loaded.data_hash), source)
