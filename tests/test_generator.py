"""The batched ``n``-sample generator (``plugins/hf/generate/generator.py``) and its parts: the stop/end text rules
(``generation_text.py``), the suffix cache (``suffix_cache.py``), the prefix attention kernel it shares with the word
sampler (``prefix_attention.py``) and the plain ``generate`` fallback (``plain_generate.py``).

Fast tests check the pieces with exact answers: the stop/end rules, the inverse-transform draw, the warpers against
``generate``'s own construction, the suffix cache and the batched prompt attention against a naive computation.
Slow tests run the real SmolLM2: sampled distributions against plain ``generate`` (chi-square), top-k 1 against
greedy ``generate`` token for token, stop strings / end-of-sequence / length, determinism and grouping invariance,
chat prompts, and the plain ``generate`` fallback on tiny random GPT-2 and T5 models.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
import torch

from harness.plugins.hf.generate import generator as gen
from harness.plugins.hf.generate.generator import BatchGenerator, build_warpers
from harness.plugins.hf.generate.suffix_cache import SuffixLayer
from harness.plugins.hf.generate.text import finish_row, first_stop, scan_row, validate_request
from harness.plugins.hf.shared.packed_prompts import PackedPrompts
from harness.plugins.hf.shared.prefix_attention import (
    GroupPrefix,
    PassPrefix,
    PrefixBatch,
    PrefixLayout,
    SharedPrefix,
    prefix_attention,
)
from harness.plugins.hf.shared.tokens import ContinuationDecoder
from harness.requests import DecodingConfig, GenerateRequest, GenerateResponse
from harness.scoring.stats import homogeneity_pvalue
from tests.helpers import tiny_gpt2, tiny_t5

# --------------------------------------------------------------------------------------------------------------------
# Pieces with exact answers (no model)
# --------------------------------------------------------------------------------------------------------------------


class CharTokenizer:
    """Token ``i`` is the character ``chr(i)``; 0 is end-of-sequence (a special token, no text)."""

    eos_token_id = 0
    bos_token_id = None

    def decode(self, ids: list[int], skip_special_tokens: bool = False, clean_up_tokenization_spaces: bool = False):
        return "".join("" if i == 0 else chr(i) for i in ids)


def _ids(text: str) -> list[int]:
    return [ord(c) for c in text]


def test_first_stop_takes_the_earliest_occurrence() -> None:
    assert first_stop("abc\ndef.", ["."]) == 7
    assert first_stop("abc\ndef.", [".", "\n"]) == 3
    assert first_stop("abc", ["x"]) is None
    assert first_stop("abc", []) is None


def test_finish_row_rules_in_order() -> None:
    decoder = ContinuationDecoder(CharTokenizer(), [])
    eos = frozenset({0})
    assert finish_row(_ids("ab"), decoder, eos, ("\n",), 5) is None
    # End-of-sequence counts as a token but adds no text.
    assert finish_row([*_ids("ab"), 0], decoder, eos, ("\n",), 5) == ("ab", "eos", 3)
    # A stop string anywhere in the text: cut before it, tokens up to the one that completed it.
    assert finish_row(_ids("ab\nc"), decoder, eos, ("\n",), 9) == ("ab", "stop", 4)
    assert finish_row(_ids("xab"), decoder, eos, ("ab", "b"), 9) == ("x", "stop", 3)
    # Stop beats length when both fire on the same token; length otherwise.
    assert finish_row(_ids("ab\n"), decoder, eos, ("\n",), 3) == ("ab", "stop", 3)
    assert finish_row(_ids("abc"), decoder, eos, ("\n",), 3) == ("abc", "length", 3)
    assert finish_row(_ids("abc"), decoder, eos, (), 3) == ("abc", "length", 3)


def test_scan_row_finds_where_a_generate_row_ended() -> None:
    decoder = ContinuationDecoder(CharTokenizer(), [])
    eos = frozenset({0})
    # generate pads finished rows (here with the eos id): the end is the first rule that fires.
    assert scan_row([*_ids("ab\ncd"), 0, 0], decoder, eos, ("\n",), 10) == ("ab", "stop", 3)
    assert scan_row([*_ids("abcd"), 0, 0], decoder, eos, ("\n",), 10) == ("abcd", "eos", 5)
    assert scan_row(_ids("abcd"), decoder, eos, ("\n",), 4) == ("abcd", "length", 4)
    assert scan_row(_ids("ab"), decoder, eos, (), 2) == ("ab", "length", 2)


def test_decoder_reads_the_continuation_after_the_prompt_tail() -> None:
    decoder = ContinuationDecoder(CharTokenizer(), _ids("x" * 40 + "prompt"))
    assert decoder(_ids(" cat")) == " cat"
    assert decoder([]) == ""


def test_validate_request() -> None:
    validate_request(GenerateRequest(prompt="x", n=0, seed=0))
    with pytest.raises(ValueError, match="n must be"):
        validate_request(GenerateRequest(prompt="x", n=-1, seed=0))
    with pytest.raises(ValueError, match="max_new_tokens"):
        validate_request(GenerateRequest(prompt="x", n=1, seed=0, max_new_tokens=0))
    with pytest.raises(ValueError, match="stop strings"):
        validate_request(GenerateRequest(prompt="x", n=1, seed=0, stop=("",)))


def test_warpers_are_generates_own() -> None:
    """Same classes, same order and parameters as ``generate``'s ``_get_logits_processor`` for sampling."""
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    model: Any = LlamaForCausalLM(
        LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=8, num_hidden_layers=1, num_attention_heads=1)
    )
    decoding = DecodingConfig(temperature=0.7, top_k=5, top_p=0.9, typical_p=0.8)
    config = GenerationConfig(do_sample=True, temperature=0.7, top_k=5, top_p=0.9, typical_p=0.8)
    theirs = model._get_logits_processor(config, input_ids_seq_length=1, encoder_input_ids=None)
    ours = build_warpers(decoding)
    assert [type(w) for w in ours] == [type(w) for w in theirs]
    scores = torch.randn(3, 32)
    a, b = scores.clone(), scores.clone()
    for w in ours:
        a = w(None, a)
    b = theirs(torch.zeros(3, 1, dtype=torch.long), b)
    assert torch.equal(a, b)
    assert build_warpers(DecodingConfig()) == []


