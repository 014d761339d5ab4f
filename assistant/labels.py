"""A short human label for a paper that has no title.

Abstracts usually introduce their contribution by name ("we propose KVFlow, a ..."). We look for a
coined name near an introducing verb; failing that, the most prominent coined name; failing that,
the abstract's first words.
"""

from __future__ import annotations

import re
from collections import Counter

# A coined name: mixed case (KVFlow, LeMiCa), an acronym not in the common list (THG), or with
# digits/hyphens (GaRA-SAM, Qwen2.5). Must start with a letter.
_NAME = r"[A-Za-z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*"
_INTRO = re.compile(
    r"\b(?:propose|proposes|introduce|introduces|present|presents|develop|develops|call|called|"
    r"name|named|dubbed|termed|coined|release|releases|design|designs|build|builds|"
    r"construct|constructs|curate|curates)\b"
    r"(?:\s+(?:a|an|the|our|new|novel|first|simple|unified|general|framework|method|approach|"
    r"benchmark|dataset|model|algorithm|system|technique|strategy|it|this|which|we|is|as|,))*"
    r"\s+(" + _NAME + r")"
)
_OURS = re.compile(
    r"\b[Oo]ur (?:final |resulting )?(?:model|method|framework|approach|system|dataset|benchmark|"
    r"algorithm|pipeline|agent|tool)s?,?\s+(" + _NAME + r")"
)
_INTRO_ACRONYM = re.compile(
    r"\b(?:propose|proposes|introduce|introduces|present|presents|develop|develops|called|named|"
    r"dubbed|termed)\b[^.()]{0,120}?\((" + _NAME + r")\)"
)
_APPOSITION = re.compile(
    r"(?:^|[\s(])(" + _NAME + r")(?:\)|,|:)?\s+(?:a|an)\s+(?:novel|new|simple)?"
)
_COMMON = {
    "AI",
    "LLM",
    "LLMs",
    "VLM",
    "VLMs",
    "MLLM",
    "MLLMs",
    "GNN",
    "GNNs",
    "RL",
    "NLP",
    "CNN",
    "CNNs",
    "GPU",
    "GPUs",
    "CPU",
    "API",
    "APIs",
    "SOTA",
    "ML",
    "DNN",
    "DNNs",
    "RNN",
    "QA",
    "KV",
    "MoE",
    "ViT",
    "ViTs",
    "SGD",
    "PDE",
    "PDEs",
    "ODE",
    "ODEs",
    "SDE",
    "SDEs",
    "MDP",
    "MDPs",
    "ReLU",
    "LoRA",
    "RLHF",
    "GPT",
    "BERT",
    "CLIP",
    "ImageNet",
    "GitHub",
    "PyTorch",
    "In",
    "We",
    "Our",
    "The",
    "This",
    "However",
    "Moreover",
    "Furthermore",
    "Finally",
    "Code",
    "SAA",
    "IEO",
    "ETO",
    "FID",
    "MSE",
    "RGB",
    "SVD",
    "PCA",
    "TD",
    "IID",
    "CoT",
    "VAE",
    "VAEs",
    "GAN",
    "GANs",
    "LVLM",
    "LVLMs",
    "OOD",
    "HPC",
    "NeurIPS",
    "URL",
    "RAG",
    "SFT",
    "DPO",
    "PPO",
    "MLP",
    "MLPs",
    "MARL",
    "ERM",
    "NTK",
    "MCMC",
    "DRL",
    "DiT",
    "DiTs",
    "IoU",
    "LLaMA",
    "Llama",
}


def _is_plural_acronym(token: str) -> bool:
    return len(token) > 2 and token.endswith("s") and token[:-1].replace("-", "").isupper()


def _is_titlecase_compound(token: str) -> bool:
    """'Structure-Informed' is a capitalised phrase, not a name; 'GaRA-SAM' is a name."""
    parts = token.split("-")
    return len(parts) > 1 and all(p[:1].isupper() and p[1:].islower() for p in parts if p)


def _is_coined(token: str) -> bool:
    token = token.rstrip(".")
    if len(token) < 3 or token in _COMMON or token.rstrip("s") in _COMMON:
        return False
    if _is_plural_acronym(token) or _is_titlecase_compound(token):
        return False
    inner_upper = any(c.isupper() for c in token[1:])
    if token[0].islower():  # equiEPNN, mHC: lower-case start, several capitals after
        return sum(c.isupper() for c in token) >= 2
    has_digit_or_dash = any(c.isdigit() or c == "-" for c in token)
    return token[0].isupper() and (inner_upper or (has_digit_or_dash and token[:2].isupper()))


def _is_named_phrase(token: str) -> bool:
    """'We introduce Bubbleformer, a ...': a capitalised word set off as an apposition."""
    # A short title-case word after a verb is usually an ordinary word ("General, ...").
    long_enough = "-" in token or len(token) >= 8
    return token[0].isupper() and token not in _COMMON and long_enough


def derive_label(abstract: str, max_words: int = 8) -> str:
    """The contribution's name if the abstract coins one, otherwise its first words."""
    for pattern in (_OURS, _INTRO, _INTRO_ACRONYM):
        for match in pattern.finditer(abstract):
            candidate = match.group(1).rstrip(".")
            follows = abstract[match.end() : match.end() + 2]
            if _is_coined(candidate):
                return candidate
            if pattern is _INTRO and _is_named_phrase(candidate) and follows[:1] in {",", ":", "("}:
                return candidate
    counts = Counter(t.rstrip(".") for t in re.findall(_NAME, abstract) if _is_coined(t))
    if counts:
        # A name used at least twice is the paper's own; a one-off may be a baseline.
        name, n = counts.most_common(1)[0]
        apposition = [m.group(1) for m in _APPOSITION.finditer(abstract) if _is_coined(m.group(1))]
        if n >= 2:
            return name
        if apposition:
            return apposition[0].rstrip(".")
    words = abstract.split()
    head = " ".join(words[:max_words])
    return head + ("…" if len(words) > max_words else "")
