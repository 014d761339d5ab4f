"""All configuration in one typed place.

Every field can be set from the environment as ``ASSISTANT_<SECTION>__<FIELD>`` (for example
``ASSISTANT_RETRIEVAL__K=8``) and most from CLI flags. ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``
are read under their usual names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from assistant.errors import ConfigError
from assistant.resources import shipped_corpus

APP_NAME = "abstracts-assistant"


def default_store() -> Path:
    """One predictable place whatever the working directory: the user data directory
    (``~/.local/share/abstracts-assistant/vectorstore`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME)) / "vectorstore"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class StoreSettings(_Section):
    path: Path = Field(
        default_factory=default_store,
        description="Folder of the embedded Chroma store, its catalog and its BM25 index "
        "[default: the user data directory, e.g. ~/.local/share/abstracts-assistant/vectorstore]. "
        "With a Chroma server, only a cache of the server's papers and BM25 index.",
    )
    chroma_url: str | None = Field(
        None,
        description="URL of a Chroma server (`chroma run`), e.g. http://localhost:8000. "
        "When set, the server holds everything (papers, vectors); `path` holds a cache, so any "
        "client pointed at the server, even with an empty folder, sees the same papers.",
    )
    chroma_token: SecretStr | None = Field(
        None,
        description="Token for a Chroma server behind token authentication, sent as "
        "`Authorization: Bearer TOKEN`. Set it in the environment (ASSISTANT_STORE__CHROMA_TOKEN), "
        "not on a command line; it is never printed.",
    )
    collection: str = Field("abstracts", description="Chroma collection name.")
    save_every: int = Field(
        1000,
        ge=10,
        description="Vectors an embedded Chroma collection takes before it saves its index to "
        "its files (Chroma's `sync_threshold`), for a collection created with it. The kill "
        "tests lower it so that kills meet saves.",
    )
    read_copy: int = Field(
        40_000,
        ge=0,
        description="An embedded store with at most this many vectors keeps a copy of them "
        "beside its catalog (`vectors.npz`, 1.5 KB a vector), written at the end of each ingest "
        "that changed them; reads search it exactly without opening Chroma (a cold `ask` "
        "~0.4 s sooner). 0: no copy.",
    )


class CorpusSettings(_Section):
    default_paths: list[Path] = Field(
        default_factory=lambda: [shipped_corpus()],
        description="What `assistant ingest` reads when given no paths (the shipped corpus).",
    )
    max_abstract_chars: int = Field(
        20_000,
        ge=200,
        le=10_000_000,
        description="Longest abstract indexed, in characters; a longer one is cut to this "
        "length (at a space when there is one), with a warning naming its file and line, so "
        "one hostile line cannot make thousands of chunks.",
    )


class EmbeddingSettings(_Section):
    provider: Literal["minilm", "minilm-fast", "openai", "hashing"] = Field(
        "minilm",
        description="minilm: offline all-MiniLM-L6-v2 (ONNX). minilm-fast (what `ingest "
        "--fast` sets): the same model quantised to int8 once into ASSISTANT_CACHE_DIR, each "
        "text embedded alone, chunk vectors pooled from sentence vectors (~2x Chroma's naive "
        "ingest, SciFact nDCG@10 0.745, as minilm). Either reads and extends a store built "
        "by another MiniLM with that one. openai: OpenAI embeddings. "
        "hashing: hashed word and character n-grams, instant but weak (tests, quick trials).",
    )
    openai_model: str = Field("text-embedding-3-small", description="Model for provider=openai.")
    batch_size: int = Field(32, ge=1, le=2048, description="Texts embedded per call.")
    papers_per_write: int = Field(
        64,
        ge=1,
        le=5000,
        description="Papers embedded and committed together; an interrupted ingest redoes at "
        "most this many.",
    )
    max_tokens: int = Field(
        256, ge=16, le=512, description="MiniLM truncation length in word pieces."
    )


class ChunkingSettings(_Section):
    chunk_tokens: int | None = Field(
        None,
        ge=32,
        le=8000,
        description="Chunk size limit in tiktoken (cl100k) tokens. Unset: fitted to the "
        "embedder (200 for MiniLM, whose input is 256 word pieces, so no text is silently "
        "truncated; 1000 for OpenAI embeddings).",
    )
    overlap_tokens: int = Field(60, ge=0, description="Tokens shared by consecutive chunks.")

    def size_for(self, embedder_provider: str) -> int:
        return self.chunk_tokens or (1000 if embedder_provider == "openai" else 200)

    @model_validator(mode="after")
    def _overlap_smaller(self) -> ChunkingSettings:
        if self.overlap_tokens >= (self.chunk_tokens or 200):
            raise ValueError("overlap_tokens must be smaller than chunk_tokens")
        return self


