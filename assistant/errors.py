"""Domain errors. Each message says what went wrong and what to do next.

The CLI turns any ``AssistantError`` into a one-line message and a non-zero exit, in one place.
"""


class AssistantError(Exception):
    """Base class for errors that are the user's to fix, shown without a traceback."""


class ConfigError(AssistantError):
    """A setting is missing or invalid."""


class InputFileError(AssistantError):
    """An input file cannot be read as abstracts (empty, binary, undecodable, wrong columns)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class StoreError(AssistantError):
    """The vector store cannot be opened or is inconsistent."""


class StoreMissingError(StoreError):
    """A read command was pointed at a folder that holds no store."""


class StoreEmptyError(StoreError):
    """A read command was pointed at a store that holds no searchable paper."""


class StoreBusyError(StoreError):
    """Another process is writing to the store and the caller chose not to wait."""


class StoreDamagedError(StoreError):
    """A store file cannot be read (truncated, overwritten); the message names the remedy."""


class VectorIndexDamagedError(StoreDamagedError):
    """Chroma cannot load one of a store's vector indexes: a process was killed while Chroma
    saved it (its files are written in place). The next ingest rebuilds it from the catalog."""


class DiskFullError(StoreError):
    """The disk holding the store filled up while writing; what was written before is kept."""


class EmbedderMismatchError(StoreError):
    """The store was built with another embedding model than the one configured."""


class ProviderError(AssistantError):
    """The language-model or embedding provider failed (unreachable, timeout, bad answer)."""


class NoAnswerError(ProviderError):
    """The model replied without an answer: nothing at all, or only reasoning. Not a refusal;
    the eval counts these apart."""