def _kv(layer: Any) -> tuple[torch.Tensor, torch.Tensor]:
    assert layer.keys is not None and layer.values is not None
    return layer.keys, layer.values


def test_suffix_layer_grows_compacts_merges_and_splits() -> None:
    layer = SuffixLayer(max_length=100)
    steps = [torch.randn(4, 2, 1, 3) for _ in range(40)]  # beyond the first capacity (32): one growth
    for t, k in enumerate(steps):
        keys, values = layer.update(k, -k)
        assert keys.shape == (4, 2, t + 1, 3) and layer.get_seq_length() == t + 1
    full = torch.cat(steps, dim=2)
    assert torch.equal(_kv(layer)[0], full) and torch.equal(_kv(layer)[1], -full)
    storage = layer.keys.data_ptr()
    layer.keep_rows(torch.tensor([0, 2]))
    assert torch.equal(_kv(layer)[0], full[[0, 2]]) and torch.equal(_kv(layer)[1], -full[[0, 2]])
    assert layer.keys.data_ptr() == storage  # compacted in place: row 0 stays, row 2 moves up
    grown = layer.update(torch.ones(2, 2, 1, 3), torch.ones(2, 2, 1, 3))[0]
    assert torch.equal(grown[:, :, :40], full[[0, 2]]) and bool((grown[:, :, 40] == 1).all())
    layer.keep_rows(torch.tensor([1]))
    assert torch.equal(_kv(layer)[0][:, :, :40], full[[2]])
    layer = SuffixLayer(max_length=100)
    for k in steps:
        layer.update(k, -k)
    layer.keep_rows(torch.tensor([0, 2]))
    other = SuffixLayer(max_length=100)
    for k in steps:
        other.update(k[:1] + 1, k[:1])
    merged = SuffixLayer.concatenate([layer, other])
    assert torch.equal(_kv(merged)[0], torch.cat([full[[0, 2]], full[:1] + 1]))
    part = merged.take(1, 3)
    new = torch.randn(2, 2, 1, 3)
    keys, _ = part.update(new, new)
    assert torch.equal(keys[:, :, :40], _kv(merged)[0][1:3]) and torch.equal(keys[:, :, 40:], new)
    # Buffers of different capacities (here 64 and 40) merge through their filled parts.
    short = SuffixLayer(max_length=40)
    for k in steps:
        short.update(k[:1], k[:1])
    mixed = SuffixLayer.concatenate([other, short])
    assert torch.equal(_kv(mixed)[0], torch.cat([full[:1] + 1, full[:1]]))
    with pytest.raises(ValueError, match="different lengths"):
        SuffixLayer.concatenate([part, short])


