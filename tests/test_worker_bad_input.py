"""Snippets that misbehave: each ends within its limit with a clear message,
and no GraphScope frame reaches the user (real worker processes)."""
import pytest

from graphscope.cli import CommandError, read_snippet
from graphscope.runner import run_to_trace
from process_helpers import all_workers_gone_at_the_end, no_leaked_workers  # noqa: F401 (autouse)


def _no_graphscope_frames(error):
    text = f"{error.message}\n{error.traceback or ''}"
    assert "graphscope/" not in text and "graphscope\\" not in text, text


def test_infinite_recursion_is_a_clean_recursion_error():
    tr = run_to_trace("def f(n):\n    return f(n + 1)\n\nf(0)\n", timeout=20)
    assert tr.status == "error"
    assert tr.error.type == "RecursionError"
    assert tr.error.line == 2
    _no_graphscope_frames(tr.error)


def test_ten_terabyte_allocation_fails_cleanly_not_by_the_oom_killer():
    tr = run_to_trace("import torch\nprint('asking')\nx = torch.empty(10**13 // 4)\n", timeout=20)
    assert tr.status == "error", tr.error
    assert tr.error.type in ("RuntimeError", "MemoryError", "torch.OutOfMemoryError", "OutOfMemoryError")
    assert "allocate" in tr.error.message or "memory" in tr.error.message.lower()
    assert tr.error.line == 3
    assert tr.stdout == "asking\n"
    _no_graphscope_frames(tr.error)


def test_memory_limit_from_the_run_is_applied():
    # torch.empty does not touch its pages, so without the limit 4 GiB succeeds
    # here (overcommit); with 3 GiB of address space it cannot
    tr = run_to_trace("import torch\nx = torch.empty(2**30)\n", timeout=20,
                      memory_limit=3 * 2**30)
    assert tr.status == "error"
    assert "memory" in tr.error.message.lower() or "allocate" in tr.error.message


def test_forty_megabytes_of_output_is_capped_and_the_run_completes():
    src = "for i in range(400_000):\n    print('x' * 99)\nprint('done', i)\n"
    tr = run_to_trace(src, timeout=60, max_output=1_000_000)
    assert tr.status == "ok"
    assert tr.truncated and tr.truncation.reason == "output"
    assert "1,000,000" in tr.truncation.message
    assert len(tr.stdout) + len(tr.stderr) <= 1_000_000
    assert tr.stdout.startswith("x" * 99 + "\n")


def test_one_print_over_the_output_limit_keeps_what_fits():
    """GUI review: a single print of 5,000,000 characters left the console empty: the
    worker said "output cut" before the text it kept, and the parent, counting
    the cut as the end of output, dropped that text."""
    tr = run_to_trace("print('x' * 1_500_000)\nprint('done')\n", timeout=60,
                      max_output=1_000_000)
    assert tr.status == "ok"
    assert tr.truncated and tr.truncation.reason == "output"
    assert tr.stdout == "x" * 1_000_000


def test_three_hundred_thousand_ops_truncate_the_trace_and_the_snippet_completes():
    src = ("import torch\n"
           "x = torch.zeros(())\n"
           "for i in range(300_000):\n"
           "    x = x + 1\n"
           "print(x.item())\n")
    tr = run_to_trace(src, timeout=120, max_ops=2_000)
    assert tr.status == "ok"
    assert tr.stdout == "300000.0\n"  # the snippet ran to the end
    assert tr.truncated and tr.truncation.reason == "ops"
    assert len(tr.ops) == 2_000
    assert "2,000" in tr.truncation.message


def test_input_gets_end_of_file_with_an_explanation():
    tr = run_to_trace("try:\n    input('name? ')\nexcept EOFError:\n    print('eof')\nname = input()\n")
    assert tr.stdout == "name? eof\n"   # the prompt, as python writes it before the EOF
    assert tr.status == "error"
    assert tr.error.type == "EOFError"
    assert tr.error.line == 5
    assert "input()" in tr.error.message
    _no_graphscope_frames(tr.error)


