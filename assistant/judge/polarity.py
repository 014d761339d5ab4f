"""Direction cues: does the evidence move the claim's quantity the same way, or the other way?

"X reduces Y" against "X raised Y" is the commonest way a cited abstract contradicts a claim, and
embeddings barely see it (antonyms sit close together). Each text gets a polarity, the product
of the signs of its direction words (increase +1, decrease -1, negation -1), counted only near
the content words the claim and the sentence share, so a sentence's unrelated "lower" does not
flip it. "High CRP reduces risk" is -1, "elevated CRP increased risk" is +1: a conflict.
"""

from __future__ import annotations

import re

import numpy as np

from assistant.text.terms import analyze

_UP = re.compile(
    r"^(?:increas\w*|higher|highest|high|more|most|greater|greatest|enhanc\w*|promot\w*|"
    r"elevat\w*|up-?regulat\w*|positive\w*|improv\w*|rais\w*|activat\w*|induc\w*|stimulat\w*|"
    r"better|best|faster|gain\w*|accelerat\w*|augment\w*|exacerbat\w*|boost\w*|rise|rises|"
    r"rising|stabiliz\w*|stronger|strongly|larger|overexpress\w*|amplif\w*|benefi\w*|"
    r"effective|efficacious|facilitat\w*|potentiat\w*|upreg\w*)$"
)
_DOWN = re.compile(
    r"^(?:decreas\w*|lower\w*|lowest|low|less|least|fewer|reduc\w*|inhibit\w*|suppress\w*|"
    r"down-?regulat\w*|negative\w*|impair\w*|attenuat\w*|prevent\w*|block\w*|diminish\w*|"
    r"deplet\w*|poor\w*|worse\w*|slow\w*|declin\w*|loss|lose|loses|losing|lost|deficien\w*|"
    r"lack\w*|destabiliz\w*|weak\w*|shorter|smaller|protect\w*|alleviat\w*|ameliorat\w*|"
    r"abolish\w*|abrogat\w*|counteract\w*|imped\w*|delay\w*|insufficien\w*|harm\w*|"
    r"ineffective|disrupt\w*|knock\w*|delet\w*|limit\w*)$"
)
_NEGATION = re.compile(
    r"^(?:not|no|never|without|unable|cannot|can't|fail\w*|neither|nor|none|unrelated|"
    r"uninvolved|unaffected|unchanged|independent|insignificant|absent|absence|doesn't|"
    r"don't|didn't|isn't|aren't|wasn't|weren't|n't|"
    # WordPiece splits "doesn't" into doesn ' t: the word-level alignment sees the stem
    r"doesn|don|didn|isn|aren|wasn|weren|hasn|haven|hadn|couldn|wouldn|shouldn)$"
)
_WORD = re.compile(r"[a-z][a-z'-]*")
WINDOW = 3  # words either side of a shared content word


def cue(word: str) -> int:
    """+1 for an increase word, -1 for a decrease or negation word, 0 otherwise."""
    if _UP.match(word):
        return 1
    if _DOWN.match(word) or _NEGATION.match(word):
        return -1
    return 0


def _content_stems(words: list[str]) -> list[str | None]:
    """The BM25 stem of each non-cue word (None for cue words and stop words)."""
    stems = analyze(words) if words else []
    return [
        terms[0] if terms and not cue(w) else None for w, terms in zip(words, stems, strict=True)
    ]


def _local_polarity(words: list[str], stems: list[str | None], shared: set[str]) -> int:
    anchors = [i for i, stem in enumerate(stems) if stem is not None and stem in shared]
    sign, hits = 1, 0
    for i, word in enumerate(words):
        value = cue(word)
        if value and any(abs(i - j) <= WINDOW for j in anchors):
            hits += 1
            sign *= value
    return sign if hits else 0


def aligned_polarity(claim: str, sentence: str) -> tuple[int, int]:
    """Polarities (-1, 0 or +1) of the claim and the sentence around their shared words."""
    claim_words = _WORD.findall(claim.lower())
    sentence_words = _WORD.findall(sentence.lower())
    claim_stems = _content_stems(claim_words)
    sentence_stems = _content_stems(sentence_words)
    shared = {s for s in claim_stems if s} & {s for s in sentence_stems if s}
    return (
        _local_polarity(claim_words, claim_stems, shared),
        _local_polarity(sentence_words, sentence_stems, shared),
    )


# Word-level alignment: each claim word is matched to the evidence word whose contextual MiniLM
# vector is closest, so "reduces" meets "raised" even when no window links them.

_NEGATED_HEADS = frozenset({"not", "no", "never", "without", "cannot"})
_SKIP_AFTER_NEGATION = frozenset({"a", "an", "the", "any", "effect", "role"})


def words_from_pieces(pieces: list[str], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Glue WordPiece continuations ("##...") back on; a word keeps its first piece's vector."""
    words: list[str] = []
    keep: list[int] = []
    for i, piece in enumerate(pieces):
        if piece.startswith("##") and words:
            words[-1] += piece[2:]
        else:
            words.append(piece)
            keep.append(i)
    return words, vectors[keep] if keep else vectors[:0]


def _negated(words: list[str], position: int) -> bool:
    return any(_NEGATION.match(w) for w in words[max(0, position - WINDOW) : position])


def aligned_direction(
    claim: tuple[list[str], np.ndarray], sentence: tuple[list[str], np.ndarray]
) -> tuple[int, int]:
    """(conflicts, agreements) between the claim's direction words and their aligned words."""
    claim_words, claim_vectors = claim
    sentence_words, sentence_vectors = sentence
    if not len(claim_vectors) or not len(sentence_vectors):
        return 0, 0
    nearest = (claim_vectors @ sentence_vectors.T).argmax(axis=1)
    conflicts = agreements = 0
    for i, word in enumerate(claim_words):
        sign = cue(word)
        if not sign or _NEGATION.match(word):
            continue
        j = int(nearest[i])
        other = cue(sentence_words[j])
        if not other or _NEGATION.match(sentence_words[j]):
            continue
        if _negated(sentence_words, j):
            other = -other
        if sign * other < 0:
            conflicts += 1
        else:
            agreements += 1
    return conflicts, agreements


def negated_assertion(
    claim: tuple[list[str], np.ndarray], sentence: tuple[list[str], np.ndarray]
) -> tuple[int, int]:
    """(conflicts, agreements) for what the claim negates ("no effect on X", "unrelated"):
    does the aligned evidence word carry a negation too?"""
    claim_words, claim_vectors = claim
    sentence_words, sentence_vectors = sentence
    if not len(claim_vectors) or not len(sentence_vectors):
        return 0, 0
    similarity = claim_vectors @ sentence_vectors.T
    conflicts = agreements = 0
    for i, word in enumerate(claim_words):
        if not _NEGATION.match(word):
            continue
        k = i + 1 if word in _NEGATED_HEADS else i  # "no [effect on] X" -> X; "unrelated" itself
        while (
            k < len(claim_words)
            and k != i
            and (len(claim_words[k]) < 3 or claim_words[k] in _SKIP_AFTER_NEGATION)
        ):
            k += 1
        if k >= len(claim_words):
            continue
        j = int(similarity[k].argmax())
        if _negated(sentence_words, j) or _NEGATION.match(sentence_words[j]):
            agreements += 1
        else:
            conflicts += 1
    return conflicts, agreements