class RetrievalSettings(_Section):
    k: int = Field(5, ge=1, le=200, description="Papers returned by search.")
    survey_k: int = Field(
        10,
        ge=1,
        le=200,
        description="Papers a 'which papers ...' answer cites at most (when -k is not given); "
        "it considers three times as many and says when more clear the relevance bar.",
    )
    candidates: int = Field(
        100, ge=10, le=2000, description="Papers each retriever contributes before fusion."
    )
    sentence_vectors: bool = Field(
        True,
        description="Also embed every sentence and rank papers by their best sentence. "
        "Better retrieval (SciFact nDCG@10 +0.02) for about twice the embedding work at "
        "ingest; changing it needs a re-ingest into a new store.",
    )
    fusion: Literal["zscore", "rrf"] = Field(
        "zscore",
        description="zscore: weighted sum of each retriever's standardised scores (default, "
        "tuned on SciFact train). rrf: weighted reciprocal rank fusion.",
    )
    head_weight: float = Field(
        0.4, ge=0, description="Weight of the similarity of a paper's first chunk (its head)."
    )
    chunk_weight: float = Field(0.4, ge=0, description="Weight of best-chunk similarity.")
    sentence_weight: float = Field(0.8, ge=0, description="Weight of best-sentence similarity.")
    lexical_weight: float = Field(1.0, ge=0, description="Weight of BM25.")
    rrf_k: float = Field(60.0, gt=0, description="Reciprocal rank fusion constant.")

    @model_validator(mode="after")
    def _some_weight(self) -> RetrievalSettings:
        if self.chunk_weight == 0 and self.sentence_weight == 0 and self.lexical_weight == 0:
            raise ValueError(
                "at least one of chunk_weight, sentence_weight, lexical_weight must be above 0"
            )
        return self


class LLMSettings(_Section):
    provider: Literal["auto", "extractive", "openai"] = Field(
        "auto",
        description="auto: openai when OPENAI_API_KEY or OPENAI_BASE_URL is set or the model "
        "names another LangChain provider, else extractive. extractive: no LLM, quotes the best "
        "sentences. openai: a LangChain chat model (ChatOpenAI, also for any OpenAI-compatible "
        "server via OPENAI_BASE_URL, unless the model is provider:name).",
    )
    model: str = Field(
        "gpt-4.1-mini",
        description="Chat model for provider=openai: a name (OpenAI, or the OPENAI_BASE_URL "
        "server's) or provider:name for any installed LangChain integration, e.g. "
        "anthropic:claude-3-5-haiku-latest, ollama:qwen2.5.",
    )
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(
        700,
        ge=16,
        le=16000,
        description="Longest answer, in tokens; the streamed text is also cut at 8 characters "
        "a token.",
    )
    timeout: float = Field(
        60.0,
        gt=0,
        description="Seconds the model server may take to start answering (retries included) "
        "and then to send each next piece of the answer; a slow model that keeps writing is "
        "never cut off.",
    )
    max_retries: int = Field(
        2,
        ge=0,
        le=10,
        description="Retries (with backoff, within the timeout) on timeouts, 429 and 5xx.",
    )
    context_tokens: int = Field(
        3500, ge=200, le=120_000, description="Token budget for the numbered sources."
    )
    max_question_tokens: int = Field(
        1000, ge=10, le=20_000, description="Longest question accepted, in tokens."
    )
    min_similarity: float = Field(
        0.28,
        ge=-1,
        le=1,
        description="Refuse when no retrieved passage is at least this similar (cosine) to "
        "the question: the abstracts are about something else.",
    )
    verify: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Judge each answer sentence against the abstracts it cites (offline judge): "
        "auto = for chat models (extractive answers quote, so they are supported by "
        "construction), on = always, off = never.",
    )
    strict: bool = Field(
        False,
        description="With a chat model: name the unsupported sentences to the model once, then "
        "drop what is still unsupported (said in warnings). The answer is shown when complete.",
    )
    extractive_sentences: int = Field(
        5, ge=1, le=20, description="Sentences quoted by the extractive answerer."
    )


class Settings(BaseSettings):
    """The assistant's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="ASSISTANT_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_assignment=True,
        populate_by_name=True,
    )

    store: StoreSettings = Field(default_factory=StoreSettings)
    corpus: CorpusSettings = Field(default_factory=CorpusSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    openai_api_key: str | None = Field(
        None,
        validation_alias=AliasChoices("OPENAI_API_KEY", "ASSISTANT_OPENAI_API_KEY"),
        description="Key for OpenAI (embeddings or chat).",
        repr=False,
    )
    openai_base_url: str | None = Field(
        None,
        validation_alias=AliasChoices("OPENAI_BASE_URL", "ASSISTANT_OPENAI_BASE_URL"),
        description="Any OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1.",
    )


def load_settings(**overrides: Any) -> Settings:
    """Build settings from the environment plus overrides, with an actionable error."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "settings"
            env = _variable(err["loc"])
            if err["type"] == "extra_forbidden":
                problems.append(f"{where}: {_unknown(err['loc'])}")
            else:
                problems.append(f"{where}: {err['msg']} (set it with {env} or the matching flag)")
        raise ConfigError("invalid settings: " + "; ".join(problems)) from exc


def _variable(loc: tuple[int | str, ...]) -> str:
    return "ASSISTANT_" + "__".join(str(p).upper() for p in loc)


def _section(annotation: Any) -> type[BaseModel] | None:
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )


def _unknown(loc: tuple[int | str, ...]) -> str:
    """What to say of a setting that does not exist: its variable, the closest real one, and
    the settings of its section (or the sections, for an unknown section)."""
    import difflib

    model: type[BaseModel] = Settings
    for part in loc[:-1]:
        model = _section(model.model_fields[str(part)].annotation) or model
    if model is Settings:
        valid = [
            _variable((name,)) + "__…"
            for name, spec in Settings.model_fields.items()
            if _section(spec.annotation)
        ]
    else:
        valid = [_variable((*loc[:-1], name)) for name in model.model_fields]
    wrong = _variable(loc)
    close = difflib.get_close_matches(wrong, valid, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"there is no setting {wrong}; {hint}valid ones: {', '.join(valid)}"
