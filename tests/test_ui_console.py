"""The console: output as printed, un-printed when stepping back, and lines Qt
cannot lay out quickly (NOTE [console lines]) shown cut, never freezing the window."""
import pytest

from graphscope import protocol as P
from graphscope.ui.console import CUT_MARK, LINE_CHARS, Console

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


@pytest.fixture
def console(qtbot):
    c = Console()
    qtbot.addWidget(c)
    c.resize(800, 300)
    c.show()
    return c


def out(*pairs):
    return [P.Output(i, stream, text) for i, (stream, text) in enumerate(pairs)]


def test_chunks_show_as_printed_and_step_back_unprints(console):
    outs = out(("stdout", "a"), ("stdout", "b\n"), ("stderr", "oops\n"), ("stdout", "c"))
    console.show_outputs(outs, 2)
    assert console.text() == "ab\n"
    console.show_outputs(outs, 4)              # forward: appended
    assert console.text() == "ab\noops\nc"
    console.show_outputs(outs, 1)              # back: rebuilt
    assert console.text() == "a"
    console.show_outputs(outs, None, note="[Stopped]")
    assert console.text() == "ab\noops\nc\n[Stopped]"


def test_a_line_too_long_to_lay_out_is_cut_with_a_mark(console):
    mark = CUT_MARK.format(LINE_CHARS)
    outs = out(("stdout", "y" * (LINE_CHARS + 5) + "\nnext\n"))
    console.show_outputs(outs)
    assert console.text() == "y" * LINE_CHARS + mark + "\nnext\n"
    # the same line printed in pieces: cut once, at the same place
    pieces = out(*[("stdout", "y" * 7000)] * 3, ("stdout", "z\nnext\n"))
    for k in range(1, 5):
        console.show_outputs(pieces, k)
    assert console.text() == "y" * LINE_CHARS + mark + "\nnext\n"
    console.show_outputs(pieces, 3)            # back, rebuilt: the same cut
    assert console.text() == "y" * LINE_CHARS + mark


def test_ten_thousand_progress_dots_do_not_freeze_the_window(console, qtbot):
    """One insert per chunk laid the growing line out again each time: 10,000
    one-dot prints took the window 15 s (a review). Not a timed assertion: the
    dots must go in as few inserts as there are runs of one stream."""
    inserts = []
    real = console._put

    def counting(cur, text, fmt):
        inserts.append(len(text))
        real(cur, text, fmt)
    console._put = counting
    dots = out(*[("stdout", ".")] * 10_000, ("stderr", "done\n"))
    console.show_outputs(dots)
    assert inserts == [10_000, 5] and console.text() == "." * 10_000 + "done\n"



def test_a_progress_bar_redrawn_with_carriage_returns_is_never_cut(console):
    """Qt starts a new line at \\r too: 3,000 redraws of "\\rstep i/3000" are
    short lines, not one long one to cut (a review)."""
    outs = out(*[("stdout", f"\rstep {i:05d}/3000 loss 0.25") for i in range(3000)],
               ("stdout", "\ndone\n"))
    console.show_outputs(outs)
    assert "not shown" not in console.text() and console.text().endswith("done\n")
    # and as a terminal shows it: one line, the last redraw
    assert console.text() == "step 02999/3000 loss 0.25\ndone\n"
    console.show_outputs(outs, 1500)                  # stepped back: the redraw then
    assert console.text() == "step 01499/3000 loss 0.25"


def test_a_carriage_return_replaces_the_line_only_when_something_follows(console):
    outs = out(("stdout", "50%\r"), ("stdout", "\n"), ("stdout", "a\r\nb"),
               ("stdout", "\rc"))
    console.show_outputs(outs, 1)
    assert console.text() == "50%"                    # nothing after it yet: kept
    console.show_outputs(outs, 2)
    assert console.text() == "50%\n"                  # a newline keeps the line
    console.show_outputs(outs, 4)
    assert console.text() == "50%\na\nc"              # \r\n is a newline; b replaced


