"""The exact next-word distribution (``word_distribution``): the search against brute-force enumeration on a stub
LM, its bounds, the kind's records, and the scorers on hand-computed cases."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.instances import ClozeInstance
from harness.kinds.word_distribution import WordDistributionKind, asked_words
from harness.plugins.hf.trie.word_distribution import ExactWordSearch
from harness.requests import Surface, WordDistributionRequest, WordDistributionResponse
from harness.scorers.biased_estimator import BiasedEstimatorScorer, renormalised
from harness.scorers.exact_distribution import bounded_tvd
from harness.scorers.exact_tvd import ExactTvdScorer
from harness.scorers.next_token_accuracy import NextTokenAccuracyScorer
from harness.scorers.token_level import TokenLevelScorer
from tests.test_word_sampler import N_PIECES, VOCAB, ByteTokenizer, StubLM, exact_distribution, markov2


class FullByteTokenizer(ByteTokenizer):
    """The sampler tests' byte tokenizer with the calls the search makes (length, batch decoding, no-special)."""

    def __len__(self) -> int:
        return VOCAB

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return super().__call__(text)

    def batch_decode(self, rows: list[list[int]], **kwargs: Any) -> list[str]:
        return [self.decode(row, **kwargs) for row in rows]


def pieces_only(seed: int) -> Any:
    """``markov2(seed)`` reading only the sampled pieces: the words scored by their spelling are encoded byte by
    byte, which the Markov table does not cover."""
    fn = markov2(seed)
    return lambda continuation: fn(tuple(t for t in continuation if t < N_PIECES))


def search(seed: int, *, epsilon: float = 0.0, max_new_tokens: int = 4, **kwargs: Any) -> WordDistributionResponse:
    model = StubLM(pieces_only(seed))
    request = WordDistributionRequest(
        context="x", epsilon=epsilon, max_new_tokens=max_new_tokens, max_expansions=100_000, **kwargs
    )
    return ExactWordSearch(model, FullByteTokenizer(), batch_size=7).distribution(request)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_search_equals_brute_force_enumeration(seed: int) -> None:
    # Every sequence of up to 4 tokens of a second-order Markov LM, enumerated without early stopping.
    brute = exact_distribution(markov2(seed), "exact", 4, 1.0)
    found = search(seed)
    assert found.residual < 1e-9
    words = {w: p for w, p in brute.items() if not w.startswith("<")}
    assert set(found.probs) == set(words)
    for word, p in words.items():
        assert found.probs[word] == pytest.approx(p, abs=1e-6)  # float32 softmax
    for reason in ("empty", "truncated"):
        assert found.rejected.get(reason, 0.0) == pytest.approx(brute.get(f"<{reason}>", 0.0), abs=1e-6)


@pytest.mark.parametrize("epsilon", [0.05, 0.2])
def test_stopping_early_gives_lower_bounds_within_the_residual(epsilon: float) -> None:
    brute = exact_distribution(markov2(1), "exact", 4, 1.0)
    found = search(1, epsilon=epsilon)
    assert 0.0 < found.residual <= epsilon
    assert math.fsum(found.probs.values()) + math.fsum(found.rejected.values()) + found.residual == pytest.approx(1.0)
    for word, p in found.probs.items():
        assert p <= brute[word] + 1e-6
        assert brute[word] <= p + found.residual + 1e-6
    # It settles the largest pieces first: far fewer nodes than the complete search.
    assert found.expansions < search(1).expansions


def test_temperature_changes_the_distribution_as_the_sampler_does() -> None:
    brute = exact_distribution(markov2(2), "exact", 4, 0.5)
    found = search(2, temperature=0.5)
    for word, p in found.probs.items():
        assert p == pytest.approx(brute[word], abs=1e-6)


def test_bounded_tvd_hand_case_and_attainment() -> None:
    # q = (a .5, b .3), r = .2; humans a, c half each: |0| + .3 + .5 = .8; T = (.8 + .2) / 2 = .5; lower .3.
    lower, upper = bounded_tvd({"a": 0.5, "b": 0.3}, 0.2, {"a": 1, "c": 1})
    assert (lower, upper) == pytest.approx((0.3, 0.5))

    # Both ends are reached: the residual on "c" gives .3, on a word no human named gives .5.
    def tvd(p: dict[str, float]) -> float:
        return 0.5 * sum(abs(p.get(w, 0) - {"a": 0.5, "c": 0.5}.get(w, 0)) for w in {"a", "b", "c", "z"})

    assert tvd({"a": 0.5, "b": 0.3, "c": 0.2}) == pytest.approx(0.3)
    assert tvd({"a": 0.5, "b": 0.3, "z": 0.2}) == pytest.approx(0.5)


