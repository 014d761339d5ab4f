"""Refusals as models write them: our exact sentence, or the model's own words.

The prompt asks for one sentence (``CANNOT_ANSWER``) when the sources do not answer, and large
models write it; small ones and other families say it their own way ("The provided abstracts
do not mention the learning rate.", "I couldn't find that in the sources [1]."). A reply is a
refusal when every sentence in it that says something says that the sources do not answer. A
sentence that states a finding ("KVFlow does not require retraining [1].") is not one: the
patterns need the sources, the information, or the model itself as the subject.
"""

from __future__ import annotations

import re

from assistant.answer.result import CANNOT_ANSWER
from assistant.text.normalise import split_sentences

# Papers are not a subject here: "the paper does not provide guarantees" is a finding.
_SOURCES = (
    r"(?:the\s+)?(?:provided\s+|given\s+|available\s+|retrieved\s+|above\s+|supplied\s+)?"
    r"(?:sources?|abstracts?|context|documents?|texts?|passages?|excerpts?)"
)
_PATTERNS = [
    # "The provided abstracts do not mention ...", "the sources lack ..."
    _SOURCES
    + r"(?:\s+(?:provided|given|above|here))?\s+(?:do(?:es)?\s+not|don't|doesn't|did\s+not|"
    r"lacks?|fails?\s+to)\s+(?:\w+\s+){0,2}?(?:contain|mention|provide|state|include|discuss|"
    r"specify|give|report|answer|address|describe|offer|say|cover|indicate|detail)",
    # "There is no information (in the sources) about ...", "No abstract mentions ..."
    r"\b(?:there\s+is|there's|i\s+(?:have|found)|contains?)\s+no\s+(?:specific\s+|relevant\s+|"
    r"explicit\s+|direct\s+)?(?:information|mention|details?|data|answer|evidence|indication)",
    r"^\s*no\s+(?:information|mention|details?|source|abstract|paper)\b",
    # "I cannot answer ...", "I couldn't find ...", "I'm unable to determine ..."
    r"\b(?:i|we)\s*(?:cannot|can't|can\s+not|could\s+not|couldn't|am\s+unable\s+to|'m\s+unable\s+to|"
    r"was\s+unable\s+to|do\s+not|don't)\s+(?:\w+\s+)?(?:answer|find|determine|provide|locate|"
    r"identify|know|see|tell)",
    # "... is not mentioned / not stated in the abstracts", "not specified in [1]"
    r"\b(?:is|are|was|were)\s+not\s+(?:explicitly\s+|directly\s+)?(?:mentioned|stated|provided|"
    r"specified|reported|given|discussed|addressed|described|included|available|found)\b",
    r"\b(?:cannot|can't)\s+be\s+(?:answered|determined|found)\b",
    r"\bunable\s+to\s+(?:answer|determine|find)\b",
    r"\bnone\s+of\s+(?:the\s+)?(?:sources|abstracts|papers|documents)\b",
]
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)
_MARKER = re.compile(r"\[\d[^\]]*\]")
_OURS = CANNOT_ANSWER.lower().rstrip(".")
_FILLER = re.compile(
    r"^(?:you\s+(?:may|might|could|can)\s+(?:want\s+to\s+)?(?:consult|check|refer|look|read)|"
    r"(?:please\s+)?(?:consult|refer\s+to)\s+the\s+full|i\s+(?:recommend|suggest)|"
    r"sorry|unfortunately|however|therefore|so|based\s+on\s+the\s+(?:provided\s+)?"
    r"(?:sources|abstracts|information)|nearest\s+abstracts\s+found)\b",
    re.IGNORECASE,
)


def _says_something(sentence: str) -> bool:
    return len(re.findall(r"[^\W\d_]{2,}", sentence)) >= 3


def _declines(sentence: str) -> bool:
    return _OURS in sentence.lower() or bool(_REFUSAL.search(sentence))


def is_refusal(text: str) -> bool:
    """The reply declines to answer: only sentences that say the sources do not answer (ours,
    or the model's own words); a sentence that states anything else makes it an answer."""
    sentences = [
        " ".join(_MARKER.sub(" ", s).split())
        for line in text.splitlines()
        for s in split_sentences(line.strip().lstrip("-*• "))
    ]
    claims = [s for s in sentences if _says_something(s)]
    declined = [s for s in claims if _declines(s)]
    return bool(declined) and all(s in declined or _FILLER.match(s) for s in claims)
