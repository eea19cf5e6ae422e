"""Token log-probabilities of continuations on a causal model, either reading their context's cached keys/values or
as full sequences.

A multiple-choice item asks for several continuations of one context. Each distinct context therefore runs once
(batch 1, its keys/values kept) and all of its continuations are scored in one pass that reads those keys/values
(:meth:`CausalScorer.score_group_reusing_context`): with a 120-token context and 5 short answers that is 1 context
pass plus about 5 x 14 cheap positions, instead of 5 x 135 positions for full sequences. Model families whose cache
is not plain per-layer keys/values (sliding-window, recurrent) take the full-sequence path
(:meth:`CausalScorer.score_full`), as does ``kv_reuse=False``. Either way the numbers equal an unbatched forward pass
of ``context + continuation`` up to float rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from harness.plugins.hf.queries.batching import Ids, ScoringModel, chunks, gather_logprobs, pad_right
from harness.plugins.hf.shared.model_calls import output_cache

#: Shortest shared token prefix worth reusing from the previous context's keys/values.
MIN_SHARED_PREFIX = 8


def _plain_dynamic_cache(cache: Any) -> bool:
    """Whether ``cache`` holds every layer's full keys/values as plain tensors, the only layout whose rows can be
    copied onto continuations without knowing the model (sliding windows drop positions, recurrent states differ)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    if not isinstance(cache, DynamicCache) or not cache.layers:
        return False
    return all(type(layer) is DynamicLayer and isinstance(layer.keys, torch.Tensor) for layer in cache.layers)


class CausalScorer:
    """Scores continuations for one causal model, keeping the last context's keys/values so the next context can
    reuse the token prefix it shares with it (contexts arrive sorted, so prompts sharing a beginning follow each
    other)."""

    def __init__(self, scoring: ScoringModel) -> None:
        self.scoring = scoring
        #: The last context run and its keys/values: the next context reuses their common token prefix.
        self._last_context: tuple[Ids, Any] | None = None

    def score_group_reusing_context(self, context: Ids, continuations: Sequence[Ids]) -> list[list[float]] | None:
        """One context pass, then its continuations as right-padded rows reading the context's cached keys/values
        (the cache is expanded to the rows as views; the first update copies it once per pass). None when the
        model's cache is not plain keys/values: the caller then scores full sequences."""
        from transformers import DynamicCache

        scoring = self.scoring
        shared, past = self._shared_prefix(context)
        ids = torch.tensor([context[shared:]], device=scoring.device)
        kwargs: dict[str, Any] = {"logits_to_keep": 1} if scoring.keeps_logits else {}
        out = scoring.model(
            input_ids=ids,
            attention_mask=torch.ones((1, len(context)), dtype=torch.long, device=scoring.device),
            position_ids=torch.arange(shared, len(context), device=scoring.device)[None],
            use_cache=True,
            **{scoring.cache_keyword: past},
            **kwargs,
        )
        cache = output_cache(out)
        if not _plain_dynamic_cache(cache):
            self._last_context = None
            return None
        self._last_context = (context, cache)
        # The context's last position predicts every continuation's first token.
        first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        results = [[float(first[c[0]])] for c in continuations]
        longer = sorted((i for i, c in enumerate(continuations) if len(c) > 1), key=lambda i: -len(continuations[i]))
        n_context = len(context)
        for chunk in chunks(longer, scoring.batch_size):
            inputs = [continuations[i][:-1] for i in chunk]
            length = max(len(r) for r in inputs)
            padded, mask = pad_right(inputs, length, scoring.pad_id)
            rows = len(chunk)
            expanded = DynamicCache(
                ddp_cache_data=[
                    (layer.keys.expand(rows, -1, -1, -1), layer.values.expand(rows, -1, -1, -1))
                    for layer in cache.layers
                ]
            )
            attention = torch.tensor([[1] * n_context + m for m in mask], device=scoring.device)
            positions = torch.arange(n_context, n_context + length, device=scoring.device).expand(rows, -1)
            logits = scoring.model(
                input_ids=torch.tensor(padded, device=scoring.device),
                attention_mask=attention,
                position_ids=positions,
                use_cache=True,
                **{scoring.cache_keyword: expanded},
            ).logits
            scored = gather_logprobs(logits, [(r, 0, continuations[i][1:]) for r, i in enumerate(chunk)])
            for i, rest in zip(chunk, scored, strict=True):
                results[i].extend(rest)
            del expanded, logits
        return results

    def _shared_prefix(self, context: Ids) -> tuple[int, Any]:
        """How many leading tokens ``context`` shares with the last context run (at most all but its last token,
        which must run to give the next-token logits), and a cache holding their keys/values; ``(0, None)`` when
        the shared part is shorter than :data:`MIN_SHARED_PREFIX` tokens, where reuse would not pay."""
        if self._last_context is None:
            return 0, None
        from transformers import DynamicCache

        last, cache = self._last_context
        limit = min(len(last), len(context) - 1)
        shared = next((i for i in range(limit) if last[i] != context[i]), limit)
        if shared < MIN_SHARED_PREFIX:
            return 0, None
        # Views of the first ``shared`` positions: the model's cache update concatenates into new tensors, so the
        # last context's cache is never written to.
        layers = [(layer.keys[:, :, :shared], layer.values[:, :, :shared]) for layer in cache.layers]
        return shared, DynamicCache(ddp_cache_data=layers)

    def score_full(self, pairs: Sequence[tuple[Ids, Ids]]) -> list[list[float]]:
        """Each pair as one right-padded row ``context + continuation[:-1]``, longest first so rows of similar length
        share a pass; only the positions from the earliest continuation start of a pass get logits."""
        scoring = self.scoring
        order = sorted(range(len(pairs)), key=lambda i: -(len(pairs[i][0]) + len(pairs[i][1])))
        results: list[list[float]] = [[] for _ in pairs]
        for chunk in chunks(order, scoring.batch_size):
            inputs = [(pairs[i][0] + pairs[i][1])[:-1] for i in chunk]
            length = max(len(r) for r in inputs)
            padded, mask = pad_right(inputs, length, scoring.pad_id)
            starts = [len(pairs[i][0]) - 1 for i in chunk]
            keep = length - min(starts)
            kwargs: dict[str, Any] = {"logits_to_keep": keep} if scoring.keeps_logits else {}
            offset = length - keep if scoring.keeps_logits else 0
            logits = scoring.model(
                input_ids=torch.tensor(padded, device=scoring.device),
                attention_mask=torch.tensor(mask, device=scoring.device),
                use_cache=False,
                **kwargs,
            ).logits
            rows = [(r, starts[r] - offset, pairs[i][1]) for r, i in enumerate(chunk)]
            for i, scored in zip(chunk, gather_logprobs(logits, rows), strict=True):
                results[i] = scored
            del logits
        return results
