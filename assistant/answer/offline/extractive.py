"""The offline default: no LLM. It answers by quoting the abstract sentences that best answer
the question, each cited, so every claim is faithful by construction.

Sentence score = cosine(question, sentence) with MiniLM + 0.25 x the share of the question's terms
the sentence contains + 0.05 when it states a contribution ("we propose", "we show") + 0.08 when the
question asks for a quantity and the sentence has a number - 0.15 for an abstract's opening sentence
that states no contribution (it restates the problem) + a small bonus for better-ranked papers.
Papers are chosen first: the ones a single-paper question names, else the one the search put far
ahead of the rest, else those whose best sentence is within a margin of the best one; for "which
papers ..." those the survey bar (``assistant.answer.offline.survey_bar``) finds likely enough, and
a refusal when none is. The score chooses papers; which of a chosen paper's sentences to quote is
the answer model's (``assistant.answer.offline.answering``: the sentence that answers, not the one
that restates the question). Each chosen paper gets its likeliest sentence; more are added greedily
with a redundancy penalty (maximal marginal relevance), only sentences within ``answer_margin``
log-odds of their paper's likeliest, at most three per paper (two in a survey), printed paper by
paper in source order and, within a paper, in the abstract's own order. When the paper asked about
does not mention what the question asks for (``assistant.answer.offline.question``), and neither a
sentence matches closely nor the search singles the paper out, the answer is a refusal that says
which terms are missing, not quotes around it.
Questions about a paper's authors, link, year or venue are answered from its stored metadata
instead (``assistant.answer.offline.metadata``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import Literal

import numpy as np

from assistant.answer.offline.answering import AnswerModel, log_odds, shipped_model
from assistant.answer.offline.metadata import answer as answer_from_metadata
from assistant.answer.offline.metadata import parse as metadata_question
from assistant.answer.offline.parts import (
    Part,
    alternatives,
    asked_about_acronym,
    asked_acronym,
    asks_definition,
    defines,
    expansion,
    holds,
    literal_terms,
    presents,
    refers_back,
    split,
    topic_of,
)
from assistant.answer.offline.quantities import (
    asks_figure,
    asks_quantity,
    counted_terms,
    counts_without_naming,
    has_value,
    measured_terms,
    measures,
    said_of_people,
    states_count,
    states_value,
)
from assistant.answer.offline.question import (
    Rarity,
    asked_kind,
    asked_terms,
    coverage,
    idf_weights,
    is_survey,
    mentions,
    surface,
    topic_terms,
)
from assistant.answer.offline.quotes import quotes
from assistant.answer.offline.survey_bar import SurveyBar, features, ranks, shipped_bar
from assistant.answer.provider import Piece, Provider, StreamWarning
from assistant.answer.result import CANNOT_ANSWER, Usage
from assistant.answer.sources import Context
from assistant.embedding.embedders import Embedder
from assistant.ingest.chunking import sentences_of
from assistant.retrieval.hybrid import Hit
from assistant.text.acronyms import (
    acronyms,
    defined_in,
    spell,
    uses,
    with_written_out,
    writes_out,
)
from assistant.text.terms import analyze

NOTICE = (
    "Extractive answer (no LLM configured): sentences quoted from the abstracts. "
    "For a written answer set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server."
)


# Sentences that state what a paper does or finds, rather than background.
_CONTRIBUTION = re.compile(
    r"\b(?:we|our|this paper|this work)\b.{0,40}?\b(?:propose|introduce|present|show|find|"
    r"demonstrate|achiev|outperform|reduc|improv|develop|prove|design)",
    re.IGNORECASE,
)


_HAS_NUMBER = re.compile(r"\d")

# "Code is available at https://..." answers nothing.
_BOILERPLATE = re.compile(
    r"https?://|github\.com|\b(?:code|data|dataset|models?)\b[^.]{0,40}\b(?:is|are) "
    r"(?:publicly |freely |now )?(?:available|released)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Candidate:
    source: int  # 1-based source number
    position: int  # sentence index within the abstract
    text: str
    score: float  # how well it answers, as a sentence to quote
    similarity: float
    opening: bool = False  # the abstract's first sentence, stating no contribution
    answer: float = (
        0.0  # log-odds that it states the answer (``assistant.answer.offline.answering``)
    )

    @property
    def relevance(self) -> float:
        """How well it matches, as evidence that its paper is on topic (no opening penalty)."""
        return self.score + (OPENING_PENALTY if self.opening else 0.0)


OPENING_PENALTY = 0.15  # an abstract's opening restates the problem; it rarely answers
SHORT_TOPIC = 3  # a survey asking about this many terms or fewer names its topic exactly


def _best_per_paper(
    candidates: list[Candidate], by: Literal["relevance", "score", "answer"] = "relevance"
) -> dict[int, float]:
    """Each paper's best sentence: by relevance (is the paper on topic?), by score (its
    closest sentence) or by the answer model's log-odds (its likeliest to state the answer)."""
    best: dict[int, float] = {}
    for cand in candidates:
        value = float(getattr(cand, by))
        best[cand.source] = max(best.get(cand.source, -np.inf), value)
    return best