def _naive_attention(q: torch.Tensor, prefix_k: torch.Tensor, prefix_v: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
    """Softmax over [prompt keys; own suffix keys] for one row; q [q_heads, d], keys [kv_heads, len, d]."""
    group = q.shape[0] // k.shape[0]
    keys = torch.cat([prefix_k, k], dim=1).repeat_interleave(group, dim=0)
    values = torch.cat([prefix_v, v], dim=1).repeat_interleave(group, dim=0)
    weights = torch.softmax(torch.einsum("hd,hld->hl", q, keys) / math.sqrt(q.shape[-1]), dim=-1)
    return torch.einsum("hl,hld->hd", weights, values)


def test_both_prefix_layouts_match_naive_softmax() -> None:
    """The one kernel, read through the generator's padded layout (rows of prompts in any order) and through the
    trie sampler's segments (contiguous rows per context): both are a softmax over [prefix keys; own suffix keys]."""
    torch.manual_seed(0)
    kv_heads, q_heads, dim, suffix = 2, 6, 8, 3
    lengths = [5, 2, 7]
    prefixes = [SharedPrefix([torch.randn(kv_heads, n, dim)], [torch.randn(kv_heads, n, dim)]) for n in lengths]
    module = torch.nn.Module()
    module.layer_idx = 0  # type: ignore[assignment]
    row_prompts = [0, 0, 2, 1, 1, 1]  # prompts in any order, unequal rows per prompt
    segments = [(0, 0, 2), (2, 2, 3), (1, 3, 6)]  # the same rows as contiguous segments
    layouts: dict[str, PrefixLayout] = {
        "generator": PassPrefix(GroupPrefix(prefixes), row_prompts),
        "trie": PrefixBatch(prefixes, segments),
    }
    rows = len(row_prompts)
    query = torch.randn(rows, q_heads, 1, dim)
    key, value = torch.randn(rows, kv_heads, suffix, dim), torch.randn(rows, kv_heads, suffix, dim)
    for name, layout in layouts.items():
        out, _ = prefix_attention(module, query, key, value, None, shared_prefix=layout)
        assert out.shape == (rows, 1, q_heads, dim) and out.dtype == query.dtype, name
        for r, p in enumerate(row_prompts):
            expected = _naive_attention(query[r, :, 0], prefixes[p].keys[0], prefixes[p].values[0], key[r], value[r])
            torch.testing.assert_close(out[r, 0], expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="one new position"):
        prefix_attention(module, query.expand(rows, q_heads, 2, dim), key, value, None, shared_prefix=layouts["trie"])


def test_group_narrowed_to_live_prompts_gives_the_same_bits() -> None:
    """A group narrowed to the prompts that still have rows (the generator's tail steps) answers those rows bit for
    bit as the whole group does: each prompt's products keep their shapes, only the finished prompts' go."""
    torch.manual_seed(1)
    kv_heads, q_heads, dim, suffix = 2, 6, 8, 4
    prefixes = [SharedPrefix([torch.randn(kv_heads, n, dim)], [torch.randn(kv_heads, n, dim)]) for n in (5, 2, 7, 3)]
    whole = GroupPrefix(prefixes)
    narrow = whole.subset([3, 1])
    assert narrow.lengths == [3, 2] and narrow.max_length == whole.max_length == 7
    assert torch.equal(narrow.keys[0][0], whole.keys[0][3]) and torch.equal(narrow.mask[1], whole.mask[1])
    module = torch.nn.Module()
    module.layer_idx = 0  # type: ignore[assignment]
    query = torch.randn(3, q_heads, 1, dim)
    key, value = torch.randn(3, kv_heads, suffix, dim), torch.randn(3, kv_heads, suffix, dim)
    full, _ = prefix_attention(module, query, key, value, None, shared_prefix=PassPrefix(whole, [1, 3, 3]))
    part, _ = prefix_attention(module, query, key, value, None, shared_prefix=PassPrefix(narrow, [1, 0, 0]))
    assert torch.equal(full, part)


def test_packed_prompts_attend_within_each_prompt_only() -> None:
    """Prompts packed end to end: each prompt's outputs are ``sdpa`` over that prompt alone, causally."""
    torch.manual_seed(2)
    heads, dim = 2, 8
    lengths = [3, 1, 4]
    packed = PackedPrompts(lengths)
    assert packed.bounds == [(0, 3), (3, 4), (4, 8)] and packed.position_ids().tolist() == [[0, 1, 2, 0, 0, 1, 2, 3]]
    module = torch.nn.Module()
    module.is_causal = True  # type: ignore[assignment]
    q, k, v = (torch.randn(1, heads, 8, dim) for _ in range(3))
    out, _ = prefix_attention(module, q, k, v, None, packed_prompts=packed)
    assert out.shape == (1, 8, heads, dim)
    for s, e in packed.bounds:
        alone = torch.nn.functional.scaled_dot_product_attention(
            q[:, :, s:e], k[:, :, s:e], v[:, :, s:e], is_causal=True
        )
        assert torch.equal(out[:, s:e], alone.transpose(1, 2))
    with pytest.raises(ValueError, match="at least one token"):
        PackedPrompts([2, 0])
    with pytest.raises(ValueError, match="packed prompts of 8 positions"):
        prefix_attention(module, q[:, :, :5], k[:, :, :5], v[:, :, :5], None, packed_prompts=packed)


def test_trie_layout_reads_nested_contexts_off_one_product_per_run() -> None:
    """Contexts read off one longer pass share its tensors; their consecutive segments form one run, one product
    against the longer keys, and a row never attends past its own context: rows match a softmax over their own
    prefix alone, even where the positions past it hold keys that would dominate the softmax."""
    torch.manual_seed(1)
    kv_heads, q_heads, dim, suffix = 2, 4, 8, 2
    keys, values = torch.randn(kv_heads, 6, dim), torch.randn(kv_heads, 6, dim)
    keys[:, 3:] *= 50.0  # past the short context: large scores if they were not masked
    long = SharedPrefix([keys], [values])
    short = long.shortened(3)
    other = SharedPrefix([torch.randn(kv_heads, 4, dim)], [torch.randn(kv_heads, 4, dim)])
    prefixes = [short, long, other, short]
    segments = [(0, 0, 2), (1, 2, 5), (2, 5, 6), (3, 6, 7)]
    layout = PrefixBatch(prefixes, segments)
    assert [(start, end, mask is not None) for _, start, end, mask in layout.runs] == [
        (0, 5, True),
        (5, 6, False),
        (6, 7, True),
    ]
    module = torch.nn.Module()
    module.layer_idx = 0  # type: ignore[assignment]
    rows = 7
    query = torch.randn(rows, q_heads, 1, dim)
    key, value = torch.randn(rows, kv_heads, suffix, dim), torch.randn(rows, kv_heads, suffix, dim)
    out, _ = prefix_attention(module, query, key, value, None, shared_prefix=layout)
    row_prefix = [0, 0, 1, 1, 1, 2, 3]
    for r, p in enumerate(row_prefix):
        prefix = prefixes[p]
        expected = _naive_attention(query[r, :, 0], prefix.own_keys(0), prefix.own_values(0), key[r], value[r])
        torch.testing.assert_close(out[r, 0], expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="a prefix of 7 positions over tensors of 6"):
        long.shortened(7)


# --------------------------------------------------------------------------------------------------------------------
# The real SmolLM2
# --------------------------------------------------------------------------------------------------------------------

#: A prompt of three tokens with a broad next-token distribution: plain ``generate`` runs the prompt once per sample,
#: so a short prompt keeps the reference cheap.
SHORT_PROMPT = "My favourite colour"


def two_sample_pvalue(a: Counter[Any], b: Counter[Any]) -> float:
    """Chi-square test of homogeneity (``harness.scoring.stats.homogeneity_pvalue``), with at least 5 categories."""
    p_value = homogeneity_pvalue(a, b, min_categories=5)
    assert p_value is not None, "too few categories for a meaningful test"
    return p_value


def _plain_samples(smollm2: Any, ids: list[int], n: int, max_new_tokens: int, seed: int, **decoding: Any):
    """Token lists from plain ``generate`` sampling (``top_k=0`` unless given: generate's default is 50)."""
    settings = {"top_k": 0, "top_p": 1.0, "typical_p": 1.0, "temperature": 1.0, **decoding}
    torch.manual_seed(seed)
    with torch.inference_mode():
        out = smollm2.model.generate(
            torch.tensor([ids], device=smollm2.device),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=smollm2.device),
            do_sample=True,
            max_new_tokens=max_new_tokens,
            num_return_sequences=n,
            pad_token_id=smollm2.tokenizer.eos_token_id,
            **settings,
        )
    return out[:, len(ids) :].tolist()


