"""Focused offline answers (#12): one paper for a one-paper question, every qualifying paper for a
"which papers" question, and a refusal when the paper asked about does not state what is asked.

Each case below failed before: the answer padded a single-paper question with quotes from an
unrelated paper, or quoted around a detail the abstract never gives."""

from __future__ import annotations

import pytest

from assistant.answer.offline.quantities import (
    counted_terms,
    counts_without_naming,
    has_value,
    measured_terms,
    measures,
    states_count,
    states_value,
)
from assistant.answer.offline.question import asked_terms, coverage, idf_weights, is_survey, surface
from assistant.answer.offline.survey_bar import SurveyBar, shipped_bar
from assistant.answer.result import CANNOT_ANSWER


@pytest.mark.parametrize(
    ("question", "label"),
    [
        # Before: also quoted an MNL sentence of raw LaTeX.
        (
            "By how much does Tortoise and Hare Guidance reduce the number of function "
            "evaluations?",
            "THG",
        ),
        # Before: also cited AutoSEP.
        ("How many images are in AutoOpt-11k and how many experts created it?", "AutoOpt-11k"),
        # A paraphrase sharing few words with its abstract; before: four papers cited.
        ("Turning photos of optimisation formulas into code a solver can run", "AutoOpt-11k"),
    ],
)
def test_a_one_paper_question_cites_that_paper_only(shipped, question, label):
    answer = shipped.ask(question)
    assert not answer.refused
    assert [c.label for c in answer.citations] == [label]


@pytest.mark.parametrize(
    ("question", "missing"),
    [
        ("How many GPUs were used to train STARFlow?", "GPUs"),
        ("What learning rate was used to train KVFlow?", "rate"),
        ("Which country were the CleverBirds participants from?", "country"),
    ],
)
def test_a_detail_the_abstract_does_not_state_is_refused(shipped, question, missing):
    """Before: three STARFlow sentences (and KVFlow and Wan-Move quotes) 'answered' the GPUs."""
    answer = shipped.ask(question)
    assert answer.refused and answer.text.startswith(CANNOT_ANSWER)
    assert answer.citations == [] and "Nearest abstracts found" in answer.text
    # The warning says what the abstract lacks ("gives no number of GPUs", "does not mention").
    assert any("the closest abstract" in w and missing in w for w in answer.warnings)


def test_a_question_about_what_no_abstract_names_is_refused_though_one_paper_stands_out(shipped):
    """Bubbleformer stands far ahead in the search on "boiling", and standing out used to say
    the question was about it in other words: it was quoted. "Mercury" is in no abstract."""
    answer = shipped.ask("What is the boiling point of mercury?")
    assert answer.refused and answer.citations == []
    assert any("«Bubbleformer»" in w and "mercury" in w for w in answer.warnings)


@pytest.mark.parametrize(
    ("question", "label"),
    [
        (
            "How do the tails of the excess risk behave when bagging keeps the modal model?",
            "Ensemble learning",
        ),
        (
            "Under a cap on the number of update steps, how close to optimal is the error of "
            "sequentially fitted noiseless linear regressions in random order?",
            "Realizable continual linear regression",
        ),
    ],
)
def test_a_question_worded_unlike_its_abstract_is_answered_when_search_singles_it_out(
    shipped, question, label
):
    """Few of the question's words are in the abstract, and no sentence is close, but the search
    puts the paper far ahead of the rest. Before: refused ("does not mention: ...")."""
    answer = shipped.ask(question)
    assert not answer.refused
    assert [c.label for c in answer.citations] == [label]


@pytest.mark.parametrize(
    "question",
    [
        "What does the PurpCode-32B API cost per million tokens?",
        "How many parameters does STARFlow-v2 have?",
    ],
)
def test_a_name_with_a_size_or_version_names_the_paper(shipped, question):
    """The paper stands out in the search, but it is named ("-32B", "-v2" are not another
    word), so it must state what is asked, and it does not."""
    answer = shipped.ask(question)
    assert answer.refused and answer.citations == []


def test_a_size_or_version_suffix_is_not_any_number(shipped):
    hits = {h.label: h for h in shipped.search("PurpCode BASE safety alignment", k=10)}
    purpcode = hits["PurpCode"]
    for named in ("PurpCode-32B", "PurpCode-32B-Instruct", "PurpCode-1.5b", "PurpCode-v2"):
        assert purpcode.named_in(f"How was {named} trained?"), named
    for other in ("PurpCode-based tools", "PurpCode-2", "PurpCodeX"):
        assert not purpcode.named_in(f"How were {other} trained?"), other


