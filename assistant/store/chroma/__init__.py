"""Everything that touches Chroma: ``vectors`` (a collection behind our ``ChromaVectors``,
through chromadb's public client) and ``probe`` (a child process that reads an index, so a
crash inside Chroma is an exit status). No other module imports chromadb."""

from assistant.store.chroma.vectors import BOOKKEEPING, ChromaVectors, Record

__all__ = ["BOOKKEEPING", "ChromaVectors", "Record"]