def _drawn_tokens(
    monkeypatch: pytest.MonkeyPatch, generator: BatchGenerator, request: GenerateRequest
) -> tuple[list[list[int]], GenerateResponse]:
    """The token ids drawn at each step (live rows in order) and the response: texts cannot be re-tokenized
    losslessly, so ``draw_tokens`` is observed instead."""
    drawn: list[list[int]] = []
    original = gen.draw_tokens

    def spy(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
        tokens = original(probs, uniforms)
        drawn.append(tokens.tolist())
        return tokens

    with monkeypatch.context() as patch:
        patch.setattr(gen, "draw_tokens", spy)
        response = generator.generate(request)
    return drawn, response


@pytest.fixture(scope="module")
def generator(smollm2: Any) -> BatchGenerator:
    return BatchGenerator(smollm2.model, smollm2.tokenizer, device=smollm2.device, batch_size=512, name="smol-test")


@pytest.mark.slow
def test_ancestral_first_two_tokens_match_plain_generate(
    smollm2: Any, generator: BatchGenerator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """First token (prompt pass) and second token (first decoding pass: suffix cache and batched prompt attention)
    against ``generate``; ours at temperature 0.7 must be told apart from the same reference (the test has power).
    Measured: p = 0.68 (first token), 0.70 (second), 8e-16 at temperature 0.7."""
    request = GenerateRequest(prompt=SHORT_PROMPT, n=600, seed=1, max_new_tokens=2)
    ids = generator.prompt_ids(request)
    reference = _plain_samples(smollm2, ids, n=300, max_new_tokens=2, seed=0)
    drawn, response = _drawn_tokens(monkeypatch, generator, request)
    assert generator.mode == "shared-prefix"
    ref_first = Counter(row[0] for row in reference)
    assert two_sample_pvalue(ref_first, Counter(drawn[0])) > 1e-3
    # A row whose first token is end-of-sequence has no second token (generate pads it): compare the others.
    assert len(drawn[1]) == sum(t not in generator.eos for t in drawn[0])
    ref_second = Counter(row[1] for row in reference if row[0] not in generator.eos)
    assert two_sample_pvalue(ref_second, Counter(drawn[1])) > 1e-3
    assert response.tokens_evaluated == len(ids) + sum(k - 1 for k in response.n_tokens)
    cold, _ = _drawn_tokens(
        monkeypatch, generator, replace(request, max_new_tokens=1, decoding=DecodingConfig(temperature=0.7))
    )
    assert two_sample_pvalue(ref_first, Counter(cold[0])) < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize(
    "decoding",
    [DecodingConfig(temperature=1.3, top_k=40, top_p=0.9), DecodingConfig(typical_p=0.5)],
    ids=lambda d: d.label,
)
def test_warped_first_token_matches_plain_generate(
    smollm2: Any, generator: BatchGenerator, monkeypatch: pytest.MonkeyPatch, decoding: DecodingConfig
) -> None:
    """Temperature, top-k, top-p and typical sampling against ``generate`` with the same settings (measured
    p = 0.52 and 0.63); every token drawn is one the warpers keep on the prompt's logits."""
    request = GenerateRequest(prompt=SHORT_PROMPT, n=600, seed=3, max_new_tokens=1, decoding=decoding)
    ids = generator.prompt_ids(request)
    settings = {k: getattr(decoding, k) for k in ("temperature", "top_k", "top_p", "typical_p")}
    reference = Counter(row[0] for row in _plain_samples(smollm2, ids, n=200, max_new_tokens=1, seed=2, **settings))
    drawn, _ = _drawn_tokens(monkeypatch, generator, request)
    assert two_sample_pvalue(reference, Counter(drawn[0])) > 1e-3
    with torch.inference_mode():
        scores = smollm2.model(torch.tensor([ids], device=smollm2.device)).logits[:, -1].float()
    for warper in build_warpers(decoding):
        scores = warper(None, scores)
    kept = set(torch.nonzero(torch.isfinite(scores[0])).flatten().tolist())
    assert set(drawn[0]) <= kept and len(kept) < 100


GREEDY_PROMPTS = ["The capital of France is", "Water boils at", "Simplify: The feline reposed upon the mat.\nAnswer:"]


@pytest.fixture(scope="module")
def greedy_references(smollm2: Any, generator: BatchGenerator) -> list[tuple[GenerateRequest, tuple[str, str, int]]]:
    """Requests for three prompts of different lengths (top-k 1, two rows each, different token caps) and what
    greedy ``generate`` gives for each: (text, finish reason, tokens)."""
    references = []
    for i, prompt in enumerate(GREEDY_PROMPTS):
        request = GenerateRequest(prompt=prompt, n=2, seed=i, decoding=DecodingConfig(top_k=1), max_new_tokens=10 + i)
        ids = generator.prompt_ids(request)
        with torch.inference_mode():
            out = smollm2.model.generate(
                torch.tensor([ids], device=smollm2.device),
                do_sample=False,
                max_new_tokens=request.max_new_tokens,
                pad_token_id=2,
            )
        tokens = out[0, len(ids) :].tolist()
        references.append(
            (request, scan_row(tokens, ContinuationDecoder(smollm2.tokenizer, ids), generator.eos, (), 99))
        )
    return references


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [512, 4])
def test_top_k_1_equals_greedy_generate(
    smollm2: Any, greedy_references: list[Any], monkeypatch: pytest.MonkeyPatch, batch_size: int
) -> None:
    """Every row is greedy decoding, token for token. With 4 rows per pass the group starts in two passes, which
    are merged into one once the first prompt's rows stop, and compacted again when the second prompt's do."""
    generator = BatchGenerator(smollm2.model, smollm2.tokenizer, batch_size=batch_size)
    merges: list[int] = []
    concatenate = SuffixLayer.concatenate

    def counting(layers: Any) -> Any:
        merges.append(len(layers))
        return concatenate(layers)

    monkeypatch.setattr(SuffixLayer, "concatenate", staticmethod(counting))
    responses = generator.generate_many([request for request, _ in greedy_references])
    for (_, expected), response in zip(greedy_references, responses, strict=True):
        assert list(zip(response.texts, response.finish_reasons, response.n_tokens, strict=True)) == [expected] * 2
    assert bool(merges) == (batch_size == 4)


@pytest.mark.slow
def test_stop_strings_eos_length_and_n_zero(smollm2: Any, generator: BatchGenerator) -> None:
    greedy = DecodingConfig(top_k=1)
    prompt = "The capital of France is"  # greedy: " Paris.\n\nThe answer is: 2"
    base = GenerateRequest(prompt=prompt, n=2, seed=0, decoding=greedy, max_new_tokens=10)
    tokenizer = smollm2.tokenizer
    ids = generator.prompt_ids(base)
    plain = generator.generate(base)
    assert plain.finish_reasons == ["length", "length"] and plain.n_tokens == [10, 10]
    full = plain.texts[0]
    assert "\n" in full and full.startswith(" Paris")
    decoder = ContinuationDecoder(tokenizer, ids)
    with torch.inference_mode():
        tokens = smollm2.model.generate(
            torch.tensor([ids], device=smollm2.device), do_sample=False, max_new_tokens=10, pad_token_id=2
        )
    tokens = tokens[0, len(ids) :].tolist()

    def expected_stop(stop: str) -> tuple[str, str, int]:
        k = next(k for k in range(1, 11) if stop in decoder(tokens[:k]))
        return full[: full.index(stop)], "stop", k

    requests = [
        replace(base, stop=("\n",)),
        replace(base, stop=("answer", "\n\n")),
        replace(base, stop=("ari",)),  # inside the first token
        replace(base, n=0),
        replace(base, stop=("never seen",), max_new_tokens=4),
    ]
    stopped = generator.generate_many(requests)
    for request, response, stop in zip(requests[:3], stopped[:3], ["\n", "\n\n", "ari"], strict=True):
        text, reason, n_tokens = expected_stop(stop)
        assert response.texts == [text, text] and response.finish_reasons == ["stop", "stop"], request.stop
        assert response.n_tokens == [n_tokens, n_tokens]
        assert response.tokens_evaluated == len(ids) + 2 * (n_tokens - 1)
    assert stopped[2].texts == [" P", " P"] and stopped[2].n_tokens == [1, 1]
    assert stopped[3] == GenerateResponse(texts=[], finish_reasons=[], n_tokens=[], tokens_evaluated=0)
    assert stopped[4].texts == [decoder(tokens[:4])] * 2 and stopped[4].finish_reasons == ["length", "length"]

    # End-of-sequence: a chat answer ends with <|im_end|>, which counts as a token but is not in the text.
    chat = GenerateRequest(
        prompt="", n=1, seed=0, decoding=greedy, max_new_tokens=40, chat=True, messages=(("user", "Say hi."),)
    )
    response = generator.generate(chat)
    assert response.finish_reasons == ["eos"]
    assert "<|im_end|>" not in response.texts[0] and response.texts[0].strip()
    chat_ids = generator.prompt_ids(chat)
    with torch.inference_mode():
        out = smollm2.model.generate(
            torch.tensor([chat_ids], device=smollm2.device), do_sample=False, max_new_tokens=40, pad_token_id=2
        )
    reference = out[0, len(chat_ids) :].tolist()
    assert response.n_tokens == [len(reference)] and reference[-1] in generator.eos
    assert response.texts[0] == tokenizer.decode(reference[:-1], skip_special_tokens=True)


@pytest.mark.slow
def test_chat_template_rendering_and_missing_template(smollm2: Any, generator: BatchGenerator) -> None:
    messages = (("system", "Be brief."), ("user", "Simplify: The feline reposed."))
    request = GenerateRequest(prompt="ignored", n=1, seed=0, messages=messages, chat=True)
    tokenizer = smollm2.tokenizer
    text = tokenizer.apply_chat_template(
        [{"role": r, "content": c} for r, c in messages], tokenize=False, add_generation_prompt=True
    )
    assert text.endswith("<|im_start|>assistant\n") and "Be brief." in text
    assert generator.prompt_ids(request) == tokenizer(text, add_special_tokens=False)["input_ids"]
    assert generator.prompt_ids(replace(request, chat=False)) == tokenizer("ignored")["input_ids"]

    class NoChatTemplate:
        chat_template = None

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return self._inner(*args, **kwargs)

    bare = BatchGenerator(smollm2.model, NoChatTemplate(tokenizer), name="hf:bare-model")
    with pytest.raises(ValueError, match="hf:bare-model.*no chat template"):
        bare.generate_many([GenerateRequest(prompt="x", n=1, seed=0), request])


@pytest.mark.slow
def test_empty_prompt_uses_bos(smollm2: Any, generator: BatchGenerator) -> None:
    request = GenerateRequest(prompt="", n=3, seed=0, max_new_tokens=3)
    assert generator.prompt_ids(request) == [smollm2.tokenizer.bos_token_id]
    response = generator.generate(request)
    assert len(response.texts) == 3 and response.tokens_evaluated == 1 + sum(k - 1 for k in response.n_tokens)


@pytest.mark.slow
def test_packed_prompt_encoding_equals_each_prompt_alone(smollm2: Any) -> None:
    """Prompts packed into one pass (and a prompt too long for the pass, encoded alone) get the keys, values and
    first-token logits of each prompt encoded alone, up to float rounding; on a CPU, a prompt of a few dozen tokens
    gets them bit for bit (the linear layers' rows do not depend on the other rows of the product there; a prompt of
    one to a few tokens alone takes other kernels, which round differently)."""
    texts = [
        "Simplify the following sentence.\nSentence: The cat sat on the mat.\nSimplified:",
        "Hi",
        "",
        "Once upon a",
    ]
    texts.append("Simplify the following sentence.\nSentence: The dog barked at the cat.\nSimplified:")
    packing = BatchGenerator(smollm2.model, smollm2.tokenizer, device=smollm2.device, batch_size=40)
    alone = BatchGenerator(smollm2.model, smollm2.tokenizer, device=smollm2.device, batch_size=1)
    prompts = [packing.prompt_ids(GenerateRequest(prompt=t, n=1, seed=0)) for t in texts]
    # The first prompt is too long to share a pass of 40; the next four are packed into one.
    assert len(prompts[0]) > 20 and sum(len(p) for p in prompts[1:]) <= 40 and len(prompts[4]) >= 20
    with torch.inference_mode():
        packed_prefixes, packed_logits = packing._encode_prompts(prompts)
        alone_prefixes, alone_logits = alone._encode_prompts(prompts)
    for i, (a, b) in enumerate(zip(packed_prefixes, alone_prefixes, strict=True)):
        assert a.length == b.length == len(prompts[i])
        assert packed_logits[i].shape == alone_logits[i].shape == (1, smollm2.model.config.vocab_size)
        pairs = [*zip(a.keys, b.keys, strict=True), *zip(a.values, b.values, strict=True)]
        for x, y in pairs:
            torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-4)
        # Logits are tens in size and pass through 30 layers: a CPU without AVX2 (ATEN_CPU_CAPABILITY=default)
        # moves a few of them by 1.3e-4 for the short prompts; 1e-3 is still a factor of 1.001 in probability.
        torch.testing.assert_close(packed_logits[i], alone_logits[i], rtol=1e-4, atol=1e-3)
        if smollm2.device.type == "cpu" and i in (0, 4):
            for x, y in [*pairs, (packed_logits[i], alone_logits[i])]:
                assert torch.equal(x, y)