def by_paper(candidates: list[Candidate]) -> dict[int, list[Candidate]]:
    """Candidates grouped by source, each paper's in the abstract's order."""
    papers: dict[int, list[Candidate]] = {}
    for cand in sorted(candidates, key=lambda c: (c.source, c.position)):
        papers.setdefault(cand.source, []).append(cand)
    return papers


def _named_sources(context: Context) -> set[int]:
    return {n for n, hit in enumerate(context.sources, start=1) if hit.named_in(context.question)}


class ExtractiveProvider(Provider):
    name = "extractive"
    model = "extractive"
    notice = NOTICE
    prompts_model = False  # it quotes the sources: no token budget to fit them into

    def __init__(
        self,
        embedder: Embedder,
        sentences: int = 5,
        per_paper: int = 3,
        min_similarity: float = 0.15,
        lookup: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
        rarity: Rarity | None = None,
        single_margin: float = 0.05,
        number_margin: float = 0.5,
        min_coverage: float = 0.5,
        confident_similarity: float = 0.45,
        standout: float = 2.0,
        survey_bar: SurveyBar | None = None,
        answer_model: AnswerModel | None = None,
        answer_margin: float = 1.5,
        answer_redundancy: float = 2.0,
    ):
        self.embedder = embedder
        self.sentences = sentences
        self.per_paper = per_paper
        self.min_similarity = min_similarity
        self.lookup = lookup  # stored sentence vectors by id, to skip re-embedding
        self.rarity = rarity  # document frequencies in the corpus, for what a question asks
        # Tuned on the eval set's tune and dev splits (evals/neurips2025.jsonl); the test
        # split is held out (docs/evals.md).
        self.single_margin = single_margin  # a paper quoted for a one-paper question
        self.number_margin = number_margin  # a sentence with a value, against its paper's best
        self.min_coverage = min_coverage  # IDF share of the asked-for terms the abstract has
        self.confident_similarity = confident_similarity  # ... or a match this close
        self.standout = standout  # ... or a first paper this far ahead of the second in search
        self.survey_bar = survey_bar or shipped_bar()  # which papers a survey question wants
        self.answer_model = answer_model or shipped_model()  # which sentences answer
        self.answer_margin = answer_margin  # log-odds under the paper's likeliest sentence
        self.answer_redundancy = answer_redundancy  # log-odds off per unit of repetition

    def _vectors(self, ids: list[str], texts: list[str]) -> np.ndarray:
        """Sentence vectors from the store when it has them; the rest embedded now."""
        stored = self.lookup(ids) if self.lookup else {}
        missing = [i for i, sid in enumerate(ids) if sid not in stored]
        fresh = self.embedder.embed([texts[i] for i in missing]) if missing else None
        out = np.empty((len(ids), self.embedder.dim), dtype=np.float32)
        for i, sid in enumerate(ids):
            if sid in stored:
                out[i] = stored[sid]
        if fresh is not None:
            out[missing] = fresh
        return out

    def rank(self, context: Context) -> tuple[list[Candidate], np.ndarray]:
        rows = []
        first_sentence: dict[int, int] = {}
        for n, hit in enumerate(context.sources, start=1):
            first = 1 if hit.paper.title else 0  # the title is indexed, never quoted
            first_sentence[n] = first
            for i, sentence in enumerate(sentences_of(hit.paper)[first:], start=first):
                if len(sentence.split()) >= 4:
                    rows.append((n, i, sentence, f"{hit.paper_id}:s{i}"))
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        vectors = self._vectors([r[3] for r in rows], [r[2] for r in rows])
        similarity = vectors @ self.embedder.embed_query(context.question)
        # A sentence that says the words of the question's acronym and not the acronym ("a
        # sparse mixture-of-experts model" for "MoE") is as close as it is to the question
        # spelled out the same way: the embedder hardly knows the acronym. Every other
        # sentence keeps its similarity to the question as asked, which the answer's
        # thresholds were fitted on.
        definitions = dict(context.definitions)
        if written := [i for i, r in enumerate(rows) if writes_out(definitions, r[2])]:
            spelled = self.embedder.embed_query(spell(context.question, definitions))
            similarity[written] = vectors[written] @ spelled
        query_terms = set(analyze([context.question])[0])
        wants_quantity = asks_quantity(context.question)
        sentence_terms = analyze([r[2] for r in rows])
        candidates = []
        for (n, i, s, _), sim, terms in zip(rows, similarity, sentence_terms, strict=True):
            overlap = len(query_terms & set(terms)) / len(query_terms) if query_terms else 0.0
            contribution = bool(_CONTRIBUTION.search(s))
            cue = 0.05 if contribution else 0.0
            opening = i == first_sentence[n] and not contribution
            cue -= OPENING_PENALTY if opening else 0.0
            if _BOILERPLATE.search(s):
                cue -= 0.3
            if wants_quantity and _HAS_NUMBER.search(s):
                cue += 0.08
            score = float(sim) + 0.25 * overlap + cue + 0.03 / n
            candidates.append(Candidate(n, i, s, score, float(sim), opening))
        return self._with_answer_odds(context.question, candidates), vectors

    def _with_answer_odds(self, question: str, candidates: list[Candidate]) -> list[Candidate]:
        """Each candidate with the answer model's log-odds, computed paper by paper."""
        odds: dict[tuple[int, int], float] = {}
        for paper in by_paper(candidates).values():
            for cand, value in zip(
                paper, log_odds(self.answer_model, question, paper), strict=True
            ):
                odds[cand.source, cand.position] = value
        return [replace(c, answer=odds[c.source, c.position]) for c in candidates]

    def select(
        self,
        context: Context,
        ranked: tuple[list[Candidate], np.ndarray] | None = None,
        papers: set[int] | None = None,
    ) -> list[Candidate]:
        """The sentences to quote: from the papers that answer (``papers`` when the caller
        knows them), those the answer model finds nearly as likely to state the answer as
        their paper's likeliest, without repeating each other; with the sentence each quoted
        anaphor refers to, and led by what the paper is when the question asks."""
        candidates, vectors = ranked or self.rank(context)
        if not candidates:
            return []
        if papers is None:
            papers = self._papers_to_quote(context, _best_per_paper(candidates))
        best = _best_per_paper(candidates, "score")
        likeliest = _best_per_paper(candidates, "answer")
        floor = -1.0 if context.pinned else self.min_similarity
        # A sentence that uses the acronym asked about ("RLHF") is about it, however far the
        # embedder, which hardly knows the acronym, puts it from the question.
        definitions = dict(context.definitions)
        eligible = [
            idx
            for idx, cand in enumerate(candidates)
            if cand.source in papers
            and (cand.similarity >= floor or uses(definitions, cand.text))
            and cand.answer >= likeliest[cand.source] - self.answer_margin
        ]
        survey = len(papers) > 1
        limit = max(self.sentences, len(papers)) if survey else self.sentences
        cap = min(self.per_paper, 2) if survey else self.per_paper
        chosen: list[int] = []
        per_paper: dict[int, int] = {}
        for source in sorted(papers):  # every paper that answers gets its best sentence
            idx = max(
                (i for i in eligible if candidates[i].source == source),
                default=None,
                key=lambda i: candidates[i].answer,
            )
            if idx is not None:
                chosen.append(idx)
                per_paper[source] = 1
        while len(chosen) < limit:
            pick, pick_value = -1, -np.inf
            for idx in eligible:
                cand = candidates[idx]
                if idx in chosen or per_paper.get(cand.source, 0) >= cap:
                    continue
                overlap = max((float(vectors[idx] @ vectors[j]) for j in chosen), default=0.0)
                value = cand.answer - self.answer_redundancy * max(0.0, overlap - 0.5)
                if value > pick_value:
                    pick, pick_value = idx, value
            if pick < 0:
                break
            chosen.append(pick)
            per_paper[candidates[pick].source] = per_paper.get(candidates[pick].source, 0) + 1
        if asks_quantity(context.question):
            counted = counted_terms(context.question)
            gives = partial(_counts, counted) if counted else has_value
            chosen += self._numbers_for(candidates, chosen, floor, best, gives)
        return self._standing_alone(context, candidates, chosen)

    def _standing_alone(
        self, context: Context, candidates: list[Candidate], chosen: list[int]
    ) -> list[Candidate]:
        """The chosen sentences, each anaphor with the sentence it refers to, and, when the
        question asks what a paper is or how it works, its defining sentence first."""
        at = {(c.source, c.position): i for i, c in enumerate(candidates)}
        picked = set(chosen)
        for idx in chosen:
            current = candidates[idx]
            for _ in range(2):  # at most two sentences back
                previous = at.get((current.source, current.position - 1))
                if previous is None or not refers_back(current.text):
                    break
                picked.add(previous)
                current = candidates[previous]
        lead: set[int] = set()
        if asks_definition(context.question) and not is_survey(context.question):
            for source in {candidates[i].source for i in picked}:
                defining = _defining(candidates, source, context.sources[source - 1].names())
                if defining is not None:
                    picked.add(defining)
                    lead.add(defining)
        return [
            candidates[i]
            for i in sorted(
                picked,
                key=lambda i: (candidates[i].source, i not in lead, candidates[i].position),
            )
        ]

    def _numbers_for(
        self,
        candidates: list[Candidate],
        chosen: list[int],
        floor: float,
        best: dict[int, float],
        gives: Callable[[str], bool],
    ) -> list[int]:
        """A question asking "how much" is answered with a number ("how many participants"
        with the count of them): each quoted paper none of whose quoted sentences ``gives``
        it also gets its best sentence that does, when its score is within the number margin
        of the paper's best."""
        added = []
        for source in {candidates[i].source for i in chosen}:
            if any(gives(candidates[i].text) for i in chosen if candidates[i].source == source):
                continue
            numeric = [
                i
                for i, c in enumerate(candidates)
                if c.source == source
                and c.similarity >= floor
                and c.score >= best[source] - self.number_margin
                and gives(c.text)
            ]
            if numeric:
                added.append(max(numeric, key=lambda i: candidates[i].score))
        return added

    def _papers_to_quote(self, context: Context, best: dict[int, float]) -> set[int]:
        """The user's papers when pinned; the papers a single-paper question names; the paper
        it is about when the search found it far ahead of the rest; otherwise those whose best
        sentence is within a margin of the best one; for a question that asks for all papers
        that qualify, those the survey bar finds likely (at least the likeliest)."""
        if context.pinned:
            return set(best)
        survey = is_survey(context.question)
        named = _named_sources(context) & set(best)
        if named and (not survey or len(named) > 1):  # one paper, or a comparison of named ones
            return named
        if survey and (holding := self.holding_literal(context)):
            return holding
        if not survey:
            top = max(best, key=lambda s: best[s])
            if self._stands_out(context, top):  # the search says which paper it is about
                return {top}
            bar = best[top] - self.single_margin
            return {source for source, score in best.items() if score >= bar}
        qualifying = self.qualifying(context, best)
        return set(qualifying[: context.limit or len(qualifying)])

    def qualifying(self, context: Context, best: dict[int, float]) -> list[int]:
        """The papers a survey's bar finds likely enough, likeliest first (at least one)."""
        likely = self.survey_probabilities(context, best)
        order = sorted(likely, key=lambda s: -likely[s])
        chosen = [s for s in order if likely[s] >= self.survey_bar.include] or order[:1]
        terms = topic_terms(context.question)
        if len(terms) > SHORT_TOPIC:
            return chosen
        # A short topic ("KV-cache eviction") is named exactly: a paper that never says one
        # of its words (a KV cache, but no eviction) is about something else.
        return chosen[:1] + [
            s for s in chosen[1:] if mentions(terms, context.sources[s - 1].paper.text_for_index)
        ]

    def more_than_shown(
        self, context: Context, candidates: list[Candidate]
    ) -> StreamWarning | None:
        """A topical survey with more papers over the bar than it shows: how to see them."""
        if context.limit is None or context.pinned or self.holding_literal(context):
            return None
        if len(_named_sources(context)) > 1 or not is_survey(context.question):
            return None
        qualifying = self.qualifying(context, _best_per_paper(candidates))
        if len(qualifying) <= context.limit:
            return None
        return StreamWarning(
            f"{len(qualifying)} papers match; the {context.limit} likeliest are quoted "
            f"(-k {len(qualifying)} quotes them all)"
        )

    def holding_literal(self, context: Context) -> set[int]:
        """The sources that contain every literal term of a survey ("on GitHub", "CIFAR-10"):
        the condition is the word itself, so every paper with it qualifies, and no other."""
        terms = set(self._literal_condition(context))
        if not terms:
            return set()
        # An acronym is held by a paper that writes its words out ("mixture-of-experts").
        texts = [
            with_written_out(context.question, h.paper.text_for_index, context.definitions)
            for h in context.sources
        ]
        return {n for n, text in enumerate(texts, start=1) if terms <= set(analyze([text])[0])}

    @staticmethod
    def _literal_condition(context: Context) -> list[str]:
        """A survey's literal terms that are not the name of a retrieved paper."""
        if not is_survey(context.question):
            return []
        names = {
            term
            for hit in context.sources
            if hit.named_in(context.question)
            for name in hit.names()
            for term in analyze([name])[0]
        }
        found = literal_terms(context.question) or _topic_acronym(context)
        return [t for t in found if t not in names]

    def survey_features(self, context: Context, best: dict[int, float]) -> dict[int, list[float]]:
        """Each candidate paper's signals for the survey bar (``offline.survey_bar``)."""
        terms = asked_terms(context.question)
        weights = idf_weights(terms, self.rarity)
        top = max(best.values())
        both = ranks(context.sources)
        return {
            source: features(
                both[source - 1],
                source,
                coverage(terms, weights, context.sources[source - 1].paper.text_for_index),
                top - score,
            )
            for source, score in best.items()
        }

    def survey_probabilities(self, context: Context, best: dict[int, float]) -> dict[int, float]:
        """How likely each paper is one the survey question asks for."""
        rows = self.survey_features(context, best)
        sources = list(rows)
        p = self.survey_bar.probability([rows[s] for s in sources])
        return dict(zip(sources, (float(v) for v in p), strict=True))

    def unanswered(self, context: Context, candidates: list[Candidate]) -> StreamWarning | None:
        """Why the abstracts do not answer, when they do not, naming the papers it read. A
        survey question: no paper is likely enough, or the closest does not mention what is
        asked and matches no sentence closely. A comparison of named papers: none of them
        answers. A one-paper question: the paper it is about (named, pinned by the
        conversation, or the best match) does not give the count, value or figure asked for,
        or does not mention what is asked (and, unless named or pinned, matches no sentence
        closely). None when they may answer."""
        if not candidates:
            return None
        best = _best_per_paper(candidates)
        named = _named_sources(context) & set(best)
        if len(named) > 1 and not context.pinned:  # a comparison: each named paper in turn
            why = self._unanswered_about(context, candidates, named)
            return (
                StreamWarning("; ".join(why.values()), tuple(why))
                if len(why) == len(named)
                else None
            )
        if is_survey(context.question):
            if context.pinned:
                return None
            likely = self.survey_probabilities(context, best)
            top = max(likely, key=lambda s: likely[s])  # the paper likeliest to qualify
            uncovered = self._uncovered_topic(context, likely)
            if uncovered:
                return StreamWarning(uncovered, (top,))
            # A survey's alternatives ("sorting, shortest paths or automata") are spread over
            # the papers it would cite: together they must mention what is asked.
            cited = {s for s, p in likely.items() if p >= self.survey_bar.include}
            reason = self._unmentioned(context, candidates, top, named=False, with_=cited)
            return StreamWarning(reason, tuple(sorted({top, *cited}))) if reason else None
        top = min(named) if named else max(best, key=lambda s: best[s])
        reason = self._missing_figure(context, top) or self._unmentioned(
            context, candidates, top, named=bool(named) or context.pinned
        )
        # A pinned paper is the one asked about, as if named: it must mention what is asked.
        return StreamWarning(reason, (top,)) if reason else None

    def _missing_figure(self, context: Context, top: int) -> str | None:
        """The count, measured value, figure or names the question asks for, which the paper
        lacks."""
        question, hit = context.question, context.sources[top - 1]
        sentences = sentences_of(hit.paper)  # the candidates' sentences are among these
        counted = counted_terms(question)
        if counted and not states_count(counted, sentences):
            things = " or ".join(surface(question, [t[0] for t in counted if t]))
            return f"«{hit.label}», the closest abstract, gives no number of {things}"
        if asks_figure(question) and not any(map(has_value, sentences)):
            return f"«{hit.label}», the closest abstract, gives no figures"
        measured = measured_terms(question)
        if measured and not states_value(measured, sentences):
            things = " or ".join(measures(question))
            return f"«{hit.label}», the closest abstract, gives no value of {things}"
        unnamed = counts_without_naming(question, sentences)
        if unnamed:
            count, things = unnamed
            return f"«{hit.label}», the closest abstract, counts {count} {things} but names none"
        return None

    def _unmentioned(
        self,
        context: Context,
        candidates: list[Candidate],
        top: int,
        *,
        named: bool,
        with_: Collection[int] = (),
        referred: bool = False,
    ) -> str | None:
        """The paper (with the papers ``with_``, read as one text) contains less than
        ``min_coverage`` of the asked-for terms and, unless the question names it, no sentence
        matches closely and the search did not find it far ahead of every other paper (a
        question worded unlike its abstract still finds it first), or did but the question asks
        "which X" of an abstract that has no X, or about what no abstract names (unless the
        question ``referred`` to the paper: "how good are its forecasts?"); or it lacks a name
        the question gives ("COVID-19")."""
        read = {top, *with_}
        text = " ".join(context.sources[s - 1].paper.text_for_index for s in sorted(read))
        text = with_written_out(context.question, text, context.definitions)
        names = [n for h in context.sources for n in h.names() if h.named_in(context.question)]
        terms = asked_terms(context.question, names)
        terms = [t for t in terms if t not in said_of_people(terms, text)]
        # "Which papers study the ocean or marine life?": either topic's words will do.
        either = [asked_terms(a, names) for a in alternatives(context.question)]
        share = max(coverage(t, idf_weights(t, self.rarity), text) for t in [terms, *either])
        if share >= self.min_coverage:
            return None
        present = set(analyze([text])[0])
        absent = [t for t in terms if t not in present]
        # A name the question gives ("COVID-19", "GitHub") that the paper lacks: the question
        # is about something else, however close a sentence or far ahead the paper.
        if named or set(literal_terms(context.question)) & set(absent):
            return self._not_mentioned(context, read, absent)
        similarity = max((c.similarity for c in candidates if c.source in read), default=-1.0)
        if similarity >= self.confident_similarity:
            return None
        # Standing out says which paper is meant, not that it says which X ("which optimizer"),
        # nor that a question a third of whose words no abstract has ("the boiling point of
        # mercury": Bubbleformer, far ahead on "boiling") is asked in other words.
        kind = asked_kind(context.question)
        if (
            self._stands_out(context, top)
            and all(t in present for t in kind)
            and (referred or not self._unheard_of(terms, absent))
        ):
            return None
        return self._not_mentioned(context, read, absent)

    @staticmethod
    def _not_mentioned(context: Context, read: set[int], absent: list[str]) -> str:
        """What the paper (or papers, read together) does not mention of the question."""
        missing = ", ".join(surface(context.question, absent))
        if len(read) > 1:
            labels = " and ".join(f"«{context.sources[s - 1].label}»" for s in sorted(read))
            return f"{labels}, the likeliest abstracts, do not mention: {missing}"
        (top,) = read
        return (
            f"«{context.sources[top - 1].label}», the closest abstract, does not mention: {missing}"
        )

    def _unheard_of(self, terms: list[str], absent: list[str]) -> bool:
        """A third or more of the question's terms are in no abstract of the store: what it
        asks about is not here ("mercury"). A question in other words than its abstract uses
        a few such words among many (eval: at most a fifth)."""
        if not absent or self.rarity is None:
            return False
        counts, _ = self.rarity(absent)
        return 3 * sum(not counts.get(t) for t in absent) >= len(terms)

    def _stands_out(self, context: Context, top: int) -> bool:
        """A one-paper question whose search ranked this paper first, at least ``standout``
        (in fused score units) ahead of the second: the question is about it, whatever its
        wording. A survey asks about a topic, which one paper far ahead does not cover."""
        hits = context.sources
        if top != 1 or context.part or is_survey(context.question):
            return False  # a half's search scores are the whole question's
        return len(hits) == 1 or hits[0].score - hits[1].score >= self.standout

    def _uncovered_topic(self, context: Context, likely: dict[int, float]) -> str | None:
        """A survey question none of whose papers clears even the refusal bar."""
        top = max(likely, key=lambda s: likely[s])
        if likely[top] >= self.survey_bar.refuse_below:
            return None
        terms = ", ".join(surface(context.question, asked_terms(context.question)))
        return (
            f"no abstract is likely about: {terms or 'the question'} "
            f"(closest: «{context.sources[top - 1].label}», p={likely[top]:.2f})"
        )

    def stream(self, context: Context) -> Iterator[Piece]:
        if context.alternatives:
            yield from self._stream_alternatives(context)
            yield Usage(estimated=False, cost_usd=0.0)
            return
        parts = split(_in_own_words(context))
        if len(parts) > 1:
            yield from self._stream_parts(context, parts)
            yield Usage(estimated=False, cost_usd=0.0)
            return
        about = metadata_question(context.question)
        if about is not None:  # "who wrote ...": the stored metadata answers, not quotes
            yield answer_from_metadata(about, context)
            yield Usage(estimated=False, cost_usd=0.0)
            return
        ranked = self.rank(context)
        picked, reason = self.answer_part(context, ranked=ranked)
        if reason is not None:
            yield reason
        if not picked:
            yield CANNOT_ANSWER
        else:
            yield _quotes(context, picked)
            if more := self.more_than_shown(context, ranked[0]):
                yield more
        yield Usage(estimated=False, cost_usd=0.0)

    def _stream_alternatives(self, context: Context) -> Iterator[Piece]:
        """ "Which papers study coral reefs or glaciers?": the whole question answered, then
        each topic as a question of its own (its own search and survey bar: against the whole
        question, the glacier paper holds a third of what is asked). A paper the whole
        question's answer cites must hold half of one topic's own words; beside that answer, a
        paper only a topic finds is added when it holds every word of that topic (a paper on
        generation alone does not answer "autoregressive models of images, for generation or
        watermarking"); a topic the abstracts do not answer is said so."""
        asked = context.as_asked()
        ranked = self.rank(asked)
        picked, reason = self.answer_part(asked, ranked=ranked)
        more = self.more_than_shown(asked, ranked[0]) if picked else None
        # Each paper the whole question cites is about one of its topics (the bar also took a
        # vitamin D trial for "measure critical heat flux or test a vaccine").
        topics = [topic_of(alternative.question) for alternative in context.alternatives]
        own = _own_words(topics)
        picked = [c for c in picked if self._about_one(own, context.sources[c.source - 1])]
        number = {hit.paper_id: n for n, hit in enumerate(context.sources, start=1)}
        unanswered: list[StreamWarning] = []
        for alternative, terms in zip(context.alternatives, topics, strict=True):
            ids = [number[hit.paper_id] for hit in alternative.sources]
            found, why = self.answer_part(alternative)
            quoted = {c.source for c in picked}
            picked += [
                replace(c, source=ids[c.source - 1])
                for c in found
                if ids[c.source - 1] not in quoted
                and (reason is not None or holds(terms, alternative.sources[c.source - 1]))
            ]
            if why is not None:
                text = f"the abstracts do not answer «{alternative.question}»: {why.text}"
                unanswered.append(StreamWarning(text, tuple(ids[n - 1] for n in why.papers)))
        if not picked:
            yield from unanswered or ([reason] if reason is not None else [])
            yield CANNOT_ANSWER
            return
        yield from unanswered
        yield _quotes(context, sorted(picked, key=lambda c: (c.source, c.position)))
        if more is not None:
            yield more

    def _about_one(self, topics: list[list[str]], hit: Hit) -> bool:
        """The paper holds at least ``min_coverage`` of one topic's (own) words."""
        text = hit.paper.text_for_index
        return any(
            coverage(t, idf_weights(t, self.rarity), text) >= self.min_coverage for t in topics
        )

    def answer_part(
        self,
        context: Context,
        papers: set[int] | None = None,
        ranked: tuple[list[Candidate], np.ndarray] | None = None,
    ) -> tuple[list[Candidate], StreamWarning | None]:
        """The sentences that answer the question (about ``papers`` when given), or why the
        abstracts do not answer it."""
        spelled = (
            self._expansion(context, papers)
            or self._defining_sentences(context, papers)
            or self._literal_quotes(context, papers)
        )
        if spelled:
            return spelled, None
        ranked = ranked or self.rank(context)
        if papers is not None:
            why = self._unanswered_about(context, ranked[0], papers)
            papers = papers - set(why)
            if not papers:
                return [], StreamWarning("; ".join(why.values()), tuple(why))
        else:
            reason = self.unanswered(context, ranked[0])
            if reason is not None:
                return [], reason
        return self.select(context, ranked, papers), None

    def _unanswered_about(
        self, context: Context, candidates: list[Candidate], papers: set[int]
    ) -> dict[int, str]:
        """Which of the given papers do not answer, and why: a paper the question names lacks
        the figure asked for; one it refers to ("its forecasts") also may not mention what is
        asked (a named paper is quoted however its abstract words it)."""
        named = _named_sources(context)
        why = {}
        for source in sorted(papers):
            reason = self._missing_figure(context, source)
            if reason is None and source not in named:
                reason = self._unmentioned(context, candidates, source, named=False, referred=True)
            if reason is not None:
                why[source] = reason
        return why

    def _literal_quotes(self, context: Context, papers: set[int] | None) -> list[Candidate]:
        """A survey with a literal condition ("on GitHub"): from each paper that contains it,
        its first sentence that does."""
        if papers is not None:
            return []
        holding = self.holding_literal(context)
        terms = set(self._literal_condition(context))
        quotes = []
        for n in sorted(holding):
            paper = context.sources[n - 1].paper
            sentences = sentences_of(paper)
            held = analyze(
                [with_written_out(context.question, s, context.definitions) for s in sentences]
            )
            # The abstract's own sentence first: the title only when no sentence holds it.
            order = list(range(len(sentences)))
            if paper.title:
                order = order[1:] + order[:1]
            at = next((i for i in order if terms <= set(held[i])), None)
            if at is not None:
                quotes.append(Candidate(n, at, sentences[at], 1.0, 1.0))
        return quotes

    @staticmethod
    def _defining_sentences(context: Context, papers: set[int] | None) -> list[Candidate]:
        """For "What is DPO?" (an acronym, not a paper's name), the sentence of each source
        that defines it: "We show that direct preference optimization (DPO) can be ...".
        Sources that define it otherwise ("MS": multiple sclerosis, mass spectrometry) are
        each quoted."""
        acronym = asked_about_acronym(context.question)
        if papers is not None or acronym is None or _named_sources(context):
            return []
        found = []
        for n, hit in enumerate(context.sources, start=1):
            sentences = sentences_of(hit.paper)
            at = next((i for i, s in enumerate(sentences) if defined_in(acronym, s)), None)
            if at is not None:
                found.append(Candidate(n, at, sentences[at], 1.0, 1.0))
        return found

    def _expansion(self, context: Context, papers: set[int] | None) -> list[Candidate]:
        """For "what does GPLQ stand for?", the sentence that spells it out."""
        acronym = asked_acronym(context.question)
        if acronym is None:
            return []
        for n, hit in enumerate(context.sources, start=1):
            if papers is not None and n not in papers:
                continue
            for i, sentence in enumerate(sentences_of(hit.paper)):
                if expansion(acronym, sentence):
                    return [Candidate(n, i, sentence, 1.0, 1.0)]
        return []

    def _stream_parts(self, context: Context, parts: list[Part]) -> Iterator[Piece]:
        """Each half answered in turn: the second about the papers the first was about
        (unless it names its own, or they do not answer it and it does not point back at
        them). Quotes are merged paper by paper; a half the abstracts do not answer is said
        so."""
        metadata: list[str] = []
        picked: list[Candidate] = []
        # A follow-up pinned to earlier papers is about all of them, part after part.
        subject = set(range(1, len(context.sources) + 1)) if context.pinned else None
        unanswered: list[StreamWarning] = []
        for part in parts:
            sub = replace(context, question=part.text, part=not part.refers_back)
            named = _named_sources(sub)
            about = named if len(named) > 0 else subject
            kind = metadata_question(part.text)
            if kind is not None:
                # "Who wrote the wildfire paper, …", "…, and when was the coral study
                # published?": the paper whose words it uses (another part may lead the
                # search); "… and when was it published?": the same papers as before.
                own = None if named or part.refers_back or sub.pinned else _most_in_common(sub)
                about = {own} if own else about or {1}
                if not named:
                    sub = _asked_of(sub, about)
                metadata.append(answer_from_metadata(kind, sub))
            else:
                if about and not named and not asked_terms(part.text):  # "… what did it find?"
                    sub = _asked_of(sub, about)
                elif about and not named and not part.refers_back and not sub.pinned:
                    # "…, and what does the honeybee paper find?": its own topic, when another
                    # paper shares more of its words than the first half's do: that paper (or,
                    # for "which papers …", any).
                    own = _most_in_common(sub)
                    if own is not None and own not in about:
                        about = None if is_survey(part.text) else {own}
                found, reason = self.answer_part(sub, about)
                if not found and about and not named and not part.refers_back:
                    # Not answered by the first half's papers and not pointing back at them
                    # ("…, and what does drought do to soil microbes?"): any paper may answer.
                    about = None
                    found, reason = self.answer_part(sub)
                if reason is None and not found:  # never dropped without a word
                    reason = StreamWarning("no abstract here has a sentence that answers it", ())
                if reason is not None:
                    unanswered.append(
                        StreamWarning(
                            f"the abstracts do not answer «{part.text}»: {reason.text}",
                            reason.papers,
                        )
                    )
                picked += found
                about = about or {c.source for c in found} or None
            subject = subject or about
        if not metadata and not picked:
            yield from unanswered
            yield CANNOT_ANSWER
            return
        yield from unanswered
        unique = sorted(
            {(c.source, c.position): c for c in picked}.values(),
            key=lambda c: (c.source, c.position),
        )
        text = " ".join(metadata)
        if unique:
            text = (text + "\n" if text else "") + _quotes(context, unique)
        yield text


