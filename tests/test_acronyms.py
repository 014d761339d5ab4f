"""Acronyms as researchers type them: "Is the MoE model dense or sparse?" finds and answers from
a paper that only writes "mixture-of-experts", with the words read from another abstract's
definition ("mixture-of-experts (MoE)"); a paper's own acronym (THG) is its name, not a term to
spell out. Real MiniLM: how far an acronym is from its words is what this is about."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant import Assistant, load_settings
from assistant.ingest.corpus import Paper
from assistant.judge.conflicts import PaperText, find_conflict
from assistant.text.acronyms import (
    acronyms,
    common_definition,
    defined_in,
    is_acronym,
    says,
    spell,
    spelled_out,
    uses,
    with_written_out,
    writes_out,
)

ROUTING = {
    "id": "routing-2025",
    "title": "Routing experts for efficient language models",
    "year": 2025,
    "abstract": "We train a sparse mixture-of-experts language model with 64 experts, of which "
    "2 are active for each token. It matches a dense model of the same active size on "
    "reasoning benchmarks while using 40% less compute per token. Load balancing with an "
    "auxiliary loss keeps every expert in use.",
}
ALIGNMENT = {
    "id": "alignment-2024",
    "title": "Parameter-Efficient Alignment of Open Models",
    "year": 2024,
    "abstract": "Low-rank adaptation (LoRA) trains small adapter matrices while freezing the base "
    "weights. We combine LoRA with reinforcement learning from human feedback (RLHF) and show "
    "that aligning a 13-billion-parameter model with rank-16 adapters matches full fine-tuning "
    "on helpfulness ratings while updating only 0.2% of the parameters.",
}
GLIOMA = {
    "id": "glioma-2023",
    "title": "Automated Glioma Segmentation",
    "year": 2023,
    "abstract": "We present a segmentation network for magnetic resonance imaging (MRI) of "
    "gliomas. Trained on MRI scans of 480 patients, it reaches a Dice score of 0.89 on the "
    "tumour core, against 0.84 for the best earlier method.",
}
# One defines ViTs (letters from inside its words), the other only writes the words out.
PRUNING = {
    "id": "pruning-2025",
    "title": "Patch pruning for faster inference",
    "year": 2025,
    "abstract": "Vision Transformers (ViTs) split an image into patches. We prune 40% of the "
    "patches after the fourth layer and keep ImageNet accuracy within 0.3 points while "
    "running 1.6 times faster.",
}
REGISTERS = {
    "id": "registers-2024",
    "title": "Vision transformers need registers",
    "year": 2024,
    "abstract": "Large vision transformers trained without labels develop high-norm tokens in "
    "background regions. Adding four learnable register tokens removes these artifacts and "
    "improves dense prediction by 2 points mIoU.",
}
# Writes out what GLIOMA defines as MRI, and never says "MRI".
CARDIAC = {
    "id": "cardiac-2024",
    "title": "Left ventricle segmentation",
    "year": 2024,
    "abstract": "We segment the left ventricle in cardiac magnetic resonance imaging of 200 "
    "patients and reach a Dice score of 0.93 with a network a tenth the usual size.",
}
MINE = [ROUTING, ALIGNMENT, GLIOMA, PRUNING, REGISTERS, CARDIAC]


def test_what_is_an_acronym():
    assert acronyms("Is the MoE model, like LLMs with RAG and LoRA, a GNN? Mamba, ResNet, AI") == [
        "MoE",
        "LLMs",
        "RAG",
        "LoRA",
        "GNN",
        "AI",
    ]
    assert acronyms("iPSCs and mRNA, not GAN-style or COVID-19 or eBay") == ["iPSCs", "mRNA"]
    assert not is_acronym("NeurIPS") and not is_acronym("COVID-19") and not is_acronym("I")


@pytest.mark.parametrize(
    ("acronym", "text", "words"),
    [
        ("MoE", "advances of mixture-of-experts (MoE) into transformers", "mixture-of-experts"),
        ("LLMs", "Large language models (LLMs) are used", "Large language models"),
        ("LLM", "Large language models (LLMs) are used", "Large language models"),
        ("RLHF", "trained by reinforcement learning from human feedback (RLHF).", None),
        ("LoRA", "we apply Low-Rank Adaptation (LoRA) to", "Low-Rank Adaptation"),
        (
            "iPSCs",
            "Human induced pluripotent stem cells (iPSCs) were",
            "induced pluripotent stem cells",
        ),
        # letters from inside the words
        ("ViTs", "Vision Transformers (ViTs) split images", "Vision Transformers"),
        ("DiT", "we scale the diffusion transformer (DiT) to", "diffusion transformer"),
        ("ELBO", "by maximizing the evidence lower bound (ELBO)", "evidence lower bound"),
        ("SAE", "Sparse autoencoders (SAEs) split activations", "Sparse autoencoders"),
        ("MoE", "we evaluate the model (MoE) on", None),  # no words it abbreviates
        ("KV", "the cache (KV) grows", None),
    ],
)
def test_the_words_an_abstract_defines_an_acronym_by(acronym, text, words):
    found = defined_in(acronym, text)
    if acronym == "RLHF":  # the fewest words that abbreviate it, "from" given no letter
        assert found == "reinforcement learning from human feedback"
    else:
        assert found == words


def test_the_definition_most_abstracts_give_wins():
    texts = [
        "reinforcement learning (RL) for agents",
        "We study representation learning (RL) here",
        "Reinforcement learning (RL) with rewards",
        "no definition of RL at all",
    ]
    assert common_definition("RL", texts) == "reinforcement learning"
    assert common_definition("RL", ["RL without words"]) is None


def test_a_text_that_writes_the_words_out_mentions_the_acronym():
    assert spelled_out("MoE", "a sparse mixture-of-experts model")
    assert spelled_out("MoE", "a Mixture of Experts")
    assert not spelled_out("MoE", "a model evaluation")  # two capitals: every letter a word
    assert spelled_out("RLHF", "reinforcement learning from human feedback")
    assert spelled_out("MRI", "by magnetic resonance imaging of the heart")
    assert spelled_out("iPSC", "induced pluripotent stem cells")
    assert spelled_out("LoRA", "Low-Rank Adaptation of weights")
    assert not spelled_out("LoRA", "attacks such as LiRA and RMIA, at scale")  # names, "at"
    assert writes_out({"MoE": "mixture-of-experts"}, ROUTING["abstract"])
    assert not writes_out({"MoE": "mixture-of-experts"}, "a mixture-of-experts (MoEs) model")
    assert uses({"LLM": "large language models"}, "three LLMs") and not uses({"LLM": ""}, "LLMOps")
    assert says("Mixture of Experts", "a sparse mixture-of-experts model")
    assert says("vision transformers", "a vision transformer") and says("GNN", "three GNNs")
    assert not says("vision transformer", "vision transformations")
    # the store's definition counts where initials do not ("ViT": V and T, one i inside)
    written = with_written_out(
        "Do ViTs scale?", "large vision transformers", {"ViTs": "vision transformers"}
    )
    assert written.endswith(" ViTs")
    assert (
        with_written_out("Do ViTs scale?", "large vision transformers")
        == "large vision transformers"
    )
    # where the store defines it, its words decide; initials of common words never count
    defined = {"MoE": "mixture-of-experts", "ViTs": "vision transformers"}
    common = "it matches or exceeds variational inference techniques"
    assert with_written_out("MoE or ViTs?", common, defined) == common
    assert not spelled_out("MoE", "it matches or exceeds the baseline")
    assert with_written_out("Which papers use GNNs?", "a GNN").endswith(" GNNs")  # either number
    assert not spelled_out("ViT", "we use variational inference that scales")


def test_the_question_is_spelled_out_once():
    words = {"MoE": "mixture-of-experts", "RL": r"reinforcement learning \1"}
    asked = "Is the MoE model sparse, and is MoE trained by RL?"
    spelled = spell(asked, words)
    assert spelled == (
        r"Is the MoE (mixture-of-experts) model sparse, and is MoE trained by RL "
        r"(reinforcement learning \1)?"
    )
    assert spell(spelled, words) == spelled  # written out already: left as it is
    assert spell("Is the Mixture of Experts MoE sparse?", words) == (
        "Is the Mixture of Experts MoE sparse?"
    )
    assert spell("MoEs and SMoE", words) == "MoEs and SMoE"  # not the token


def test_a_claim_about_the_moe_model_is_not_a_name_conflict():
    cited = [PaperText(ROUTING["abstract"], ROUTING["title"])]
    assert find_conflict("The MoE model activates 2 of its 64 experts [1].", cited) is None
    conflict = find_conflict("The MoE model uses the GaLore optimizer [1].", cited)
    assert conflict is not None and "GaLore" in conflict.reason


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder, corpus_papers: list[Paper]) -> Path:
    """T2MIR (which defines MoE), THG (whose name is an acronym), a sparse/dense distractor and
    a few more from the shipped corpus, and the routing paper, which never says "MoE"."""
    folder = tmp_path_factory.mktemp("acronyms")
    wanted = ("T2MIR", "THG", "Encoding models based on word embeddings", "KVFlow", "LeMiCa")
    picked = [p for p in corpus_papers if p.label in wanted]
    assert len(picked) == len(wanted)
    rows = [{"id": p.paper_id, "title": p.title or p.label, "abstract": p.abstract} for p in picked]
    (folder / "papers.jsonl").write_text("\n".join(map(json.dumps, [*rows, *MINE])) + "\n")
    path = folder / "store"
    with Assistant(load_settings(store={"path": path}), embedder=embedder) as assistant:
        assert assistant.ingest([folder / "papers.jsonl"]).added == len(wanted) + len(MINE)
    return path


@pytest.fixture()
def library(store: Path, embedder) -> Iterator[Assistant]:
    with Assistant(load_settings(store={"path": store}), embedder=embedder) as assistant:
        yield assistant


def test_the_store_defines_the_acronym_but_not_a_papers_name(library):
    assert library.definitions("Is the MoE model dense or sparse?") == {"MoE": "mixture-of-experts"}
    # typed in capitals, as the abstract's "(MoE)" defines it
    assert library.definitions("Is the MOE model sparse?") == {"MOE": "mixture-of-experts"}
    assert library.definitions("What does THG speed up?") == {}  # the paper's name
    assert library.definitions("Does the mixture-of-experts (MoE) model scale?") == {}
    # an acronym a paper defines and uses is no name of it; the initials of "reduce latency"
    # do not write RL out
    assert library.definitions("Which MRI study reached a Dice score?") == {
        "MRI": "magnetic resonance imaging"
    }
    assert library.definitions("Which RLHF methods reduce latency?") == {
        "RLHF": "reinforcement learning from human feedback"
    }


def test_a_paper_that_only_writes_the_words_is_found_and_answers(library):
    hits = library.search("Is the MoE model dense or sparse?", k=3)
    assert hits[0].label == ROUTING["title"]
    assert (hits[0].similarity or 0) >= library.settings.llm.min_similarity
    answer = library.ask("Is the MoE model dense or sparse?")
    assert not answer.refused, answer.text
    assert [c.label for c in answer.citations] == [ROUTING["title"]]
    assert "sparse mixture-of-experts" in answer.text


def test_a_survey_of_an_acronym_cites_the_papers_that_write_it_out(library):
    answer = library.ask("Which papers use MoE?")
    assert {c.label for c in answer.citations} == {"T2MIR", ROUTING["title"]}


def test_a_survey_cites_the_paper_that_writes_out_what_the_store_defines(library):
    """ViTs is "Vision Transformers" with the i from inside "Vision": no abstract defined it
    before, so the survey cited only the paper that says "ViTs" (and, on a store without it,
    only a paper on patches)."""
    assert library.definitions("Which papers study ViTs?") == {"ViTs": "vision transformers"}
    answer = library.ask("Which papers study ViTs?")
    assert {c.label for c in answer.citations} == {PRUNING["title"], REGISTERS["title"]}
    # the abstract's sentence, not its title, which says the words too
    assert "Large vision transformers trained without labels" in answer.text
    assert f"{REGISTERS['title']} [" not in answer.text


@pytest.mark.parametrize("question", ["Which papers use MRI?", "Which papers use MRIs?"])
def test_a_survey_of_a_capitals_acronym_cites_the_paper_that_writes_it_out(library, question):
    """A CamelCase acronym (MoE, ViTs) was a survey's literal condition and an all-capitals
    one was not: "Which papers use MRI?" cited the glioma paper only, by the survey bar."""
    answer = library.ask(question)
    assert {c.label for c in answer.citations} == {GLIOMA["title"], CARDIAC["title"]}


def test_a_paper_that_defines_the_acronym_it_uses_answers_for_it(library):
    """ "Which papers study RLHF?" was refused: the paper says "(RLHF)", which the embedder
    puts far from the question, and its acronym was taken for the paper's name."""
    answer = library.ask("Which papers study RLHF?")
    assert not answer.refused, answer.text
    assert [c.label for c in answer.citations] == [ALIGNMENT["title"]]
    answer = library.ask("What Dice score did the MRI glioma segmentation reach?")
    assert not answer.refused and "0.89" in answer.text


