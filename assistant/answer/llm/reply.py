"""Reading a model's reply as real model families write it, streamed or whole.

One normalising step between the model server and everything that reads an answer:

- **Reasoning apart.** ``<think>…</think>`` (and ``<thinking>``, ``<reasoning>``) inline in the
  content, split across streamed pieces or never closed, becomes ``Reasoning``; so does the text
  before a closing tag that was never opened (templates that open ``<think>`` in the prompt, as
  DeepSeek-R1 distills do), which is announced with ``retracts=True`` because it was first taken
  for the answer. Reasoning sent in its own field (``reasoning_content``, ``reasoning``) is
  handled by the provider; this module reads the content.
- **A fence around the whole answer** (```` ```markdown … ``` ````) is removed.
- **Citation styles** become ``[n]``: ``【1】``, ``【1†source】``, ``[Source 1]``, ``(Source 1)``,
  ``[^1]``, ``[Sources 1, 2]``, and the prompt's own ``<source n="1" …>`` tag echoed back;
  footnote definitions (``[^1]: …``) are dropped, since the
  answer's sources are listed by the tool. ``[1, 2]`` and ``[1-3]`` are read by the citation
  check itself.

Each stage holds back only what the next piece could still change (a tag, a fence or a marker
cut in half), so streamed text is shown as soon as it is known to be answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TAGS = ("think", "thinking", "reasoning")
_OPEN = re.compile(r"<\s*(" + "|".join(_TAGS) + r")\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*(" + "|".join(_TAGS) + r")\s*>", re.IGNORECASE)
_PARTIAL_TAG = re.compile(r"<\s*/?\s*[a-zA-Z]{0,9}\s*\Z")  # "<", "</th", "<reason"


@dataclass(frozen=True)
class Reasoning:
    """Text the model wrote while thinking: never part of the answer.

    ``retracts``: this text was already passed on as answer text (a closing tag arrived with no
    opening one); whoever collected it as answer must drop it."""

    text: str
    retracts: bool = False


Part = str | Reasoning


class _ReasoningSplitter:
    """Separates inline reasoning from answer text on a stream of pieces. ``hold_start``: the
    model's template opens ``<think>`` in the prompt, so its reply is held until a tag says
    where the reasoning ends (or the reply ends: then it was all answer)."""

    def __init__(self, hold_start: bool = False) -> None:
        self.pending = ""
        self.thinking = False
        self.undecided = hold_start
        self.answered = ""  # answer text passed on so far (retracted on an orphan close)

    def feed(self, piece: str) -> list[Part]:
        self.pending += piece
        if self.undecided:
            if not (_OPEN.search(self.pending) or _CLOSE.search(self.pending)):
                return []
            self.undecided = False
        out: list[Part] = []
        while True:
            if self.thinking:
                close = _CLOSE.search(self.pending)
                if close is None:
                    break
                out.append(Reasoning(self.pending[: close.start()]))
                self.pending = self.pending[close.end() :]
                self.thinking = False
                continue
            opening, close = _OPEN.search(self.pending), _CLOSE.search(self.pending)
            if close is not None and (opening is None or close.start() < opening.start()):
                # Closed without being opened: everything so far was reasoning.
                text = self.answered + self.pending[: close.start()]
                out.append(Reasoning(text, retracts=bool(self.answered)))
                self.answered = ""
                self.pending = self.pending[close.end() :]
                continue
            if opening is not None:
                out.append(self._answer(self.pending[: opening.start()]))
                self.pending = self.pending[opening.end() :]
                self.thinking = True
                continue
            break
        held = _PARTIAL_TAG.search(self.pending)
        cut = held.start() if held else len(self.pending)
        if self.thinking:
            out.append(Reasoning(self.pending[:cut]))
        else:
            out.append(self._answer(self.pending[:cut]))
        self.pending = self.pending[cut:]
        return [p for p in out if (p.text if isinstance(p, Reasoning) else p)]

    def flush(self, truncated: bool = False) -> list[Part]:
        """The rest. ``truncated``: the reply was cut at max_tokens, so a reply still held
        for its closing tag was reasoning that never ended."""
        rest, self.pending = self.pending, ""
        held, self.undecided = self.undecided, False
        if not rest:
            return []
        if self.thinking or (held and truncated):
            return [Reasoning(rest)]
        return [self._answer(rest)]

    def release(self) -> list[Part]:
        """Stop holding: the reasoning arrives in a field of its own, so the content is answer."""
        if not self.undecided:
            return []
        self.undecided = False
        return self.feed("")

    def _answer(self, text: str) -> str:
        self.answered += text
        return text


_FENCE_OPEN = re.compile(r"\A\s*```[\w+-]*[ \t]*\n")
_FENCE_CLOSE = re.compile(r"\n?[ \t]*```[ \t]*\s*\Z")
_MAYBE_FENCE_CLOSE = re.compile(r"\n?[ \t]*`{1,3}[ \t]*\s*\Z|\n[ \t]*\Z")


class _FenceStripper:
    """Removes a code fence that wraps the whole answer."""

    def __init__(self) -> None:
        self.head = ""  # the answer's start, until it is known whether a fence opens it
        self.started = False
        self.fenced = False
        self.tail = ""  # held back: it may be the closing fence

    def feed(self, piece: str) -> str:
        if not self.started:
            self.head += piece
            start = self.head.lstrip()
            if not start or ("```".startswith(start[:3]) and "\n" not in start):
                return ""  # it may still become a fence line
            self.started = True
            opening = _FENCE_OPEN.match(self.head)
            self.fenced = opening is not None
            piece = self.head[opening.end() :] if opening else self.head.lstrip()
            self.head = ""
        if not self.fenced:
            return piece
        text = self.tail + piece
        held = _MAYBE_FENCE_CLOSE.search(text)
        cut = held.start() if held else len(text)
        self.tail = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        if not self.started:
            text, self.head = self.head, ""
            return "" if not text.strip().strip("`").strip() else text
        rest, self.tail = self.tail, ""
        if self.fenced:
            rest = _FENCE_CLOSE.sub("", rest)
        return rest


_NUMBERS = r"\d+(?:\s*(?:,|;|&|and|-|–)\s*(?:sources?\s*)?#?\d+)*"
_CITATION_STYLES = [
    # 【1】, 【1†source】, 【4:0†source】 (OpenAI and Qwen file-search style)
    (re.compile(r"【\s*(\d+)[^】\n]{0,40}】"), lambda m: f"[{m.group(1)}]"),
    # [^1] footnote references, [1†source]
    (re.compile(r"\[\^(\d+)\]|\[(\d+)†[^\]\n]{0,40}\]"), lambda m: f"[{m.group(1) or m.group(2)}]"),
    # [Source 1], [Sources 1, 2], [source #3], [Ref. 2], [Doc 1], (Source 1), (Sources 1 and 2)
    (
        re.compile(
            r"[\[(]\s*(?:sources?|refs?\.?|references?|docs?|documents?|abstracts?|citations?)"
            r"\s*[:#]?\s*(" + _NUMBERS + r")\s*[\])]",
            re.IGNORECASE,
        ),
        lambda m: _bracketed(m.group(1)),
    ),
]
# Small models echo the prompt's own source tags as citations: <source n="2" label="X" ...>.
_SOURCE_TAG = re.compile(r'<\s*source\s+n\s*=\s*"?(\d+)"?[^>\n]{0,300}>|<\s*/\s*source\s*>')
_FOOTNOTE_DEFINITION = re.compile(r"^[ \t]*\[\^\d+\]:.*(?:\n|\Z)", re.MULTILINE)
_OPENERS = "[【("
_PARTIAL_SOURCE_TAG = re.compile(r"<\s*/?\s*(?:s|so|sou|sour|sourc|source(?:\s[^>\n]*)?)?\Z")
_MAX_HELD = 60  # characters held waiting for a closing bracket
_MAX_TAG = 320  # an echoed source tag carries its attributes


def _bracketed(group: str) -> str:
    """ "1, source 2" -> "[1, 2]": the citation check reads lists and ranges."""
    numbers = re.sub(r"(?i)\s*(?:&|and)\s*", ", ", re.sub(r"(?i)sources?\s*#?", "", group))
    return f"[{numbers.strip()}]"


def normalise_citations(text: str) -> str:
    """Every citation style a model family writes, as ``[n]`` markers."""
    text = _SOURCE_TAG.sub(lambda m: f"[{m.group(1)}]" if m.group(1) else "", text)
    text = _FOOTNOTE_DEFINITION.sub("", text)
    for pattern, replace in _CITATION_STYLES:
        text = pattern.sub(replace, text)
    return text


class _CitationNormaliser:
    """``normalise_citations`` on a stream: an unclosed bracket is held until it closes."""

    def __init__(self) -> None:
        self.pending = ""

    def feed(self, piece: str) -> str:
        text = self.pending + piece
        start = max(text.rfind(opener) for opener in _OPENERS)
        closers = {"[": "]", "【": "】", "(": ")"}
        tag = _PARTIAL_SOURCE_TAG.search(text)
        if tag and len(text) - tag.start() <= _MAX_TAG:  # an echoed source tag, still arriving
            text, self.pending = text[: tag.start()], text[tag.start() :]
            return normalise_citations(text)
        if start >= 0 and len(text) - start <= _MAX_HELD:
            if closers[text[start]] not in text[start:]:
                text, self.pending = text[:start], text[start:]
                return normalise_citations(text)
        # A footnote definition is dropped whole: hold an unfinished last line that starts one.
        line_start = text.rfind("\n") + 1
        if text[line_start:].lstrip().startswith("[^") and "\n" not in text[line_start:]:
            text, self.pending = text[:line_start], text[line_start:]
        else:
            self.pending = ""
        return normalise_citations(text)

    def flush(self) -> str:
        rest, self.pending = self.pending, ""
        return normalise_citations(rest)


# Models whose chat template opens <think> in the prompt: their replies only close it.
_OPENS_IN_TEMPLATE = re.compile(r"deepseek-?r1|r1-distill|-r1\b|qwq", re.IGNORECASE)


def opens_think_in_template(model: str) -> bool:
    """The model is one whose replies start inside ``<think>`` (DeepSeek-R1 and its distills,
    QwQ), so the start of a reply is held until its reasoning is known to have ended."""
    return bool(_OPENS_IN_TEMPLATE.search(model))


class ReplyReader:
    """A model's reply, piece by piece, as answer text (str) and ``Reasoning``."""

    def __init__(self, hold_start: bool = False) -> None:
        self._split = _ReasoningSplitter(hold_start)
        self._fence = _FenceStripper()
        self._cite = _CitationNormaliser()

    def feed(self, piece: str) -> list[Part]:
        return self._answer_parts(self._split.feed(piece))

    def release(self) -> list[Part]:
        """The reasoning arrives in a field of its own: what was held is answer."""
        return self._answer_parts(self._split.release())

    def flush(self, truncated: bool = False) -> list[Part]:
        parts = self._answer_parts(self._split.flush(truncated))
        tail = self._cite.feed(self._fence.flush()) + self._cite.flush()
        return parts + ([tail] if tail else [])

    def _answer_parts(self, parts: list[Part]) -> list[Part]:
        out: list[Part] = []
        for part in parts:
            if isinstance(part, Reasoning):
                if part.retracts:  # the answer stages start over after reasoning
                    self._fence, self._cite = _FenceStripper(), _CitationNormaliser()
                out.append(part)
                continue
            text = self._cite.feed(self._fence.feed(part))
            if text:
                out.append(text)
        return out


def collect(parts: list[Part]) -> tuple[str, str]:
    """Parts as (answer, reasoning): retracted answer text counts as reasoning only."""
    answer: list[str] = []
    reasoning: list[str] = []
    for part in parts:
        if isinstance(part, Reasoning):
            if part.retracts:
                answer.clear()
            reasoning.append(part.text)
        else:
            answer.append(part)
    return "".join(answer), "".join(reasoning)


def read_reply(text: str) -> tuple[str, str]:
    """A whole reply as (answer, reasoning)."""
    reader = ReplyReader()
    return collect(reader.feed(text) + reader.flush())
