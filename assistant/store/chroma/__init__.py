"""Everything that touches Chroma: ``vectors`` (a collection behind our ``ChromaVectors``,
through chromadb's client; ``CoreReader`` reads one through the Rust core that client drives,
which spares a read-only command ~0.9 s of imports) and ``probe`` (a child process that reads
an index, so a crash inside Chroma is an exit status). No other module imports chromadb."""

from assistant.store.chroma.vectors import BOOKKEEPING, ChromaVectors, CoreReader, Record

__all__ = ["BOOKKEEPING", "ChromaVectors", "CoreReader", "Record"]
