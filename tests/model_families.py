"""Replies shaped as real model families write them, for the loopback server.

Each family answers the KVFlow question as that family does: where its reasoning goes (inline
``<think>``, a ``<think>`` its chat template opened in the prompt, or a field of its own), how
it cites (``[1]``, ``[1, 2]``, ``【1†source】``, ``[Source 1]``, ``(Source 1)``, ``[^1]``),
whether it fences or lists, how it streams (token-sized pieces or larger ones), and how it
refuses, in its own words. Every reasoning text holds ``THOUGHT`` and cites a paper the answer
does not ([3] and STARFlow), so a test can see that none of it leaks into what the user gets.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.openai_server import Reply

THOUGHT = "THOUGHT: source [3] is STARFlow, not relevant; KVFlow is the one to cite."
KVFLOW_Q = "What does KVFlow replace LRU eviction with?"
UNANSWERABLE_Q = "What learning rate does KVFlow use to train its eviction policy?"
FACT = "steps-to-execution"


@dataclass(frozen=True)
class Family:
    name: str
    answer: Callable[[int, int], Reply]  # KVFlow's source number, another source's number
    refusal: Callable[[], Reply]
    # The condense reply for a follow-up: `FOLLOW-UP: question`, as some families label it, or
    # the bare question, as others ignore the label (the question's shape then decides).
    condense: Callable[[str], Reply]
    reasons: bool = False  # the reply carries reasoning, inline or in a field

    @property
    def model(self) -> str:
        """The model name the server is asked for."""
        return self.name.split(" ")[0]


def _plain(text: str, **kw: Any) -> Reply:
    return Reply(text=text, **kw)


def _inline(text: str, **kw: Any) -> Reply:
    return Reply(text=f"<think>\n{THOUGHT}\n</think>\n\n{text}", **kw)


def _opened_in_prompt(text: str, **kw: Any) -> Reply:
    """DeepSeek-R1 distills: the template opens <think>, so the reply only closes it."""
    return Reply(text=f"{THOUGHT}\nSo the answer cites KVFlow.\n</think>\n\n{text}", **kw)


def _field(field: str) -> Callable[..., Reply]:
    def make(text: str, **kw: Any) -> Reply:
        return Reply(text=text, reasoning=THOUGHT, reasoning_field=field, **kw)

    return make


FAMILIES = [
    Family(
        "gpt-4.1-mini",
        lambda n, m: _plain(
            f"KVFlow replaces LRU with a workflow-aware eviction policy guided by each agent's "
            f"steps-to-execution value [{n}]. It reaches up to 2.19× speedup with many "
            f"concurrent workflows [{n}].",
            chunk_chars=4,
        ),
        lambda: _plain("The abstracts I have do not answer this question.", chunk_chars=4),
        lambda q: _plain(f"FOLLOW-UP: {q}"),
    ),
    Family(
        "claude-3.5-haiku (OpenAI-compatible proxy)",
        lambda n, m: _plain(
            f"**KVFlow** replaces LRU eviction with a workflow-aware policy [{n}]:\n\n"
            f"- It abstracts the agent schedule as an Agent Step Graph [{n}].\n"
            f"- Each agent gets a steps-to-execution value that guides fine-grained eviction "
            f"[{n}, {m}].",
            chunks=6,
        ),
        lambda: _plain(
            "I don't see information about the learning rate in the provided abstracts. The "
            "abstracts do not mention how KVFlow's policy is trained."
        ),
        lambda q: _plain(q),
    ),
    Family(
        "llama3.1:8b (Ollama)",
        lambda n, m: _plain(
            f"According to [Source {n}], KVFlow replaces LRU with an eviction policy guided by "
            f"each agent's steps-to-execution value.\n\n* It preserves entries likely to be "
            f"reused (Source {n}).",
            chunk_chars=3,
        ),
        lambda: _plain(
            "The provided abstracts do not mention the learning rate used to train KVFlow."
        ),
        lambda q: _plain(f'FOLLOW-UP: "{q}"'),
    ),
    Family(
        "qwen2.5:7b-instruct",
        lambda n, m: _plain(
            f"```markdown\nKVFlow replaces LRU with a fine-grained eviction policy guided by "
            f"steps-to-execution values [{n},{m}].\n```",
            chunk_chars=5,
        ),
        lambda: _plain("```\nThere is no information about a learning rate in the sources.\n```"),
        lambda q: _plain(q),
    ),
    Family(
        "qwen3:8b (thinking, inline)",
        lambda n, m: _inline(
            f"KVFlow replaces LRU with a workflow-aware eviction policy that uses "
            f"steps-to-execution values [{n}].",
            chunk_chars=2,
        ),
        lambda: _inline("The abstracts I have do not answer this question.", chunk_chars=2),
        lambda q: _inline(f"Follow-up: {q}"),
        reasons=True,
    ),
    Family(
        "deepseek-r1-distill-qwen-7b (template opens <think>)",
        lambda n, m: _opened_in_prompt(
            f"KVFlow replaces LRU eviction with a policy guided by steps-to-execution values "
            f"(Source {n}).",
            chunk_chars=3,
        ),
        lambda: _opened_in_prompt(
            "I'm sorry, but I cannot answer that based on the provided sources."
        ),
        lambda q: _opened_in_prompt(q),
        reasons=True,
    ),
    Family(
        "deepseek-r1 (llama.cpp server, reasoning_content)",
        lambda n, m: _field("reasoning_content")(
            f"KVFlow assigns each agent a steps-to-execution value that guides eviction [{n}].",
            chunk_chars=4,
        ),
        lambda: _field("reasoning_content")("The abstracts I have do not answer this question."),
        lambda q: _field("reasoning_content")(q),
        reasons=True,
    ),
    Family(
        "gpt-oss:20b (reasoning field)",
        lambda n, m: _field("reasoning")(
            f"KVFlow replaces LRU with eviction guided by steps-to-execution values 【{n}†source】"
            f", preserving entries likely to be reused 【{n}】.",
            chunk_chars=6,
        ),
        lambda: _field("reasoning")(
            "None of the abstracts report a learning rate for KVFlow's eviction policy."
        ),
        lambda q: _field("reasoning")(q),
        reasons=True,
    ),
    Family(
        "gemma3:4b",
        lambda n, m: _plain(
            f"## Answer\n\nKVFlow replaces LRU with an eviction policy guided by each agent's "
            f"steps-to-execution value[^{n}].\n\n[^{n}]: KVFlow abstract",
            chunks=3,
        ),
        lambda: _plain(
            "Unfortunately, the sources provided do not contain information about the learning "
            "rate."
        ),
        lambda q: _plain(f"**FOLLOW-UP:** {q}\n"),
    ),
    Family(
        "mistral-small",
        lambda n, m: _plain(
            f"KVFlow replaces LRU with a workflow-aware policy: steps-to-execution values guide "
            f"eviction at the KV node level [Sources {n} and {m}].",
            chunk_chars=7,
        ),
        lambda: _plain(
            "The learning rate is not mentioned in the provided abstracts, so I cannot answer "
            "this question."
        ),
        lambda q: _plain(q),
    ),
]

_SOURCE = re.compile(r'<source n="(\d+)" label="([^"]*)"')
_QUESTION = re.compile(r"<question>\s*(.*?)\s*</question>", re.S)


def responder(family: Family) -> Callable[[dict[str, Any]], Reply]:
    """The server's reply to each request: the condense prompt gets the family's standalone
    question, a question about KVFlow its answer, anything else (the learning rate, which the
    abstract does not give) its refusal."""

    def respond(body: dict[str, Any]) -> Reply:
        text = body["messages"][-1]["content"]
        if text.startswith("Rewrite the user's last question"):
            return family.condense("How much faster is KVFlow than SGLang?")
        asked = _QUESTION.search(text)
        numbers = {label: int(n) for n, label in _SOURCE.findall(text)}
        question = asked.group(1) if asked else ""
        if "KVFlow" in numbers and "KVFlow" in question and "learning rate" not in question:
            others = [n for label, n in numbers.items() if label not in {"KVFlow", "STARFlow"}]
            other = others[0] if others else numbers["KVFlow"]
            return family.answer(numbers["KVFlow"], other)
        return family.refusal()

    return respond
