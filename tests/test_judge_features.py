"""The offline judge's newer signals: word-piece alignment and direction polarity."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.judge.features import FEATURES, FeatureExtractor
from assistant.judge.judges import OfflineJudge
from assistant.judge.polarity import (
    aligned_direction,
    aligned_polarity,
    cue,
    negated_assertion,
    words_from_pieces,
)


@pytest.mark.parametrize(
    ("claim", "sentence", "expected"),
    [
        # high x reduce = -1 against elevated x increased = +1
        (
            "High levels of CRP reduce the risk of exacerbations in COPD.",
            "Elevated levels of CRP were associated with increased risk of exacerbations.",
            (-1, 1),
        ),
        (
            "Aspirin reduces the risk of stroke.",
            "Aspirin lowered the risk of stroke by 20%.",
            (-1, -1),
        ),
        (
            "Ultrasound guidance raises the number of traumatic procedures.",
            "Ultrasound imaging significantly reduced the risk of traumatic procedures.",
            (1, -1),
        ),
        # A negation flips the sign: "did not increase" reads as a decrease.
        ("Drug X increases survival.", "Drug X did not increase survival in mice.", (1, -1)),
        # Direction words far from the shared words do not count.
        ("Exercise improves memory.", "The trial enrolled 300 adults and lowered costs.", (0, 0)),
    ],
)
def test_aligned_polarity(claim, sentence, expected):
    assert aligned_polarity(claim, sentence) == expected


def test_cue_words():
    assert [cue(w) for w in ("increased", "attenuates", "not", "mouse")] == [1, -1, -1, 0]


def test_token_states_share_one_pass_with_embed(embedder):
    texts = ["Tau phosphorylation rises.", "A much longer second sentence about kinase activity."]
    states = embedder.token_states(texts)
    pieces, vectors = states[0].pieces, states[0].piece_vectors
    assert pieces[0] == "tau" and "[CLS]" not in pieces and "[SEP]" not in pieces
    assert vectors.shape == (len(pieces), embedder.dim)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    pooled = np.stack([s.vector for s in states])
    assert np.allclose(pooled, embedder.embed(texts), atol=1e-5)


def test_token_recall_prefers_a_paraphrase(embedder):
    extractor = FeatureExtractor(embedder)
    recalls = extractor.token_recalls(
        "Exercise training improves vasodilation mediated by nitric oxide.",
        [
            "Exercise enhanced bradykinin-induced vasodilation through nitric oxide production.",
            "The cohort was recruited from three hospitals in Denmark.",
        ],
    )
    paraphrase, unrelated, overall = recalls
    assert paraphrase > unrelated + 0.1
    assert overall >= paraphrase


def test_features_flag_a_reversed_direction(embedder):
    extractor = FeatureExtractor(embedder)
    claim = "Aspirin reduces the risk of stroke."
    lowered = extractor.features(claim, ["Aspirin lowered stroke risk."])
    raised = extractor.features(claim, ["Aspirin raised stroke risk."])
    agree = dict(zip(FEATURES, lowered, strict=True))
    clash = dict(zip(FEATURES, raised, strict=True))
    assert (agree["direction_agree"], agree["direction_conflict"]) == (1.0, 0.0)
    assert (clash["direction_agree"], clash["direction_conflict"]) == (0.0, 1.0)


def test_offline_judge_scores_a_contradiction_below_its_support(embedder):
    judge = OfflineJudge(embedder)
    claim = "Antiretroviral therapy reduces the incidence of tuberculosis."
    support = judge.support(
        claim, ["Antiretroviral therapy lowered the incidence of tuberculosis by 65%."]
    )
    contradiction = judge.support(
        claim, ["Antiretroviral therapy increased the incidence of tuberculosis by 65%."]
    )
    assert support > contradiction


def _words(*pairs: tuple[str, int]) -> tuple[list[str], np.ndarray]:
    """Words with one-hot vectors: words sharing an index align with each other."""
    vectors = np.eye(16)[[index for _, index in pairs]]
    return [word for word, _ in pairs], vectors


def test_words_from_pieces_glues_continuations():
    words, vectors = words_from_pieces(["tau", "phos", "##phory", "##lation"], np.eye(4))
    assert words == ["tau", "phosphorylation"]
    assert np.array_equal(vectors, np.eye(4)[[0, 1]])


def test_aligned_direction_reads_the_aligned_word_and_its_negation():
    claim = _words(("aspirin", 0), ("reduces", 1), ("risk", 2))
    raised = _words(("aspirin", 0), ("raised", 1), ("risk", 2))
    not_raised = _words(("aspirin", 0), ("did", 5), ("not", 6), ("raise", 1), ("risk", 2))
    assert aligned_direction(claim, raised) == (1, 0)
    assert aligned_direction(claim, not_raised) == (0, 1)


def test_negated_assertion_looks_past_filler_to_what_is_negated():
    claim = _words(("exercise", 0), ("has", 3), ("no", 4), ("effect", 5), ("on", 6), ("memory", 7))
    improved = _words(("exercise", 0), ("improved", 8), ("memory", 7))
    unchanged = _words(("exercise", 0), ("did", 9), ("not", 4), ("change", 10), ("memory", 7))
    assert negated_assertion(claim, improved) == (1, 0)
    assert negated_assertion(claim, unchanged) == (0, 1)