def test_a_definition_is_looked_up_once_until_the_store_changes(store, embedder, tmp_path):
    """A question asks for its acronyms' definitions for each part and topic, and its answer
    once more: the store is read once per acronym, and again once another writer (here a
    second Assistant, as another process would) has changed the store."""
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    settings = load_settings(store={"path": copy})
    with Assistant(settings, embedder=embedder) as reader:
        lookups: list[str] = []
        lexical = reader.store.lexical

        def counted(query: str, *args: Any) -> Any:
            lookups.append(query)
            return lexical(query, *args)

        reader.store.lexical = counted  # type: ignore[method-assign]
        for _ in range(3):
            assert reader.definitions("Which GNN reads molecules best?") == {}
        assert lookups == ["GNN GNNs"]
        papers = tmp_path / "gnn.jsonl"
        row = {
            "id": "gnn-2025",
            "title": "Message passing for molecules",
            "abstract": "Graph neural networks (GNNs) predict the properties of molecules; we "
            "find that a GNN with edge features halves the error on solubility.",
        }
        papers.write_text(json.dumps(row) + "\n")
        with Assistant(settings, embedder=embedder) as writer:
            assert writer.ingest([papers]).added == 1
        assert reader.definitions("Which GNN reads molecules best?") == {
            "GNN": "graph neural networks"
        }
        assert lookups == ["GNN GNNs", "GNN GNNs"]


@pytest.mark.parametrize(
    ("question", "definition"),
    [
        ("What is RLHF?", "reinforcement learning from human feedback (RLHF)"),
        ("What are LLMs?", "(LLM"),
        ("What is NFE?", "number of function evaluations (NFE)"),
    ],
)
def test_what_an_acronym_is_is_answered_by_the_sentence_defining_it(library, question, definition):
    """ "What is DPO?" was refused (0.24 to the abstract that introduces direct preference
    optimization, under the bar); now a question that asks what an acronym is, and nothing
    else, is answered by the sentence of each retrieved paper that defines it."""
    answer = library.ask(question)
    assert not answer.refused, answer.text
    assert definition in answer.text


def test_what_an_acronym_no_paper_defines_is_still_refused(library):
    assert library.ask("What is FDA?").refused
    assert library.ask("What is the ELBO?").refused  # no abstract here uses it
    # used ("2 points mIoU"), never defined: no abstract says what it is
    assert library.ask("What is mIoU?").refused
    assert library.ask("What is the FDA approval status of the MRI network?").refused
