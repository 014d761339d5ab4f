"""Whether a question is written in English, which is all the embedded model (MiniLM) and the
extractive answer read.

No language model: a question is taken as not English when most of its letters are of another
script (Chinese, Cyrillic, Arabic …), or when it uses the function words of another European
language ("¿Qué artículos estudian …?", "Welche Arbeiten untersuchen …?") and none of English's.
Technical terms are English in every language, so only function words are counted.
"""

from __future__ import annotations

import re
import unicodedata

ENGLISH_ONLY = (
    "The embedded model reads English only: ask in English (a chat model set through "
    "OPENAI_BASE_URL or OPENAI_API_KEY reads other languages)."
)

_ENGLISH = frozenset(
    "the of and to is are what which who how does do did for with from that this these those "
    "papers paper about their there any study studies why when where can".split()
)
# Function words of other European languages that are not also English words.
_FOREIGN = frozenset(
    # Spanish, Portuguese, Italian
    "el los las del qué que cuál cuáles cómo por para con una es sobre estudian artículos "
    "qual quais como os das dos uma são estudam artigos che il gli della dei quali sono studiano "
    "articoli perché "
    # German, Dutch
    "der das und ist sind welche welcher welches wie mit für von ein eine einem einen den dem des "
    "über werden untersuchen arbeiten het een zijn welke hoe voor "
    # French
    "le les des du et est quels quelles quel comment pour avec une sur dans qui étudient "
    "sont".split()
)
_WORD = re.compile(r"[^\W\d_]+")


def _latin(ch: str) -> bool:
    return "LATIN" in unicodedata.name(ch, "")


def is_english(question: str) -> bool:
    """False when the question is plainly in another language; True when in doubt."""
    letters = [ch for ch in question if ch.isalpha()]
    if not letters:
        return True
    if sum(not _latin(ch) for ch in letters) > len(letters) / 2:
        return False
    words = [w.lower() for w in _WORD.findall(question)]
    english = sum(w in _ENGLISH for w in words)
    foreign = sum(w in _FOREIGN for w in words) + question.count("¿")
    return not (foreign >= 2 and foreign > 2 * english)
