"""Opening an input file safely: only regular files are read (a named pipe would block the
read until a writer comes, a device never ends), in the encoding its bytes show: a BOM's, else
UTF-16 or UTF-32 told by where the zero bytes fall, else UTF-8. Every problem is an
``InputFileError`` that names the file and says what to do."""

from __future__ import annotations

import codecs
import re
import shlex
import stat
from pathlib import Path
from typing import BinaryIO

from assistant.errors import InputFileError

_BOMS = (  # UTF-32's little-endian BOM starts with UTF-16's: look for it first
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_NOT_FILES = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_a_file(path: Path) -> str | None:
    """What the path is when it is neither a regular file nor a folder (None otherwise)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    return next((what for test, what in _NOT_FILES if test(mode)), None)


def sniff(head: bytes) -> str:
    """The encoding of text that starts with ``head``."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    size = len(head) - len(head) % 4
    if size < 4:
        return "utf-8"
    per = size // 4
    zeros = [head[i:size:4].count(0) for i in range(4)]

    def mostly(count: int, of: int = per) -> bool:
        return count >= 0.7 * of

    def rarely(count: int, of: int = per) -> bool:
        return count <= 0.1 * of

    if rarely(zeros[0]) and all(mostly(z) for z in zeros[1:]):
        return "utf-32-le"
    if rarely(zeros[3]) and all(mostly(z) for z in zeros[:3]):
        return "utf-32-be"
    even, odd = zeros[0] + zeros[2], zeros[1] + zeros[3]
    if mostly(odd, 2 * per) and rarely(even, 2 * per):
        return "utf-16-le"
    if mostly(even, 2 * per) and rarely(odd, 2 * per):
        return "utf-16-be"
    return "utf-8"


def _shown(encoding: str) -> str:
    return {"utf-8-sig": "UTF-8"}.get(encoding, encoding.upper())


def encoding_of(path: Path) -> str:
    """The encoding to read the file with, after checking that it is a file that can be read
    and that all of it decodes (a block at a time: nothing is held)."""
    if not path.exists():
        raise InputFileError(str(path), "no such file or folder; check the path")
    what = not_a_file(path)
    if what is not None:
        raise InputFileError(str(path), f"is {what}, not a file; skipped (give a file of papers)")
    try:
        with path.open("rb") as handle:
            return _decodes(path, handle)
    except PermissionError as exc:
        raise InputFileError(
            str(path), f"cannot be read (permission denied); skipped: chmod u+r '{path}'"
        ) from exc
    except IsADirectoryError as exc:  # a folder given where a file was expected
        raise InputFileError(str(path), "is a folder") from exc
    except OSError as exc:
        raise InputFileError(str(path), f"cannot be read ({exc.strerror or exc})") from exc


_NOT_CP1252 = re.compile(b"[\x81\x8d\x8f\x90\x9d]")  # the five bytes cp1252 leaves undefined


def _legacy(handle: BinaryIO) -> str:
    """What a text that is not UTF-8 was most likely saved as: Windows' cp1252 (Excel, Word:
    its curly quotes and dashes are bytes 0x80-0x9f, control codes in latin1) when all of it
    reads as that (iconv stops at the first byte that does not), else latin1."""
    handle.seek(0)
    for block in iter(lambda: handle.read(1 << 16), b""):
        if _NOT_CP1252.search(block):
            return "latin1"
    return "cp1252"


def _decodes(path: Path, handle: BinaryIO) -> str:
    head = handle.read(8192)
    encoding = sniff(head)
    decoder = codecs.getincrementaldecoder(encoding)()
    offset, blank, block = 0, True, head
    while True:
        try:
            text = decoder.decode(block, final=not block)  # the last call: nothing left over
        except UnicodeDecodeError as exc:
            where = offset - len(decoder.getstate()[0]) + exc.start
            if encoding == "utf-8" and b"\x00" in head:  # a PNG, a PDF, a zip: not text at all
                raise InputFileError(
                    str(path), "looks binary, not text; give a file of abstracts (.txt, .bib, …)"
                ) from exc
            was = _legacy(handle) if encoding in ("utf-8", "utf-8-sig") else encoding
            fixed = shlex.quote(f"fixed{path.suffix}")  # 'savedrecs (1).csv' needs its quotes
            fix = f"iconv -f {was} -t utf-8 {shlex.quote(path.name)} > {fixed}"
            raise InputFileError(
                str(path),
                f"not valid {_shown(encoding)} (byte {where}); re-save it as UTF-8, e.g. {fix}",
            ) from exc
        blank = blank and not text.strip()
        if not block:
            break
        offset += len(block)
        block = handle.read(1 << 16)
    if blank:
        raise InputFileError(str(path), "file is empty; nothing to ingest")
    return encoding