def test_empty_source_runs_to_an_empty_trace():
    tr = run_to_trace("")
    assert tr.status == "ok"
    assert tr.ops == [] and tr.stdout == ""


def test_syntax_error_has_line_and_column():
    tr = run_to_trace("import torch\nx = torch.ones(2\ny = 3 +\n")
    assert tr.status == "error"
    assert tr.error.type == "SyntaxError"
    assert tr.error.line == 2
    assert tr.error.column is not None and tr.error.column >= 1
    _no_graphscope_frames(tr.error)


def test_sys_exit_is_an_exit_not_an_error():
    tr = run_to_trace("import sys\nprint('a')\nsys.exit(4)\n")
    assert tr.status == "exit" and tr.end.exit_code == 4
    assert tr.stdout == "a\n"


# -- files the command line refuses before any worker starts ---------------------------

def test_empty_file_is_refused(tmp_path):
    p = tmp_path / "empty.py"
    p.write_text("   \n\n")
    with pytest.raises(CommandError, match="empty"):
        read_snippet(str(p))


def test_non_utf8_file_is_refused(tmp_path):
    p = tmp_path / "latin.py"
    p.write_bytes("print('caf\u00e9')\n".encode("latin-1"))
    with pytest.raises(CommandError, match="not UTF-8"):
        read_snippet(str(p))


def test_declared_encoding_is_honoured_as_python_does(tmp_path):
    p = tmp_path / "latin.py"
    p.write_bytes("# -*- coding: latin-1 -*-\nprint('caf\u00e9')\n".encode("latin-1"))
    assert "caf\u00e9" in read_snippet(str(p))


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        read_snippet(str(tmp_path / "nope.py"))


def test_a_del_that_prints_while_the_worker_writes_does_not_hang_the_run():
    """The GC may run a snippet's ``__del__`` (which prints) in the middle of
    the worker writing a batch of events: its output waits for the next
    write instead of waiting for the lock the same thread holds (it hung)."""
    src = ("import torch\n"
           "class Noisy:\n"
           "    def __del__(self):\n"
           "        print('del')\n"
           "x = torch.ones(2, requires_grad=True)\n"
           "for i in range(20000):\n"
           "    a = Noisy(); a.self = a\n"
           "    x = x * 1.0\n"
           "print('done')\n")
    tr = run_to_trace(src, "gcdel.py", timeout=60)
    assert tr.status == "ok", tr.error
    # every __del__ ran, those left at the end too (NOTE [the end of a run])
    assert "done\n" in tr.stdout and tr.stdout.count("del\n") == 20000
    assert len(tr.ops) == 20001


def test_the_snippet_s_outcome_survives_what_happens_after_its_last_line():
    """NOTE [the end of a run]: an atexit function that leaves with os._exit(4)
    ends the run as python's would (exit code 4, output kept); one that hangs
    until the time limit keeps the snippet's own error, and says what happened."""
    tr = run_to_trace("import atexit, os\natexit.register(os._exit, 4)\nprint('hi')\n",
                      "ox.py", timeout=60)
    assert (tr.status, tr.end.exit_code, tr.stdout) == ("exit", 4, "hi\n")
    tr = run_to_trace("import atexit, time\natexit.register(time.sleep, 60)\n"
                      "print('hi')\nraise ValueError('mine')\n", "hang.py", timeout=3)
    assert tr.status == "error" and (tr.error.type, tr.error.message) == ("ValueError", "mine")
    assert tr.stdout == "hi\n" and "time limit (3 s) stopped it" in tr.stderr
    # nothing of the snippet's failed: python would hang there, so a timeout it is
    tr = run_to_trace("import atexit, time\natexit.register(time.sleep, 60)\nprint('hi')\n",
                      "hang_ok.py", timeout=3)
    assert tr.status == "timeout" and "after the snippet's last line" in tr.error.message


