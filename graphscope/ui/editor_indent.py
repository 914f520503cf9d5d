"""What Tab, Shift+Tab, Return and Backspace do to a line of Python in the editor.

Pure functions of a line's text (or the part of it before the cursor), so the
rules are tested without Qt; ``CodeEditor.keyPressEvent`` applies them.

NOTE [editor indentation]: students indent one line with Tab and the next with
four spaces, see the two lines level (a tab is drawn four columns wide) and get
"IndentationError: unindent does not match any outer indentation level"
(python counts a tab as up to eight columns). So typing makes spaces: Tab
inserts them up to the next multiple of INDENT columns, Return carries the
line's indentation over (one level more after a ``:``), Shift+Tab and Backspace
in the indentation take the last level back. Text that is opened or pasted keeps
its own tabs: the editor never rewrites a student's file, and in code indented
with tabs a level is a tab (``indent_unit``), or spaces typed under a tab would
raise the same error. Each key is one undo step.
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


def newline(before: str, unit: str = " " * INDENT) -> str:
    """What Return inserts after ``before`` (the line up to the cursor): a line
    break, the line's indentation, and one level (``unit``) more when the code
    ends a block header with ``:`` (a trailing comment does not count)."""
    indent = leading_whitespace(before)
    if code_part(before).rstrip().endswith(":"):
        indent += unit
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


def dedent_span(line: str) -> tuple:
    """``(start, end)`` of what Shift+Tab takes off ``line``: the last level of its
    indentation (a tab, or up to INDENT spaces back to a level), so a line
    indented "tab, four spaces" keeps its tab (taking the tab off the front
    left "    w = 2" under a tab-indented block: code review)."""
    lead = leading_whitespace(line)
    if not lead:
        return 0, 0
    if lead.endswith("\t"):
        return len(lead) - 1, len(lead)
    spaces = len(lead) - len(lead.rstrip(" "))
    k = min(spaces, column(lead) % INDENT or INDENT)
    return len(lead) - k, len(lead)


def backspace_width(before: str) -> int:
    """How many characters Backspace deletes before the cursor: in the indentation,
    the spaces back to the previous level (a tab is one character); else one."""
    if not before or before.strip(" \t") or before.endswith("\t"):
        return 1
    spaces = len(before) - len(before.rstrip(" "))
    return max(1, min(spaces, column(before) % INDENT or INDENT))


def indent_unit(lines) -> str:
    """One level of indentation as the code around the cursor writes it: a tab
    when the nearest indented line (``lines``, nearest first) starts with one,
    else INDENT spaces. In a file indented with tabs, spaces typed under a tab
    look level and raise IndentationError (code review)."""
    for line in lines:
        lead = leading_whitespace(line)
        if lead and line.strip():
            return "\t" if lead.startswith("\t") else " " * INDENT
    return " " * INDENT
