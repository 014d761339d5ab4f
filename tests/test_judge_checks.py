"""Issue #35: the exact checks (numbers, names, negations, bounds), the one decision every path
uses, and the perturbations the benchmark builds. Before, a changed number, another paper's name
or "does not improve" was marked ✓ nearly every time."""

from __future__ import annotations

import pytest
from rich.console import Console

from assistant.answer.result import Answer
from assistant.cli.render import support_lines
from assistant.eval.faithfulness import faithfulness
from assistant.judge.conflicts import PaperText, find_conflict
from assistant.judge.judges import OfflineJudge
from assistant.judge.names import claim_names, missing_names, occurs
from assistant.judge.numbers import dropped_bounds, quantities, unstated
from assistant.judge.reversal import reversal
from assistant.judge.verify import Verifier, judgement
from assistant.text.acronyms import spelled_out
from evals.judge.perturbations import cases, change_number, drop_qualifier, negate, swap_name

KVFLOW = PaperText(
    "We present KVFlow, a workflow-aware KV cache management framework tailored for agentic "
    "workloads. Compared to SGLang with hierarchical radix cache, KVFlow achieves up to "
    "1.83$\\times$ speedup for single workflows with large prompts, and up to 2.19× speedup for "
    "scenarios with many concurrent workflows. It improves throughput on 412 stations.",
    "KVFlow",
)
STARFLOW = PaperText(
    "We present STARFlow, a scalable generative model based on normalizing flows.", "STARFlow"
)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("up to $1.83\\times$ and 83\\% on 1,238 stations", [(1.83, "×"), (83, "%"), (1238, "")]),
        ("$\\sim$2× faster, a two-fold gain, 0.5 percent", [(2, "×"), (0.5, "%"), (2, "×")]),
        ("1.83x and 10–20% in 2025", [(1.83, "×"), (10, ""), (20, "%")]),
        ("Llama-3 on CIFAR-10, top-1, 3-kinase, MEK 1/2, item (2)", []),
    ],
)
def test_numbers_are_read_in_their_written_and_latex_forms(text, values):
    assert [(q.value, q.kind) for q in quantities(text)] == values


def test_a_number_no_source_gives_is_named():
    sources = [KVFLOW.text]
    assert unstated("KVFlow achieves up to 1.83x speedup [1].", sources) == []
    assert unstated("KVFlow reaches about 1.8× speedup [1].", sources) == []  # rounded
    assert unstated("KVFlow achieves up to 5.49× speedup [1].", sources) == ["5.49×"]
    assert unstated("It improves throughput on 1,238 stations [1].", sources) == ["1,238"]
    assert unstated("Its attack success rate is 90% [1].", sources) == ["90%"]
    assert unstated("KVFlow helps [1][2, 3].", sources) == []  # markers are not numbers


def test_a_dropped_up_to_overstates_the_source():
    assert dropped_bounds("KVFlow achieves a 1.83× speedup.", [KVFLOW.text]) == ["up to 1.83×"]
    assert dropped_bounds("KVFlow achieves up to 1.83× speedup.", [KVFLOW.text]) == []


def test_names_are_found_in_their_forms():
    assert claim_names("STARFlow beats SGLang [1]; Neural Stem Cell (NSC) works") == [
        "STARFlow",
        "SGLang",
    ]
    assert occurs("KV-cache", "the KV cache") and occurs("STARFlow", "STARFlow-V is")
    assert not occurs("KVFlow", "KVFlowX")
    assert spelled_out("MRI", "by magnetic resonance imaging of the heart")
    assert missing_names("STARFlow achieves up to 1.83× speedup", [KVFLOW]) == ["STARFlow"]


def test_negations_and_reversals_of_the_cited_sentence():
    sentences = [
        "KVFlow achieves up to 1.83× speedup over SGLang.",
        "It is better than LRU eviction.",
    ]
    assert reversal("KVFlow achieves up to 1.83× speedup over SGLang.", sentences) is None
    assert "negates" in (reversal("KVFlow does not achieve speedup over SGLang.", sentences) or "")
    assert "'worse'" in (reversal("It is worse than LRU eviction.", sentences) or "")
    assert reversal("KVFlow does not use GPUs in Antarctica.", sentences) is None  # not the same


def test_conflicts_say_which_number_and_whose_name():
    papers = [KVFLOW, STARFLOW]
    number = find_conflict("KVFlow achieves up to 5.49× speedup [1].", [KVFLOW], papers)
    assert number and number.kind == "number" and "5.49×" in number.reason
    name = find_conflict("STARFlow achieves up to 1.83× speedup [1].", [KVFLOW], papers)
    assert name and name.kind == "name" and "STARFlow is another retrieved paper" in name.reason
    assert find_conflict("KVFlow achieves up to 1.83× speedup [1].", [KVFLOW], papers) is None
    bound = find_conflict("KVFlow achieves 1.83× speedup [1].", [KVFLOW], papers)
    assert bound and bound.severity == "weak"


