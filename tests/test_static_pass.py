"""The trie sampler's per-level pass at fixed shapes (``harness.plugins.hf.trie.static_pass``), which a GPU replays as
CUDA graphs: the same probabilities and draws as the pass at its own shapes, on every family, and one recording per row
bucket whatever the depth (what makes a recorded graph valid at every level)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import pytest
import torch

from harness.plugins.hf.trie import word_sampler
from harness.plugins.hf.trie.static_pass import StaticPass, capture_for, row_bucket, slot_bucket
from harness.plugins.hf.trie.word_sampler import TrieWordSampler
from harness.requests import SampleWordsRequest
from tests.device_waits import DeviceWaits
from tests.test_model_families import CONFIGS, tiny
from tests.test_word_sampler import ByteTokenizer

#: Nested contexts (read off one pass), a separate one, a request with n = 0, and ``max_new_tokens`` 5: the passes
#: span depths 1 to 4 and several row buckets.
CONTEXTS = ["the cat sat on the mat", "the cat sat", "a dog ran", "the cat sat on", "nothing"]


def _requests(temperature: float = 1.0, max_new_tokens: int = 5) -> list[SampleWordsRequest]:
    return [
        SampleWordsRequest(context=c, n=0 if k == 4 else 300, seed=k, mode="exact", max_new_tokens=max_new_tokens,
                           temperature=temperature)
        for k, c in enumerate(CONTEXTS)
    ]  # fmt: skip


def test_row_buckets_are_powers_of_two_and_their_midpoints() -> None:
    assert [row_bucket(n, 4096) for n in (1, 16, 17, 24, 25, 33, 49, 65, 97, 100, 3000)] == [
        16, 16, 24, 24, 32, 48, 64, 96, 128, 128, 3072,
    ]  # fmt: skip
    assert row_bucket(50, 50) == 50 and row_bucket(40, 44) == 44 and row_bucket(3, 8) == 8


def test_slot_buckets_are_powers_of_two_from_four_up_to_the_cap() -> None:
    assert [slot_bucket(d, 32) for d in (1, 2, 4, 5, 8, 9, 17, 31)] == [4, 4, 4, 8, 8, 16, 32, 32]
    assert slot_bucket(5, 6) == 6 and slot_bucket(2, 3) == 3 and slot_bucket(1, 1) == 1


def test_capture_by_device() -> None:
    assert capture_for("auto", torch.device("cpu")) == "off"
    assert capture_for("auto", torch.device("cuda")) == "off"
    assert capture_for("static", torch.device("cpu")) == "static"
    with pytest.raises(ValueError, match="pass capture 'graphs' needs a CUDA device, not cpu"):
        capture_for("graphs", torch.device("cpu"))
    with pytest.raises(ValueError, match="unknown pass capture 'always'"):
        capture_for("always", torch.device("cpu"))


def _watched(
    method: Any, name: str, seen: list[str], within: Callable[[], AbstractContextManager[Any]] = nullcontext
) -> Any:
    """``method``, logging ``name`` into ``seen`` at each call and running inside ``within()``."""

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(name)
        with within():
            return method(*args, **kwargs)

    return watched


def _pass_probabilities(sampler: TrieWordSampler) -> list[torch.Tensor]:
    """Record the probabilities of every pass ``sampler`` draws from (copies: the buffers are reused)."""
    seen: list[torch.Tensor] = []
    draw = sampler._draw

    def recording(parents: Any, start: int, end: int, probs: torch.Tensor, tallies: Any) -> Any:
        seen.append(probs.clone())
        return draw(parents, start, end, probs, tallies)

    sampler._draw = recording  # type: ignore[method-assign]
    return seen


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_fixed_shapes_give_the_passes_probabilities_and_draws(model_type: str) -> None:
    """Every pass of a group (depths 1 to 4, parents gathered from several chunks: 48 rows per pass) gives the
    probabilities of the pass at its own shapes within float32 rounding, and the same words are drawn."""
    own = TrieWordSampler(tiny(model_type), ByteTokenizer(), batch_size=48, prefix_layout="rows")
    fixed = TrieWordSampler(tiny(model_type), ByteTokenizer(), batch_size=48, pass_capture="static")
    assert (fixed.pass_capture, fixed.prefix_layout) == ("static", "rows")
    expected_probs, probs = _pass_probabilities(own), _pass_probabilities(fixed)
    expected = [r.to_record() for r in own.sample_many(_requests())]
    assert [r.to_record() for r in fixed.sample_many(_requests())] == expected
    assert len(probs) == len(expected_probs) > 5
    for got, want in zip(probs, expected_probs, strict=True):
        torch.testing.assert_close(got, want, atol=2e-6, rtol=1e-4)


def test_temperature_and_growing_buffers() -> None:
    """A second group with a longer context and more carriers replaces the buffers; temperature is applied."""
    own = TrieWordSampler(tiny("llama"), ByteTokenizer(), batch_size=64, prefix_layout="rows")
    fixed = TrieWordSampler(tiny("llama"), ByteTokenizer(), batch_size=64, pass_capture="static")
    first = _requests(temperature=0.7)[:2]
    assert [r.to_record() for r in fixed.sample_many(first)] == [r.to_record() for r in own.sample_many(first)]
    assert fixed._static is not None and fixed._static.buffers is not None
    before = fixed._static.buffers.sizes()
    second = [SampleWordsRequest(context=f"{'word ' * 40}{k}", n=200, seed=k, max_new_tokens=7) for k in range(3)]
    assert [r.to_record() for r in fixed.sample_many(second)] == [r.to_record() for r in own.sample_many(second)]
    after = fixed._static.buffers.sizes()
    assert before == (64, 5, 1, 32) and after == (64, 7, 4, 208)


def test_a_pass_traces_to_one_graph_per_row_bucket_at_every_depth() -> None:
    """What a CUDA graph needs of the pass, checked on a CPU by tracing it with torch's compiler: no operation depends
    on a value on the device (``fullgraph`` fails on one), no tensor is made from host data inside it, and nothing
    that changes between levels is a Python value (a depth baked into the trace would force a new trace per depth,
    as it would make a recorded graph wrong at other depths): one trace per row bucket and temperature."""
    sampler = TrieWordSampler(tiny("gemma2"), ByteTokenizer(), batch_size=48, pass_capture="static")
    static = sampler._static
    assert isinstance(static, StaticPass)
    graphs: list[torch.fx.GraphModule] = []

    def backend(module: torch.fx.GraphModule, inputs: Any) -> Any:
        graphs.append(module)
        return module.forward

    static.head.reserve(48)  # as before a recording
    torch._dynamo.reset()
    traced = torch.compile(static._pass, fullgraph=True, backend=backend, dynamic=False)
    buckets: set[tuple[int, int, float]] = set()
    depths: list[int] = []

    def run(bucket: tuple[int, int], temperature: float) -> torch.Tensor:
        static._views(bucket)  # made outside, as before a recording
        buckets.add((*bucket, temperature))
        depths.append(int(static.buffers.slot) + 1)  # type: ignore[union-attr]
        return traced(bucket, temperature)

    static._pass = run  # type: ignore[method-assign]
    try:
        sampler.sample_many(_requests(max_new_tokens=7))
        sampler.sample_many(_requests(temperature=0.5, max_new_tokens=7)[:1])
    finally:
        torch._dynamo.reset()
    assert set(depths) == {1, 2, 3, 4, 5, 6} and {slots for _, slots, _ in buckets} == {4, 7}
    assert len(depths) > 2 * len(buckets) and len(graphs) == len(buckets)
    assert not [node for g in graphs for node in g.graph.nodes if node.target is torch.tensor]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_graphs_replay_the_fixed_shape_pass(dtype: torch.dtype) -> None:
    """On a GPU: the recorded graphs draw what the same passes draw eagerly, group after group, with the buffers
    replaced in between (more carriers, longer contexts)."""
    device = torch.device("cuda")
    samplers = [
        TrieWordSampler(tiny("llama").to(device, dtype), ByteTokenizer(), batch_size=48, pass_capture=capture)
        for capture in ("static", "graphs")
    ]
    second = [SampleWordsRequest(context=f"{'word ' * 40}{k}", n=200, seed=k, max_new_tokens=7) for k in range(3)]
    # More contexts than rows per pass: their own pass widens the head's buffers, which the graphs write into.
    wide = [SampleWordsRequest(context=f"{k} cats", n=20, seed=k, max_new_tokens=3) for k in range(60)]
    for group in (_requests(), second, wide, _requests(temperature=0.7)):
        eager, graphs = ([r.to_record() for r in s.sample_many(group)] for s in samplers)
        assert graphs == eager
    static = samplers[1]._static
    assert static is not None and static.recorded >= 4
    assert not math.isnan(float(static.head._buffers["probs"].sum()))


@pytest.mark.parametrize("family", ["llama", "gpt2", "gemma2"])
@pytest.mark.parametrize("capture", ["static", "off"])
def test_a_pass_and_its_draws_read_nothing_back(family: str, capture: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a GPU would queue between two waits (a level pass: its inputs, its parents' rows, the model, the
    suffixes kept; and the pass's draws) holds no operation that reads a value back or sizes its output by the
    values (:mod:`tests.device_waits`), at fixed shapes and at the passes' own shapes in a GPU's rows layout; seen on
    a CPU, so CI keeps them out. The same run without the spy gives the same records."""
    sampler = TrieWordSampler(tiny(family), ByteTokenizer(), batch_size=48, pass_capture=capture, prefix_layout="rows")
    expected = [r.to_record() for r in sampler.sample_many(_requests())]
    spy = DeviceWaits()
    seen: list[str] = []
    names = ["_draw", "_parent_rows"]
    if sampler._static is not None:
        names += ["run", "take"]
        for name in ("run", "take"):
            setattr(sampler._static, name, _watched(getattr(sampler._static, name), name, seen, lambda: spy))
    else:
        names += ["_step", "gather_rows"]
        spied = _watched(word_sampler.gather_rows, "gather_rows", seen, lambda: spy)
        monkeypatch.setattr(word_sampler, "gather_rows", spied)
        sampler._step = _watched(sampler._step, "_step", seen, lambda: spy)  # type: ignore[method-assign]
    for name in ("_draw", "_parent_rows"):
        setattr(sampler, name, _watched(getattr(sampler, name), name, seen, lambda: spy))
    assert [r.to_record() for r in sampler.sample_many(_requests())] == expected
    assert set(seen) == set(names)
    assert spy.waits == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="waiting for a GPU needs a GPU")