def test_request_and_response_records_round_trip_and_the_kind_checks_masses() -> None:
    request = WordDistributionRequest(context="The", words=("cat", "dog"), epsilon=0.01, n_samples=3, seed=4)
    assert request.to_record()["words"] == ["cat", "dog"]
    response = WordDistributionResponse(
        probs={"cat": 0.5, "dog": 0.2},
        residual=0.25,
        rejected={"empty": 0.05},
        surface={w: Surface(-1.0, -0.1, " " + w[:2], 0.3) for w in ("cat", "dog")},
        top_tokens=[(" ca", 0.3)],
        greedy="cat",
        sampled={"cat": 2, "dog": 1},
        expansions=7,
        tokens_evaluated=30,
    )
    again = WordDistributionResponse.from_record(response.to_record())
    assert again == response
    probs, residual = again.conditional()
    assert probs == pytest.approx({"cat": 0.5 / 0.95, "dog": 0.2 / 0.95}) and residual == pytest.approx(0.25 / 0.95)

    class Adapter:
        spec = type("Spec", (), {"label": "stub"})()

    kind = WordDistributionKind()
    kind.check_response(Adapter(), request, response)  # type: ignore[arg-type]
    response.residual = 0.5
    with pytest.raises(HarnessError, match="sum to 1.25"):
        kind.check_response(Adapter(), request, response)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="epsilon"):
        WordDistributionRequest(context="x", epsilon=1.0)


def test_asked_words_are_the_guesses_and_the_corpus_word() -> None:
    instance = ClozeInstance(id="1", context="c", target="cat", human_counts={"dog": 2, "car": 1})
    assert asked_words(instance) == ("car", "cat", "dog")


# ----------------------------------------------------------------------------------------------- the scorers
INSTANCE = ClozeInstance(id="1", context="The", target="cat", human_counts={"cat": 2, "car": 1, "dog": 1})


def response(**kwargs: Any) -> WordDistributionResponse:
    base: dict[str, Any] = {
        "probs": {"cat": 0.4, "dog": 0.3},
        "residual": 0.3,
        "surface": {
            "cat": Surface(math.log(0.2), math.log(0.5), " ca", 0.3),
            "car": Surface(math.log(0.05), 0.0, " ca", 0.3),
            "dog": Surface(math.log(0.1), 0.0, " dog", 0.2),
            "the": Surface(math.log(0.25), 0.0, " the", 0.4),
        },
        "top_tokens": [(" the", 0.4), (" ca", 0.3)],
        "greedy": "the",
        "sampled": {"cat": 3, "the": 1},
    }
    return WordDistributionResponse(**{**base, **kwargs})


def test_exact_tvd_scorer_hand_case() -> None:
    row = ExactTvdScorer(sizes=[1, 2, 100000], n_repeats=20000).score(INSTANCE, response(), np.random.default_rng(0))
    # humans cat .5 car .25 dog .25; q cat .4 dog .3, r .3: gap .1 + .25 + .05 = .4, T = .35, lower .05.
    assert row["tvd_exact"] == pytest.approx(0.35) and row["tvd_exact_lower"] == pytest.approx(0.05)
    # One simulated word: cat (.4) gives TVD .5, dog (.3) .75, the unresolved lump (.3) 1.0: mean .725, bias .375.
    assert row["sampling_bias_at_n1"] == pytest.approx(0.375, abs=0.005)
    assert abs(row["sampling_bias_at_n100000"]) < 0.003  # no bias left at a huge sample
    assert row["sampling_bias_at_n1"] > row["sampling_bias_at_n2"] > 0
    # sampled cat .75 the .25: |.25| + .25 + .25 + .25 = 1.0 / 2, against the interval [.05, .35].
    assert row["tvd_sampled"] == pytest.approx(0.5)
    assert row["observed_bias_min"] == pytest.approx(0.15) and row["observed_bias_max"] == pytest.approx(0.45)
    assert row["tvd_sampled_at_n2"] is not None and "tvd_sampled_at_n100000" not in row


def test_biased_estimator_hand_case() -> None:
    assert renormalised({"a": math.log(0.2), "b": math.log(0.6), "c": -math.inf}) == {"a": 0.25, "b": 0.75}
    row = BiasedEstimatorScorer().score(INSTANCE, response(), np.random.default_rng(0))
    # support: sampled cat, the; greedy the; corpus cat; humans cat, car, dog -> .2 .25 .05 .1, sum .6
    assert row["support_size"] == 4
    assert row["pred_biased"] == "the" and row["conf_biased"] == pytest.approx(0.25 / 0.6)
    expected = 0.5 * (abs(0.2 / 0.6 - 0.5) + abs(0.05 / 0.6 - 0.25) + abs(0.1 / 0.6 - 0.25) + 0.25 / 0.6)
    assert row["tvd_biased"] == pytest.approx(expected) and row["correct_biased"] is False
    with_end = BiasedEstimatorScorer(end_of_word=True).score(INSTANCE, response(), np.random.default_rng(0))
    assert with_end["pred_biased"] == "the"  # cat's .2 * .5 = .1 now ties dog


def test_token_level_hand_case() -> None:
    # A model known on two tokens (.5, .1; .4 elsewhere) against humans split evenly over them.
    assert bounded_tvd({" a": 0.5, " b": 0.1}, 0.4, {" a": 1, " b": 1})[1] == pytest.approx(0.4)
    row = TokenLevelScorer(n_splits=4).score(INSTANCE, response(), np.random.default_rng(0))
    # human first tokens: " ca" 3/4 (cat, car), " dog" 1/4; model .3, .2, rest .5: (.45 + .05 + .5) / 2
    assert row["tvd_token_model"] == pytest.approx(0.5)
    assert row["top_token_model"] == " the" and row["correct_token_model"] is False
    assert row["top_token_human"] == " ca" and row["conf_token_human"] == 0.75 and row["correct_token_human"] is True
    assert 0.0 <= row["tvd_token_oracle"] <= 1.0


