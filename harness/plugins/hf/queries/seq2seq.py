"""Encoder and decoder passes of a sequence-to-sequence model, and continuation scores read from them.

The context is read once through the encoder; each continuation is a decoder target scored after the decoder start
token the model prepends. The similarity vectors of such a model come from the same two passes
(:mod:`harness.plugins.hf.queries.similarity`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from harness.plugins.hf.queries.batching import Ids, ScoringModel, chunks, gather_logprobs, pad_right


class Seq2SeqScorer:
    """Runs one encoder-decoder model's passes for the query scorer."""

    def __init__(self, scoring: ScoringModel) -> None:
        self.scoring = scoring

    def decoder_inputs(self, labels: torch.Tensor) -> torch.Tensor:
        """Decoder inputs for ``labels``: the labels shifted right behind the decoder start token, by the model's own
        rule where it has one (T5, BART and Marian do), so the start token is whatever the model trains with."""
        model = self.scoring.model
        prepare = getattr(model, "prepare_decoder_input_ids_from_labels", None)
        if prepare is not None:
            return prepare(labels=labels)
        start = getattr(model.config, "decoder_start_token_id", None)
        if start is None:
            raise ValueError("the sequence-to-sequence model has no decoder_start_token_id")
        shifted = labels.new_full(labels.shape, int(start))
        shifted[:, 1:] = labels[:, :-1]
        return shifted

    def encode_source(self, context: Ids) -> Any:
        """The encoder's output for one source, run once however many targets are then decoded against it."""
        ids = torch.tensor([context], device=self.scoring.device)
        return self.scoring.model.get_encoder()(input_ids=ids, attention_mask=torch.ones_like(ids))

    def decode(self, encoded: Any, labels: Sequence[Ids], **kwargs: Any) -> Any:
        """Decoder pass for right-padded ``labels`` rows, all conditioned on one encoded source (expanded, not
        copied: cross-attention only reads it)."""
        from transformers.modeling_outputs import BaseModelOutput

        scoring = self.scoring
        rows = len(labels)
        length = max(len(r) for r in labels)
        padded, mask = pad_right(labels, length, scoring.pad_id)
        hidden = encoded.last_hidden_state
        return scoring.model(
            encoder_outputs=BaseModelOutput(last_hidden_state=hidden.expand(rows, -1, -1)),
            attention_mask=torch.ones((rows, hidden.shape[1]), dtype=torch.long, device=scoring.device),
            decoder_input_ids=self.decoder_inputs(torch.tensor(padded, device=scoring.device)),
            decoder_attention_mask=torch.tensor(mask, device=scoring.device),
            use_cache=False,
            **kwargs,
        )

    def score_group(self, context: Ids, continuations: Sequence[Ids]) -> list[list[float]]:
        """The source through the encoder once; each continuation is a decoder target (position ``j`` predicts
        token ``j``, the start token being the decoder's first input)."""
        encoded = self.encode_source(context)
        results: list[list[float]] = [[] for _ in continuations]
        order = sorted(range(len(continuations)), key=lambda i: -len(continuations[i]))
        for chunk in chunks(order, self.scoring.batch_size):
            logits = self.decode(encoded, [continuations[i] for i in chunk]).logits
            scored = gather_logprobs(logits, [(r, 0, continuations[i]) for r, i in enumerate(chunk)])
            for i, values in zip(chunk, scored, strict=True):
                results[i] = values
        return results
