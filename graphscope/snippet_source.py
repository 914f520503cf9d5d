"""Reading a snippet file: the checks the command line and the window share.

Neither torch nor Qt: ``graphscope export`` reads the file before any worker
starts, and the window's Open reads it in the GUI thread. Both refuse, with
one reason in plain words (``UnreadableSnippet``), what python itself would
not run or what would hang or flood them: a missing file, a folder, a pipe or
a device (a FIFO blocked the window for ever; ``/dev/zero`` was read until
memory ran out), a file too big to be a snippet. How the bytes become text
differs, and stays with each: the command line decodes as python does (UTF-8
or the file's coding line); the window only takes UTF-8, the encoding it
saves in.
"""
from __future__ import annotations

import io
import tokenize
from pathlib import Path

MAX_SNIPPET_BYTES = 2_000_000


class UnreadableSnippet(Exception):
    """``reason``: why the file cannot be a snippet, a phrase without the path
    ("no such file"), for ``f"{path}: {reason}"``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def read_bytes(path, kind: str = "Python file") -> bytes:
    """The file's bytes, or UnreadableSnippet; ``kind`` names what was expected
    (a lesson or scenario is a "TOML file": a folder given as a lesson was
    called "not a Python file", robustness review)."""
    p = Path(path)
    try:
        if not p.exists():
            raise UnreadableSnippet("no such file")
        if p.is_dir():
            raise UnreadableSnippet(f"is a folder, not a {kind}")
        if not p.is_file():
            raise UnreadableSnippet("not a regular file (a pipe or a device)")
        size = p.stat().st_size
        if size > MAX_SNIPPET_BYTES:
            raise UnreadableSnippet(f"too large to be a {kind} here ({size:,} bytes; "
                                    f"at most {MAX_SNIPPET_BYTES:,})")
        return p.read_bytes()
    except OSError as e:
        raise UnreadableSnippet(f"cannot read it ({e.strerror or e})") from None


NOT_UTF8 = ("not UTF-8 text (save it as UTF-8, or declare its encoding in a "
            "'# -*- coding: ... -*-' line)")


def decode_as_python(data: bytes) -> str:
    """``data`` decoded as python decodes a script (UTF-8, or its coding line;
    a byte-order mark dropped), or UnreadableSnippet."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:
        if "unknown encoding" in str(e):
            raise UnreadableSnippet(f"its coding line names an encoding Python does "
                                    f"not know ({e})") from None
        raise UnreadableSnippet(NOT_UTF8) from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        raise UnreadableSnippet(NOT_UTF8) from None
    return text[1:] if text.startswith("\ufeff") else text


def source_lines(text: str, keepends: bool = False) -> list:
    """The lines of python source as python counts them: ended by \\n, \\r\\n or
    \\r (as \\n with ``keepends``). ``str.splitlines`` also ends a line at
    U+2028, U+2029, \\x0c, \\x1c-\\x1e and \\x85, which python's tokenizer reads
    as characters of the line: with a U+2028 in a string on line 2, "It was
    running line 5" named line 6's text (code review)."""
    lines = io.StringIO(text, newline=None).readlines()
    return lines if keepends else [ln[:-1] if ln.endswith("\n") else ln for ln in lines]
