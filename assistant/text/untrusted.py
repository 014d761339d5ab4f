"""Untrusted text made unable to open a turn: chat-template control tokens neutralised.

Abstracts, questions and chat history go into prompts as message content. Servers that parse
special tokens inside content (llama.cpp, vLLM and others, depending on their settings) would
turn ``<|im_start|>system`` in an abstract into a real system turn. Every control token of the
common chat templates is rewritten into an inert, still readable form (``<|im_start|>`` ->
``‹im_start›``), also when it is disguised: zero-width or other invisible format characters
inside it, or full-width brackets and bars (``＜|im_start|＞``, DeepSeek's ``<｜User｜>``).

Covered: ChatML and its kin (``<|im_start|>``, ``<|im_end|>``, ``<|endoftext|>``, Llama 3's
``<|eot_id|>``, ``<|start_header_id|>``, ``<|begin_of_text|>``, Phi's ``<|user|>``, gpt-oss's
``<|channel|>``, Command R's ``<|START_OF_TURN_TOKEN|>``, any ``<|name|>``), DeepSeek's
``<｜…｜>``, Mistral's ``[INST]``, ``[/INST]``, ``[SYSTEM_PROMPT]``, ``[TOOL_CALLS]``, Llama 2's
``<<SYS>>``, Gemma's ``<start_of_turn>``, ``<end_of_turn>``, the ``<s>``/``</s>`` sentence
tokens, and reasoning tags (``<think>``), which a model could echo into its own answer.
"""

from __future__ import annotations

import re
import unicodedata

_TOKEN = re.compile(
    r"<\|[^|<>\n]{1,48}\|>"  # <|im_start|>, <|eot_id|>, <|begin▁of▁sentence|> (folded)
    r"|\[/?(?:INST|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS)\]"
    r"|<</?SYS>>"
    r"|</?(?:start_of_turn|end_of_turn|s|bos|eos|pad|unk|think|thinking|reasoning)>",
    re.IGNORECASE,
)


def _fold(text: str) -> tuple[str, list[int]]:
    """``text`` with invisible format characters removed and full-width forms made ASCII, and
    for each character of the result its index in ``text``."""
    chars: list[str] = []
    where: list[int] = []
    for i, char in enumerate(text):
        if unicodedata.category(char) == "Cf":  # zero-width space, joiners, bidi marks...
            continue
        if "\uff01" <= char <= "\uff5e":  # full-width ASCII: ＜ ｜ ［ ...
            char = chr(ord(char) - 0xFEE0)
        chars.append(char)
        where.append(i)
    return "".join(chars), where


def _inert(token: str) -> str:
    """``<|im_start|>`` -> ``‹im_start›``, ``[/INST]`` -> ``‹/INST›``, ``<<SYS>>`` -> ``‹SYS›``."""
    inner = token.strip("<>[]|")
    return f"‹{inner.strip('|')}›"


def neutralise(text: str) -> str:
    """``text`` with every chat-template control token (or a disguised one) made inert."""
    if not text or not any(c in text for c in "<[＜［"):
        return text
    folded, where = _fold(text)
    out: list[str] = []
    last = 0
    for match in _TOKEN.finditer(folded):
        start, end = where[match.start()], where[match.end() - 1] + 1
        out.append(text[last:start])
        out.append(_inert(match.group(0)))
        last = end
    if last == 0:
        return text
    out.append(text[last:])
    return "".join(out)
