"""Every model family the shared-prefix attention serves, on a tiny random model of its architecture built from its
config (no downloads): the fast path's next-token logits equal the plain path's, and the trie sampler and the batched
generator draw from the same distributions on it as on the plain path.

The families are ``harness.plugins.hf.shared.prefix_attention.SUPPORTED_MODEL_TYPES``; a family added there without a
config here fails ``test_every_supported_family_is_tested``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import torch

from harness.plugins.hf.shared import prefix_attention as pa
from harness.plugins.hf.trie.prefix_rows import PaddedCarriers, RowPrefix
from harness.requests import GenerateRequest, SampleWordsRequest
from harness.scoring.stats import homogeneity_pvalue
from tests.test_word_sampler import EOS, VOCAB, ByteTokenizer

_SMALL = {"vocab_size": VOCAB, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2}
#: A tiny config per model type: the architecture's own features on (grouped keys/values, partial rotary, the
#: absolute position embeddings and their offset, q/k norms, sliding-window layers), small enough to run in seconds.
CONFIGS: dict[str, dict[str, Any]] = {
    "llama": {**_SMALL, "intermediate_size": 64, "num_key_value_heads": 2},
    "mistral": {**_SMALL, "intermediate_size": 64, "num_key_value_heads": 2, "sliding_window": 64},
    "qwen2": {**_SMALL, "intermediate_size": 64, "num_key_value_heads": 2},
    "qwen3": {**_SMALL, "intermediate_size": 64, "num_key_value_heads": 2, "head_dim": 8},
    "gpt2": {"vocab_size": VOCAB, "n_embd": 32, "n_head": 4, "n_layer": 2, "n_positions": 128},
    "gpt_neox": {**_SMALL, "intermediate_size": 64, "rotary_pct": 0.25},
    "opt": {**_SMALL, "ffn_dim": 64, "word_embed_proj_dim": 32, "max_position_embeddings": 128},
    "phi3": {**_SMALL, "intermediate_size": 64, "num_key_value_heads": 2, "pad_token_id": 0},
    "olmo2": {**_SMALL, "intermediate_size": 64, "num_key_value_heads": 2},
    "gemma3_text": {
        **_SMALL,
        "intermediate_size": 64,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "sliding_window": 64,
        "layer_types": ["sliding_attention", "full_attention"],
    },
    # Soft-capped attention scores and logits, with caps small enough that tanh bends them (the defaults are 50, 30).
    "gemma2": {
        **_SMALL,
        "intermediate_size": 64,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "sliding_window": 64,
        "layer_types": ["sliding_attention", "full_attention"],
        "attn_logit_softcapping": 1.5,
        "final_logit_softcapping": 3.0,
    },
}


def plain_attention(model_type: str) -> str:
    """The attention a family runs without the fast path: eager where it soft-caps (sdpa cannot), else sdpa."""
    return "eager" if model_type == "gemma2" else "sdpa"


def tiny(model_type: str) -> Any:
    """A random model of the architecture (seed 0, float32, weights spread wide enough for varied draws)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    config = AutoConfig.for_model(model_type, **CONFIGS[model_type], bos_token_id=None, eos_token_id=EOS)
    config.initializer_range = 0.3
    return AutoModelForCausalLM.from_config(config, attn_implementation=plain_attention(model_type)).eval()


