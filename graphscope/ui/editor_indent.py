"""What Tab, Shift+Tab, Return and Backspace do to a line of Python in the editor.

Pure functions of a line's text (or the part of it before the cursor), so the
rules are tested without Qt; ``CodeEditor.keyPressEvent`` applies them.

NOTE [editor indentation]: students indent one line with Tab and the next with
four spaces, see the two lines level (a tab is drawn four columns wide) and get
"IndentationError: unindent does not match any outer indentation level"
(python counts a tab as up to eight columns). So typing only ever makes spaces:
Tab inserts them up to the next multiple of INDENT columns, Return carries the
line's indentation over (one level more after a ``:``), Shift+Tab and Backspace
in the indentation take a level back. Text that is opened or pasted keeps its
own tabs: the editor never rewrites a student's file. Each key is one undo step.
"""
from __future__ import annotations

INDENT = 4          # columns per indentation level (PEP 8), and a tab's drawn width


def column(before: str) -> int:
    """The column the cursor is drawn at after ``before``, a tab reaching the
    next multiple of INDENT as the editor draws it."""
    col = 0
    for ch in before:
        col = (col // INDENT + 1) * INDENT if ch == "\t" else col + 1
    return col


def tab_spaces(before: str) -> str:
    """The spaces Tab inserts after ``before``: up to the next multiple of INDENT."""
    return " " * (INDENT - column(before) % INDENT)


def leading_whitespace(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def newline(before: str) -> str:
    """What Return inserts after ``before`` (the line up to the cursor): a line
    break, the line's indentation, and one level more when the code ends a
    block header with ``:`` (a trailing comment does not count)."""
    indent = leading_whitespace(before)
    if code_part(before).rstrip().endswith(":"):
        indent += " " * INDENT
    return "\n" + indent


def code_part(line: str) -> str:
    """``line`` without its comment: up to the first ``#`` outside a string
    (a rough reading of one line, enough to see the ``:`` of a header)."""
    quote = None
    escaped = False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif quote is not None:
            if ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


def dedent_width(line: str) -> int:
    """How many characters Shift+Tab takes off the start of ``line``: a leading
    tab, else up to INDENT leading spaces."""
    if line.startswith("\t"):
        return 1
    n = 0
    while n < INDENT and n < len(line) and line[n] == " ":
        n += 1
    return n


def backspace_width(before: str) -> int:
    """How many characters Backspace deletes before the cursor: back to the
    previous multiple of INDENT when only spaces precede it on the line, else one."""
    if not before or before.strip(" "):
        return 1
    return len(before) - (len(before) - 1) // INDENT * INDENT
