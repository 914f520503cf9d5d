"""The console: the snippet's stdout and stderr exactly as printed, up to the cursor.

Output chunks carry ``seq`` (protocol NOTE [seq]); the timeline turns the
cursor into how many chunks had been printed by then, so stepping back un-prints.
Moving forward appends only the new chunks; moving back cuts the text back to
where the last chunk still shown ended (NOTE [stepping back]).
"""
from __future__ import annotations

import bisect
import re
from typing import Optional, Sequence

from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit

from graphscope.ui.editor import BASE_POINT_SIZE, monospace_font


# NOTE [console lines]: Qt lays a paragraph out again on every insert into it and
# breaks a long one slowly: a progress bar of 10,000 one-dot prints froze the
# window for 15 s, a 400,000-character line for 11 s. So the chunks of one
# stream that come together go in as one insert, and a line is shown up to
# LINE_CHARS characters, then marked as cut (the trace keeps it whole: the
# export has it). A carriage return goes back to the start of its line, as in
# a terminal, so a progress bar redrawn with \r stays one line (_write).
LINE_CHARS = 20_000
_LINE_BREAKS = re.compile(r"(\r\n|\r|\n)")
CUT_MARK = " \u2026 [the rest of this line is not shown: over {:,} characters]"
_END = float("inf")   # sorts after any mark of a count (bisect)


NOTE_CHARS = 100_000   # of the note (how the run ended) shown: NOTE [console lines]


def shown_note(note: str) -> str:
    """The note as the console shows it: each line up to LINE_CHARS, and NOTE_CHARS
    in all. An exception with a message of a million characters put its whole
    traceback here in one insert, and the window froze for good (robustness
    review); the Problems tab and the trace file keep it whole."""
    if len(note) <= LINE_CHARS and "\r" not in note:
        return note
    lines = []
    for line in _LINE_BREAKS.split(note)[::2]:
        lines.append(line if len(line) <= LINE_CHARS
                     else line[:LINE_CHARS] + CUT_MARK.format(LINE_CHARS))
    text = "\n".join(lines)
    if len(text) > NOTE_CHARS:
        cut = text.rfind("\n", 0, NOTE_CHARS)
        cut = cut if cut > 0 else NOTE_CHARS
        text = (text[:cut] + f"\n\u2026 [{len(text) - cut:,} more characters of it are "
                "not shown: the Problems tab and the exported trace have all of it]")
    return text


