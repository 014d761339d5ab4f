"""The text analysis lexical matching uses: lower-cased, stop-word-free, Snowball-stemmed terms.

The BM25 index (``assistant.store.bm25``) matches on these terms; the answer writers and the
judge use them to compare a question's words with a sentence's.
"""

from __future__ import annotations

import bm25s
import Stemmer

_STEMMER = Stemmer.Stemmer("english")


def analyze(texts: list[str]) -> list[list[str]]:
    """Lower-cased, stop-word-free, stemmed terms: what BM25 matches on."""
    tokens = bm25s.tokenize(
        texts, stopwords="en", stemmer=_STEMMER, return_ids=False, show_progress=False
    )
    return [list(t) for t in tokens]