@pytest.mark.parametrize(
    "question",
    [
        "Which company funded the robot copycat policy that keeps actions as real numbers?",
        "Which Linux distribution did the dash-cam crash-reasoning pipeline run on?",
    ],
)
def test_a_paper_singled_out_must_still_name_the_kind_of_thing_asked(shipped, question):
    """The search finds the paper far ahead of the rest, but "which company" is not answered
    by an abstract that names no company. Found by a reviewer: before, quotes of that paper."""
    answer = shipped.ask(question)
    assert answer.refused and answer.citations == []


def test_near_domain_off_topic_questions_are_refused(shipped):
    """ML vocabulary, but no abstract is about it; before: five unrelated bullets."""
    for question in (
        "Which papers improve speech recognition for low-resource languages?",
        "Which papers use AlphaFold to predict protein structures?",
    ):
        answer = shipped.ask(question)
        assert answer.refused and answer.citations == [], question


def test_a_survey_question_quotes_every_qualifying_paper(shipped):
    answer = shipped.ask("Which papers are about image segmentation?")
    assert {"GaRA-SAM", "Seg-VAR"} <= {c.label for c in answer.citations}
    assert len(answer.retrieved) == 30  # "which papers": 3 x survey_k candidates, not -k's 5
    words = shipped.ask("Which papers explain properties of word embeddings such as word2vec?")
    cited = {c.label for c in words.citations}
    assert {"Models such as Word2Vec and GloVe"} <= cited and "analogy" in words.text
    assert any(label.startswith("Self-supervised word embedding") for label in cited)
    assert len(cited) <= 3  # the relevance bar, not a fixed k of 10


def test_asked_terms_leave_out_question_words_and_names():
    assert asked_terms("How many GPUs were used to train STARFlow?", ["STARFlow"]) == [
        "gpus",
        "train",
    ]
    assert is_survey("Which papers study KV-cache eviction?")
    assert is_survey("Are there papers on soil moisture?")
    assert not is_survey("What does KVFlow replace LRU eviction with?")


def test_coverage_weighs_rare_terms_over_common_ones():
    def rarity(terms: list[str]) -> tuple[dict[str, int], int]:
        return {"gpus": 2, "train": 43}, 95

    weights = idf_weights(["gpus", "train"], rarity)
    assert weights["gpus"] > 3 * weights["train"]
    text = "STARFlow is trained at scale on image and text data."
    assert coverage(["gpus", "train"], weights, text) < 0.25  # "train" alone is not the ask
    assert coverage(["gpus", "train"], weights, text + " It used 256 GPUs.") == 1.0
    assert coverage([], weights, text) == 1.0  # nothing asked beyond names


def test_a_price_asked_for_is_a_measure_a_compute_cost_is_not():
    """ "How much did the R21 vaccine cost per dose?" was answered with its efficacy, without
    a word that the abstract gives no price."""
    assert measures("How much did the R21 vaccine cost per dose?") == ["cost"]
    assert measures("What is the price of one turbine?") == ["cost"]
    assert measured_terms("What is the price of one turbine?") == ["cost", "price", "dollar"]
    assert measures("What was the training cost of the protein model?") == []
    assert measures("What computational cost does it have?") == []
    assert not states_value(["cost"], ["It reduced malaria by 75%."])
    assert states_value(["cost", "price"], ["Each dose costs 3.90 US dollars."])


def test_a_count_is_a_whole_number_not_a_unit_or_a_ratio():
    counted = [["video"]]
    gpus = "We train on 25 GPUs."  # a count, of something else
    assert not states_count(counted, [gpus, "It makes 5-second, 480p videos like Kling 1.5 Pro."])
    assert not states_count(counted, ["NautData holds 1.45M image-text pairs."])
    assert states_count(counted, [gpus, "MoveBench holds 1018 videos.", gpus])
    assert states_count(counted, [gpus, "MoveBench holds 1,018 videos", gpus])
    assert states_count([["pair"]], ["We release 1.2M image pairs.", gpus])
    assert states_count([["paramet"]], ["Our 7B-parameter model wins.", gpus])
    # a count joined to what it counts (a user's "how many qubits?" was refused)
    assert states_count([["qubit"]], ["We ran it on a 72-qubit superconducting processor."])
    assert states_count([["imag"]], ["A 1,000-image test set."])
    assert not states_count([["qubit"]], ["A 2-stage method for 0.5-qubit noise."])
    # people by another of their names (a user's "how many participants" was refused)
    adults = "In a trial, 2,400 healthy adults received vitamin D or placebo."
    assert states_count(counted_terms("How many participants were in the trial?"), [adults])
    assert not states_count(counted_terms("How many hospitals took part?"), [adults])
    assert not states_count(
        [["token"]], ["Zipf's law gives $1/k$ for tokens.", "It is one of the best."]
    )
    # A list marker counts nothing (dev q100, "How many questions do the FreshStack datasets
    # contain?", was answered from one).
    steps = "It runs (1) corpus collection and (2) nuggets from community-asked questions."
    assert not states_count([["question"]], [steps, "and 3) a check of the questions"])
    assert states_count([["question"]], [steps, "It holds 25 questions (12 topics)."])


