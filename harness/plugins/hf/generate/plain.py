"""The generator's fallback path: one ``model.generate`` call per request, for causal model families without
shared-prefix attention (:func:`harness.plugins.hf.shared.prefix_attention.enable` refused them) and for
sequence-to-sequence models.

Rows stop and are cut by the same text rules as the batched path (:mod:`harness.plugins.hf.generate.text`).
"""

from __future__ import annotations

from typing import Any

import torch

from harness.api import GenerateRequest, GenerateResponse
from harness.plugins.hf.generate.text import StopCriterion, scan_row
from harness.plugins.hf.shared.tokens import ContinuationDecoder


def generate_plain(
    model: Any,
    tokenizer: Any,
    request: GenerateRequest,
    ids: list[int],
    *,
    eos: frozenset[int],
    seq2seq: bool,
    device: torch.device,
) -> GenerateResponse:
    """One ``model.generate`` call on ``ids`` (the prompt, or the encoder input of a seq2seq model).

    Ancestral sampling is passed explicitly (``top_k=0``: ``generate`` defaults to ``top_k=50``), and
    ``num_beams=1`` overrides checkpoints whose generation config asks for beam search; other settings of the
    model's generation config (for example Marian's ban on generating the pad token) apply as in any
    ``generate`` call. ``generate`` takes no random generator, so the global torch RNG is seeded from
    ``request.seed`` inside ``torch.random.fork_rng`` (the caller's RNG state is restored afterwards): results
    are reproducible for the same request, device and batch shape. Stop strings stop a row through a stopping
    criterion with the same text rule as the shared-prefix path, and the texts are then cut by that same rule.
    ``tokens_evaluated`` counts what ``generate`` runs: the prompt once per sample (the encoder input once for
    seq2seq) plus every step of every row, finished rows included (``generate`` pads them, it does not drop them).
    """
    if request.n == 0:
        return GenerateResponse(texts=[], finish_reasons=[], n_tokens=[], tokens_evaluated=0)
    from transformers import StoppingCriteriaList

    decoder = ContinuationDecoder(tokenizer, [] if seq2seq else ids)
    input_ids = torch.tensor([ids], dtype=torch.long, device=device)
    d = request.decoding
    pad = getattr(tokenizer, "pad_token_id", None)
    if pad is None:
        pad = min(eos) if eos else 0
    kwargs: dict[str, Any] = {
        "attention_mask": torch.ones_like(input_ids),
        "do_sample": True,
        "num_beams": 1,
        "num_return_sequences": request.n,
        "temperature": float(d.temperature),
        "top_k": int(d.top_k),
        "top_p": float(d.top_p),
        "typical_p": float(d.typical_p),
        "max_new_tokens": request.max_new_tokens,
        "pad_token_id": pad,
    }
    if eos:
        kwargs["eos_token_id"] = sorted(eos)
    # Decoder inputs start with the decoder start token for seq2seq models, with the prompt for causal ones.
    start = 1 if seq2seq else len(ids)
    if request.stop:
        criterion = StopCriterion(decoder, request.stop, start, eos)
        kwargs["stopping_criteria"] = StoppingCriteriaList([criterion])
    devices = [device] if device.type == "cuda" else []
    with torch.inference_mode(), torch.random.fork_rng(devices=devices):
        torch.manual_seed(request.seed)
        out = model.generate(input_ids, **kwargs)
    generated = out[:, start:].tolist()
    texts, reasons, counts = [], [], []
    for row in generated:
        text, reason, n_tokens = scan_row(row, decoder, eos, request.stop, request.max_new_tokens)
        texts.append(text)
        reasons.append(reason)
        counts.append(n_tokens)
    steps = len(generated[0])
    # seq2seq: the encoder once, then the decoder start token and every generated token but the last, per row.
    evaluated = len(ids) + request.n * steps if seq2seq else request.n * (len(ids) + max(0, steps - 1))
    return GenerateResponse(texts=texts, finish_reasons=reasons, n_tokens=counts, tokens_evaluated=evaluated)