def test_a_changing_note_is_replaced_in_place_and_the_place_is_kept(console, monkeypatch):
    """Before a finished run's end the note ("[N more lines printed after this
    step]") changes at every printing step; rebuilt each time, a 20,000-line
    console took 32 ms a step and jumped to its end (code review)."""
    outs = out(*[("stdout", f"line {i}\n") for i in range(400)])
    console.show_outputs(outs, 200, "[200 more lines printed after this step]")
    rebuilt = []
    real = console._rebuild
    monkeypatch.setattr(console, "_rebuild", lambda: (rebuilt.append(1), real())[1])
    bar = console.verticalScrollBar()
    bar.setValue(bar.maximum() // 3)
    place = bar.value()
    for k in range(201, 260):
        console.show_outputs(outs, k, f"[{400 - k} more lines printed after this step]")
        assert console.text().endswith(f"line {k - 1}\n[{400 - k} more lines printed after this step]")
    assert rebuilt == [] and bar.value() == place
    console.show_outputs(outs, 260, None)                    # no note: gone
    assert console.text().endswith("line 259\n")
    console.show_outputs(outs, 100, "[300 more lines printed after this step]")   # back
    # (cut back, not rebuilt: NOTE [stepping back])
    assert rebuilt == [] and console.text().endswith("line 99\n[300 more lines printed after this step]")
    partial = out(("stdout", "a"), ("stdout", "b"))          # a note after a line not ended
    console.show_outputs(partial, 1, "[1 more line printed after this step]")
    console.show_outputs(partial, 2, "[done]")
    assert console.text() == "ab\n[done]"


def test_the_divider_stands_on_a_line_of_its_own(console):
    """Before the chunks printed after a backward pass, a grey line of its own:
    also after a progress line ended by a carriage return, which the next text
    would have replaced, the divider with it (code review)."""
    outs = [P.Output(seq=1, stream="stdout", text="progress 50%\r"),
            P.Output(seq=5, stream="stdout", text="done\n")]
    console.show_outputs(outs, 2, None, (1, "[after]"))
    assert console.text() == "progress 50%\n[after]\ndone\n"
    outs2 = [P.Output(seq=1, stream="stdout", text="a"), P.Output(seq=5, stream="stdout", text="b\n")]
    console.show_outputs(outs2, 2, None, (1, "[after]"))
    assert console.text() == "a\n[after]\nb\n"
    console.show_outputs(outs2, 2, None, None)          # gone with its step
    assert console.text() == "ab\n"


def test_a_run_ending_in_a_huge_message_is_noted_cut(console):
    """An exception whose message is a million characters put its whole traceback
    in the console as the run's end note, one insert: the window froze for good
    (robustness review). The note is cut as printed lines are, and in all."""
    from graphscope.ui.console import NOTE_CHARS
    mark = CUT_MARK.format(LINE_CHARS)
    outs = out(("stdout", "before\n"))
    note = "Traceback (most recent call last):\nValueError: " + "m" * 1_000_000
    console.show_outputs(outs, None, note=note)
    text = console.text()
    assert text.startswith("before\nTraceback (most recent call last):\nValueError: mmm")
    assert text.endswith("m" * 10 + mark) and len(text) < LINE_CHARS + 200
    many = "\n".join(f"line {i}: " + "x" * 60 for i in range(20_000))    # 1.4 MB of lines
    console.show_outputs(outs, None, note=many)
    text = console.text()
    assert len(text) <= NOTE_CHARS + 200 and text.splitlines()[1] == "line 0: " + "x" * 60
    assert "more characters of it are not shown" in text.splitlines()[-1]
    short = "Traceback (most recent call last):\nValueError: bad\n"
    console.show_outputs(outs, None, note=short)
    assert console.text() == "before\n" + short       # a usual note: as it is


def test_stepping_back_cuts_the_text_to_what_a_fresh_console_shows(console, qtbot):
    """NOTE [stepping back]: with 60,000 printed lines each step back rebuilt the
    whole console, half a second a step (robustness review). It now cuts the text
    back; whatever the path, it shows what a console given only those chunks
    shows: progress bars redrawn with carriage returns, both streams, a cut
    line, the divider and the note included."""
    import random
    from PySide6.QtWidgets import QApplication
    pieces = [("stdout", "plain line\n"), ("stderr", "warn\n"), ("stdout", "no end "),
              ("stdout", "\r 10%"), ("stdout", "\r 50%"), ("stdout", "\r100%\n"),
              ("stdout", "a\r\n"), ("stdout", "x" * 9000), ("stdout", "y" * 9000),
              ("stdout", "z" * 9000 + "\n"), ("stdout", "tail\r"), ("stdout", "over\n")]
    rng = random.Random(5)
    outs = out(*[rng.choice(pieces) for _ in range(300)])
    fresh = Console()
    qtbot.addWidget(fresh)
    divider = (150, "[printed after the backward pass:]")
    rebuilt = []
    real = console._rebuild
    console._rebuild = lambda: (rebuilt.append(1), real())[1]
    console.show_outputs(outs, 300, None, divider)
    for n in [299, 298, 250, 251, 200, 149, 150, 151, 10, 0, 300] + \
            [rng.randrange(301) for _ in range(60)]:
        note = f"[{300 - n} more]" if n % 3 else None
        console.show_outputs(outs, n, note, divider)
        fresh.show_outputs(list(outs), n, note, divider)    # (another list: rebuilt)
        assert console.text() == fresh.text(), n
    assert len(rebuilt) <= 1      # (the first show, for its divider)
    # 60,000 lines: a step back writes nothing again (one cut, no insert)
    many = out(*[("stdout", f"line {i}\n") for i in range(60_000)])
    console.show_outputs(many)
    puts = []
    real_put = console._put
    console._put = lambda *a: (puts.append(a[1]), real_put(*a))[1]
    console.show_outputs(many, 59_999)
    assert console.text().endswith("line 59998\n") and puts == []
    QApplication.processEvents()


def test_a_step_back_into_one_insert_keeps_the_line_s_length(console):
    """Code review: the chunks of one stream go in as one insert, and each chunk's
    mark took the line's length after the whole insert: stepping back into it
    and forward again cut a short line (header, then 19,000 "a"), or let a line
    of dots run past the limit unmarked."""
    fresh = Console()
    for outs, path in ((out(("stdout", "header\n"), ("stdout", "a" * 19_000)), [2, 1, 2]),
                       (out(*[("stdout", "." * 1000)] * 30), [30, 5, 30])):
        for n in path:
            console.show_outputs(outs, n)
        fresh.show_outputs(list(outs), path[-1])
        assert console.text() == fresh.text()