def test_a_pass_and_its_draws_are_queued_without_waiting_for_the_gpu() -> None:
    """On a GPU, once its graphs are recorded, a level pass (its inputs' copies, the parents' rows, the replay) and
    its draws queue everything without one synchronisation: torch's sync debug mode raises at any blocking copy,
    ``.item()`` or ``nonzero``. The host waits only when it reads a pass's draws, after queueing the next pass."""
    device = torch.device("cuda")
    sampler = TrieWordSampler(tiny("llama").to(device), ByteTokenizer(), batch_size=48, pass_capture="graphs")
    expected = [r.to_record() for r in sampler.sample_many(_requests())]  # records every bucket's graph
    static = sampler._static
    assert static is not None
    checked: list[str] = []

    @contextmanager
    def sync_errors() -> Iterator[None]:
        torch.cuda.set_sync_debug_mode("error")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode("default")

    for owner, name in ((sampler, "_draw"), (sampler, "_parent_rows"), (static, "run"), (static, "take")):
        setattr(owner, name, _watched(getattr(owner, name), name, checked, sync_errors))
    assert [r.to_record() for r in sampler.sample_many(_requests())] == expected
    assert {"_draw", "_parent_rows", "run", "take"} <= set(checked)


def test_a_levels_next_pass_is_launched_before_this_passes_children_are_decided() -> None:
    """Within a trie level, pass k + 1 is launched right after pass k's draws, before the host decides pass k's
    children (on a GPU the pass then runs while the host works); the draws still come in pass order."""
    sampler = TrieWordSampler(tiny("llama"), ByteTokenizer(), batch_size=16)
    events: list[str] = []
    for name in ("_step", "_draw", "_children"):
        setattr(sampler, name, _watched(getattr(sampler, name), name, events))
    sampler.sample_many(_requests())
    log = " ".join(events)
    # Mid-level: the next pass before the children. A level's last pass: its children before the next level's first
    # pass, which continues them. The roots' draws (after the contexts' own passes) have no level pass before them.
    assert "_draw _step _children" in log and "_draw _children _step" in log
    assert events.count("_draw") == events.count("_children") == events.count("_step") + 1