def test_which_three_things_is_answered_by_naming_them_not_by_counting_them():
    question = "Which three open-source LLMs does GeCCo use?"
    counted = "We benchmark it using three open-source LLMs, spanning different model sizes."
    assert counts_without_naming(question, ["GeCCo prompts an LLM.", counted])
    listed = "We use three open-source LLMs: Llama, Qwen and Gemma."
    assert not counts_without_naming(question, [listed])
    names = "Our models are Llama-3-8B, Qwen2.5-7B and Gemma-2."
    assert not counts_without_naming(question, [counted, names])
    # Not restated, so not judged: the names may be words the question does not use.
    mcd = "MCD integrates a pretrained language model with an evil model and a truthful model."
    assert not counts_without_naming("Which three models does MCD combine?", [mcd])
    schemes = "We analyze two frequently used regularization schemes: (1) explicit l2 ..."
    assert not counts_without_naming("Which two regularization schemes are shown?", [schemes])
    assert not counts_without_naming("How many LLMs does GeCCo use?", [counted])


def test_a_value_is_not_a_label_or_a_year():
    assert has_value("GPLQ is 100x faster than QAT.") and has_value("up to 2.19× speedup")
    assert has_value("reduces NFE by up to 30%")
    assert not has_value("Stage 2 quantizes weights using a PTQ method.")
    assert not has_value("as in (Oh and Iyengar, 2021) and Littman 1994")
    assert not has_value("quantizing to 4-bit keeps FP32 accuracy")
    assert not has_value("It runs (1) collection, (2) generation and (3) support.")
    assert has_value("reaches $86.49$% accuracy") and has_value("a $0.82$ F1")
    assert not states_value(measured_terms("What BLEU score?"), ["an LPIPS score of 0.05"])


def test_a_measured_value_needs_the_measure_and_a_number_in_one_sentence():
    assert measured_terms("What ImageNet top-1 accuracy does GPLQ reach?") == ["accuraci"]
    assert measured_terms("What speedup does GPLQ achieve over QAT methods?")[0] == "speedup"
    assert states_value(measured_terms("What speedup?"), ["GPLQ is 100x faster than QAT."])
    assert measured_terms("What BLEU score does M1 reach?") == ["bleu"]
    for no_value in (
        "How does GPLQ work?",
        "What error accumulation does LeMiCa address?",
        "What improvement does SWIFT bring over SPIN?",
        "What score function does MultALMC estimate?",
        "What accuracy bounds does EPIC derive?",
    ):
        assert measured_terms(no_value) == [], no_value
    no_value = ["M1 outperforms ChatGPT, Gemini and Nougat on BLEU score metric."]
    assert not states_value(["bleu"], no_value)
    assert states_value(["bleu"], ["M1 reaches a BLEU score of 0.87."])
    assert not states_value(["accuraci"], ["Its 4-bit model keeps FP32 accuracy."])
    assert surface("What top-1 accuracy?", ["accuraci"]) == ["accuracy"]


@pytest.mark.parametrize(
    ("question", "says"),
    [
        # Before: quoted three AutoOpt sentences, none with a score.
        ("What BLEU score does AutoOpt's image-to-LaTeX module achieve?", "no value of BLEU"),
        # Before: answered with the paper's year.
        ("When was the THG source code first released?", "does not mention"),
        # EPIC's abstract has no figure at all; before: two EPIC sentences without one.
        (
            "By what percentage does EPIC reduce computational cost compared with standard "
            "aggregation methods?",
            "gives no figures",
        ),
        # GeCCo's abstract says "using three open-source LLMs, spanning different model
        # sizes"; before: that sentence answered "which three".
        (
            "Which three open-source LLMs does GeCCo use to generate cognitive models?",
            "counts three open-source LLMs but names none",
        ),
    ],
)
def test_a_detail_no_abstract_gives_is_refused(shipped, question, says):
    answer = shipped.ask(question)
    assert answer.refused and answer.citations == []
    assert any(says in w for w in answer.warnings), answer.warnings


