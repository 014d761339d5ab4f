"""Where papers, vectors and the lexical index live, behind one interface (``Store``).

``base`` defines the interface and its types, ``local`` the product's store (SQLite catalog,
Chroma, bm25s), ``server`` the store on a shared Chroma server (with a local cache), ``memory`` a
reference store in memory. Only ``chroma`` imports chromadb.
"""

from assistant.store.base import Entry, Filter, Match, PaperVectors, Store

__all__ = ["Entry", "Filter", "Match", "PaperVectors", "Store"]
