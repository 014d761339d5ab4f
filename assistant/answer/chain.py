"""The answer chain: question -> papers -> numbered sources -> provider -> checked ``Answer``.

``stream`` walks the steps and yields the provider's text as it arrives, then the checked
``Answer``; ``invoke`` returns that last item. ``as_runnable`` composes the same steps as
LangChain runnables for callers who build on LangChain; it imports LangChain on first use, so an
extractive answer never pays for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from assistant.answer.citations import CheckedText, check_citations, cited_numbers, makes_claims
from assistant.answer.llm.pricing import estimate_cost
from assistant.answer.llm.refusals import is_refusal as declines
from assistant.answer.llm.reply import Reasoning
from assistant.answer.offline.parts import (
    alternatives,
    defines_asked_acronym,
    holds_literal,
    split,
)
from assistant.answer.prompts import render
from assistant.answer.provider import Provider, StreamWarning
from assistant.answer.renumber import Renumberer, in_order_of_citation
from assistant.answer.result import CANNOT_ANSWER, Answer, Usage
from assistant.answer.sources import Context, build_context
from assistant.errors import AssistantError, NoAnswerError
from assistant.retrieval.hybrid import Hit
from assistant.settings import LLMSettings
from assistant.store.filters import shown
from assistant.text.language import ENGLISH_ONLY, is_english
from assistant.text.normalise import printable

if TYPE_CHECKING:
    from langchain_core.runnables import Runnable

    from assistant.judge.verify import Verifier

# Appended to the question when strict mode asks the model again.
REVISE = (
    "A check found that these sentences of your previous answer are not supported by the "
    "sources they cite. Answer again: leave them out, or correct them so that the sources "
    "state them, citing as before."
)

Search = Callable[[str, int | None, Mapping[str, Any] | None], list[Hit]]
PER_PART = 2  # papers searched for each part of a question in parts
# Told "searching", then "answering" when the model is asked, "thinking" while it reasons.
OnStatus = Callable[[str], None]


@dataclass(frozen=True)
class Request:
    question: str
    k: int | None = None
    filters: Mapping[str, Any] | None = None
    search_query: str | None = None  # what to search for, when not the question itself
    pinned: bool = False  # the user named the papers (a follow-up); skip the relevance gate
    limit: int | None = None  # papers a survey's answer shows at most, of the k it considers


def nearest_papers(
    hits: list[Hit],
    n: int = 3,
    first: Collection[str] = (),
    filters: Mapping[str, Any] | None = None,
) -> str:
    """The nearest papers, those a refusal's warning names (``first``, paper ids) leading; with
    none found, what the filters asked for (a search finds papers whenever some are indexed and
    match)."""
    if not hits:
        return f" No paper matches {shown(filters)}." if filters else " No paper is indexed."
    named = [h for h in hits if h.paper_id in first]
    hits = named + [h for h in hits if h.paper_id not in first]
    names = "; ".join(f"{h.label} ({h.paper.reference})" for h in hits[: max(n, len(named))])
    return f" Nearest abstracts found: {names}."


def _joined(hits: list[Hit], more: list[Hit]) -> list[Hit]:
    """``hits``, then the papers of ``more`` not among them, ranked after them."""
    found = {hit.paper_id: hit for hit in hits}
    for hit in more:
        if hit.paper_id not in found:
            found[hit.paper_id] = replace(hit, rank=len(found) + 1)
    return list(found.values())


def _sum_usage(a: Usage, b: Usage) -> Usage:
    return Usage(
        prompt_tokens=a.prompt_tokens + b.prompt_tokens,
        completion_tokens=a.completion_tokens + b.completion_tokens,
        reasoning_tokens=a.reasoning_tokens + b.reasoning_tokens,
        cost_usd=None if a.cost_usd is None or b.cost_usd is None else a.cost_usd + b.cost_usd,
        estimated=a.estimated or b.estimated,
    )


def names_a_paper(question: str, hits: list[Hit]) -> bool:
    """The question names a retrieved paper ("What does MINJA do?", "when was Stop Summation
    published?"): relevant by definition, however little the embedder knows the name."""
    return any(h.named_in(question) for h in hits)


def close_enough(query: str, hits: list[Hit], min_similarity: float) -> bool:
    """Some paper is close enough to the query to answer from: a passage at least
    ``min_similarity`` similar, the paper named, a survey's literal condition met, or the
    acronym a question asks about ("What is DPO?") defined."""
    best = max((h.similarity for h in hits if h.similarity is not None), default=-1.0)
    return (
        best >= min_similarity
        or names_a_paper(query, hits)
        or holds_literal(query, hits)
        or defines_asked_acronym(query, hits)
    )


def is_refusal(text: str) -> bool:
    return CANNOT_ANSWER.lower().rstrip(".") in " ".join(text.lower().split())


class AnswerChain:
    def __init__(
        self,
        search: Search,
        provider: Provider,
        settings: LLMSettings,
        count_tokens: Callable[[str], int],
        verifier: Verifier | None = None,
        define: Callable[[str], dict[str, str]] | None = None,
    ):
        self.search = search
        self.provider = provider
        self.settings = settings
        self.count = count_tokens
        self.verifier = verifier  # judges each sentence after generation, when given
        # The words the store's abstracts define a question's acronyms by ("MoE":
        # "mixture-of-experts"), which the search adds to what it embeds: the offline answer
        # reads them too (a model knows them).
        self.define = define or (lambda question: {})

    # -- steps ------------------------------------------------------------------------------
    def retrieve(self, request: Request) -> tuple[list[Hit], Context | None]:
        """Papers for the question, and the sources block; None when nothing is relevant."""
        if self._too_long(request.question):
            raise AssistantError(
                f"the question is longer than {self.settings.max_question_tokens} tokens; "
                "shorten it (or raise ASSISTANT_LLM__MAX_QUESTION_TOKENS)"
            )
        query = request.search_query or request.question
        hits = self.search(query, request.k, request.filters)
        either: list[tuple[str, list[Hit]]] = []
        own = 0
        if not request.pinned:
            hits = self._with_each_part(query, hits, request.filters)
            either = [(a, self.search(a, request.k, request.filters)) for a in alternatives(query)]
            own = len(hits)
            hits = _joined(hits, [hit for _, found in either for hit in found])
        relevant = (request.pinned and bool(hits)) or any(
            close_enough(asked, found, self.settings.min_similarity)
            for asked, found in [(query, hits), *either]
        )
        if not relevant:
            return hits, None
        budget = self.settings.context_tokens if self.provider.prompts_model else None
        context = build_context(query, hits, budget, self.count, pinned=request.pinned)
        context = replace(context, limit=request.limit)
        if budget is None and either:  # quoted topic by topic; a model reads the question whole
            context = replace(
                context,
                own=own,
                alternatives=tuple(
                    replace(build_context(a, found, None, self.count), limit=request.limit)
                    for a, found in either
                ),
            )
        if budget is None and (definitions := tuple(self.define(query).items())):
            context = replace(
                context,
                definitions=definitions,
                alternatives=tuple(
                    replace(a, definitions=definitions) for a in context.alternatives
                ),
            )
        return hits, context if context.sources else None

    def _with_each_part(
        self, query: str, hits: list[Hit], filters: Mapping[str, Any] | None
    ) -> list[Hit]:
        """A question in parts ("What does KVFlow do, what does LeMiCa do, and what does HYPRL
        do?"): the whole question's search can leave out the paper one part is about (HYPRL
        came 6th), or find nothing close to a question each of whose parts it answers. Each
        part that does not point back at another is searched too; its best papers not found
        yet follow the whole question's, and a paper's similarity is its best to the question
        or to a part."""
        parts = [part for part in split(query) if not part.refers_back]
        if len(parts) < 2:
            return hits
        found = {hit.paper_id: hit for hit in hits}
        for part in parts:
            for hit in self.search(part.text, PER_PART, filters):
                had = found.get(hit.paper_id)
                if had is None:
                    found[hit.paper_id] = replace(hit, rank=len(found) + 1)
                elif (hit.similarity or -1.0) > (had.similarity or -1.0):
                    found[hit.paper_id] = replace(had, similarity=hit.similarity)
        return list(found.values())

    def _too_long(self, question: str) -> bool:
        """Over ``max_question_tokens``. A token is at least one byte, so a question no longer
        in bytes is not counted (loading the tokenizer costs more than the answer)."""
        limit = self.settings.max_question_tokens
        return len(question.encode("utf-8")) > limit and self.count(question) > limit

    def _estimate_usage(self, context: Context, text: str, reasoning: str) -> Usage:
        """tiktoken counts, for providers that report no usage of their own."""
        prompt = render("answer_user", question=context.question, sources=context.block)
        system = render("answer_system", cannot_answer=CANNOT_ANSWER)
        thought = self.count(reasoning) if reasoning else 0
        return Usage(
            prompt_tokens=self.count(system) + self.count(prompt) + 8,
            completion_tokens=self.count(text) + thought,
            reasoning_tokens=thought,
            estimated=True,
        )

    def _attribute(
        self, text: str, context: Context, checked: CheckedText
    ) -> tuple[CheckedText, set[str]]:
        """A model that wrote no markers: each sentence a source supports is cited to it by
        the checker (and said so); what no source supports stays uncited. Also returns the
        attributed sentences (without markers)."""
        from assistant.judge.verify import bare

        assert self.verifier is not None
        sources = {n: hit.text for n, hit in enumerate(context.sources, start=1)}
        marked = text
        attributed: set[str] = set()
        for check in self.verifier.check(text, sources, papers=context.sources):
            if check.attributed:
                body = check.sentence.rstrip()
                stop = body[-1] if body[-1:] in ".!?" else ""
                cited = f"{body.rstrip('.!?')} [{check.sources[0]}]{stop}"
                marked = marked.replace(check.sentence, cited, 1)
                attributed.add(bare(check.sentence))
        if not attributed:
            return checked, attributed
        again = check_citations(marked, context.sources)
        again.warnings.append(
            f"the model cited no source; the checker attributed {len(attributed)} sentence(s) "
            "to the abstract that supports each"
        )
        return again, attributed

    def finish(
        self,
        request: Request,
        hits: list[Hit],
        context: Context | None,
        text: str,
        usage: Usage | None,
        started: float,
        reasoning: str = "",
        named: Collection[str] = (),
    ) -> Answer:
        """The checked answer; a refusal lists the nearest papers, ``named`` (the ids of those
        the provider's warnings name) first."""
        answer = Answer(
            question=request.question,
            text=CANNOT_ANSWER + nearest_papers(hits, first=named, filters=request.filters),
            refused=True,
            citations=[],
            retrieved=hits,
            provider=self.provider.name,
            model=self.provider.model,
            notice=self.provider.notice,
            search_query=request.search_query,
            reasoning=reasoning,
        )
        if context is None:
            if hits:  # none found: the answer says why
                answer.warnings.append("no retrieved abstract is close enough to the question")
        elif self.provider.prompts_model and declines(text):
            # The model says, in our sentence or in its own words, that the sources do not answer.
            if not is_refusal(text):
                answer.warnings.append("the model declined: " + " ".join(text.split())[:300])
        elif self.provider.prompts_model and text.strip() and not makes_claims(text):
            raise NoAnswerError(
                f"{self.provider.model!r} replied with citation markers and no answer "
                f"({' '.join(text.split())[:60]!r}); ask again, or try another model with --model"
            )
        else:
            self._accept(answer, context, text)
        if context is not None:
            if context.dropped:
                answer.warnings.append(
                    f"{context.dropped} retrieved paper(s) did not fit the "
                    "context budget (ASSISTANT_LLM__CONTEXT_TOKENS)"
                )
            usage = usage or self._estimate_usage(context, text, reasoning)
        answer.usage = self._usage(usage)
        answer.latency_ms = (time.perf_counter() - started) * 1000
        return answer

    def _accept(self, answer: Answer, context: Context, text: str) -> None:
        """The provider's text as the answer, when it cites what it claims (or the checker can
        attribute it); otherwise the refusal stays, with the reason in a warning."""
        checked = check_citations(text, context.sources)
        attributed: set[str] = set()
        if not checked.citations and self.verifier and text.strip() and not is_refusal(text):
            checked, attributed = self._attribute(text, context, checked)
        answer.warnings.extend(checked.warnings)
        answer.uncited_sentences = checked.uncited
        if checked.citations:
            answer.text, answer.citations = in_order_of_citation(checked.text, checked.citations)
            answer.refused = False
            if self.verifier:
                cited = {c.n: c.text for c in answer.citations}
                answer.checks = self.verifier.check(
                    answer.text, cited, attributed, answer.retrieved
                )
        elif not text.strip():
            answer.warnings.append("the model returned an empty answer")
        elif self.verifier and not is_refusal(checked.text) and makes_claims(checked.text):
            # The model answered but cited nothing, and no source supports a sentence:
            # shown, every sentence marked unsupported; only the model refuses.
            answer.text, answer.refused = checked.text, False
            answer.checks = self.verifier.check(checked.text, {}, papers=answer.retrieved)
            answer.warnings.append(
                "the model cited no source, and no abstract supports any of its sentences"
            )
        elif not is_refusal(checked.text):
            answer.warnings.append(
                "the model's answer cited no source, so it is not shown: "
                + " ".join(text.split())[:300]
            )

    def _usage(self, usage: Usage | None) -> Usage:
        """The answer's usage, priced when the provider did not price it."""
        usage = usage or Usage(estimated=False, cost_usd=0.0)
        if usage.cost_usd is None:
            usage.cost_usd = estimate_cost(
                self.provider.model, usage.prompt_tokens, usage.completion_tokens
            )
        return usage

    # -- entry points -----------------------------------------------------------------------
    def _generate(
        self,
        request: Request,
        hits: list[Hit],
        context: Context | None,
        started: float,
        on_status: OnStatus | None = None,
    ) -> Iterator[str | Reasoning | Answer]:
        """The provider's text, its citations already renumbered as the reader will see them
        (1..n in order of first appearance), and its reasoning apart; then the checked Answer."""
        pieces: list[str] = []
        thoughts: list[str] = []
        usage: Usage | None = None
        notes: list[str] = []  # the provider's warnings, e.g. a truncated answer
        named: list[str] = []  # the papers they name
        if context is not None:
            renumberer = Renumberer(len(context.sources))
            for piece in self.provider.stream(context):
                if isinstance(piece, Usage):
                    usage = piece
                elif isinstance(piece, StreamWarning):
                    notes.append(piece.text)
                    named += [context.sources[n - 1].paper_id for n in piece.papers]
                elif isinstance(piece, Reasoning):
                    if piece.retracts:  # what was taken for the answer was reasoning
                        pieces.clear()
                        renumberer = Renumberer(len(context.sources))
                    if on_status and not thoughts:
                        on_status("thinking")
                    thoughts.append(printable(piece.text))
                    yield Reasoning(printable(piece.text), piece.retracts)
                else:
                    piece = printable(piece)  # whoever wrote it: no escape sequences
                    pieces.append(piece)
                    if shown := renumberer.feed(piece):
                        yield shown
            if rest := renumberer.flush():
                yield rest
        text, reasoning = "".join(pieces), "".join(thoughts).strip()
        answer = self.finish(request, hits, context, text, usage, started, reasoning, named)
        answer.warnings.extend(notes)
        yield answer

    def stream(
        self, request: Request, on_status: OnStatus | None = None
    ) -> Iterator[str | Reasoning | Answer]:
        """Text pieces as the provider produces them (and its reasoning, as ``Reasoning``), then
        the checked Answer."""
        started = time.perf_counter()
        if not self.provider.prompts_model and not is_english(request.question):
            yield self._english_only(request, started)
            return
        if on_status:
            on_status("searching")
        hits, context = self.retrieve(request)
        if on_status and context is not None:
            on_status("answering" if self.provider.prompts_model else "quoting")
        if self.settings.strict and self.verifier and self.provider.prompts_model:
            yield from self._strict(request, hits, context, started)
        else:
            yield from self._generate(request, hits, context, started, on_status)

    def _english_only(self, request: Request, started: float) -> Answer:
        """A question in another language, to a provider that reads English only: said in
        one line, not refused as if the abstracts lacked its function words."""
        return Answer(
            question=request.question,
            text=ENGLISH_ONLY,
            refused=True,
            citations=[],
            retrieved=[],
            provider=self.provider.name,
            model=self.provider.model,
            notice=self.provider.notice,
            usage=Usage(estimated=False, cost_usd=0.0),
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def _strict(
        self, request: Request, hits: list[Hit], context: Context | None, started: float
    ) -> Iterator[str | Reasoning | Answer]:
        """Strict mode: the unsupported sentences of the first answer are named to the model
        once; what is still unsupported is dropped and said so. Shown only when complete."""
        *_, answer = self._generate(request, hits, context, started)
        assert isinstance(answer, Answer)
        unsupported = [c.sentence for c in answer.checks if c.verdict != "supported"]
        if unsupported and context is not None:
            first = answer.usage
            named = "\n".join(f"- {sentence}" for sentence in unsupported)
            revised = replace(context, question=f"{context.question}\n\n{REVISE}\n{named}")
            *_, answer = self._generate(request, hits, revised, started)
            assert isinstance(answer, Answer)
            answer.usage = _sum_usage(first, answer.usage)  # both calls are paid for
            answer.warnings.append(
                f"strict: the model was asked once more, without {len(unsupported)} "
                "sentence(s) its sources do not support"
            )
        yield self._drop_unsupported(answer, hits)  # no text before: it is shown when complete

    def _drop_unsupported(self, answer: Answer, hits: list[Hit]) -> Answer:
        gone = [c for c in answer.checks if c.verdict != "supported"]
        if not gone or self.verifier is None:
            return answer
        text = answer.text
        for check in gone:
            text = text.replace(check.sentence, "", 1)
        text = "\n".join(" ".join(line.split()) for line in text.splitlines())
        text = "\n".join(line for line in text.splitlines() if line.strip(" -*•"))
        kept = set(cited_numbers(text))
        citations = [c for c in answer.citations if c.n in kept]
        answer.warnings.append(
            f"strict: removed {len(gone)} sentence(s) no cited abstract supports: "
            + " | ".join(c.sentence for c in gone)[:300]
        )
        if not citations:
            answer.text, answer.citations, answer.checks = (
                CANNOT_ANSWER + nearest_papers(hits),
                [],
                [],
            )
            answer.refused = True
            return answer
        answer.text, answer.citations = in_order_of_citation(text, citations)
        cited = {c.n: c.text for c in answer.citations}
        answer.checks = self.verifier.check(answer.text, cited, papers=hits)
        return answer

    def invoke(self, request: Request) -> Answer:
        *_, answer = self.stream(request)
        assert isinstance(answer, Answer)
        return answer

    def as_runnable(self) -> Runnable[Request, Answer]:
        """The pipeline as LangChain runnables: retrieve | generate-and-check."""
        from langchain_core.runnables import RunnableLambda

        def retrieve(request: Request) -> dict[str, Any]:
            started = time.perf_counter()
            hits, context = self.retrieve(request)
            return {"request": request, "hits": hits, "context": context, "started": started}

        def generate(state: dict[str, Any]) -> Answer:
            *_, answer = self._generate(
                state["request"], state["hits"], state["context"], state["started"]
            )
            assert isinstance(answer, Answer)
            return answer

        return RunnableLambda(retrieve) | RunnableLambda(generate)