@pytest.mark.slow
def test_determinism_and_grouping_invariance(generator: BatchGenerator) -> None:
    """Same request, same texts; a request alone and inside a group of three (other prompts, other decodings)
    gets the same texts. Each row's uniforms come from its own stream, so only float rounding of the batched
    decoding passes could differ between the two, and with a fixed seed that either shows or not, reproducibly."""
    target = GenerateRequest(
        prompt="Simplify the following sentence.\nSentence: The committee postponed the decision.\nSimplified:",
        n=4,
        seed=11,
        max_new_tokens=12,
        stop=("\n",),
    )
    alone = generator.generate(target)
    assert generator.generate(target) == alone
    others = [
        GenerateRequest(prompt="Once upon a time", n=3, seed=1, max_new_tokens=14, decoding=DecodingConfig(top_p=0.8)),
        GenerateRequest(prompt="The weather today", n=5, seed=2, max_new_tokens=8),
    ]
    grouped = generator.generate_many([others[0], target, others[1]])
    assert grouped[1].texts == alone.texts and grouped[1].n_tokens == alone.n_tokens
    assert grouped[1].tokens_evaluated == alone.tokens_evaluated
    reseeded = generator.generate(replace(target, seed=12))
    assert reseeded.texts != alone.texts
    # Row j's random stream does not depend on n: the first rows of a larger request are the same samples.
    more = generator.generate(replace(target, n=6))
    assert more.texts[:4] == alone.texts