def _counts(counted: list[list[str]], sentence: str) -> bool:
    return states_count(counted, [sentence])


def _own_words(topics: list[list[str]]) -> list[list[str]]:
    """Each topic's words that not every topic has ("continual" of "… learning from a sequence
    of tasks, as in continual learning"); all of them when it has none of its own."""
    shared = set.intersection(*(set(t) for t in topics)) if topics else set()
    return [[w for w in t if w not in shared] or t for t in topics]


def _in_own_words(context: Context) -> str:
    """The question without the titles a follow-up pinned to earlier papers is searched with
    ("KVFlow Who wrote it, and when …?"): they are not a part of what it asks."""
    question = context.question.strip()
    labels = [hit.label for hit in context.sources] if context.pinned else []
    while lead := next((lb for lb in labels if question.lower().startswith(lb.lower())), None):
        question = question[len(lead) :].strip()
    return question


def _most_in_common(part: Context) -> int | None:
    """The source whose title and abstract hold most of the part's terms (the first of
    equals: the search's order); None when none holds any."""
    asked = set(asked_terms(part.question))
    held = [
        len(asked & set(analyze([f"{hit.paper.title or ''} {hit.paper.abstract}"])[0]))
        for hit in part.sources
    ]
    most = max(held, default=0)
    return 1 + held.index(most) if most else None


