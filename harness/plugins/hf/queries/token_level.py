"""The ``hf`` adapter's token-level capability (``harness.models.TokenLevelModel``): a text as the model's own tokens,
and the model's whole next-token distribution after a context.

Why it exists: the next-token games of ``harness collect`` show a person a text token by token, exactly as the model
reads it, and draw decoy tokens from the model's distribution with their probabilities recorded. The conventions are
the ones the rest of the ``hf`` adapter uses, so that a probability here is the probability the sampler and the query
scorer would see:

- a text is encoded without special tokens (it is read mid-text); the context of a distribution gets the BOS token in
  front where the tokenizer normally adds one (Llama tokenizers do, GPT-2's and SmolLM2's do not), and an empty
  context reads the BOS token alone (the EOS token for a tokenizer without BOS), as
  ``harness.plugins.hf.shared.tokens.fit_context`` and ``harness.plugins.hf.queries.encoding`` do;
- a context longer than the model's window is cut from the left, a leading BOS kept (``fit_context``);
- contexts share forward passes as right-padded rows (padding is never seen by a real position of a causal model),
  and only each row's last real position goes through the output layer; the logits are read in float32 and
  normalised in float64, so the distributions equal an unbatched forward pass up to float rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from harness.api import HarnessError
from harness.plugins.hf.queries.batching import pad_right
from harness.plugins.hf.queries.encoding import QueryEncoder
from harness.plugins.hf.shared.model_calls import last_logits_kwargs
from harness.plugins.hf.shared.placement import engine_placement
from harness.plugins.hf.shared.tokens import fit_context

#: Token positions one forward pass holds at most (rows x longest row): bounds the activations and attention
#: matrices of a pass whatever the contexts' lengths, and is fixed, so a pass's rows depend on the input alone.
TOKENS_PER_PASS = 8192

_DECODE_KWARGS: dict[str, Any] = {"skip_special_tokens": False, "clean_up_tokenization_spaces": False}

_REPLACEMENT = "\ufffd"


class TokenLevel:
    """Token strings and next-token distributions for one loaded causal model and its tokenizer (see the module
    docstring)."""

    def __init__(self, model: Any, tokenizer: Any, *, device: torch.device, batch_size: int, name: str = "") -> None:
        config = getattr(model, "config", None)
        if getattr(config, "is_encoder_decoder", False):
            raise HarnessError(
                f"model {name or type(model).__name__} is a sequence-to-sequence model; next-token games need a "
                "causal LM"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size, self.device = engine_placement(model, int(batch_size), device)
        self.name = name
        encoder = QueryEncoder(model, tokenizer)
        #: Whether the tokenizer puts BOS in front of a text by default (probed, as the query scorer does).
        self.adds_bos = encoder.adds_bos
        bos = getattr(tokenizer, "bos_token_id", None)
        self.bos_id: int | None = int(bos) if bos is not None else None
        #: What an empty context reads: BOS, else EOS (lm-evaluation-harness's ``prefix_token_id``).
        self.prefix_id = encoder.prefix_id
        self.pad_id = encoder.pad_id
        self._keep_kwargs = last_logits_kwargs(model)

    # ------------------------------------------------------------------ text and tokens
    def token_ids(self, text: str) -> list[int]:
        """``text``'s ids with no special tokens (the text is read mid-text; BOS belongs to the context)."""
        if not text:
            return []
        return [int(t) for t in self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """Each token as the text it adds, decoding the ids cumulatively so the strings join to the whole decoding.

        Decoded alone, a byte-level token that holds part of a multi-byte character reads as U+FFFD; decoded with
        the ids before it, the decoding of a prefix that ends inside a character ends in U+FFFD too. Such trailing
        replacement characters are held back until a later token completes the character, so that token shows the
        whole character and the ones before it show the empty string; the last token shows whatever is left. (A
        genuine U+FFFD in the text is therefore shown one token late at worst.) Quadratic in the number of ids, which
        is fine for the paragraphs of a study (a 1,000-token text decodes in well under a second).
        """
        ids = [int(t) for t in ids]
        strings: list[str] = []
        emitted = ""
        for k in range(1, len(ids) + 1):
            full = str(self.tokenizer.decode(ids[:k], **_DECODE_KWARGS))
            candidate = full if k == len(ids) else full.rstrip(_REPLACEMENT)
            if candidate.startswith(emitted):
                strings.append(candidate[len(emitted) :])
                emitted = candidate
            else:
                # The decoding of the earlier tokens changed (a decoder that rewrites text, which ordinary byte-level
                # and SentencePiece tokenizers do not): this token shows nothing rather than repeat text.
                strings.append("")
        return strings

    # ------------------------------------------------------------------ distributions
    def model_input(self, context: Sequence[int]) -> list[int]:
        """The ids a context is read from: BOS in front where the tokenizer adds one, BOS (else EOS) alone for an
        empty context, cut from the left to the model's window."""
        ids = [int(t) for t in context]
        if self.adds_bos and self.bos_id is not None:
            ids = [self.bos_id, *ids]
        if not ids:
            if self.prefix_id is None:
                raise HarnessError(
                    f"model {self.name}: an empty context and the tokenizer has neither a BOS nor an EOS token"
                )
            return [self.prefix_id]
        return fit_context(ids, self.tokenizer, self.model, 0)

    def next_token_logprobs(self, contexts: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """The float64 natural-log next-token distribution after each context, in order (module docstring)."""
        rows = [self.model_input(c) for c in contexts]
        results: list[np.ndarray | None] = [None] * len(rows)
        order = sorted(range(len(rows)), key=lambda i: (-len(rows[i]), i))
        for group in self._passes(order, rows):
            logits = self._last_logits([rows[i] for i in group])
            logprobs = torch.log_softmax(logits.to(torch.float64), dim=-1).cpu().numpy()
            for row, i in enumerate(group):
                results[i] = logprobs[row]
        return [r for r in results if r is not None]

    def _passes(self, order: list[int], rows: list[list[int]]) -> list[list[int]]:
        """``order`` (longest first) cut into passes of at most ``batch_size`` rows and :data:`TOKENS_PER_PASS`
        padded positions."""
        passes: list[list[int]] = []
        current: list[int] = []
        for i in order:
            width = len(rows[current[0]]) if current else len(rows[i])
            if current and (len(current) >= self.batch_size or (len(current) + 1) * width > TOKENS_PER_PASS):
                passes.append(current)
                current = []
            current.append(i)
        if current:
            passes.append(current)
        return passes

    @torch.inference_mode()
    def _last_logits(self, rows: list[list[int]]) -> torch.Tensor:
        """Float32 logits at each row's last real position, shape ``(rows, vocabulary)``."""
        length = max(len(r) for r in rows)
        padded, mask = pad_right(rows, length, self.pad_id)
        ids = torch.tensor(padded, device=self.device)
        attention = torch.tensor(mask, device=self.device)
        last = torch.tensor([len(r) - 1 for r in rows], device=self.device)
        if self._keep_kwargs:
            # Only each row's last real position is projected onto the vocabulary (a 2-D integer logits_to_keep).
            out = self.model(input_ids=ids, attention_mask=attention, use_cache=False, logits_to_keep=last[:, None])
            logits = out.logits
            if logits.ndim == 3 and tuple(logits.shape[:2]) == (len(rows), 1):
                return logits[:, 0].float()
            del out, logits
        # Models that take no logits_to_keep (or an older transformers that reads it otherwise): one row at a time,
        # so only one row's full logits are held.
        found = []
        for row in rows:
            out = self.model(input_ids=torch.tensor([row], device=self.device), use_cache=False)
            found.append(out.logits[0, -1].float())
        return torch.stack(found)
