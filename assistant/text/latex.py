"""LaTeX in abstracts as readable terminal text, with pylatexenc: ``13\\%`` -> ``13%``,
``\\textbf{PG}`` -> ``PG``, ``$\\tilde{O}(\\sqrt{dT})$`` -> ``Õ(√(dT))``.

Only text that holds LaTeX markup (a known macro, an escaped special character, or a ``$...$``
span by pandoc's rule) is converted; anything else passes through unchanged, so "$5" and "50%"
stay as they are. In text that is converted, a bare ``%``, ``&``, ``#`` or a lone ``$`` is taken
literally (pylatexenc would read ``%`` as the start of a comment and drop the rest of the line).
The stored abstract and ``--json`` output keep the original text; this is for display only.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pylatexenc.latex2text import LatexNodes2Text
    from pylatexenc.macrospec import LatexContextDb

# Inline or display math. ``$...$`` follows pandoc: the opening $ has a non-space on its right,
# the closing $ a non-space on its left and no digit after it ("from $5 to $10" is not math).
_MATH = (
    r"\$\$.+?\$\$"
    r"|\$(?=[^\s$])(?:\\.|[^$\\\n])+?(?<=[^\s\\])\$(?!\d)"
    r"|\\\(.+?\\\)"
    r"|\\\[.+?\\\]"
)
_MATH_SPAN = re.compile(_MATH, re.S)
# A macro, an escaped special character, or an accent as BibTeX writes them ({\"o}, {\'e}).
_COMMAND = re.compile(r"\\([A-Za-z]+)|\\[%$&#_{}]|\\['\"^`~=.](?=\{?[A-Za-z])")
_LITERAL = re.compile(_MATH + r"|\\.|[%$&#]", re.S)  # what _protect leaves or escapes
# Operator names glued to what precedes them ("T\log T" would print "Tlog T"); a space is
# meaningless in math mode, so one before the macro changes nothing but the printed text.
_GLUED_OPERATOR = re.compile(
    r"(?<=[\w)\]}])(\\(?:log|ln|lg|exp|sin|cos|tan|min|max|arg|det|dim|lim|sup|inf|Pr)(?![A-Za-z]))"
)


@cache
def _engine() -> tuple[LatexContextDb, LatexContextDb, LatexNodes2Text]:
    """pylatexenc's parsing and printing rules, and its printer: made when a text first has a
    backslash (~25 ms of a cold start that most answers do not need)."""
    from pylatexenc import latexwalker, macrospec
    from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db

    parse = latexwalker.get_default_latex_context_db()
    parse.add_context_category(
        "assistant", macros=[macrospec.MacroSpec("href", "{{")], prepend=True
    )  # pylatexenc knows how to print \href{url}{text} but not how to parse it
    text = get_default_latex_context_db()
    # Keep the argument of macros it has no rule for (\texttt{x}, \operatorname{x}) as text.
    text.set_unknown_macro_spec(MacroTextSpec("", discard=False))
    return parse, text, LatexNodes2Text(latex_context=text, math_mode="text")


def has_latex(text: str) -> bool:
    """True when text holds LaTeX markup worth converting."""
    if _MATH_SPAN.search(text):
        return True
    for match in _COMMAND.finditer(text):
        name = match.group(1)
        if name is None or _engine()[0].get_macro_spec(name) or _known_text_macro(name):
            return True
    return False


def _known_text_macro(name: str) -> bool:
    text = _engine()[1]
    spec = text.get_macro_spec(name)
    return spec is not None and spec is not text.unknown_macro_spec


def _protect(text: str) -> str:
    """Escape the characters LaTeX would give a meaning that plain prose does not intend."""
    return _LITERAL.sub(lambda m: m.group(0) if len(m.group(0)) > 1 else "\\" + m.group(0), text)


def latex_to_text(text: str) -> str:
    """Readable text for the terminal; text without LaTeX markup is returned unchanged."""
    if ("\\" not in text and "$" not in text) or not has_latex(text):
        return text
    from pylatexenc.latexwalker import LatexWalker

    parse, _, converter = _engine()
    try:
        source = _GLUED_OPERATOR.sub(r" \1", _protect(text))
        walker = LatexWalker(source, latex_context=parse, tolerant_parsing=True)
        nodes, _, _ = walker.get_latex_nodes()
        out = converter.nodelist_to_text(nodes)
    except Exception:  # pylatexenc bugs on odd input: the source is still readable, show it
        return text
    out = out.replace("\xa0", " ")
    return _scripts(out) if "$" in text else out


_SUB = str.maketrans("0123456789-", "₀₁₂₃₄₅₆₇₈₉₋")
_SUP = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _scripts(text: str) -> str:
    """Math's numeric sub- and superscripts as the characters for them, which pylatexenc
    leaves as ``_6`` and ``^2``: "Li$_6$PS$_5$Cl" -> "Li₆PS₅Cl", "km$^2$" -> "km²",
    "$10^{-3}$" -> "10⁻³", "100~$^\\circ$C" -> "100 °C" (a user's library)."""
    text = re.sub(r"\s?\^∘", "°", text)
    text = re.sub(r"(?<=\w)_(\d+)(?![.,]\d)", lambda m: m.group(1).translate(_SUB), text)
    return re.sub(r"(?<=[\w)])\^(-?\d+)(?![.,]\d)", lambda m: m.group(1).translate(_SUP), text)


class LatexStream:
    """Converts text that arrives in pieces. Text is held back until its LaTeX is complete:
    cut only at a space outside math and braces (or, past ``limit`` characters, at any space,
    so a lone "$5" never holds the rest of the answer)."""

    def __init__(self, limit: int = 400):
        self.limit = limit
        self.pending = ""

    def feed(self, piece: str) -> str:
        self.pending += piece
        cut = _safe_cut(self.pending)
        if cut == 0 and len(self.pending) > self.limit:
            cut = max(self.pending.rfind(" "), self.pending.rfind("\n")) + 1
        head, self.pending = self.pending[:cut], self.pending[cut:]
        return latex_to_text(head) if head else ""

    def flush(self) -> str:
        head, self.pending = self.pending, ""
        return latex_to_text(head) if head else ""


def _safe_cut(text: str) -> int:
    """Length of the longest prefix that ends in whitespace with no math or group open."""
    cut, depth, dollar, escaped, display = 0, 0, False, False, False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
            if char in "([":
                display = True
            elif char in ")]":
                display = False
        elif char == "\\":
            escaped = True
        elif char == "$":
            dollar = not dollar
        elif char == "{":
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
        elif char.isspace() and depth == 0 and not dollar and not display:
            cut = i + 1
    return cut
