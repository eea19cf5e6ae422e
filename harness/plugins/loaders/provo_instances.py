"""Normalising raw Provo positions into :class:`ClozeInstance` records, with the optional Mac-Roman repair.

Human responses go through :func:`harness.words.rules.normalise_word` (a phrase kept whole); the request kind then cuts
them by the task's word rule, as it cuts model words (``harness.kinds.words``).
"""

from __future__ import annotations

from harness.api import ClozeInstance, normalise_word
from harness.plugins.loaders.provo_readers import Position

#: Characters that are Mac-Roman punctuation bytes read as Latin-1 (``doesnÕt`` is ``doesn’t``). Kept by default,
#: as the seed did; ``repair_mac_roman: true`` maps them back.
MAC_ROMAN_REPAIRS = str.maketrans({"Õ": "’", "Ô": "‘", "Ò": "“", "Ó": "”", "Ñ": "—", "Ð": "–"})


def to_instance(pos: Position, repair: bool) -> ClozeInstance:
    """Normalise one position. Responses that normalise to the same word are merged; empty ones are dropped,
    because a model word can never be empty, so they could never be matched."""
    fix = (lambda s: s.translate(MAC_ROMAN_REPAIRS)) if repair else (lambda s: s)
    counts: dict[str, float] = {}
    dropped = 0
    for response, n in pos.responses.items():
        word = normalise_word(fix(response))
        if word:
            counts[word] = counts.get(word, 0) + n
        else:
            dropped += n
    ordered = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    target_raw = fix(pos.target_raw)
    return ClozeInstance(
        id=f"{pos.text_id}-{pos.word_num}",
        context=fix(pos.context),
        target=normalise_word(target_raw),
        target_raw=target_raw,
        human_counts=ordered,
        meta={
            "text_id": pos.text_id,
            "word_num": pos.word_num,
            "n_human_raw": sum(pos.responses.values()),
            "n_human_dropped": dropped,
            "n_human_missing": pos.n_missing,
            "n_unique_raw": len(pos.responses),
        },
    )