def _asked_of(part: Context, papers: set[int]) -> Context:
    """A half asked of the papers the first half was about, by their titles: "when was it
    published? (KVFlow)"."""
    labels = "; ".join(part.sources[n - 1].label for n in sorted(papers))
    return replace(part, question=f"{part.question} ({labels})")


def _defining(candidates: list[Candidate], source: int, names: list[str]) -> int | None:
    """The index of the paper's sentence that says what it is: one that names it ("We present
    KVFlow, a …"), else its first statement of what it proposes ("We propose a solution built
    on …")."""
    own = [i for i, c in enumerate(candidates) if c.source == source]
    named = next((i for i in own if defines(candidates[i].text, names)), None)
    return (
        named if named is not None else next((i for i in own if presents(candidates[i].text)), None)
    )


def _quotes(context: Context, picked: list[Candidate]) -> str:
    return quotes([hit.label for hit in context.sources], picked)


def _topic_acronym(context: Context) -> list[str]:
    """The survey's whole topic when it is one acronym the store defines ("Which papers use
    GNNs?"): a literal condition, held by a paper that names it or writes its words out, as
    a CamelCase one ("MoE") already is."""
    found = acronyms(context.question)
    if len(found) != 1 or found[0] not in dict(context.definitions):
        return []
    term = analyze([found[0]])[0]
    return term if topic_terms(context.question) == term else []
