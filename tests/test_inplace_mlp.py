"""The in-place gated MLP (harness.plugins.hf.generate.inplace_mlp): identical outputs, only where it applies, never
under autograd."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from harness.plugins.hf.generate import inplace_mlp
from tests.helpers import tiny_llama


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_in_place_forward_gives_the_same_logits_bit_for_bit(dtype: torch.dtype) -> None:
    model = tiny_llama(50, initializer_range=0.2).to(dtype)
    ids = torch.randint(0, 50, (8, 12), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        plain = model(input_ids=ids).logits
        assert inplace_mlp.enable(model) == 2
        switched = model(input_ids=ids).logits
    assert torch.equal(plain, switched)
    # The switched layer really runs the in-place forward (not transformers' own).
    assert model.model.layers[0].mlp.forward.__func__ is inplace_mlp._forward_in_place
    # Switching twice changes nothing.
    assert inplace_mlp.enable(model) == 2


def test_autograd_gets_transformers_forward_and_correct_gradients() -> None:
    model = tiny_llama(50, initializer_range=0.2)
    ids = torch.randint(0, 50, (2, 6), generator=torch.Generator().manual_seed(2))
    model(input_ids=ids).logits.sum().backward()
    expected = model.model.layers[0].mlp.gate_proj.weight.grad.clone()
    model.zero_grad()
    inplace_mlp.enable(model)
    model(input_ids=ids).logits.sum().backward()  # an in-place write would make this raise
    assert torch.equal(model.model.layers[0].mlp.gate_proj.weight.grad, expected)


def test_other_activations_and_families_are_left_alone() -> None:
    gelu = tiny_llama(50, hidden_act="gelu")
    assert inplace_mlp.enable(gelu) == 0
    assert "forward" not in vars(gelu.model.layers[0].mlp)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_layer=1, n_embd=16, n_head=2)).eval()
    assert inplace_mlp.enable(gpt2) == 0
