"""The word rule applied to the people's side of a next-word task, the rule the model's side follows.

Why here and not in each loader: people and models must go through the same steps, and a loader cannot know the
rule the task's request uses. So loaders give each person's response normalised whole (``normalise_word``, a phrase
kept a phrase), and the next-word kinds put every response through ``harness.words.rules.human_word`` with the task's
``mode`` and ``segmenter``, the function that cuts a model's continuation: a phrase counts as its first word under
``exact`` (the loaders' default until now kept it whole, a word no model sample could ever be), stays whole under
``whole``, and under ``paper`` stays as the original study kept it.

Each instance's meta gets ``n_human_cut`` (responses that held more than their word), the data source gets a
``words`` record (the rule and how many responses it cut), and the run says so on stderr when more than
``CUT_NOTE_SHARE`` of the responses were cut. A task whose people write a script without spaces between words
(Chinese, Japanese, Thai) under the ``spaces`` segmenter is refused before any model loads: its model samples would
run to their token budget as one "word" and the TVD would mean nothing.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from harness.data.loaders import LoadedData
from harness.errors import HarnessError
from harness.instances import ClozeInstance, Instance
from harness.words.rules import describe_rule, human_word
from harness.words.segmenters import check_segmenter, spaceless_script

#: Above this share of responses cut to their first word, the run says so (a few two-word answers are normal).
CUT_NOTE_SHARE = 0.01
#: At or above this share of responses in a script without spaces, the ``spaces`` segmenter is refused.
SPACELESS_SHARE = 0.1


def apply_word_rule(task: str, data: LoadedData, mode: str, segmenter: str) -> LoadedData:
    """``data`` with every cloze instance's human counts (and its corpus word) through the word rule."""
    check_segmenter(segmenter)
    if mode == "paper":  # the original study's convention: the loader's responses as they are
        return LoadedData(
            data.instances, data.data_hash, {**data.source, "words": {"mode": mode, "segmenter": segmenter}}
        )
    out: list[Instance] = []
    total = cut_total = spaceless = 0.0
    script: str | None = None
    for inst in data.instances:
        if not isinstance(inst, ClozeInstance):
            out.append(inst)
            continue
        counts: dict[str, float] = {}
        cut = 0.0
        changed = False
        for response, weight in inst.human_counts.items():
            total += weight
            found = spaceless_script(response) if mode == "exact" and segmenter == "spaces" else None
            if found:
                spaceless += weight
                script = script or found
            word, was_cut = human_word(response, mode, segmenter)
            if word is None:  # loaders drop responses that normalise to nothing; a segmenter may still leave none
                continue
            if was_cut:
                cut += weight
            changed = changed or word != response
            counts[word] = counts.get(word, 0.0) + weight
        cut_total += cut
        if not counts:
            raise HarnessError(
                f"task {task}: instance {inst.id}: the word rule ({describe_rule(mode, segmenter)}) leaves no word "
                "of the people's responses"
            )
        number: Any = int if inst.counts_known and all(float(c).is_integer() for c in counts.values()) else float
        # Unchanged responses keep the loader's order (the paper-faithful ECE breaks ties by it); merged ones are
        # listed as the loaders list them: most frequent first, ties by word.
        ordered = (
            dict(inst.human_counts)
            if not changed
            else {w: number(c) for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}
        )
        target = (human_word(inst.target, mode, segmenter)[0] or "") if inst.target else inst.target
        meta = {**inst.meta, "n_human_cut": _number(cut)}
        out.append(dataclasses.replace(inst, human_counts=ordered, target=target, meta=meta))
    if total and spaceless / total >= SPACELESS_SHARE:
        raise HarnessError(
            f"task {task}: {spaceless / total:.0%} of the people's responses are written in {script} script, which "
            "puts no spaces between words, so the word rule 'exact' with segmenter 'spaces' cannot cut a model's "
            "first word there: set params.segmenter to characters, jieba (Chinese) or fugashi (Japanese), or "
            "params.mode to whole (docs/your-data.md, 'Words')"
        )
    words = {
        "mode": mode,
        "segmenter": segmenter,
        "n_responses": _number(total),
        "n_cut": _number(cut_total),
    }
    return LoadedData(out, data.data_hash, {**data.source, "words": words})


def report_cuts(task: str, data: LoadedData) -> None:
    """Say on stderr when the word rule cut more than ``CUT_NOTE_SHARE`` of the people's responses."""
    words = data.source.get("words")
    if not isinstance(words, dict) or not words.get("n_responses"):
        return
    share = float(words["n_cut"]) / float(words["n_responses"])
    if share > CUT_NOTE_SHARE:
        print(
            f"note: task {task}: {words['n_cut']} of {words['n_responses']} human responses ({share:.1%}) held more "
            f"than one word and count as their first word, as the model's samples do (word rule "
            f"{describe_rule(words['mode'], words['segmenter'])}; n_human_cut per instance; params.mode: whole "
            "compares whole responses instead)",
            file=sys.stderr,
        )


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else round(value, 6)
