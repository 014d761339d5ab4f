"""The one object every entry point uses: ``Assistant``.

The CLI, the chat REPL, the Python API and the eval harness all call it. Models, store and
settings are passed in (or built from settings); nothing is reached through globals.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from assistant.answer.chain import AnswerChain, OnStatus, Request, close_enough
from assistant.answer.factory import make_provider
from assistant.answer.llm.reply import Reasoning
from assistant.answer.offline.metadata import (
    asked_author,
    asked_year,
    is_listing,
    topic_query,
    unrestricted,
)
from assistant.answer.offline.parts import holds, literal_terms
from assistant.answer.offline.question import asked_terms, is_survey
from assistant.answer.provider import Provider
from assistant.answer.result import Answer
from assistant.embedding.embedders import (
    MINILM_PROVIDERS,
    Embedder,
    make_embedder,
    recorded_minilm,
)
from assistant.errors import (
    AssistantError,
    StoreDamagedError,
    StoreEmptyError,
    StoreMissingError,
    VectorIndexDamagedError,
)
from assistant.ingest.chunking import Chunker
from assistant.ingest.corpus import LoadResult, Paper, stream_corpus
from assistant.ingest.pipeline import Ingestor, IngestReport, Progress
from assistant.retrieval.hybrid import Hit, HybridRetriever, check_filters
from assistant.settings import Settings, default_store, load_settings
from assistant.store.base import Filter, Store
from assistant.store.catalog import CATALOG_FILE, Catalog, CatalogDamaged
from assistant.store.diskspace import said_when_full
from assistant.store.health import Health, move_aside
from assistant.store.locking import index_files, writer_lock, writer_running
from assistant.text.tokens import count_tokens

if TYPE_CHECKING:
    from assistant.judge.verify import SentenceCheck, Verifier
    from assistant.store.chroma import ChromaVectors

MAX_QUERY_CHARS = 20_000

SURVEY_POOL = 3  # a survey considers this many times the papers it shows


class Assistant:
    """Question answering over paper abstracts.

    >>> a = Assistant(store="vectorstore")     # doctest: +SKIP
    >>> a.ingest()                             # doctest: +SKIP
    >>> a.search("KV cache eviction", k=5)     # doctest: +SKIP
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        store: str | Path | None = None,
        embedder: Embedder | None = None,
        provider: Provider | None = None,
        backend: Store | None = None,
    ):
        """``backend``: a store to use instead of the one in ``store`` (the folder), e.g. a
        ``LocalStore`` over ``ExactIndexes``; it is not closed by ``close``, and no writer lock
        guards it."""
        self.settings = settings or load_settings()
        if store is not None:
            self.settings = self.settings.model_copy(
                update={"store": self.settings.store.model_copy(update={"path": Path(store)})}
            )
        self.store_dir = Path(self.settings.store.path)
        self.embedder = embedder or make_embedder(self.settings)
        self._chosen_embedder = embedder is not None
        # The MiniLM the store records, when it is not the one the settings name (set by
        # ``_follow_store``): ``ingest --fast`` into an existing store says so.
        self.followed_embedder: str | None = None
        self._backend = backend
        self._store: Store | None = backend
        self._provider: Provider | None = provider
        self._verifier: Verifier | None = None
        self._retriever: HybridRetriever | None = None
        self._may_create = False  # only ingest creates a store; reading a missing one is an error
        # Eval workers share one Assistant: lazy wiring and the lexical refresh happen once.
        self._wiring = threading.RLock()

    # -- wiring (lazy, so `assistant --help` never opens a database) ------------------------
    @property
    def store(self) -> Store:
        with self._wiring:
            if self._store is None:
                server = self.settings.store.chroma_url
                self._store = self._open_server() if server else self._open_local()
                self._follow_store(self._store)
            return self._store

    def _follow_store(self, store: Store) -> None:
        """A store built by another MiniLM (the default's fp32 file, ``ingest --fast``'s int8
        one, or the int8 one in batches, as ``--fast`` was before) is read and extended with
        that one when the settings name MiniLM: the same network, so nothing has to be set for
        every later command, and its vectors are never mixed with another's."""
        if self._chosen_embedder or self.settings.embedding.provider not in MINILM_PROVIDERS:
            return
        found = recorded_minilm(self.settings, store.recorded_embedder())
        if found is not None and found.name != self.embedder.name:
            self.embedder = found
            self.followed_embedder = found.name

    def _open_server(self) -> Store:
        """The server holds the papers; the folder, a cache of them (made when missing, and
        made anew when damaged: nothing in it is not on the server)."""
        from assistant.store.server import ServerStore, cache_folder

        cfg = self.settings.store
        folder = cache_folder(self.store_dir, cfg.chroma_url or "", cfg.collection)
        try:
            catalog = Catalog(folder / CATALOG_FILE)
        except CatalogDamaged:
            move_aside(folder)
            catalog = Catalog(folder / CATALOG_FILE)
        return ServerStore(
            catalog,
            self._open_collection,
            cfg.collection,
            keeps_sentences=self.settings.retrieval.sentence_vectors,
            peek=self._recorded_embedder,
        )

    def _open_local(self) -> Store:
        from assistant.store.local import LocalStore

        path = self.store_dir / CATALOG_FILE
        if not self._may_create and not path.exists():
            raise StoreMissingError(missing_store_message(self.store_dir, self.settings))
        # With vectors or an index beside it, an empty catalog was truncated, not new.
        derived = any((self.store_dir / name).exists() for name in ("chroma", "bm25"))
        try:
            catalog = Catalog(path, empty_is_new=not derived)
        except CatalogDamaged as exc:
            raise StoreDamagedError(
                damaged_store_message(self.store_dir, self.settings, exc)
            ) from exc
        from assistant.store.chroma.indexes import ChromaIndexes

        return LocalStore(
            catalog,
            ChromaIndexes(self.store_dir / "chroma", self._open_collection),
            self.settings.store.collection,
            keeps_sentences=self.settings.retrieval.sentence_vectors,
            copy_vectors=self.settings.store.read_copy,
            query_embedder=lambda: self.embedder.name,
        )

    def _open_collection(self, name: str, client: bool = False) -> ChromaVectors:
        """``client``: open it through chromadb's client even if this Assistant only reads."""
        from assistant.store.chroma import ChromaVectors

        with said_when_full(self.store_dir, "opening"):
            return ChromaVectors.open(
                path=self.store_dir / "chroma",
                url=self.settings.store.chroma_url,
                collection=name,
                embedder_name=self.embedder.name,
                dim=self.embedder.dim,
                token=self._chroma_token(),
                read_only=not (self._may_create or client),  # until an ingest, it only reads
                save_every=self.settings.store.save_every,
            )

    def _recorded_embedder(self, name: str) -> str | None:
        from assistant.store.chroma import ChromaVectors

        return ChromaVectors.recorded_embedder(
            path=self.store_dir / "chroma",
            url=self.settings.store.chroma_url,
            collection=name,
            token=self._chroma_token(),
        )

    def _chroma_token(self) -> str | None:
        token = self.settings.store.chroma_token
        return token.get_secret_value() if token else None

    def _chunker(self) -> Chunker:
        cfg = self.settings.chunking
        return Chunker(cfg.size_for(self.settings.embedding.provider), cfg.overlap_tokens)

    def _ingestor(self) -> Ingestor:
        self._may_create = True
        return Ingestor(
            self.store,
            self.embedder,
            self._chunker(),
            batch_papers=self.settings.embedding.papers_per_write,
        )

    def require_papers(self) -> None:
        """Raise StoreEmptyError, saying how to fill it, when the store has nothing to search."""
        if not self.store.has_ready():
            raise StoreEmptyError(empty_store_message(self.store_dir, self.settings))

    def retriever(self) -> HybridRetriever:
        """One retriever while the store and embedder stay (it keeps what the store defines
        the question's acronyms as)."""
        self.require_papers()
        wiring = (self.embedder, self.store, self.settings.retrieval)
        kept = self._retriever
        if kept is None or (kept.embedder, kept.store, kept.settings) != wiring:
            kept = self._retriever = HybridRetriever(*wiring)
        return kept

    # -- API --------------------------------------------------------------------------------
    def ingest(
        self,
        paths: Iterable[str | Path] | None = None,
        *,
        prune: bool = False,
        progress: Progress | None = None,
        wait: bool = True,
        on_wait: Callable[[str], None] | None = None,
        rebuild: bool = False,
    ) -> IngestReport:
        """Index abstracts (the shipped corpus by default); returns what changed.

        One writer at a time: while another process ingests into the same store, this waits
        (telling ``on_wait`` why), or raises ``StoreBusyError`` when ``wait`` is False.
        ``rebuild`` first moves the store's files aside (see ``IngestReport.moved_aside``) and
        builds it anew from ``paths``: the remedy for a damaged catalog. Other threads must not
        read through this Assistant meanwhile (the write opens the store afresh under them);
        give them an Assistant of their own."""
        chosen = [Path(p) for p in paths] if paths else list(self.settings.corpus.default_paths)
        loaded = stream_corpus(chosen, max_chars=self.settings.corpus.max_abstract_chars)
        return self._write(loaded, prune, progress, wait, on_wait, rebuild)

    def repair(
        self,
        *,
        progress: Progress | None = None,
        wait: bool = True,
        on_wait: Callable[[str], None] | None = None,
    ) -> IngestReport:
        """Bring the store in line with its journal, reading no input: vectors that are gone
        are embedded again from the store's own copy, vectors of no paper dropped, and papers an
        interrupted run left unfinished taken out (run that ingest again to add them). The
        vector indexes are read whole in a child process first; one that fails is rebuilt."""
        return self._write(LoadResult(), False, progress, wait, on_wait, verify=True)

    def ingest_papers(
        self,
        papers: Iterable[Paper],
        *,
        prune: bool = False,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Index papers built in Python (see ``assistant.ingest.corpus.make_paper``)."""
        loaded = LoadResult()
        for paper in papers:
            loaded.add(paper)
        return self._write(loaded, prune, progress, wait=True, on_wait=None)

    def _catalog_readable(self) -> bool:
        path = self.store_dir / CATALOG_FILE
        if not path.exists() or path.stat().st_size == 0:  # absent or truncated to nothing
            return False
        try:
            Catalog(path, empty_is_new=False).close()
        except CatalogDamaged:
            return False
        return True

    def _write(
        self,
        loaded: LoadResult,
        prune: bool,
        progress: Progress | None,
        wait: bool,
        on_wait: Callable[[str], None] | None,
        rebuild: bool = False,
        verify: bool = False,
    ) -> IngestReport:
        if self._backend is not None:
            self._may_create = True
            return self._ingestor().run(loaded, prune=prune, progress=progress)
        server = bool(self.settings.store.chroma_url)
        nothing = self._nothing_to_write(loaded, rebuild, server)
        if nothing is not None:
            return nothing
        try:
            with writer_lock(self.store_dir, wait=wait, on_wait=on_wait):
                # Whatever this process opened before it held the lock may predate another
                # writer's changes: open the store afresh under the lock.
                self.close()
                moved = None
                if rebuild:  # not while a reader reads the index files being moved
                    with index_files(self.store_dir, exclusive=True):
                        moved = move_aside(self.store_dir)
                self._may_create = True
                store = self.store  # settles the embedder (``_follow_store``)
                self.embedder.prepare()  # before the lease, which opens a server's collections
                # Writers on other machines: the store's own guard (a lease on a Chroma server).
                with store.writer(wait, on_wait), said_when_full(self.store_dir):
                    if verify:
                        store.verify_vectors()
                    report = self._ingestor().run(loaded, prune=prune, progress=progress)
                report.moved_aside = str(moved) if moved else None
                report.warnings.extend(
                    f"a vector index could not be read: it was moved to {folder} and rebuilt "
                    "from the catalog (delete that folder once you no longer need it)"
                    for folder in store.set_aside()
                )
                return report
        finally:
            if not server:
                # Later reads open their own handles, which are closed and opened again
                # after another process's write (``LocalStore.collection``).
                self._may_create = False
                self._read_vectors_afresh()

    def _nothing_to_write(
        self, loaded: LoadResult, rebuild: bool, server: bool
    ) -> IngestReport | None:
        """The report of a write that creates nothing, or None; raises for a rebuild that
        does not apply. A new store's embedder is made ready before a store records it."""
        new_store = not server and not (self.store_dir / CATALOG_FILE).exists()
        if new_store and next(loaded.stream(), None) is None:
            # Nothing to write and no store yet: creating an empty one would only make the next
            # read command look at a store that seems valid and answers nothing.
            return IngestReport(
                files=len(loaded.files),
                problems=loaded.problems,
                warnings=list(loaded.warnings),  # e.g. every entry of an export lacked one
                created=False,
            )
        if rebuild and server:
            raise AssistantError(
                "--rebuild moves an embedded store aside; with a Chroma server, ingest into "
                "a new --store folder and a new collection instead"
            )
        if rebuild and self._catalog_readable():
            raise AssistantError(
                f"the catalog in {self.store_dir} is readable, so there is nothing to rebuild "
                "(--rebuild is the remedy for a damaged catalog); `assistant info --check` "
                "says what disagrees and `assistant ingest --repair` repairs it"
            )
        if new_store or rebuild:
            # A model that cannot be loaded (or made, for --fast) fails before a store exists
            # that records it as the store's embedder.
            self.embedder.prepare()
        return None

    def search(
        self, query: str, k: int | None = None, filters: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """The k most relevant papers, each once, with its best-matching passage."""
        query = check_query(query)
        try:
            return self.retriever().search(query, k, filters)
        except ValueError as exc:
            raise AssistantError(str(exc)) from exc

    def close_to(self, query: str, hits: list[Hit]) -> bool:
        """Whether any of a search's papers is close to the query: what ``ask`` refuses
        without (``llm.min_similarity``, a paper named, a literal condition), or a paper
        holding every word of it (a search is often a word or two: "ocean", whose vector
        is close to little)."""
        terms = asked_terms(query)
        return close_enough(query, hits, self.settings.llm.min_similarity) or bool(
            terms and any(holds(terms, hit) for hit in hits)
        )

    # -- answers ----------------------------------------------------------------------------
    @property
    def provider(self) -> Provider:
        with self._wiring:
            if self._provider is None:
                self._provider = make_provider(
                    self.settings, self._store_embedder(), self._sentence_lookup(), self._rarity
                )
            return self._provider

    def use_provider(self, provider: str | None = None, model: str | None = None) -> None:
        """Switch who writes answers; the current one stays if the new one cannot be set up."""
        changes = {k: v for k, v in {"provider": provider, "model": model}.items() if v}
        settings = self.settings.model_copy(
            update={"llm": self.settings.llm.model_copy(update=changes)}
        )
        self._provider = make_provider(
            settings, self._store_embedder(), self._sentence_lookup(), self._rarity
        )
        self.settings = settings

    def _store_embedder(self) -> Embedder:
        """The embedder of the store's vectors (see ``_follow_store``), once it is known."""
        try:
            self.store  # noqa: B018 -- opening it settles the embedder
        except StoreMissingError:  # said where the store is read
            pass
        return self.embedder

    def _rarity(self, terms: list[str]) -> tuple[dict[str, int], int]:
        """Document frequencies of terms in this store's papers (from the lexical index)."""
        return self.store.term_counts(terms)

    def _sentence_lookup(self) -> Callable[[list[str]], dict[str, np.ndarray]] | None:
        if not self.settings.retrieval.sentence_vectors:
            return None
        return lambda ids: self.store.sentence_vectors(ids)

    def chain(self) -> AnswerChain:
        return AnswerChain(
            self._search_topic,
            self.provider,
            self.settings.llm,
            count_tokens,
            verifier=self.verifier(),
            define=self.definitions,
        )

    def verifier(self) -> Verifier | None:
        """The sentence checker for the current provider (see ``ASSISTANT_LLM__VERIFY``)."""
        mode = self.settings.llm.verify
        if mode == "off" or (mode == "auto" and not self.provider.prompts_model):
            return None
        return self._sentence_checker()

    def _sentence_checker(self) -> Verifier:
        with self._wiring:
            if self._verifier is None:
                from assistant.judge.judges import OfflineJudge
                from assistant.judge.verify import Verifier

                self._verifier = Verifier(OfflineJudge(self.embedder))
            return self._verifier

    def check(self, answer: Answer) -> list[SentenceCheck]:
        """Each sentence of ``answer`` judged against the abstracts it cites, whatever the
        provider and ``ASSISTANT_LLM__VERIFY``: what ``ask --explain`` shows, for chat's
        ``/explain`` after an answer that was not checked when it was written."""
        cited = {c.n: c.text for c in answer.citations}
        return self._sentence_checker().check(answer.text, cited, papers=answer.retrieved)

    def definitions(self, question: str) -> dict[str, str]:
        """The words the store's abstracts define each acronym of the question by ("MoE":
        "mixture-of-experts"); see ``HybridRetriever.definitions``."""
        return self.retriever().definitions(question)

    def _search_topic(
        self, query: str, k: int | None = None, filters: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """Search for what a question is about: "who wrote the soil-moisture paper?" looks for
        "soil-moisture" (the provider still sees the whole question)."""
        hits = self.search(topic_query(query), k, filters)
        return hits + self._holding_literal(query, hits, filters)

    def _holding_literal(
        self, question: str, found: list[Hit], filters: Mapping[str, Any] | None
    ) -> list[Hit]:
        """A survey's literal condition ("on GitHub") asks for every paper that contains it:
        those the question's search missed, found in the lexical index."""
        terms = literal_terms(question) if is_survey(question) else []
        if not terms:
            return []
        counts, _ = self.store.term_counts(terms)
        wanted = min(counts.get(t, 0) for t in terms)
        have = {h.paper_id for h in found}
        if wanted == 0 or sum(holds(terms, h) for h in found) >= wanted:
            return []
        try:
            extra = self.retriever().holding(terms, self.settings.retrieval.candidates, filters)
        except ValueError as exc:
            raise AssistantError(str(exc)) from exc
        return [h for h in extra if h.paper_id not in have]

    def ask(
        self, question: str, k: int | None = None, filters: Mapping[str, Any] | None = None
    ) -> Answer:
        """A short answer in which every sentence cites the abstract it comes from."""
        return self.chain().invoke(self._request(question, k, filters))

    def stream(
        self,
        question: str,
        k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        search_query: str | None = None,
        on_status: OnStatus | None = None,
    ) -> Iterator[str | Reasoning | Answer]:
        """Yield the answer text as it arrives, then the checked ``Answer``; a reasoning model's
        thinking comes as ``Reasoning`` pieces, never as text. ``on_status`` is told
        "searching", then "answering" once the sources are found and the model is asked, and
        "thinking" when the model starts to reason."""
        request = self._request(question, k, filters, search_query)
        return self.chain().stream(request, on_status)

    def _request(
        self,
        question: str,
        k: int | None,
        filters: Mapping[str, Any] | None,
        search_query: str | None = None,
    ) -> Request:
        """The chain's request. Papers chosen by id (a ``paper_id`` filter: a follow-up about
        earlier answers, ``/show``) are pinned: they are what the question is about. A question
        about papers from a year ("papers from 2024 on X") or by an author searches only those
        when the store has any; a bare listing ("papers from 2024") is pinned too: those
        papers are the answer, however little they resemble it. So is a question about no topic
        under a filter that keeps at most k papers ("What do these papers find?")."""
        question = check_query(question)
        pinned = bool(filters and filters.get("paper_id"))
        asked = search_query or question
        # "papers from 2024 on X", "Which papers did John Smith write?": a year or an author
        # the store has papers of restricts the search, as --filter does.
        said: dict[str, Any] = {"year": asked_year(asked), "author": asked_author(asked)}
        for key, value in said.items():
            if value is None or key in (filters or {}):
                continue
            if self.store.matching(Filter(**{key: value})):
                filters = {**(filters or {}), key: value}
                pinned = pinned or is_listing(asked)
        if filters and not pinned and not asked_terms(unrestricted(asked)):
            # "What do these papers find?" under a filter: the papers it keeps, when few
            kept = self._kept_by(filters)
            if 0 < len(kept) <= (k or self.settings.retrieval.k):
                filters, pinned = {**filters, "paper_id": sorted(kept)}, True
        limit = None
        if is_survey(asked) and not pinned:  # "which papers ...": as many as qualify
            k, limit = self._survey_pool(asked, k)
        return Request(question, k, filters, search_query, pinned, limit)

    def _kept_by(self, filters: Mapping[str, Any]) -> set[str]:
        """The ready papers the filters keep (checked: a bad key or value is one line)."""
        try:
            return self.store.matching(check_filters(filters))
        except ValueError as exc:
            raise AssistantError(str(exc)) from exc

    def _survey_pool(self, question: str, k: int | None) -> tuple[int, int]:
        """How many papers a survey considers, and how many it shows (the -k asked, else
        ``survey_k``): every paper that contains its literal condition ("on GitHub"), and
        for a topic, ``SURVEY_POOL`` times what it shows, of which the bar keeps those likely
        enough."""
        retrieval = self.settings.retrieval
        limit = k or max(retrieval.k, retrieval.survey_k)
        pool = max(limit, SURVEY_POOL * retrieval.survey_k)
        terms = literal_terms(question)
        if terms:
            counts, _ = self.store.term_counts(terms)
            pool = max(pool, min(counts.get(t, 0) for t in terms) + retrieval.survey_k)
        return min(pool, retrieval.candidates), limit

    def health(self) -> Health:
        """Papers, vectors and lexical entries compared (the lexical index is derived: a stale
        or unreadable one is rebuilt first, as a search would)."""
        return self.store.health()

    def info(self) -> dict[str, Any]:
        """What the store holds; a vector index Chroma cannot read is one of its problems (the
        catalog's figures and the readable indexes' still show; that one's is None), so
        ``info`` says what ``--repair`` would rebuild."""
        counts = self.store.counts()
        sizes = dict(self.store.sizes())
        flags = _store_flags(self.store_dir, self.settings)
        try:
            problems = self.health().problems(flags)
        except VectorIndexDamagedError as exc:
            problems = [str(exc)]
        server = self.settings.store.chroma_url
        writer = writer_running(self.store_dir) if problems and not server else None
        if writer:
            problems.insert(
                0,
                f"an ingest ({writer}) is writing to this store, so what it has not finished "
                f"shows as disagreement below; run `assistant info --check{flags}` again when "
                "it has finished",
            )
        return {
            "store": str(self.store_dir.resolve()),
            "default_store": str(default_store()),  # where commands look without --store
            "chroma": self.settings.store.chroma_url or str((self.store_dir / "chroma").resolve()),
            "collection": self.settings.store.collection,
            "papers": counts["papers"],
            "chunks": counts["chunks"],
            "unfinished": counts["unfinished"],
            "vectors": sizes["vectors"],
            "sentence_vectors": sizes["sentence_vectors"],
            "embedder": self.embedder.name,
            "provider": self.provider.name,
            "model": self.provider.model,
            "chunker": self._chunker().name,
            "lexical": sizes["lexical"],
            **({"read_copy": note} if (note := self.store.read_copy_note()) else {}),
            "problems": problems,
        }

    def _read_vectors_afresh(self) -> None:
        """The open store's vector handles are opened again when next read (the catalog and
        the lexical index stay: threads may be reading through them)."""
        with self._wiring:
            if self._store is not None:
                self._store.forget_vectors()

    def close(self) -> None:
        if self._store is not None and self._store is not self._backend:
            self._store.close()
            self._store = None

    def __enter__(self) -> Assistant:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _store_flags(store_dir: Path, settings: Settings) -> str:
    """The flags that point a command at this store, empty for the default one."""
    flags = "" if store_dir == default_store() else f" --store {store_dir}"
    if settings.store.chroma_url:
        flags += f" --chroma-url {settings.store.chroma_url}"
    return flags


def missing_store_message(store_dir: Path, settings: Settings) -> str:
    """Which folder was looked at, and the command that creates a store there."""
    if store_dir.exists() and not store_dir.is_dir():
        return f"{store_dir} is a file, not a store folder; give --store a folder"
    return (
        f"no store in {store_dir.resolve()} (no {CATALOG_FILE} there); "
        f"create it with `assistant ingest{_store_flags(store_dir, settings)}`"
    )


def empty_store_message(store_dir: Path, settings: Settings) -> str:
    return (
        f"the store in {store_dir.resolve()} holds no papers yet; add abstracts with "
        f"`assistant ingest FILE_OR_FOLDER{_store_flags(store_dir, settings)}`"
    )


def damaged_store_message(store_dir: Path, settings: Settings, exc: CatalogDamaged) -> str:
    """Which file is damaged, and the command that re-creates the store from its sources."""
    flags = "" if store_dir == default_store() else f" --store {store_dir}"
    return (
        f"the store's catalog {exc.path.resolve()} is damaged ({exc.reason}); re-create the "
        f"store from its sources with `assistant ingest --rebuild [PATHS]{flags}` (the damaged "
        "files are moved aside, not deleted)"
    )


def check_query(query: str) -> str:
    query = " ".join((query or "").split())
    if not query:
        raise AssistantError("the question is empty; type a question about the abstracts")
    if len(query) > MAX_QUERY_CHARS:
        raise AssistantError(
            f"the question is {len(query):,} characters; keep it under {MAX_QUERY_CHARS:,} "
            "(ask about one topic at a time)"
        )
    return query