@pytest.mark.slow
def test_seq2seq_checkpoint_loads_and_answers_generate(smollm2: Any, tmp_path: Any) -> None:
    """``load_hf_model`` picks ``AutoModelForSeq2SeqLM`` for an encoder-decoder checkpoint; the adapter answers
    ``generate`` through the encoder and refuses ``sample_words``."""
    from harness.errors import HarnessError
    from harness.models import ModelSpec
    from harness.plugins.hf.adapter import HFAdapter
    from harness.requests import SampleWordsRequest

    _tiny_t5(smollm2.tokenizer).save_pretrained(tmp_path)
    smollm2.tokenizer.save_pretrained(tmp_path)
    adapter = HFAdapter(ModelSpec(kind="hf", name=str(tmp_path), device="cpu"))
    try:
        info = adapter.info()
        assert info["model_class"] == "T5ForConditionalGeneration" and info["generation"] == "generate-seq2seq"
        request = GenerateRequest(prompt="", source="simplify: Hi", n=2, seed=0, max_new_tokens=3)
        (response,) = adapter.generate_many([request])
        assert len(response.texts) == 2
        with pytest.raises(HarnessError, match="sequence-to-sequence"):
            adapter.sample_words_many([SampleWordsRequest(context="Hi", n=1, seed=0)])
    finally:
        adapter.close()


