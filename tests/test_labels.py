"""Labels a researcher would recognise: the title, the name an abstract coins, or the noun phrase
its first sentence is about; never a clause the answer then repeats. Checked on all 95 shipped
abstracts."""

from __future__ import annotations

import re

import pytest

from assistant.ingest.corpus import Paper, make_paper
from assistant.ingest.labels import derive_label
from assistant.ingest.phrases import topic_phrase

# A label that reads as a clause has a finite verb, or opens like a sentence.
_CLAUSE = re.compile(
    r"\b(?:is|are|was|were|has|have|had|can|may|dictates|remain|remains|provides?|plays?|"
    r"highlights?|construct|suffers?|excel|gained)\b|^(?:We|In|This paper|While|Recent)\b"
)


def _paper(corpus_papers: list[Paper], where: str) -> Paper:
    """'003#10' -> the 10th abstract of 003_*.txt."""
    prefix, position = where.split("#")
    (paper,) = [
        p
        for p in corpus_papers
        if p.source.startswith(prefix + "_") and p.source.endswith(f"#{position}")
    ]
    return paper


def test_no_shipped_label_is_a_clause_or_cut_off(corpus_papers):
    for paper in corpus_papers:
        label = paper.label
        assert not _CLAUSE.search(label), (paper.source, label)
        assert "…" not in label and len(label.split()) <= 8, (paper.source, label)


@pytest.mark.parametrize(
    ("where", "label"),
    [
        ("003#10", "Adafactor"),  # "Adafactor is an early memory-efficient ..."
        ("004#18", "Small batch sizes"),  # "Conventional wisdom dictates that small batch ..."
        ("000#1", "Data-driven stochastic optimization"),
        ("002#13", "Realizable continual linear regression"),  # "We study realizable ..."
        ("002#14", "Fast computation and optimization of opinion-based quantities"),
        ("004#13", "Performative stochastic optimization"),  # "In performative ..., decisions"
        ("004#15", "Multicalibration"),  # "In recent years, multicalibration has emerged"
        ("004#7", "Conditional diffusion models"),  # "While conditional diffusion models ..."
        ("003#3", "Expressivity of Transformer models in simulating Boolean circuits"),
        ("003#5", "Length generalization"),  # "_Length generalization_, the ability ..."
        ("001#6", "Optimization difficulties encountered by gradient descent"),
        ("003#19", "Understanding the behavior of deep reinforcement learning agents"),
    ],
)
def test_abstracts_without_a_name_get_their_topic(corpus_papers, where, label):
    assert _paper(corpus_papers, where).label == label


@pytest.mark.parametrize(
    ("where", "label"),
    [
        ("004#10", "Diff-Spectra"),  # "we present Diff-Spectra that ...", not its AICD module
        ("002#16", "Prior Guidance"),  # "we propose \\textbf{\\textit{Prior Guidance}} (PG)"
        ("003#1", "MAIL-BRO and MURMAIL"),  # "introduce two novel solution algorithms: ..."
        ("004#4", "MultALMC and MultCDiff"),  # "Two algorithms are developed ...: *MultALMC*"
        ("002#10", "Adversarial learning"),  # not "SAM", given as an example ("such as")
        ("001#19", "Curriculum learning"),  # not "RERM", what its theory is "based on"
    ],
)
def test_names_are_the_papers_own(corpus_papers, where, label):
    assert _paper(corpus_papers, where).label == label


@pytest.mark.parametrize(
    ("sentence", "phrase"),
    [
        ("Regression models are crucial in recommender systems.", "Regression models"),
        ("Previous work has explored the expressivity of RNNs.", "Expressivity of RNNs"),
        (
            "This paper studies the black-box optimization task which aims to X.",
            "Black-box optimization task",
        ),
        ("The study of neural tangent kernels has drawn attention.", "Neural tangent kernels"),
        ("It", ""),
    ],
)
def test_topic_phrase_stops_before_the_verb(sentence, phrase):
    assert topic_phrase(sentence) == phrase


def test_titles_are_labels_and_names_otherwise():
    titled = make_paper({"title": "Fast Things", "abstract": "We propose KVFlow, a cache."}, "x#1")
    untitled = make_paper({"abstract": "We propose KVFlow, a cache."}, "x#2")
    assert titled.label == "Fast Things" and untitled.label == "KVFlow"
    assert derive_label("Adafactor is an optimizer proposed as an alternative to Adam.") == (
        "Adafactor"
    )


def test_extractive_answer_names_the_paper_then_quotes_it(shipped):
    answer = shipped.ask("Why does Adafactor use so little memory?")
    assert "Adafactor" in [c.label for c in answer.citations]
    line = next(x for x in answer.text.splitlines() if x.startswith("- Adafactor: "))
    assert "Adafactor" in line.split(": ", 1)[1]  # the quote follows the short name