class Console(QPlainTextEdit):
    """Read-only view of protocol.Output chunks; stderr in its own colour."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self._outputs: Sequence = ()
        self._shown = 0              # how many chunks of _outputs are on screen
        self._note: Optional[str] = None
        self._col = 0                # characters of the last line shown, cut ones too
        self._cr = False             # a carriage return came last: the line is replaced
        self._hidden_note: Optional[str] = None   # shown instead of the output (a quiz)
        self._note_at: Optional[int] = None      # where the note starts in the text
        self._divider: Optional[tuple] = None    # (chunk index, grey line before it)
        self._marks: list = [(0, 0, 0, False)]   # NOTE [stepping back]
        self._stdout_fmt = QTextCharFormat()
        self._stderr_fmt = QTextCharFormat()
        self._note_fmt = QTextCharFormat()
        self.set_colors("#1f2937", "#dc2626", "#6b7280")
        self.set_text_scale(1.0)

    def set_text_scale(self, f: float) -> None:
        self.setFont(monospace_font(BASE_POINT_SIZE * 0.92 * f))

    def set_colors(self, stdout: str, stderr: str, note: str) -> None:
        self._stdout_fmt.setForeground(QColor(stdout))
        self._stderr_fmt.setForeground(QColor(stderr))
        self._note_fmt.setForeground(QColor(note))
        self._note_fmt.setFontItalic(True)
        self._rebuild()

    def show_outputs(self, outputs: Sequence, count: Optional[int] = None,
                     note: Optional[str] = None, divider: Optional[tuple] = None) -> None:
        """Show the first ``count`` chunks of ``outputs`` (all when None; the
        timeline's ``FrameState.outputs_upto``), then ``note`` (how the run
        ended) in grey. ``divider``: ``(index, text)``, a grey line of its own
        before chunk ``index`` (what was printed after the backward pass the
        last step belongs to)."""
        n = len(outputs) if count is None else max(0, min(count, len(outputs)))
        if divider != self._divider:
            self._outputs, self._shown, self._note, self._divider = outputs, n, note, divider
            self._rebuild()
            return
        if outputs is self._outputs and n < self._shown and self._hidden_note is None:
            # back: the text after the chunks still shown is cut off, not everything
            # written again (NOTE [stepping back])
            if self._cut_back(n, note):
                return
        if outputs is self._outputs and n >= self._shown and self._hidden_note is None:
            # forward: the new chunks after those shown, and the note after them, in
            # place. (The note changes at every printing step before a finished
            # run's end, "[N more lines printed after this step]": rebuilt each time,
            # a 20,000-line console took 32 ms a step and jumped to its end: code
            # review.) The reader's place is kept, as the append always kept it.
            if n == self._shown and note == self._note:
                return
            bar = self.verticalScrollBar()
            at, kept = bar.value(), bar.value() < bar.maximum()
            cur = self._end_cursor()
            cur.beginEditBlock()
            try:
                self._drop_note(cur)
                self._insert_range(cur, self._shown, n)
                self._shown, self._note = n, note
                self._put_note(cur)
            finally:
                cur.endEditBlock()
            if kept:
                bar.setValue(at)
            return
        self._outputs, self._shown, self._note = outputs, n, note
        self._rebuild()

    # NOTE [stepping back]: stepping back rebuilt the whole console, and with 60,000
    # printed lines each step back took half a second (robustness review). Each
    # chunk's end is noted as it goes in (``_marks``: chunks shown, the text's
    # length then, the line state), so a step back cuts the text at the last mark
    # at or before it and writes in the few chunks after. A carriage return that
    # goes back over earlier text (a progress bar) makes the marks after its
    # line's start useless: they are dropped there.
    def _cut_back(self, n: int, note: Optional[str]) -> bool:
        marks = self._marks
        k = bisect.bisect_right(marks, (n, _END)) - 1
        if k < 0:
            return False
        count, pos, col, cr = marks[k]
        bar = self.verticalScrollBar()
        at, kept = bar.value(), bar.value() < bar.maximum()
        cur = self._end_cursor()
        cur.beginEditBlock()
        try:
            self._note_at = None
            cur.setPosition(pos)
            cur.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cur.removeSelectedText()
            del marks[k + 1:]
            self._shown, self._col, self._cr = count, col, cr
            self._insert_range(cur, count, n)
            self._shown, self._note = n, note
            self._put_note(cur)
        finally:
            cur.endEditBlock()
        if kept:
            bar.setValue(min(at, bar.maximum()))
        return True

    def _mark(self, count: int, pos: int, col: int, cr: bool) -> None:
        marks = self._marks
        if marks and marks[-1][0] >= count:
            return
        marks.append((count, pos, col, cr))

    def _put_note(self, cur: QTextCursor) -> None:
        """The note (in grey) at ``cur``, the end, on a line of its own."""
        self._note_at = None
        if not self._note:
            return
        self._note_at = cur.position()
        if self._shown and not self._outputs[self._shown - 1].text.endswith("\n"):
            cur.insertText("\n")
        cur.insertText(shown_note(self._note), self._note_fmt)

    def _drop_note(self, cur: QTextCursor) -> None:
        """Take the note away: ``cur`` is left at the end of the output."""
        if self._note_at is not None:
            cur.setPosition(self._note_at)
            cur.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cur.removeSelectedText()
            self._note_at = None

    def set_hidden_note(self, note: Optional[str]) -> None:
        """Show ``note`` instead of the output (None shows the output again): a quiz
        keeps what the snippet prints hidden until Reveal."""
        if note != self._hidden_note:
            self._hidden_note = note
            self._rebuild()

    def is_hidden(self) -> bool:
        return self._hidden_note is not None

    def text(self) -> str:
        return self.toPlainText()

    def clear_outputs(self) -> None:
        self.show_outputs((), None)

    def _fmt(self, o) -> QTextCharFormat:
        return self._stderr_fmt if o.stream == "stderr" else self._stdout_fmt

    def _end_cursor(self) -> QTextCursor:
        cur = self.textCursor()
        cur.movePosition(QTextCursor.MoveOperation.End)
        return cur

    def _insert_range(self, cur: QTextCursor, lo: int, hi: int) -> None:
        """Chunks ``lo`` to ``hi`` of the output, with the divider where it falls."""
        d = self._divider
        if d is None or not lo <= d[0] < hi:
            self._insert(cur, lo, hi)
            return
        self._insert(cur, lo, d[0])
        # (on a line of its own: also after a progress line ended by "\r", which the
        # next text would have replaced, the divider with it: code review)
        if d[0] and not self._outputs[d[0] - 1].text.endswith("\n"):
            cur.insertText("\n")
        cur.insertText(d[1] + "\n", self._note_fmt)
        self._col, self._cr = 0, False
        self._insert(cur, d[0], hi)

    def _insert(self, cur: QTextCursor, lo: int, hi: int) -> None:
        """Chunks ``lo`` to ``hi`` at ``cur``: one insert per run of one stream
        (NOTE [console lines]), each chunk's end marked (NOTE [stepping back])."""
        run: list = []
        ends: list = []          # (chunks shown, characters of the run so far)
        size = 0
        fmt = None

        def flush():
            start = cur.position()
            self._put(cur, "".join(run), fmt)
            for count, end, col in ends:
                self._mark(count, start + end, col, False)
            run.clear()
            ends.clear()

        cur.beginEditBlock()
        try:
            for i in range(lo, hi):
                o = self._outputs[i]
                f = self._fmt(o)
                alone = self._cr or "\r" in o.text   # (it may go back over the line)
                if run and (f is not fmt or alone):
                    flush()
                    size = 0
                fmt = f
                if alone:
                    self._write(cur, o.text, f)
                    self._mark(i + 1, cur.position(), self._col, self._cr)
                    continue
                text = self._clip(o.text)
                run.append(text)
                size += len(text)
                # (the line's length after this chunk, not after the run: a step back
                # into the run cut a short line, or let a long one run on: code review)
                ends.append((i + 1, size, self._col))
            if run:
                flush()
        finally:
            cur.endEditBlock()

    def _write(self, cur: QTextCursor, text: str, fmt) -> None:
        """``text`` at ``cur`` as a terminal shows it: a carriage return goes back to
        the start of the line, which what comes next replaces (a progress bar
        redrawn 2,000 times is one line, not 2,000); ``\\r\\n`` is a newline."""
        text = self._clip(text).replace("\r\n", "\n")
        for i, part in enumerate(text.split("\r")):
            if i:
                self._cr = True
            if not part:
                continue
            if self._cr:
                self._cr = False
                if not part.startswith("\n"):
                    cur.movePosition(QTextCursor.MoveOperation.StartOfBlock,
                                     QTextCursor.MoveMode.KeepAnchor)
                    self._forget_marks_after(cur.selectionStart())
                    cur.removeSelectedText()
            self._put(cur, part, fmt)

    def _put(self, cur: QTextCursor, text: str, fmt) -> None:
        cur.insertText(text, fmt)     # (one per run of one stream: NOTE [console lines])

    def _forget_marks_after(self, pos: int) -> None:
        """The text from ``pos`` on is being replaced: marks past it no longer say
        what the console showed then."""
        marks = self._marks
        while marks and marks[-1][1] > pos:
            marks.pop()

    def _clip(self, text: str) -> str:
        """``text`` as shown: each line up to LINE_CHARS characters, then the mark.
        A line ends at ``\\n`` or ``\\r`` (after a carriage return ``_write``
        starts the line again: a progress bar redrawn with it is never long)."""
        if self._col + len(text) <= LINE_CHARS:   # no line can be too long
            cut = max(text.rfind("\n"), text.rfind("\r"))
            self._col = self._col + len(text) if cut < 0 else len(text) - cut - 1
            return text
        out = []
        for piece in _LINE_BREAKS.split(text):
            if piece in ("\n", "\r", "\r\n"):
                out.append(piece)
                self._col = 0
                continue
            room = LINE_CHARS - self._col
            if len(piece) <= room:
                out.append(piece)
            elif room >= 0:
                out.append(piece[:room] + CUT_MARK.format(LINE_CHARS))
            self._col += len(piece)
            if self._col > LINE_CHARS:
                self._col = LINE_CHARS + 1   # cut: nothing more of this line is shown
        return "".join(out)

    def _rebuild(self) -> None:
        self.clear()
        self._note_at = None
        self._col = 0
        self._cr = False
        self._marks = [(0, 0, 0, False)]
        cur = self._end_cursor()
        if self._hidden_note is not None:
            cur.insertText(self._hidden_note, self._note_fmt)
            return
        self._insert_range(cur, 0, self._shown)
        self._put_note(cur)
        self.moveCursor(QTextCursor.MoveOperation.End)