@pytest.mark.slow
def test_adapter_answers_generate(smollm2: Any) -> None:
    from harness.models import ModelSpec
    from harness.plugins.hf.adapter import HFAdapter

    adapter = HFAdapter(ModelSpec(kind="hf", name="smollm2-135m", args={"max_batch": "8"}, device="cpu"))
    try:
        assert "generate" in HFAdapter.supported_requests and "sample_words" in HFAdapter.supported_requests
        info = adapter.info()
        assert info["generation"] == "shared-prefix" and info["batch_size"] == 8
        request = GenerateRequest(prompt="The capital of France is", n=3, seed=0, max_new_tokens=6, stop=("\n",))
        (one,) = adapter.generate_many([request])
        many = adapter.generate_many([request, GenerateRequest(prompt="Hello", n=2, seed=1, max_new_tokens=4)])
        assert one == many[0] and len(many[1].texts) == 2
    finally:
        adapter.close()
    with pytest.raises(RuntimeError, match="closed"):
        adapter.generate_many([request])


# --------------------------------------------------------------------------------------------------------------------
# The plain generate path: tiny random GPT-2 (no shared-prefix attention) and T5 (sequence-to-sequence)
# --------------------------------------------------------------------------------------------------------------------


def _tiny_gpt2(tokenizer: Any) -> Any:
    return tiny_gpt2(tokenizer)


