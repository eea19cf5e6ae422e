"""The games' export: the next-token game's guesses and top-1 accuracy, and the which-one game's rounds in the format
``harness human-perplexity`` reads.

* next-token game: ``guesses.jsonl`` (one guess a line: ``text_id, position`` (the token's index), ``position_id``
  (``"{text_id}-{index}"``), ``context, true_token, guess, correct, participant, client_ms, server_ms``) and
  ``top1.json``
  (the people's top-1 accuracy, pooled over guesses and averaged over positions, and per position with its
  number of guesses, beside the study model's own top-1 guess at the same positions);
* which-one game: ``rounds.jsonl``, one judged round a line, written with the rounds format's own writer
  (``harness.analyses.relative_judgments``) and read back with its reader before the export is reported done, so
  a file the estimator would refuse is never handed over.

Why a guess is correct only when it is the token exactly (its leading space included): the game asks for the next
token of the model's tokenizer, and the flow scores it that way in the participant's running score; the export
must count what the participant was told.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.analyses.relative_judgments.rounds import Round, dumps_round, read_rounds
from harness.collect.flow import StudyFlow
from harness.collect.items import Item, target, view
from harness.collect.selection import Answer
from harness.files import atomic_write_text, write_json, write_jsonl

GUESSES = "guesses.jsonl"
TOP1 = "top1.json"
ROUNDS = "rounds.jsonl"


def write_next_token(
    flow: StudyFlow, main: list[Item], answers: list[Answer], out_dir: Path
) -> tuple[list[str], dict[str, Any]]:
    guesses = [_guess(a) for a in answers]
    write_jsonl(out_dir / GUESSES, guesses)
    summary = top1_summary(main, guesses)
    write_json(out_dir / TOP1, summary)
    return [GUESSES, TOP1], {"top1": summary["human"]}


def _guess(a: Answer) -> dict[str, Any]:
    shown = view(a.item, a.step)
    index, truth, text_id = int(shown["position"]), str(target(a.item, a.step)), a.item.payload["text_id"]
    return {
        "text_id": text_id,
        "position": index,
        "position_id": f"{text_id}-{index}",
        "context": "".join(shown["tokens"]),
        "true_token": truth,
        "guess": a.answer,
        "correct": a.answer == truth,
        "participant": a.participant,
        "client_ms": a.client_ms,
        "server_ms": a.server_ms,
    }


def top1_summary(main: Sequence[Item], guesses: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Top-1 accuracy: ``human.accuracy`` pools every guess, ``human.mean_over_positions`` weighs every position
    with a guess once; ``model`` is the study model's most probable token at the same positions (from the items)."""
    per: dict[str, list[int]] = {}
    for g in guesses:
        counts = per.setdefault(g["position_id"], [0, 0])
        counts[0] += 1
        counts[1] += int(g["correct"])
    positions = []
    model_right = model_n = 0
    for item in main:
        p = item.payload
        for index in p["positions"]:
            position_id = f"{p['text_id']}-{index}"
            n, correct = per.get(position_id, [0, 0])
            truth = str(p["tokens"][index])
            entry: dict[str, Any] = {
                "position_id": position_id,
                "text_id": p["text_id"],
                "position": index,
                "true_token": truth,
                "n": n,
                "correct": correct,
                "accuracy": correct / n if n else None,
            }
            top = p.get("model_top1", {}).get(str(index))
            if top is not None:
                entry.update(model_top1=top[0], model_top1_prob=top[1], model_correct=top[0] == truth)
                if n:
                    model_n += 1
                    model_right += int(top[0] == truth)
            positions.append(entry)
    answered = [e for e in positions if e["n"]]
    n_guesses = sum(e["n"] for e in answered)
    n_correct = sum(e["correct"] for e in answered)
    return {
        "human": {
            "accuracy": n_correct / n_guesses if n_guesses else None,
            "n": n_guesses,
            "correct": n_correct,
            "mean_over_positions": sum(e["accuracy"] for e in answered) / len(answered) if answered else None,
            "positions": len(answered),
            "participants": len({g["participant"] for g in guesses}),
        },
        "model": {
            "accuracy": model_right / model_n if model_n else None,
            "positions": model_n,
            "note": "the study model's most probable token at each position with a guess (same positions)",
        },
        "positions": positions,
    }


def write_which_one(
    flow: StudyFlow, main: list[Item], answers: list[Answer], out_dir: Path
) -> tuple[list[str], dict[str, Any]]:
    rounds = [_round(a) for a in answers]
    path = out_dir / ROUNDS
    atomic_write_text(path, "".join(dumps_round(r) + "\n" for r in rounds))
    if rounds:
        read_rounds(path)  # the estimator's own checks, before anyone relies on the file
    positions = len({r.position_id for r in rounds})
    return [ROUNDS], {
        "rounds": {"rounds": len(rounds), "positions": positions},
        "commands": [f"harness human-perplexity {path} --rounded"],
    }


def _round(a: Answer) -> Round:
    p = a.item.payload
    assert a.judgment is not None
    return Round(
        position_id=str(p["position_id"]),
        context=str(p["context"]),
        true_token=str(p["true_token"]),
        sampled_token=str(p["sampled_token"]),
        generator_prob=float(p["generator_prob"]),
        judgment=a.judgment,
        judge=a.participant,
        generator_true_prob=float(p["generator_true_prob"]),
        meta={"sample": p["sample"], "shown_order": a.shown_order, "client_ms": a.client_ms, "server_ms": a.server_ms},
    )
