"""Next-token probabilities of a decoder's last hidden states, written into buffers that are reused across passes.

The trie word sampler needs, after every forward pass, the full softmax over the vocabulary of each row's last
position: for a pass of 512 rows and SmolLM2's 49,152 tokens, 100 MB of logits and 100 MB of probabilities in
float32. Through ``model(...)`` every pass allocates both afresh, and on a CPU a fresh allocation of that size is new
memory from the kernel whose pages fault on first touch: on 2 CPU cores that was 33 ms of the LM head's 221 ms and
31 ms of the softmax's 46 ms per 512-row pass (``benchmarks/bench_next_token_head.py``). This head runs the decoder
(``model.get_decoder()``) and then the same LM head product and the same softmax kernel, but into buffers kept
across passes, so the values are the same bit for bit and only the page faults go.

Only for models whose logits are exactly ``hidden @ lm_head.weight.T`` (a bias-free ``nn.Linear`` head and no
logit scaling in the model's forward), soft-capped as the model caps them where it does (Gemma 2's
``final_logit_softcapping``, the same operations in the model's dtype), among the families the shared-prefix
attention supports.
"""

from __future__ import annotations

from typing import Any

import torch

from harness.plugins.hf.shared.model_calls import cache_keyword, output_cache
from harness.plugins.hf.shared.prefix_attention import SUPPORTED_MODEL_TYPES, capped

#: Model types whose ``forward`` computes logits as the LM head of the decoder's hidden states and nothing more
#: (``supports`` also checks the head's type and bias and the config's soft-capping and logit scale): the families
#: the shared-prefix attention serves (the head is only used on that path).
PLAIN_HEAD_MODEL_TYPES = SUPPORTED_MODEL_TYPES


class NextTokenHead:
    """The decoder of a causal LM, its LM head, and the buffers the head and the softmax write into.

    :meth:`probabilities` returns a view of a buffer that the next call overwrites: use it before the next call.
    """

    def __init__(self, model: Any) -> None:
        self.decoder = model.get_decoder()
        self.weight: torch.Tensor = model.get_output_embeddings().weight
        self._cache_keyword = cache_keyword(self.decoder)
        self._buffers: dict[str, torch.Tensor] = {}
        #: ``logits = cap * tanh(logits / cap)`` after the head, as the model's forward does when its config says so.
        self.final_cap: float | None = getattr(model.config, "final_logit_softcapping", None) or None

    @staticmethod
    def supports(model: Any) -> bool:
        """Whether the model's logits are exactly its bias-free linear head applied to its decoder's output."""
        config = getattr(model, "config", None)
        if getattr(config, "model_type", None) not in PLAIN_HEAD_MODEL_TYPES:
            return False
        if getattr(config, "logit_scale", None):
            return False
        head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
        return isinstance(head, torch.nn.Linear) and head.bias is None and decoder is not None

    def hidden(self, input_ids: torch.Tensor, cache: Any, **kwargs: Any) -> tuple[torch.Tensor, Any]:
        """The decoder's last hidden states ``[rows, positions, hidden]`` and the updated cache."""
        out = self.decoder(input_ids=input_ids, use_cache=True, **{self._cache_keyword: cache}, **kwargs)
        return out.last_hidden_state, output_cache(out)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The float32 logits of the rows of ``hidden [rows, hidden_size]``: the LM head product in the model's dtype,
        then the upcast, as ``model(...).logits.float()`` computes them. A buffer the next call overwrites."""
        rows = hidden.shape[0]
        logits = self._buffer("logits", rows, self.weight.dtype)
        torch.mm(hidden, self.weight.t(), out=logits)
        capped(logits, self.final_cap)
        if logits.dtype != torch.float32:
            upcast = self._buffer("upcast", rows, torch.float32)
            upcast.copy_(logits)
            logits = upcast
        return logits

    def softmax(self, logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        """The float32 softmax of ``logits / temperature`` (the division done in place, skipped at temperature 1,
        where it changes no value), written into the probabilities buffer: ``torch.softmax(logits / temperature)``
        bit for bit. ``logits`` is changed unless the temperature is 1."""
        if temperature != 1.0:
            logits.div_(temperature)
        probs = self._buffer("probs", logits.shape[0], torch.float32)
        torch.ops.aten._softmax.out(logits, -1, False, out=probs)
        return probs

    def probabilities(self, hidden: torch.Tensor, temperature: float) -> torch.Tensor:
        """The float32 softmax of ``logits / temperature`` for the rows of ``hidden [rows, hidden_size]``.

        The same operations, in the same dtypes, as the model's forward followed by ``torch.softmax(logits.float()
        / temperature)``: the LM head product in the model's dtype, the upcast to float32, the division (skipped at
        temperature 1, where it changes no value), the softmax."""
        return self.softmax(self.logits(hidden), temperature)

    def reserve(self, rows: int) -> None:
        """Allocate the buffers for ``rows`` rows now: a CUDA graph records the buffers' addresses, so they must
        not be replaced by wider ones after it (:mod:`harness.plugins.hf.trie.static_pass`)."""
        self._buffer("logits", rows, self.weight.dtype)
        if self.weight.dtype != torch.float32:
            self._buffer("upcast", rows, torch.float32)
        self._buffer("probs", rows, torch.float32)

    def capacity(self) -> int:
        """The rows the buffers hold now (0 before the first pass)."""
        return max((buffer.shape[0] for buffer in self._buffers.values()), default=0)

    def addresses(self) -> tuple[int, ...]:
        """Where the buffers are now: a CUDA graph that wrote into them is stale once one was replaced."""
        return tuple(buffer.data_ptr() for buffer in self._buffers.values())

    def _buffer(self, name: str, rows: int, dtype: torch.dtype) -> torch.Tensor:
        """The first ``rows`` rows of the named buffer, grown (never shrunk) to fit."""
        buffer = self._buffers.get(name)
        if buffer is None or buffer.shape[0] < rows or buffer.dtype != dtype:
            buffer = torch.empty((rows, self.weight.shape[0]), dtype=dtype, device=self.weight.device)
            self._buffers[name] = buffer
        return buffer[:rows]


def next_token_probabilities(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Full-softmax next-token probabilities (float32, as in ``generate``) of the last logits of a forward pass's
    rows, for the models this head does not serve (the samplers' plain path, the exact word search).

    The softmax of ``logits / temperature`` (temperature > 0, checked by the request) runs on the model's device and
    stays there: the draws (:func:`harness.plugins.hf.shared.draws.draw_counts`) search it on the device too, so only
    the drawn token ids come back to the host. The draws also refuse NaN or infinite rows.
    """
    rows = logits.detach().float()
    # Dividing by 1.0 changes no value; skipping it saves a pass over the rows.
    return torch.softmax(rows if temperature == 1.0 else rows / temperature, dim=-1)
