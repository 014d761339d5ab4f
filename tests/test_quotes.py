"""Quoted sentences lose a connective opening only where it would point at nothing."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from assistant.answer.offline.quotes import cite, quotes, without_dangling_opening


@dataclass(frozen=True)
class Quote:
    source: int
    position: int
    text: str


@pytest.mark.parametrize(
    ("sentence", "shown"),
    [
        (
            "Moreover, KVFlow introduces a prefetching mechanism.",
            "KVFlow introduces a prefetching mechanism.",
        ),
        ("To this end, we introduce iFinder, a framework.", "We introduce iFinder, a framework."),
        ("As a result, GPLQ is 100x faster than QAT.", "GPLQ is 100x faster than QAT."),
        ("Building on this foundation, we introduce a design.", "We introduce a design."),
        ("To address these challenges, we propose X for Y.", "We propose X for Y."),
        (
            "However, although prior work explored it, the cause is unknown.",
            "Although prior work explored it, the cause is unknown.",
        ),
        # not connectives, or nothing left that reads as a sentence
        ("Thus far, no method scales.", "Thus far, no method scales."),
        ("However, it fails.", "However, it fails."),
        ("In this paper, we propose SWIFT.", "In this paper, we propose SWIFT."),
        ("Moreover, 3 of 5 runs fail.", "Moreover, 3 of 5 runs fail."),
        ("Furthermore the loss drops.", "Furthermore the loss drops."),
    ],
)
def test_a_dangling_opening_is_dropped(sentence: str, shown: str):
    assert without_dangling_opening(sentence) == shown


def test_a_connective_stays_where_it_follows_its_neighbour():
    picked = [
        Quote(1, 3, "The core of PURE is min-form credit assignment."),
        Quote(1, 4, "In contrast, the sum form collapses training early."),
        Quote(1, 7, "Moreover, PURE needs no verifiable rewards at all."),
        Quote(2, 5, "As a result, GPLQ is 100x faster than QAT."),
    ]
    assert quotes(["PURE", "GPLQ"], picked).splitlines() == [
        "- PURE: The core of PURE is min-form credit assignment [1]. "
        "In contrast, the sum form collapses training early [1]. "
        "PURE needs no verifiable rewards at all [1].",
        "- GPLQ: GPLQ is 100x faster than QAT [2].",
    ]


def test_cite_keeps_the_sentence_end():
    assert cite("Does it scale?", 2) == "Does it scale [2]?"
    assert cite("It scales", 1) == "It scales [1]."
