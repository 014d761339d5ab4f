"""Acronyms as researchers type them ("MoE", "LLMs", "RAG", "LoRA") and the words they stand for.

The embedder knows an acronym far less well than its words: "Which papers use MoE?" is 0.12
similar to an abstract about a "sparse mixture-of-experts language model", 0.41 with the words
written out. Search therefore spells a question's acronyms out with the words an abstract of the
store defines them by ("mixture-of-experts (MoE)": ``defined_in``), and a text that writes the
words out counts as mentioning the acronym (``spelled_out``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

_SMALL_WORDS = frozenset(
    {"of", "and", "the", "for", "from", "in", "on", "at", "to", "a", "an", "with", "by", "via"}
)
# A word of its own: not in a hyphenated one ("GAN-style", "COVID-19"), whose other part
# says what it means.
_TOKEN = re.compile(r"(?<![\w-])[a-z]?[A-Z][A-Za-z]{1,6}(?![\w-])")
_WORD = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
# Words whose letter no acronym takes: "matches or exceeds" is no MoE, "variational inference
# that" no ViT.
_FUNCTION_WORDS = frozenset(
    {"or", "nor", "but", "than", "as", "that", "this", "these", "those", "which", "who", "is"}
    | {"are", "was", "were", "be", "been", "we", "our", "it", "its", "their", "not", "no"}
    | {"can", "may", "will", "do", "does", "if", "so", "such", "into", "onto", "over"}
)
_LONGEST = 10  # words of a definition, at most


def singular(acronym: str) -> str:
    """The acronym without a plural "s" ("LLMs" -> "LLM", "MoEs" -> "MoE")."""
    return (
        acronym[:-1]
        if len(acronym) > 2 and acronym[-1] == "s" and acronym[-2].isupper()
        else acronym
    )


def is_acronym(token: str) -> bool:
    """Two to six letters, at least two of them capitals and at least half ("MoE", "GNNs",
    "LoRA", "iPSCs"), not a word with a capital first ("Mamba") or a coined name ("ResNet")."""
    core = singular(token)
    caps = sum(c.isupper() for c in core)
    return core.isalpha() and 2 <= len(core) <= 6 and caps >= 2 and 2 * caps >= len(core)


def acronyms(text: str) -> list[str]:
    """The acronyms of a text, each once, in order."""
    return list(dict.fromkeys(t for t in _TOKEN.findall(text) if is_acronym(t)))


def _parts(words: Iterable[str]) -> list[str]:
    return [p for w in words for p in w.split("-") if p]


def _initials(words: Iterable[str], *, small: bool) -> str:
    """The first letters of the words (a hyphenated word gives one per part), upper-cased;
    without ``small``, "of", "and" and the like give none."""
    return "".join(p[0] for p in _parts(words) if small or p.lower() not in _SMALL_WORDS).upper()


def _plain(words: list[str]) -> bool:
    """Words, not acronyms or names: no part with two capitals ("LiRA and RMIA" is no LoRA)."""
    return all(sum(c.isupper() for c in p) < 2 for p in _parts(words))


def _every_letter(acronym: str, words: list[str]) -> bool:
    """One word per letter: "mixture of experts" for MoE, "induced pluripotent stem cells"."""
    return _plain(words) and _initials(words, small=True) == singular(acronym).upper()


def _abbreviates(acronym: str, words: list[str]) -> bool:
    """The words are what the acronym abbreviates: one per letter, or one per capital and word
    but the small ones ("reinforcement learning from human feedback" for RLHF, "Low-Rank
    Adaptation" for LoRA; not for two capitals and a small letter: "model evaluation" is no
    MoE)."""
    if _every_letter(acronym, words):
        return True
    core = singular(acronym)
    capitals = "".join(c for c in core if c.isupper())
    return (
        (core.isupper() or len(capitals) >= 3)
        and _plain(words)
        and _initials(words, small=False) == capitals
    )


def _within(letters: str, parts: list[str]) -> bool:
    """Each part starts with the next of the letters, and the letters between are found in
    it in order: "evidence lower bound" for ELBO, "diffusion transformer" for DiT."""
    if not parts:
        return not letters
    first, rest = parts[0], parts[1:]
    if not letters or letters[0] != first[0]:
        return False
    at = 1  # where in ``first`` the next letter may be found
    for taken in range(1, len(letters) - len(rest) + 1):
        if _within(letters[taken:], rest):
            return True
        at = first.find(letters[taken], at) + 1 if taken < len(letters) else 0
        if not at:
            return False
    return False


def _inside(acronym: str, words: list[str]) -> bool:
    """Two words or more abbreviate the acronym with some letters taken from inside them
    ("evidence lower bound" for ELBO); a capital of a mixed-case acronym starts a word
    ("Vision Transformers" for ViTs, not "model" for MoE). Small words give no letter."""
    parts = [p.lower() for p in _parts(words) if p.lower() not in _SMALL_WORDS]
    core = singular(acronym)
    if len(parts) < 2 or not _plain(words):
        return False
    if core.isupper():
        return _within(core.lower(), parts)
    groups = re.findall(r"[A-Z][a-z]*", core)
    return (
        "".join(groups) == core
        and len(groups) == len(parts)
        and all(_within(g.lower(), [p]) for g, p in zip(groups, parts, strict=True))
    )


def defined_in(acronym: str, text: str) -> str | None:
    """The words the text defines the acronym by: "mixture-of-experts" in "advances of
    mixture-of-experts (MoE) into ...": the nearest words before the parenthesis with a letter
    each ("induced pluripotent stem cells" for iPSCs), else the fewest that abbreviate it
    ("Low-Rank Adaptation" for LoRA), else the fewest it takes letters from inside of ("the
    diffusion transformer (DiT)"); None when the text defines it nowhere."""
    name = re.escape(singular(acronym))
    for match in re.finditer(rf"\(\s*{name}s?\s*[),;]", text, re.IGNORECASE):
        sentence_start = max(text.rfind(". ", 0, match.start()), text.rfind("(", 0, match.start()))
        before = _WORD.findall(text[sentence_start + 1 : match.start()])[-_LONGEST:]
        fewest = inside = None
        for start in range(len(before) - 1, -1, -1):
            words = before[start:]
            if words[0].lower() in _SMALL_WORDS:
                continue
            if _every_letter(acronym, words):
                return " ".join(words)
            if fewest is None and _abbreviates(acronym, words):
                fewest = " ".join(words)
            if inside is None and _inside(acronym, words):
                inside = " ".join(words)
        if fewest or inside:
            return fewest or inside
    return None


def spelled_out(acronym: str, text: str) -> bool:
    """The text writes out the words the acronym abbreviates: "magnetic resonance imaging"
    for MRI, "mixture-of-experts" for MoE, "induced pluripotent stem cells" for iPSC."""
    core = singular(acronym)
    letters = core.upper()
    if not (2 <= len(letters) <= 6 and letters.isalpha()):
        return False
    if not (core[1:].isupper() or is_acronym(acronym)):
        return False
    words = _WORD.findall(text)
    for length in range(1, 2 * len(letters)):  # a hyphenated word holds several, "of" none
        for i in range(len(words) - length + 1):
            run = words[i : i + length]
            if (
                run[0][0].upper() == letters[0]
                and not any(w.lower() in _FUNCTION_WORDS for w in run)
                and _abbreviates(core, run)
            ):
                return True
    return False


def _flat(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def says(words: str, text: str) -> bool:
    """The text contains the words, case, hyphens and punctuation aside, the last one in the
    singular or the plural ("vision transformer" for "vision transformers")."""
    flat, within = _flat(words), f" {_flat(text)} "
    stem = flat[:-1] if flat.endswith("s") and not flat.endswith("ss") else flat
    return any(f" {form} " in within for form in (stem, stem + "s", stem + "es"))


def common_definition(acronym: str, texts: Iterable[str]) -> str | None:
    """The definition most of the texts give the acronym (the first given, on a tie)."""
    found = Counter(
        d.lower() for d in (defined_in(acronym, text) for text in texts) if d is not None
    )
    return found.most_common(1)[0][0] if found else None


def with_written_out(
    question: str, text: str, definitions: Mapping[str, str] | Iterable[tuple[str, str]] = ()
) -> str:
    """The text, followed by each acronym of the question it writes out in words: a paper on
    "a sparse mixture-of-experts model" mentions the MoE a question asks about, and one on
    "large vision transformers" the ViTs the store's abstracts define as such. Where the
    store defines the acronym, its words decide; elsewhere, words with its initials. An
    acronym the text uses in the other number ("a GNN" for "GNNs") is added too."""
    defined = dict(definitions)
    written = [
        a
        for a in acronyms(question)
        if _uses(a, text) or (says(defined[a], text) if a in defined else spelled_out(a, text))
    ]
    return " ".join([text, *written])


def _escaped(words: str) -> str:
    return words.replace("\\", r"\\")


def spell(text: str, definitions: Mapping[str, str]) -> str:
    """The text with each defined acronym followed by its words, once: "Is the MoE
    (mixture-of-experts) model sparse?". An acronym whose words the text already says stays
    as it is."""
    for acronym, words in definitions.items():
        if not says(words, text):
            token = rf"(?<![\w-])({re.escape(acronym)})(?![\w-])"
            text = re.sub(token, rf"\1 ({_escaped(words)})", text, count=1)
    return text


def _uses(acronym: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(singular(acronym))}s?(?![\w-])", text) is not None


def writes_out(definitions: Mapping[str, str], text: str) -> bool:
    """The text says the words of one of the acronyms ("a sparse mixture-of-experts model")
    and does not use the acronym: a sentence that uses it is matched by it."""
    return any(says(words, text) and not _uses(a, text) for a, words in definitions.items())


def uses(definitions: Mapping[str, str], text: str) -> bool:
    """The text uses one of the acronyms ("RLHF", "LLMs" for LLM)."""
    return any(_uses(acronym, text) for acronym in definitions)
