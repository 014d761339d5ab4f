from __future__ import annotations

import pytest

from assistant.errors import AssistantError
from assistant.retrieval.hybrid import fuse

# Paraphrased questions that share few words with the abstract they should find.
PARAPHRASES = [
    ("reusing cached attention keys and values when several LLM agents cooperate", "KVFlow"),
    (
        "make a diffusion sampler quicker with no extra training by treating the noise estimate "
        "and the guidance differently",
        "THG",
    ),
    ("keeping the segment anything model reliable when pictures are corrupted", "GaRA-SAM"),
    ("speeding up video generation from diffusion by reusing computation across steps", "LeMiCa"),
    ("poisoning the long-term memory of language-model agents", "MINJA"),
    ("birdwatchers learning to tell species apart over time", "CleverBirds"),
    (
        "training code models to write secure software and refuse to help with cyberattacks",
        "PurpCode",
    ),
    (
        "can you really train language models stably with a batch size of one?",
        "Small batch sizes",
    ),
    ("benchmarks for retrieval built from recent programming questions", "FreshStack"),
]


@pytest.mark.parametrize(("question", "label"), PARAPHRASES)
def test_paraphrased_question_finds_its_abstract(shipped, question, label):
    hits = shipped.search(question, k=3)
    assert label in [h.label for h in hits], [h.label for h in hits]


def test_hits_are_papers_once_each_with_full_abstracts(shipped):
    hits = shipped.search("diffusion models", k=10)
    assert len(hits) == 10
    assert len({h.paper_id for h in hits}) == 10
    assert [h.rank for h in hits] == list(range(1, 11))
    assert all(h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for hit in hits:
        assert hit.chunk and hit.chunk[:50] in hit.paper.text_for_index
        assert len(hit.text) >= len(hit.chunk) - 5


def test_filters_restrict_both_retrievers(shipped):
    hits = shipped.search(
        "diffusion models", k=20, filters={"source_file": "003_093ebc27df52064e.txt"}
    )
    assert hits and all(h.source.startswith("003_093ebc27df52064e.txt#") for h in hits)
    assert "LeMiCa" in [h.label for h in hits]
    assert shipped.search("diffusion", filters={"year": 1999}) == []


def test_bad_filters_and_queries_are_user_errors(shipped):
    with pytest.raises(AssistantError, match="unknown filter 'colour'"):
        shipped.search("x", filters={"colour": "red"})
    with pytest.raises(AssistantError, match="empty"):
        shipped.search("   ")
    with pytest.raises(AssistantError, match="20,000"):
        shipped.search("word " * 10_000)


def test_stopword_only_query_still_uses_dense(shipped):
    assert len(shipped.search("the of and", k=3)) == 3


def test_rrf_fusion_rewards_agreement():
    fused = fuse([["a", "b", "c"], ["b", "d"]], [1.0, 1.0], k=60)
    assert [item for item, _ in fused] == ["b", "a", "d", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    weighted = fuse([["a", "b"], ["b", "a"]], [3.0, 1.0], k=1)
    assert weighted[0][0] == "a"
