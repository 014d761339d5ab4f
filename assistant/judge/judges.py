"""Judges behind one interface: is a claim supported by the evidence passages?

``OfflineJudge`` needs no LLM and no network: a logistic model over ``features.FEATURES``,
fitted on SciFact and shipped as ``offline_judge.json``. ``LLMJudge`` asks the configured chat
model with the prompts in ``prompts/``.
"""

from __future__ import annotations

import json
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from assistant.answer.result import Usage
from assistant.embedding.embedders import Embedder, MiniLMEmbedder
from assistant.errors import ConfigError, ProviderError
from assistant.judge.features import FEATURES, FeatureExtractor, strip_markers
from assistant.settings import Settings

MODEL_FILE = Path(__file__).with_name("offline_judge.json")


class JudgeOutputError(ProviderError):
    """The LLM judge answered something that is not a verdict."""


class Judge(ABC):
    name: str
    threshold: float = 0.5

    @abstractmethod
    def support(self, claim: str, evidence: Sequence[str]) -> float:
        """Probability-like score in [0, 1] that the evidence supports the claim."""

    def supported(self, claim: str, evidence: Sequence[str]) -> bool:
        return bool(evidence) and self.support(claim, evidence) >= self.threshold

    def claims(self, sentence: str) -> list[str]:
        """Atomic claims of one answer sentence (citation markers removed)."""
        text = strip_markers(sentence)
        return [text] if text else []


def _sigmoid(x: float) -> float:
    return float(1.0 / (1.0 + np.exp(-x)))


class OfflineJudge(Judge):
    name = "offline"

    def __init__(self, embedder: Embedder, model_file: Path = MODEL_FILE):
        try:
            model = json.loads(model_file.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"offline judge model {model_file} is missing or corrupt; "
                "rebuild it with evals/judge/fit_offline_judge.py"
            ) from exc
        if tuple(model["features"]) != FEATURES:
            raise ConfigError(f"{model_file} was fitted on other features; refit it")
        self.model = model
        self.weights = np.array(model["weights"])
        self.bias = float(model["bias"])
        self.mean = np.array(model["mean"])
        self.std = np.array(model["std"])
        self.threshold = float(model["threshold"])
        # The model was fitted on the shipped MiniLM's similarities; another embedder's (int8's
        # included) would not fit it.
        if not isinstance(embedder, MiniLMEmbedder) or embedder.fast:
            embedder = MiniLMEmbedder()
        self.extractor = FeatureExtractor(embedder)

    def score_features(self, x: np.ndarray) -> float:
        return _sigmoid(float((x - self.mean) / self.std @ self.weights + self.bias))

    def support(self, claim: str, evidence: Sequence[str]) -> float:
        if not evidence or not strip_markers(claim):
            return 0.0
        return self.score_features(self.extractor.features(claim, evidence))


_VERDICT = re.compile(r"\b(NOT[_ ]SUPPORTED|SUPPORTED)\b", re.IGNORECASE)


class LLMJudge(Judge):
    """Verdicts from the configured chat model, reached through the same provider as answers
    (``ChatModelProvider.complete``): one deadline per call with its retries, one-line errors,
    and the tokens it used counted in ``usage``. Verdicts are not sampled (temperature 0)."""

    name = "llm"

    def __init__(self, settings: Settings):
        from assistant.answer.llm.chat_model import ChatModelProvider, split_model

        provider, _ = split_model(settings.llm.model)
        if provider == "openai" and not settings.openai_api_key and not settings.openai_base_url:
            raise ConfigError(
                "--judge llm needs OPENAI_API_KEY or OPENAI_BASE_URL; or use --judge offline"
            )
        exact = settings.llm.model_copy(update={"temperature": 0.0})
        self.provider = ChatModelProvider(exact, settings.openai_api_key, settings.openai_base_url)
        self.usage = Usage(estimated=False, cost_usd=None)
        self._counting = threading.Lock()  # eval workers judge in parallel

    def _call(self, prompt: str, **inputs: str) -> str:
        text, usage = self.provider.complete(prompt, **inputs)
        with self._counting:
            if usage is None:  # the server sent no counts: they are estimates from here on
                self.usage.estimated = True
            else:
                self.usage.prompt_tokens += usage.prompt_tokens
                self.usage.completion_tokens += usage.completion_tokens
        return text

    def support(self, claim: str, evidence: Sequence[str]) -> float:
        if not evidence:
            return 0.0
        passages = "\n\n".join(f"<passage>\n{p}\n</passage>" for p in evidence)
        reply = self._call("judge_support", claim=strip_markers(claim), evidence=passages)
        match = _VERDICT.search(reply)
        if match is None:
            raise JudgeOutputError(
                f"the LLM judge's reply is not SUPPORTED or NOT_SUPPORTED: {reply[:120]!r}"
            )
        return 0.0 if match.group(1).upper().startswith("NOT") else 1.0

    def claims(self, sentence: str) -> list[str]:
        text = strip_markers(sentence)
        if not text:
            return []
        reply = self._call("judge_claims", sentence=text)
        try:
            items = json.loads(reply[reply.index("[") : reply.rindex("]") + 1])
        except ValueError as exc:
            raise JudgeOutputError(
                f"the LLM judge did not return a JSON list of claims: {reply[:120]!r}"
            ) from exc
        return [str(c).strip() for c in items if str(c).strip()] or [text]


def make_judge(name: str, settings: Settings, embedder: Embedder) -> Judge:
    if name == "llm":
        return LLMJudge(settings)
    if name == "offline":
        return OfflineJudge(embedder)
    raise ConfigError(f"unknown judge {name!r}; use offline or llm")
