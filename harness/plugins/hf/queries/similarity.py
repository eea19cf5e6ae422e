"""The representations ``similarity`` queries compare: one vector per text (causal) or per prompt and per
(prompt, option) pair (sequence-to-sequence), as float64 so the cosine adds no rounding of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from harness.api import SimilarityRequest
from harness.plugins.hf.queries.batching import ScoringModel, chunks, pad_right
from harness.plugins.hf.queries.encoding import QueryEncoder
from harness.plugins.hf.queries.seq2seq import Seq2SeqScorer


@torch.inference_mode()
def causal_vectors(scoring: ScoringModel, encoder: QueryEncoder, texts: Sequence[str]) -> dict[str, torch.Tensor]:
    """Last-layer hidden state at each text's last token, every text read alone (right-padded rows, so the
    real positions never see padding), as float64 for the cosine."""
    encoded = {t: encoder.fit(encoder.context_ids(t), 1) for t in texts}
    order = sorted(texts, key=lambda t: -len(encoded[t]))
    kwargs: dict[str, Any] = {"logits_to_keep": 1} if scoring.keeps_logits else {}
    vectors: dict[str, torch.Tensor] = {}
    for chunk in chunks(order, scoring.batch_size):
        rows = [encoded[t] for t in chunk]
        padded, mask = pad_right(rows, max(len(r) for r in rows), scoring.pad_id)
        hidden = scoring.model(
            input_ids=torch.tensor(padded, device=scoring.device),
            attention_mask=torch.tensor(mask, device=scoring.device),
            output_hidden_states=True,
            use_cache=False,
            **kwargs,
        ).hidden_states[-1]
        for r, text in enumerate(chunk):
            vectors[text] = hidden[r, len(rows[r]) - 1].double()
    return vectors


@torch.inference_mode()
def seq2seq_vectors(
    seq2seq: Seq2SeqScorer, encoder: QueryEncoder, queries: Sequence[SimilarityRequest]
) -> tuple[dict[str, torch.Tensor], dict[tuple[str, str], torch.Tensor]]:
    """The encoder's last-token state per prompt, and per (prompt, option) the decoder's last state after reading
    the option behind the start token: the option's meaning in the context of the prompt, since an
    encoder-decoder model has no other place where the two meet. Each prompt is encoded once; prompt and options
    are stripped as a loglikelihood pair's context and continuation are."""
    options: dict[str, list[str]] = {}
    for query in queries:
        known = options.setdefault(query.prompt, [])
        known.extend(o for o in query.options if o not in known)
    prompts: dict[str, torch.Tensor] = {}
    vectors: dict[tuple[str, str], torch.Tensor] = {}
    for prompt, texts in options.items():
        encoded = seq2seq.encode_source(encoder.fit(encoder.context_ids(prompt.rstrip()), 0))
        prompts[prompt] = encoded.last_hidden_state[0, -1].double()
        ids = {o: tuple(encoder.encode(o.lstrip())) for o in texts}
        order = sorted(texts, key=lambda o: -len(ids[o]))
        for chunk in chunks(order, seq2seq.scoring.batch_size):
            # A filler label after the option makes the shifted decoder input [start, *option].
            labels = [(*ids[o], seq2seq.scoring.pad_id) for o in chunk]
            hidden = seq2seq.decode(encoded, labels, output_hidden_states=True).decoder_hidden_states[-1]
            for r, option in enumerate(chunk):
                vectors[(prompt, option)] = hidden[r, len(ids[option])].double()
    return prompts, vectors
