"""Where papers, vectors and the lexical index live, behind one interface (``Store``).

``base`` defines the interface and its types, ``local`` the product's store (SQLite catalog,
vector indexes behind ``vector_index``, bm25s), ``server`` the store on a shared Chroma server
(with a local cache); the vector indexes are Chroma's (``chroma``, the only package that
imports chromadb) or exact ones in memory (``exact``).
"""

from assistant.store.base import Entry, Filter, Match, PaperVectors, Store

__all__ = ["Entry", "Filter", "Match", "PaperVectors", "Store"]
