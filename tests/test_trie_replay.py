"""The trie trace (``TrieWordSampler.trace``) and its replay (``benchmarks/bench_trie_replay.py``) on tiny random
models: the trace holds exactly the passes the sampler ran, and the replay runs the same rows through a model of
another family."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.bench_trie_replay import OpCounter, _NoTokenizer, _positions, replay_group
from harness.requests import SampleWordsRequest
from tests.test_model_families import tiny
from tests.test_word_sampler import ByteTokenizer


def _rows_run(sampler: Any) -> list[int]:
    """Wraps the sampler's level passes to count the rows each pass runs."""
    counted: list[int] = []
    run_level = sampler._run_level

    def counting(*args: Any, **kwargs: Any) -> Any:
        for chunk, probs in run_level(*args, **kwargs):
            counted.append(chunk.end - chunk.start)
            yield chunk, probs

    sampler._run_level = counting
    return counted


def test_the_trace_records_every_pass_and_the_replay_runs_the_same_rows_on_another_family() -> None:
    from harness.plugins.hf.trie.word_sampler import TrieWordSampler

    sampler = TrieWordSampler(tiny("llama"), ByteTokenizer(), batch_size=64)
    sampler.trace = []
    recorded = _rows_run(sampler)
    requests = [
        SampleWordsRequest(context="the cat sat on", n=300, seed=1, mode="paper", max_new_tokens=3),
        SampleWordsRequest(context="the cat", n=200, seed=2, mode="paper", max_new_tokens=3),  # nested in the first
    ]
    responses = sampler.sample_many(requests)
    (group,) = sampler.trace
    contexts = group["contexts"]
    # One pass serves both contexts (the second begins the first), and n is kept per request.
    assert group["carriers"] == [[0, [0, 1]]] and group["n"] == [300, 200]
    rows = [len(level["parents"]) for level in group["levels"]]
    assert sum(rows) == sum(recorded)
    # The responses count each context's own tokens plus every trie row run for it.
    assert sum(r.tokens_evaluated for r in responses) == sum(contexts) + sum(rows)
    assert _positions(group) == contexts[0] + sum(rows)
    first = group["levels"][0]
    assert first["depth"] == 1 and sum(first["counts"]) <= 500 and set(first["reqs"]) <= {0, 1}

    other = TrieWordSampler(tiny("gpt2"), _NoTokenizer(), batch_size=64)
    assert other.shared_prefix and other.trace is None
    replayed = _rows_run(other)
    import torch

    plain = OpCounter()
    with torch.inference_mode(), plain:
        replay_group(other, group, other.model.config.vocab_size, np.random.default_rng(0))
    assert sum(replayed) == sum(rows)
    assert group["max_new_tokens"] == 3

    # At fixed shapes the same rows run, and the operations inside each forward pass (one CUDA graph launch on a
    # GPU) are counted apart from the ones a GPU still launches one by one.
    fixed = TrieWordSampler(tiny("gpt2"), _NoTokenizer(), batch_size=64, pass_capture="static")
    replayed_fixed = _rows_run(fixed)
    counter = OpCounter()
    counter.apart(fixed._static)
    with torch.inference_mode(), counter:
        replay_group(fixed, group, fixed.model.config.vocab_size, np.random.default_rng(0))
    assert replayed_fixed == replayed
    assert fixed._static is not None and fixed._static.buffers is not None
    assert fixed._static.buffers.slots == 3
    # What a GPU still launches one by one (the draws, the inputs' copies) is less than the passes at their own
    # shapes launch, although the fixed-shape pass runs more operations.
    assert 0 < counter.ops < plain.ops < counter.ops + counter.inside


def test_rows_by_chunk_groups_parent_rows_in_chunk_order() -> None:
    from harness.plugins.hf.trie.cache import rows_by_chunk

    # Chunks start at rows 0, 4 and 9; chunk 1 has no row here.
    assert rows_by_chunk([0, 3, 3, 9, 12], [0, 4, 9]) == [(0, [0, 3, 3]), (2, [0, 3])]
    assert rows_by_chunk([5, 6], [0, 4, 9]) == [(1, [1, 2])]
    assert rows_by_chunk([], [0]) == []
