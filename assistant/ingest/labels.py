"""A short human label for a paper that has no title.

Abstracts usually introduce their contribution by name ("we propose KVFlow, a ..."). We look for a
coined name near an introducing verb; failing that, the most prominent coined name that is not
someone else's example ("methods such as SAM"); failing that, the noun phrase the first sentence
is about ("Adafactor", "Small batch sizes"; see ``assistant.ingest.phrases``), never a clause.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from assistant.ingest.phrases import topic_phrase
from assistant.text.acronyms import defined_in
from assistant.text.normalise import split_sentences

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
# "we propose Prior Guidance (PG), a ...": a capitalised phrase spelled out by its acronym.
_SPELLED_OUT = re.compile(
    r"\b(?:propose|proposes|introduce|introduces|present|presents|develop|develops|called|named|"
    r"dubbed|termed)\b\s+(?:(?:a|an|the|our|new|novel)\s+)*"
    r"((?:[A-Z][A-Za-z0-9]*[- ]){1,5}[A-Z][A-Za-z0-9]*)\s+\(([A-Z][A-Za-z0-9-]{1,9})\)"
)
# "introduce two novel algorithms: MAIL-BRO and MURMAIL", "Two algorithms are developed: *A*, ..."
_INTRO_LIST = re.compile(
    r"\b(?:propose[sd]?|introduce[sd]?|present(?:s|ed)?|develop(?:s|ed)?)\b[^.:]{0,60}:\s*([^.]+)"
)
# Names given as examples of others' work: "methods such as Sharpness-Aware Minimization (SAM)".
_EXAMPLES = re.compile(r"\b(?:such as|e\.g\.,?|including)\s+([^.;]+)")
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


def is_coined(token: str) -> bool:
    """A name someone coined (KVFlow, MINJA, GaRA-SAM, Qwen2.5), not a common acronym."""
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


def _is_named_phrase(token: str, abstract: str, follows: str) -> bool:
    """'We introduce Bubbleformer, a ...': a capitalised word set off as an apposition;
    'we present Diff-Spectra that ...': a capitalised compound the abstract uses again."""
    if not token[0].isupper() or token in _COMMON:
        return False
    if follows[:1] in {",", ":", "("}:
        # A short title-case word after a verb is usually an ordinary word ("General, ...").
        return "-" in token or len(token) >= 8
    return _is_titlecase_compound(token) and abstract.count(token) >= 2


def _spelled_out(abstract: str) -> str | None:
    """The phrase of "we propose Prior Guidance (PG)", when the acronym is its initials and too
    short to be a name of its own (SIGMA, CDC-GS and RAC are; the other rules find them)."""
    for match in _SPELLED_OUT.finditer(abstract):
        phrase, acronym = match.group(1), match.group(2)
        if is_coined(acronym):
            continue
        initials = "".join(word[0] for word in re.split(r"[- ]", phrase))
        if initials.upper() == acronym.replace("-", "").upper():
            return phrase
    return None


_NAME_LINKS = frozenset({"and", "of", "for", "the", "in", "on", "with", "to", "a", "an"})


def introduces(acronym: str, abstract: str) -> bool:
    """The abstract introduces the acronym as the name of its contribution, its words
    capitalised as a name's: "we propose Tortoise and Hare Guidance (THG)", not "we present a
    network for magnetic resonance imaging (MRI)"."""
    if coined_name(abstract) != acronym:
        return False
    if not any(match.group(1) == acronym for match in _INTRO_ACRONYM.finditer(abstract)):
        return False
    words = defined_in(acronym, abstract)
    return words is None or all(w[0].isupper() for w in words.split() if w not in _NAME_LINKS)


@lru_cache(maxsize=2048)  # asked of each hit, several times per question (``Hit.names``)
def coined_name(abstract: str) -> str | None:
    """The name the abstract gives its contribution, if it gives one."""
    spelled = _spelled_out(abstract)
    if spelled:
        return spelled
    for pattern in (_OURS, _INTRO, _INTRO_ACRONYM):
        for match in pattern.finditer(abstract):
            candidate = match.group(1).rstrip(".")
            follows = abstract[match.end() : match.end() + 2]
            if pattern is _INTRO_ACRONYM and re.search(r"\bbased on\b", match.group(0)):
                continue  # "a framework ... based on regularized risk minimization (RERM)"
            if is_coined(candidate):
                return candidate
            if pattern is _INTRO and _is_named_phrase(candidate, abstract, follows):
                return candidate
    for match in _INTRO_LIST.finditer(abstract):
        names = [t.rstrip(".") for t in re.findall(_NAME, match.group(1)) if is_coined(t)]
        if names:
            return " and ".join(dict.fromkeys(names[:2]))
    examples = {t for m in _EXAMPLES.finditer(abstract) for t in re.findall(_NAME, m.group(1))}
    counts = Counter(
        t.rstrip(".")
        for t in re.findall(_NAME, abstract)
        if is_coined(t) and t.rstrip(".") not in examples
    )
    if counts:
        # A name used at least twice is the paper's own; a one-off may be a baseline.
        name, n = counts.most_common(1)[0]
        apposition = [m.group(1) for m in _APPOSITION.finditer(abstract) if is_coined(m.group(1))]
        if n >= 2:
            return name
        if apposition:
            return apposition[0].rstrip(".")
    return None


def derive_label(abstract: str, max_words: int = 8) -> str:
    """The contribution's name if the abstract coins one, otherwise the noun phrase its first
    sentence is about."""
    name = coined_name(abstract)
    if name:
        return name
    sentences = split_sentences(abstract)
    phrase = topic_phrase(sentences[0], max_words) if sentences else ""
    if phrase:
        return phrase
    words = abstract.split()  # nothing recognisable: the opening words, marked as cut
    return " ".join(words[:max_words]) + ("…" if len(words) > max_words else "")