def test_every_supported_family_is_tested() -> None:
    assert set(CONFIGS) == set(pa.SUPPORTED_MODEL_TYPES)


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_both_prefix_layouts_give_the_plain_logits(model_type: str) -> None:
    """Two contexts of different lengths, several rows each, three tokens past the context: the trie sampler's layouts
    (runs of segments on a CPU, all rows at once on a GPU) and the generator's (padded prompts) against one plain
    forward pass over each full sequence."""
    from transformers import DynamicCache

    model = tiny(model_type)
    assert pa.enable(model)
    torch.manual_seed(1)
    contexts = [torch.randint(40, VOCAB, (1, n)) for n in (7, 4)]
    suffixes = [torch.randint(40, VOCAB, (3,)) for _ in contexts]
    rows = (2, 3)
    with torch.no_grad():
        plain = []
        for context, suffix in zip(contexts, suffixes, strict=True):
            model.set_attn_implementation(plain_attention(model_type))
            plain.append(model(torch.cat([context, suffix[None]], dim=1)).logits[0, -1])
        pa.ensure(model)
        prefixes = []
        for context in contexts:
            out = model(context, past_key_values=DynamicCache(config=model.config), use_cache=True)
            prefixes.append(pa.SharedPrefix.from_cache(out.past_key_values))
        segments = [(0, 0, rows[0]), (1, rows[0], rows[0] + rows[1])]
        which = [0] * rows[0] + [1] * rows[1]
        layouts = (
            pa.PrefixBatch(prefixes, segments),
            pa.PassPrefix(pa.GroupPrefix(prefixes), which),
            RowPrefix(PaddedCarriers(prefixes), which),
        )
        for layout in layouts:
            cache = DynamicCache(config=model.config)
            for step in range(3):
                ids = torch.tensor([[int(suffixes[c][step])] for c in which])
                positions = torch.tensor([[contexts[c].shape[1] + step] for c in which])
                out = model(ids, past_key_values=cache, use_cache=True, position_ids=positions, shared_prefix=layout)
                cache = out.past_key_values
            for row, c in enumerate(which):
                torch.testing.assert_close(out.logits[row, -1], plain[c], atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_trie_sampler_draws_the_plain_paths_words(model_type: str) -> None:
    """The sampler on the shared-prefix path against itself on the plain per-row cache: the same word distribution
    (chi-square homogeneity), and the fast path really taken."""
    from harness.plugins.hf.trie.word_sampler import TrieWordSampler

    model = tiny(model_type)
    fast = TrieWordSampler(model, ByteTokenizer(), batch_size=256)
    assert fast.shared_prefix, model_type
    plain = TrieWordSampler(tiny(model_type), ByteTokenizer(), batch_size=256, use_shared_prefix=False)
    assert not plain.shared_prefix
    request = SampleWordsRequest(context="the cat sat on", n=3000, seed=3, mode="paper", max_new_tokens=3)
    a, b = Counter(fast.sample(request).counts), Counter(plain.sample(replace_seed(request, 4)).counts)
    p_value = homogeneity_pvalue(a, b, min_categories=5)
    assert p_value is not None and p_value > 1e-3, (model_type, p_value)


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_generator_draws_the_plain_generate_tokens(model_type: str) -> None:
    """The batched generator's first three tokens on the shared-prefix path against plain ``generate``'s: the same
    distribution of three-token continuations."""
    from harness.plugins.hf.generate.generator import BatchGenerator

    fast = BatchGenerator(tiny(model_type), ByteTokenizer(), batch_size=256)
    assert fast.shared_prefix, model_type
    plain = BatchGenerator(tiny(model_type), ByteTokenizer(), batch_size=256, use_shared_prefix=False)
    request = GenerateRequest(prompt="the cat sat on", n=1500, seed=5, max_new_tokens=2)
    a = Counter(fast.generate(request).texts)
    b = Counter(plain.generate(GenerateRequest(prompt="the cat sat on", n=1500, seed=6, max_new_tokens=2)).texts)
    p_value = homogeneity_pvalue(a, b, min_categories=5)
    assert p_value is not None and p_value > 1e-3, (model_type, p_value)


def replace_seed(request: SampleWordsRequest, seed: int) -> SampleWordsRequest:
    from dataclasses import replace

    return replace(request, seed=seed)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_next_token_head_caps_the_logits_as_gemma2_does(dtype: torch.dtype) -> None:
    """Gemma 2 soft-caps its logits (``final_logit_softcapping``): the reused-buffer head applies the same operations in
    the model's dtype, so its probabilities are the model's own softmax bit for bit."""
    from harness.plugins.hf.shared.next_token_head import NextTokenHead

    model = tiny("gemma2").to(dtype)
    assert NextTokenHead.supports(model) and NextTokenHead(model).final_cap == 3.0
    head = NextTokenHead(model)
    with torch.inference_mode():
        ids = torch.randint(40, VOCAB, (5, 6))
        logits = model(input_ids=ids, logits_to_keep=1).logits[:, -1, :].float()
        assert float(logits.abs().max()) <= 3.0  # the cap is in force
        hidden, _ = head.hidden(ids, None)
        assert torch.equal(head.probabilities(hidden[:, -1], 1.0), torch.softmax(logits, dim=-1))
