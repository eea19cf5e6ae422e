"""The games' items, made once from the study's model (``model:`` in the study file) when the study is first opened.

Why once: the which-one game's sampled tokens and their probabilities are what ``harness human-perplexity`` needs
afterwards, and the next-token game's tokens must be the same for every participant; both are kept in the database
with the items, so the model is not loaded again while the study is served. The model's own top-1 guess at every
next-token position is kept too, so the export puts it beside the people's on the same positions.

Item layouts (the payload JSON):

* next-token game: one item per text, ``{"text_id", "tokens", "positions", "model_top1"}``; step ``s`` guesses
  token ``positions[s]``, ``model_top1[str(index)]`` is the model's ``[token, probability]``;
* which-one game: one item per round, ``{"position_id", "text_id", "index", "context", "true_token",
  "sampled_token", "generator_prob", "generator_true_prob", "sample"}``, ordered sample by sample (every position's
  first round, then every position's second...), so a participant moves on through the contexts rather than judging
  one context several times in a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.collect.items import Item, Text, catch_item
from harness.collect.study import Study
from harness.collect.tokens import (
    TokenisedText,
    choose_positions,
    load_token_model,
    sample_rounds,
    tokenise_texts,
    top1_tokens,
)
from harness.errors import HarnessError

#: Steps of a next-token practice text at most (practice is a warm-up, not data).
PRACTICE_STEPS = 5


def prepare_game_items(study: Study, texts: Sequence[Text]) -> list[Item]:
    """Practice items, the main items and the attention checks of a game study."""
    assert study.model is not None
    model = load_token_model(study.model)
    try:
        wanted = {t.text_id: t.participants for t in texts}
        tokenised = tokenise_texts(model, [(t.text_id, t.text) for t in texts])
        positions = choose_positions(tokenised, study.position_start, study.position_every, study.positions_per_text)
        if not positions:
            raise HarnessError(
                f"{study.path}: field 'positions': no token position to play (start {study.position_start} is past "
                "the end of every text?)"
            )
        if study.kind == "next_token_game":
            items = _practice_texts(model, study) + _guessing_items(model, tokenised, positions, wanted)
        else:
            items = [_practice_round(f"practice-{i}", p) for i, p in enumerate(study.practice)]
            items += _rounds(model, study, tokenised, positions, wanted)
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()
    return items + [catch_item(f"check-{i}", c) for i, c in enumerate(study.attention_checks)]


def _guessing_items(
    model: Any, tokenised: Sequence[TokenisedText], positions: Sequence[tuple[str, int]], wanted: dict[str, int | None]
) -> list[Item]:
    top1 = top1_tokens(model, tokenised, positions)
    items = []
    for text in tokenised:
        indices = [index for text_id, index in positions if text_id == text.text_id]
        if not indices:
            continue
        payload: dict[str, Any] = {
            "text_id": text.text_id,
            "tokens": list(text.tokens),
            "positions": indices,
            "model_top1": {str(i): list(top1[f"{text.text_id}-{i}"]) for i in indices},
        }
        if wanted.get(text.text_id):
            payload["participants"] = wanted[text.text_id]
        items.append(Item(text.text_id, "main", payload, len(indices)))
    return items


def _practice_texts(model: Any, study: Study) -> list[Item]:
    if not study.practice:
        return []
    tokenised = tokenise_texts(model, [(f"practice-{i}", p.text) for i, p in enumerate(study.practice)])
    items = []
    for text in tokenised:
        indices = [i for _, i in choose_positions([text], 1, 1, PRACTICE_STEPS)]
        if not indices:
            raise HarnessError(f"{study.path}: practice text {text.text_id}: too short to play")
        payload = {"text_id": text.text_id, "tokens": list(text.tokens), "positions": indices}
        items.append(Item(text.text_id, "practice", payload, len(indices)))
    return items


def _practice_round(item_id: str, practice: Any) -> Item:
    payload = {"context": practice.text, "true_token": practice.true_token, "sampled_token": practice.sampled_token}
    return Item(item_id, "practice", payload, 1)


def _rounds(
    model: Any,
    study: Study,
    tokenised: Sequence[TokenisedText],
    positions: Sequence[tuple[str, int]],
    wanted: dict[str, int | None],
) -> list[Item]:
    rounds = sample_rounds(model, tokenised, positions, study.samples_per_position, study.seed)
    items = []
    for r in sorted(rounds, key=lambda r: r.sample):  # stable: positions keep their order within a sample
        payload: dict[str, Any] = {
            "position_id": r.position_id,
            "text_id": r.text_id,
            "index": r.index,
            "context": r.context,
            "true_token": r.true_token,
            "sampled_token": r.sampled_token,
            "generator_prob": r.generator_prob,
            "generator_true_prob": r.generator_true_prob,
            "sample": r.sample,
        }
        if wanted.get(r.text_id):
            payload["participants"] = wanted[r.text_id]
        items.append(Item(f"{r.position_id}-s{r.sample}", "main", payload, 1))
    return items
