"""How the scoring queries' texts become token ids, following lm-evaluation-harness so that scores are comparable
with published numbers.

Causal models: whitespace at the end of a context moves to the front of its continuation (``"Answer: " + "1"`` is
scored as ``"Answer:" + " 1"``, which is how a BPE tokenizer writes the text), context and continuation are encoded
separately without special tokens, and the context gets the tokenizer's BOS token in front when the tokenizer
normally adds one. A context that encodes to nothing (``""``) becomes the BOS token, or the EOS token for tokenizers
without one, because the first continuation token has to be predicted from something.

Sequence-to-sequence models read the context through the encoder (encoded with the tokenizer's own special tokens,
as a source text is) and score the continuation as the decoder's target. Nothing is moved between the two: they are
separate sequences, so the context's trailing whitespace and the continuation's leading whitespace are stripped (a
target starts a fresh sequence; SentencePiece tokenizers such as T5's drop that whitespace anyway, and stripping
gives byte-level tokenizers the same behaviour).
"""

from __future__ import annotations

from typing import Any

from harness.plugins.hf.queries.batching import Ids

_DECODE_KWARGS: dict[str, Any] = {"clean_up_tokenization_spaces": False}


def _adds_bos(tokenizer: Any) -> bool:
    """Whether the tokenizer puts its BOS token in front of a text by default (Llama-2/3 do, GPT-2 and SmolLM2 do
    not). Probed rather than read from ``add_bos_token``, which not every tokenizer class defines."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    with_special = list(tokenizer("a")["input_ids"])
    without = list(tokenizer("a", add_special_tokens=False)["input_ids"])
    return bool(with_special) and with_special[0] == bos and (not without or without[0] != bos)


def _position_limit(model: Any) -> int | None:
    """Longest input the model's position embeddings allow, or None when it has no such limit."""
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    limit = getattr(config, "max_position_embeddings", None)
    return limit if isinstance(limit, int) and limit > 0 else None


class QueryEncoder:
    """Encodes contexts, continuations and texts for one model and tokenizer (see the module docstring)."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        config = getattr(model, "config", None)
        self.seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        self.adds_bos = _adds_bos(tokenizer)
        bos, eos = getattr(tokenizer, "bos_token_id", None), getattr(tokenizer, "eos_token_id", None)
        #: What an empty context is replaced by (lm-evaluation-harness's ``prefix_token_id``).
        self.prefix_id: int | None = int(bos) if bos is not None else (int(eos) if eos is not None else None)
        pad = getattr(tokenizer, "pad_token_id", None)
        #: Filler for padded positions; right padding keeps it out of every real position, so any id works.
        self.pad_id = int(pad) if pad is not None else (self.prefix_id or 0)
        self.max_length = _position_limit(model)
        self._token_texts: dict[int, str] = {}

    def split(self, context: str, continuation: str) -> tuple[str, str]:
        """The texts actually encoded for a (context, continuation) pair (see the module docstring)."""
        if self.seq2seq:
            return context.rstrip(), continuation.lstrip()
        stripped = context.rstrip()
        return stripped, context[len(stripped) :] + continuation

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` alone, with no special tokens: how continuations and candidates are encoded."""
        return [int(t) for t in self.tokenizer(text, add_special_tokens=False)["input_ids"]] if text else []

    def context_ids(self, text: str) -> list[int]:
        """Ids a context (or a text scored on its own) is read from: the BOS rule for causal models, the tokenizer's
        own special tokens for an encoder; never empty."""
        if self.seq2seq:
            ids = [int(t) for t in self.tokenizer(text)["input_ids"]]
        else:
            ids = self.encode(text)
            if self.adds_bos and self.prefix_id is not None:
                ids = [self.prefix_id, *ids]
        if not ids:
            if self.prefix_id is None:
                raise ValueError("empty context and the tokenizer has neither a BOS nor an EOS token to start from")
            ids = [self.prefix_id]
        return ids

    def fit(self, context: list[int], continuation_length: int) -> Ids:
        """Left-truncate a context so the model's input fits its position limit, as lm-evaluation-harness does
        (the input is ``context + continuation[:-1]``: the last continuation token is predicted, never read)."""
        if self.max_length is None:
            return tuple(context)
        if self.seq2seq:
            return tuple(context[-self.max_length :])
        keep = self.max_length + 1 - continuation_length
        if keep < 1:
            raise ValueError(
                f"a continuation of {continuation_length} tokens does not fit the model's {self.max_length} positions"
            )
        return tuple(context[-keep:])

    def token_text(self, token: int) -> str:
        """One token decoded alone (memoised: the same few thousand tokens recur across a run)."""
        text = self._token_texts.get(token)
        if text is None:
            text = self._token_texts[token] = str(self.tokenizer.decode([token], **_DECODE_KWARGS))
        return text

    def pair(self, context: str, continuation: str, cache: dict[str, list[int]]) -> tuple[list[int], Ids]:
        """Encoded (context, continuation), the context not yet fitted; ``cache`` holds the call's context
        encodings (contexts repeat across the queries of an item)."""
        context_text, continuation_text = self.split(context, continuation)
        context_ids = cache.get(context_text)
        if context_ids is None:
            context_ids = cache[context_text] = self.context_ids(context_text)
        return context_ids, tuple(self.encode(continuation_text))