def _tiny_t5(tokenizer: Any) -> Any:
    return tiny_t5(tokenizer)


def _check_plain_path(generator: BatchGenerator, requests: list[GenerateRequest]) -> list[GenerateResponse]:
    state = torch.get_rng_state()
    responses = generator.generate_many(requests)
    assert torch.equal(torch.get_rng_state(), state), "the caller's RNG state must be left alone"
    assert generator.generate_many(requests) == responses  # seeded from request.seed
    for request, response in zip(requests, responses, strict=True):
        assert len(response.texts) == len(response.finish_reasons) == len(response.n_tokens) == request.n
        for text, reason, n_tokens in zip(response.texts, response.finish_reasons, response.n_tokens, strict=True):
            assert reason in ("eos", "stop", "length") and 1 <= n_tokens <= request.max_new_tokens
            assert reason != "length" or n_tokens == request.max_new_tokens
            assert not any(s in text for s in request.stop)
    return responses


@pytest.mark.slow
def test_plain_generate_fallback_on_tiny_gpt2(smollm2: Any) -> None:
    """The plain ``generate`` path (families the shared-prefix attention does not serve, or ``use_shared_prefix``
    off); GPT-2 itself is served since the attention covers it (``tests/test_model_families.py``)."""
    tokenizer = smollm2.tokenizer
    assert BatchGenerator(_tiny_gpt2(tokenizer), tokenizer).shared_prefix
    generator = BatchGenerator(_tiny_gpt2(tokenizer), tokenizer, use_shared_prefix=False)
    assert generator.mode == "generate" and not generator.shared_prefix
    requests = [
        GenerateRequest(prompt="Hello there", n=4, seed=0, max_new_tokens=12),
        # A random model emits letters all the time: every sample stops at the first "e".
        GenerateRequest(prompt="Hello there", n=4, seed=1, max_new_tokens=30, stop=("e",)),
        GenerateRequest(prompt="", n=2, seed=2, max_new_tokens=5, decoding=DecodingConfig(top_k=5, top_p=0.9)),
        GenerateRequest(prompt="x", n=0, seed=3),
    ]
    responses = _check_plain_path(generator, requests)
    assert responses[0].finish_reasons == ["length"] * 4
    n_prompt = len(generator.prompt_ids(requests[0]))
    assert responses[0].tokens_evaluated == 4 * (n_prompt + 12 - 1)
    assert "stop" in responses[1].finish_reasons
    assert responses[3] == GenerateResponse(texts=[], finish_reasons=[], n_tokens=[], tokens_evaluated=0)
    other_seed = generator.generate(replace(requests[0], seed=9))
    assert other_seed.texts != responses[0].texts


@pytest.mark.slow
def test_plain_generate_fallback_on_tiny_t5(smollm2: Any) -> None:
    tokenizer = smollm2.tokenizer
    generator = BatchGenerator(_tiny_t5(tokenizer), tokenizer)
    assert generator.mode == "generate-seq2seq" and generator.seq2seq
    requests = [
        GenerateRequest(prompt="unused", source="simplify: The feline reposed.", n=3, seed=0, max_new_tokens=6),
        GenerateRequest(prompt="unused", source="simplify: Hello", n=3, seed=1, max_new_tokens=20, stop=("e",)),
    ]
    responses = _check_plain_path(generator, requests)
    source_ids = generator.source_ids(requests[0])
    assert source_ids == tokenizer("simplify: The feline reposed.")["input_ids"]
    # The encoder runs once; the decoder runs its start token plus every generated token but the last, per row.
    assert responses[0].tokens_evaluated == len(source_ids) + 3 * 6