def test_a_snippet_that_deletes_import_ends_as_under_python():
    """Python ends such a run normally; ours raised KeyError '__import__' in its
    own code after the last line and reported an InternalError."""
    tr = run_to_trace("import builtins\ndel builtins.__import__\nprint('done')\n", timeout=30)
    assert tr.status == "ok" and tr.error is None
    assert tr.stdout == "done\n"


@pytest.mark.parametrize("first, second", [
    ("sys.stderr.write('E' * 300_000)", "os.write(2, b'F' * 300_000)"),
    ("os.write(2, b'F' * 300_000)", "sys.stderr.write('E' * 300_000)"),
])
def test_one_output_budget_for_python_and_below_it(first, second):
    """Output python wrote and output written below it (fd 1/2) kept up to the
    limit each: twice the documented cap."""
    src = f"import os, sys\n{first}\nsys.stderr.flush()\n{second}\nprint('done')\n"
    tr = run_to_trace(src, timeout=60, max_output=400_000)
    assert tr.status == "ok"
    assert tr.truncated and tr.truncation.reason == "output"
    assert len(tr.stdout) + len(tr.stderr) <= 400_000 + 70_000   # (a pipe read's slack)
    # one wording, whichever side counted past the limit first
    assert tr.truncation.message == ("Output stopped after 400,000 characters (the limit); "
                                     "the snippet kept running.")


def test_a_snippet_that_closes_graphscope_s_descriptors_is_told_so():
    tr = run_to_trace("import os\nos.closerange(3, 1000)\nprint('after')\n", timeout=30)
    assert tr.status == "crash"
    assert "lost the file descriptor GraphScope records through" in tr.error.message


def test_output_cut_is_kept_when_the_op_limit_comes_later():
    """Code review: a later truncation (the op limit) replaced the output's in
    ``trace.truncation``, and the console lost its "output stopped" line."""
    from graphscope.model.trace import Trace
    src = ("import torch\nprint('x' * 5000)\nx = torch.zeros(())\n"
           "for i in range(50):\n    x = x + 1\nprint('done')\n")
    tr = run_to_trace(src, timeout=60, max_output=1000, max_ops=10)
    assert tr.truncation.reason == "ops"
    assert tr.output_cut is not None and "1,000 characters" in tr.output_cut.message
    back = Trace.from_json(tr.to_json())
    assert back.output_cut == tr.output_cut and back.truncation.reason == "ops"


def test_a_snippet_that_closes_every_descriptor_is_told_so_every_time():
    """Closing fds 0-63 (its stdout and stderr too) ended "killed by SIGTERM" in two
    runs of six, with "Run again to restart" (robustness review): with all its
    pipes closed the worker was sent SIGTERM at once, between the snippet's close
    and its own exit with code 72. It is given time to leave first."""
    from graphscope.runner import Runner
    src = ("import os\nfor fd in range(0, 64):\n    try: os.close(fd)\n"
           "    except OSError: pass\nprint('hi')\n")
    with Runner(warm=True) as r:
        for _ in range(3):
            tr = run_to_trace(src, timeout=30, runner=r)
            assert tr.status == "crash" and tr.end.exit_code == 72, tr.error
            assert "lost the file descriptor GraphScope records through" in tr.error.message


def test_a_stop_while_a_worker_with_closed_pipes_is_given_time_to_leave_is_a_stop():
    """Code review: a Stop pressed while the runner gave a worker whose pipes had
    all closed its second to leave ended the run as a crash ("killed by SIGTERM",
    or "worker did not exit"), not as stopped."""
    import time
    from graphscope.runner import Runner
    src = ("import os, time\nfor fd in range(0, 64):\n    try: os.close(fd)\n"
           "    except OSError: pass\nwhile True:\n    time.sleep(0.01)\n")
    with Runner(warm=True) as r:
        for delay in (0.5, 0.8):
            r.warm_ready(60)
            r.start(src, "s.py", None, timeout=30)
            time.sleep(delay)
            session = r._session
            r.stop()
            r.wait(10)
            assert session.end.status == "stopped", session.end