def test_perturbations_change_one_thing():
    sentence = "KVFlow achieves up to 1.83× speedup and improves throughput."
    assert change_number(sentence, KVFLOW.text) == sentence.replace("1.83", "5.49")
    assert negate(sentence) == sentence.replace("achieves", "does not achieve")
    assert drop_qualifier(sentence) == sentence.replace(" up to", "")
    assert swap_name(sentence, "KVFlow", "STARFlow") == sentence.replace("KVFlow", "STARFlow")
    made = list(cases([KVFLOW, STARFLOW], per_kind=5))
    kinds = {c.kind for c in made}
    assert {"original", "number", "negation", "qualifier", "name"} <= kinds
    assert all(c.claim in KVFLOW.text + STARFLOW.text for c in made if c.kind == "original")


@pytest.fixture(scope="module")
def judge(embedder):
    return OfflineJudge(embedder)


def test_the_decision_catches_what_the_judge_alone_accepts(judge):
    papers = (KVFLOW, STARFLOW)
    true = "KVFlow achieves up to 1.83× speedup for single workflows with large prompts"
    wrong = {
        "number": true.replace("1.83", "5.49"),
        "name": true.replace("KVFlow", "STARFlow"),
        "negation": true.replace("achieves", "does not achieve"),
    }
    assert judgement(judge, true, [KVFLOW], papers).verdict == "supported"
    for kind, claim in wrong.items():
        if kind != "negation":  # the blind spot: the judge alone calls these supported
            assert judge.support(claim, [KVFLOW.text]) >= judge.threshold, kind
        found = judgement(judge, claim, [KVFLOW], papers)
        assert found.verdict == "unsupported" and found.reason, kind
        assert found.score < judge.threshold


def test_a_quote_led_by_its_papers_title_is_judged_without_the_title(judge):
    """The extractive answer leads a quote with the cited paper's label, here a whole title:
    its words are not the claim ("No-Till" is no negation, a long title no dilution); a lead
    naming a paper the sentence does not cite is still told."""
    quote = (
        "In a twenty-year field trial we find that no-till increased carbon in the top 10 cm "
        "by 8% but decreased it below 30 cm, so that total profile carbon did not differ "
        "significantly from ploughed plots."
    )
    title = "Soil Carbon Loss under No-Till Farming: A Twenty-Year Field Trial"
    soil = PaperText(f"We compare tillage regimes. {quote}", title)
    found = judgement(judge, f"{title}: {quote} [1]", [soil], (soil, KVFLOW))
    assert found.verdict == "supported" and not found.reason, found
    assert judgement(judge, f"- {title}: {quote}", [soil]).verdict == "supported"
    borrowed = judgement(judge, f"STARFlow: {quote}", [soil], (soil, STARFLOW))
    assert borrowed.verdict == "unsupported" and "STARFlow" in borrowed.reason
    negated = quote.replace("increased carbon", "did not increase carbon")
    assert judgement(judge, f"{title}: {negated}", [soil]).verdict == "unsupported"


def test_marks_and_eval_faithfulness_are_one_decision(judge):
    answer = (
        "KVFlow achieves up to 1.83× speedup for single workflows with large prompts [1]. "
        "STARFlow achieves up to 1.83× speedup for single workflows [1]. "
        "KVFlow achieves 1.83× speedup for single workflows with large prompts [1]."
    )
    checks = Verifier(judge).check(answer, {1: KVFLOW.text}, papers=[KVFLOW, STARFLOW])
    assert [c.verdict for c in checks] == ["supported", "unsupported", "weak"]
    assert (
        "STARFlow is another retrieved paper, not KVFlow" in checks[1].reason
        and checks[1].to_json()["reason"]
    )
    faith = faithfulness(answer, {1: KVFLOW.text}, [KVFLOW, STARFLOW], judge)
    assert [c.verdict for c in faith.checks] == [c.verdict for c in checks]
    assert faith.score_cited == pytest.approx(1 / 3)
    assert faith.share_unsupported == pytest.approx(1 / 3)
    assert faith.share_weak == pytest.approx(1 / 3)


def test_explain_says_which_number_and_whose_name(judge):
    answer = Answer("q", "", False, [], [], "openai", "m")
    text = "KVFlow achieves up to 5.49× speedup [1]. STARFlow achieves up to 1.83× speedup [1]."
    answer.checks = Verifier(judge).check(text, {1: KVFLOW.text}, papers=[KVFLOW, STARFLOW])
    console = Console(record=True, width=200)
    support_lines(console, answer, explain=True)
    shown = console.export_text()
    assert "why: no cited source gives 5.49×" in shown
    assert "why: STARFlow is another retrieved paper, not KVFlow" in shown
