"""Which chat questions are follow-ups: the question's shape offline, the chat model's word
(``NEW:`` / ``FOLLOW-UP:``) with one, and the eval set's chat pairs scored on that decision."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.answer.conversation import is_follow_up, read_condensed
from assistant.eval.dataset import load_eval_set
from assistant.eval.harness import aggregate, run_eval
from assistant.judge.judges import OfflineJudge

EVAL_SET = Path(__file__).parents[1] / "evals" / "neurips2025.jsonl"

NEW = [
    "Which papers study state space models like Mamba, and what do they find?",
    "Which papers reduce hallucinations and what do they find?",
    "Is there a paper on protein design, and what does it report?",
    "What is KVFlow?",
    "How does Cypher-RI translate natural language into Cypher, and how much does it gain?",
    "How do diffusion models reduce their sampling cost?",
    "Does KVFlow use reinforcement learning?",
    "What is the capital of France?",
    "I keep reading that they trade accuracy for memory. " * 10 + "Which optimizers do?",
]
FOLLOW_UPS = [
    "how does the second one work?",
    "compare them",
    "what else does it find?",
    "What speedup does it get on Latte?",
    "How many of these papers use RL?",
    "Which of them is fastest?",
    "Which one is faster?",
    "Which ones need no training?",
    "What are their limitations?",
    "Do they use reinforcement learning?",
    "How does it compare with KVFlow?",
    "and why?",
    "What about video generation?",
    "Does that paper release code?",
]


@pytest.mark.parametrize("question", NEW)
def test_a_question_that_names_its_subject_is_new(question: str):
    assert not is_follow_up(question)


@pytest.mark.parametrize("question", FOLLOW_UPS)
def test_a_question_that_cannot_be_searched_alone_is_a_follow_up(question: str):
    assert is_follow_up(question)


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("NEW: Which papers study Mamba?", ("new", "Which papers study Mamba?")),
        ("**FOLLOW-UP:** How does LeMiCa work?", ("follow-up", "How does LeMiCa work?")),
        ('Follow-up - "How does LeMiCa work?"', ("follow-up", "How does LeMiCa work?")),
        ("follow up question: How fast is THG?", ("follow-up", "How fast is THG?")),
        ("New methods for caching?", (None, "New methods for caching?")),  # no label
        ('"How does LeMiCa work?"', (None, "How does LeMiCa work?")),
        (None, (None, "")),
    ],
)
def test_the_chat_models_decision_is_read_from_its_reply(reply, read):
    assert read_condensed(reply) == read


def test_the_eval_sets_chat_pairs_score_the_pinned_decision(shipped, embedder, tmp_path):
    """At least four pairs in the test split (a follow-up, and a new question with a pronoun,
    after the same first question), some in dev; offline, every decision is right."""
    items = [i for i in load_eval_set(EVAL_SET) if i.pinned is not None]
    test = [i for i in items if i.split == "test"]
    assert sum(i.pinned for i in test) >= 4 and sum(not i.pinned for i in test) >= 4
    assert any(i.split == "dev" for i in items)
    assert all(len(i.history) == 1 and i.type == "chat" for i in items)
    rows = run_eval(shipped, test, OfflineJudge(embedder), tmp_path / "run")
    assert [row["metrics"]["pinned_decision"] for row in rows] == [1.0] * len(test)
    assert all(bool(row["pinned"]) == item.pinned for row, item in zip(rows, test, strict=True))
    assert aggregate(rows)["pinned_decision"] == 1.0


def test_a_reference_past_the_last_answers_papers_is_said():
    """A new user asked "How does the second one work?" after a one-paper answer: it was searched
    as a garbled query with no word that the last answer had one paper."""
    from assistant.answer.conversation import Conversation
    from assistant.answer.result import Answer, Citation

    cited = [Citation(1, "p1", "Mamba-SSM", "a.txt#1", "State space models ...")]
    conversation = Conversation()
    conversation.add(
        "Which papers study state space models?",
        "Which papers study state space models?",
        Answer(
            "Which papers study state space models?", "SSMs do X [1].", False, cited, [], "x", "x"
        ),
    )
    second = conversation.resolve("How does the second one work?")
    assert not second.pinned
    assert second.note == "the last answer cited 1 paper, so there is no paper 2 in it"
    first = conversation.resolve("How does the first one work?")
    assert first.pinned and first.note == ""