def test_next_token_accuracy_hand_case() -> None:
    row = NextTokenAccuracyScorer().score(INSTANCE, response(), np.random.default_rng(0))
    assert row["model_word"] is True and row["model_word_prob"] == pytest.approx(0.4)
    assert row["top1_word_certain"] is False  # .4 - .3 is not more than the residual .3
    assert row["model_token"] is False  # " the" is not " ca"
    assert row["human_word"] == 0.5 and row["human_token"] == 0.75
    sure = NextTokenAccuracyScorer().score(
        INSTANCE, response(residual=0.05, probs={"cat": 0.6, "dog": 0.35}), np.random.default_rng(0)
    )
    assert sure["top1_word_certain"] is True
    human_only = NextTokenAccuracyScorer().score(INSTANCE, None, np.random.default_rng(0))
    assert human_only == {"human_word": 0.5}


# ------------------------------------------------------------------------------------------- the packaged model
def test_sampler_frequencies_match_the_exact_distribution_on_smollm2(smollm2: Any) -> None:
    from harness.plugins.hf.trie.word_sampler import TrieWordSampler

    context = "I went to the store to buy some"
    search = ExactWordSearch(smollm2.model, smollm2.tokenizer, batch_size=64)
    exact = search.distribution(
        WordDistributionRequest(context=context, words=("milk", "bread"), epsilon=0.1, max_expansions=3000)
    )
    assert exact.residual <= 0.1
    sampler = TrieWordSampler(smollm2.model, smollm2.tokenizer)
    from harness.requests import SampleWordsRequest

    n = 4000
    counts = sampler.sample(SampleWordsRequest(context=context, n=n, seed=11)).counts
    probs, residual = exact.conditional()
    drawn = sum(counts.values())
    checked = 0
    for word, p in probs.items():
        if p < 0.01:
            continue
        checked += 1
        # Each count is Binomial(drawn, p_true) with p <= p_true <= p + residual: 4.5 standard deviations around.
        low, high = drawn * p, drawn * (p + residual)
        sd = math.sqrt(drawn * (p + residual) * (1 - p))
        assert low - 4.5 * sd <= counts.get(word, 0) <= high + 4.5 * sd, (word, p, counts.get(word, 0))
    assert checked >= 5
    # Words the search never reached are rare in the samples too: at most the residual's share (plus noise).
    unseen = sum(c for w, c in counts.items() if w not in probs)
    assert unseen <= drawn * residual + 4.5 * math.sqrt(drawn * residual)
    # Pimentel & Meister's probability of one spelling is part of the word's probability, so below its upper bound.
    for word in ("milk", "bread"):
        spelled = math.exp(exact.surface[word].word_logprob)
        assert spelled <= exact.probs.get(word, 0.0) + exact.residual + 1e-6
        # Its part is real but not most: " milk" then "." or "," is the same word under the harness's rule (punctuation
        # is normalised away), while the end-of-word term counts only a next token that starts with whitespace.
        assert 0.1 * exact.probs[word] <= spelled


# ------------------------------------------------------------------------------------------- a run end to end
def test_provo_exact_on_the_mock_runs_and_rescores_identically(tmp_path: Any) -> None:
    import json

    from tests.conftest import run_main
    from tests.helpers import require_provo

    data = require_provo()
    out = tmp_path / "runs"
    run_main(
        "run",
        "--tasks",
        "provo-exact",
        "--model",
        "mock:m",
        "--limit",
        "12",
        "--output",
        str(out),
        "--data-dir",
        str(data),
    )
    results = json.loads((out / "mock__m" / "results.json").read_text())
    metrics = results["results"]["provo-exact"]
    # The mock lists its own distribution to within epsilon, so the TVD interval is at most 0.05 wide.
    assert metrics["tvd_exact,none"] - metrics["tvd_exact_lower,none"] <= 0.05 + 1e-9
    for name in ("tvd_biased", "tvd_token_model", "tvd_token_oracle", "model_token", "human_word"):
        assert f"{name},none" in metrics
    assert results["responses"]["provo-exact"]["max_residual"] <= 0.05
    run_main("score", str(out / "mock__m"), "--output-dir", str(tmp_path / "again"))
    again = json.loads((tmp_path / "again" / "results.json").read_text())
    assert again["results"]["provo-exact"] == metrics


def test_word_probability_bounds_use_the_spelling_where_the_search_did_not_reach() -> None:
    found = response(residual=0.3)
    assert found.word_probability("cat") == pytest.approx((0.4, 0.7))  # search .4 beats the spelling .2 * .5
    assert found.word_probability("the") == pytest.approx((0.25, 0.3))  # never reached: spelling .25, at most r
    assert found.word_probability("zebra") == (0.0, 0.3)
