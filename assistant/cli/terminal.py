"""The terminal, as the commands use it: consoles that wrap at word boundaries on a terminal and
never insert line breaks when piped, a word-wrapper for streamed text, and a transient status
line ("searching…", "waiting for the model… 12 s") while nothing has been printed yet."""

from __future__ import annotations

import re
import time
from typing import IO, Any

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.status import Status
from rich.text import Text

# Wide enough that no line of ours is ever broken, narrow enough that rich lays tables out
# quickly. Piped output is read by programs, and by people whose viewer wraps for them.
PIPE_WIDTH = 100_000


def make_console(stderr: bool = False, file: IO[str] | None = None) -> Console:
    """On a terminal: wraps at its width, between words. Piped: one line stays one line."""
    console = Console(stderr=stderr, file=file, highlight=False)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, file=file, highlight=False, soft_wrap=True, width=PIPE_WIDTH)


class WordWrapper:
    """Breaks streamed text into lines of at most ``width`` cells, between words.

    It remembers the column across pieces, and holds back the word still being written (the
    next piece may continue it), so a word is never cut at the terminal's edge. ``width=None``
    passes text through untouched (piped output).
    """

    _TOKENS = re.compile(r"\n|[ \t]+|[^ \t\n]+")

    def __init__(self, width: int | None, column: int = 0):
        self.width = width
        self.column = column
        self.space = ""  # whitespace seen after the last word written
        self.word = ""  # the word being written

    def feed(self, text: str) -> str:
        if self.width is None:
            return text
        tokens = self._TOKENS.findall(self.word + text)
        self.word = ""
        if tokens and tokens[-1][0] not in " \t\n":
            self.word = tokens.pop()  # it may continue in the next piece
        out: list[str] = []
        for token in tokens:
            if token == "\n":
                out.append("\n")
                self.column, self.space = 0, ""  # spaces before a line break are dropped
            elif token[0] in " \t":
                self.space += token
            else:
                self._place(token, out)
        return "".join(out)

    def flush(self) -> str:
        out: list[str] = []
        if self.word:
            self._place(self.word, out)
        self.word = self.space = ""
        return "".join(out)

    def _place(self, word: str, out: list[str]) -> None:
        """Write the pending space and the word, or a line break instead of the space."""
        assert self.width is not None
        size = cell_len(word)
        if self.column > 0 and self.column + cell_len(self.space) + size > self.width:
            out.append("\n")
            self.column = 0
        else:
            out.append(self.space)
            self.column += cell_len(self.space)
        out.append(word)
        self.column += size
        if self.column > self.width:  # a word longer than the line: the terminal folds it
            self.column %= self.width
        self.space = ""


class _Elapsed:
    """A status message that counts the seconds since it was set, redrawn by rich."""

    def __init__(self, message: str, count: bool):
        self.message = message
        self.count = count
        self.since = time.monotonic()

    def __rich__(self) -> RenderableType:
        if not self.count:
            return Text(f"{self.message}…", style="dim")
        return Text(f"{self.message}… {time.monotonic() - self.since:.0f} s", style="dim")


STAGES = {
    "condensing": ("relating it to the last answer", True),  # a follow-up, or a new question
    "searching": ("searching", False),
    "answering": ("waiting for the model", True),
    "thinking": ("model is thinking", True),  # a reasoning model, before its answer
    "quoting": ("choosing sentences", False),  # the extractive default: no model to wait for
}


class Waiting:
    """A status line on stderr until the first text is printed; it leaves no trace.

    Only on a terminal: ``enabled`` is False for piped output and ``--json``. ``stage`` is the
    callback ``Assistant.stream(on_status=...)`` calls; ``stop`` is called before printing.
    """

    def __init__(self, console: Console, enabled: bool):
        self.console = console
        self.enabled = enabled
        self._status: Status | None = None

    def stage(self, name: str) -> None:
        if not self.enabled:
            return
        message, count = STAGES.get(name, (name, False))
        text = _Elapsed(message, count)
        if self._status is None:
            self._status = Status(text, console=self.console, spinner="dots")
            self._status.start()
        else:
            self._status.update(text)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def __enter__(self) -> Waiting:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