def test_a_how_much_answer_keeps_the_number(shipped):
    # A paraphrase of "By how much does THG reduce NFE?"; before: three THG sentences, no 30%.
    answer = shipped.ask(
        "If the extra CFG term is integrated only on a coarse timestep grid, how much cheaper "
        "does diffusion sampling get?"
    )
    assert [c.label for c in answer.citations] == ["THG"] and "30%" in answer.text


def test_the_survey_bar_finds_a_paper_far_below_the_best_sentence(shipped):
    # MAIL-BRO's best sentence scores 0.22 under the best one: the margin rule (0.12) left it
    # out; both retrievers rank it second, which the bar weighs.
    answer = shipped.ask("Which papers study Nash equilibria?")
    cited = {c.label for c in answer.citations}
    assert {"Strategic behavior of project proposers", "MAIL-BRO and MURMAIL"} <= cited
    assert len(cited) <= 3


def test_a_survey_whose_alternatives_are_spread_over_its_papers_is_answered(shipped):
    # The likeliest paper alone mentions under half of what is asked (Boolean circuits, not
    # sorting or shortest paths); with the other paper it would cite, more than half. Before:
    # refused ("does not mention: train, synthetic, sorting, graph, shortest, paths").
    answer = shipped.ask(
        "Which papers train transformers on synthetic algorithmic tasks, such as sorting, graph "
        "shortest paths or finite automata, to study how they learn or generalize?"
    )
    assert not answer.refused
    cited = {c.label for c in answer.citations}
    assert {"Expressivity of Transformer models in simulating Boolean circuits"} <= cited
    assert "Length generalization" in cited
    # A survey no paper is about is still refused, naming what the papers lack.
    alphafold = shipped.ask("Which papers use AlphaFold to predict protein structures?")
    assert alphafold.refused
    assert any("does not mention: AlphaFold, protein" in w for w in alphafold.warnings)


def test_a_follow_up_about_a_pinned_paper_is_refused_when_it_lacks_the_figure(shipped):
    # The conversation pins Wan-Move; before, pinned papers skipped every check and the answer
    # quoted "5-second, 480p videos".
    answer = shipped.ask("Tell me about Wan-Move.")
    pinned = {"paper_id": [c.paper_id for c in answer.citations]}
    follow = shipped.ask("What BLEU score does Wan-Move reach?", filters=pinned)
    assert follow.refused and any("no value of BLEU" in w for w in follow.warnings)
    counted = shipped.ask("How many videos does it make?", filters=pinned)
    assert counted.refused and any("no number of videos" in w for w in counted.warnings)
    # A pinned paper is the one asked about, as if named: it must mention what is asked.
    kvflow = {"paper_id": [c.paper_id for c in shipped.ask("What is KVFlow?").citations]}
    rate = shipped.ask("What learning rate was used to train it?", filters=kvflow)
    assert rate.refused and any("no value of learning rate" in w for w in rate.warnings)
    speedup = shipped.ask("What speedup does it achieve?", filters=kvflow)
    assert not speedup.refused and "2.19" in speedup.text


def test_the_survey_bar_works_with_a_retriever_switched_off(shipped_store):
    from assistant.core import Assistant
    from assistant.settings import load_settings

    settings = load_settings(store={"path": shipped_store}, retrieval={"lexical_weight": 0})
    with Assistant(settings) as assistant:
        answer = assistant.ask("Which papers explain properties of word embeddings?")
    assert not answer.refused
    assert "Models such as Word2Vec and GloVe" in {c.label for c in answer.citations}


def test_the_survey_bar_refuses_a_model_fitted_on_other_features():
    data = shipped_bar().to_json()
    data["features"] = ["something", "else"]
    with pytest.raises(ValueError, match="refit"):
        SurveyBar.from_json(data)


def test_either_name_of_a_paired_label_names_the_paper(shipped):
    # «MultALMC and MultCDiff»: before, neither name was recognised, and the question was
    # refused with another paper blamed.
    answer = shipped.ask("What score function does MultALMC estimate?")
    assert not answer.refused
    assert [c.label for c in answer.citations] == ["MultALMC and MultCDiff"]


def test_a_paper_without_quotable_sentences_does_not_crash_the_checks(fresh, tmp_path):
    data = tmp_path / "tiny.jsonl"
    data.write_text(
        '{"title": "ZorbNet: Tiny", "abstract": "ZorbNet works. It is fast. Very small."}\n'
    )
    fresh.ingest([data])
    for question in ("What does ZorbNet do?", "How many layers does ZorbNet have?"):
        fresh.ask(question)  # answered or refused, but no traceback
