"""The graphscope command: exit codes 0/1/2, one-line messages, no tracebacks,
and the window / scenario commands handing over their arguments."""
import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from graphscope import cli
from graphscope.model.trace import Trace
from process_helpers import children




@pytest.fixture(autouse=True)
def no_leaked_workers():
    before = children()
    yield
    assert not (children() - before), "the command left processes behind"


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("graphscope: ")
    return lines[0]


def test_python_dash_m_export_completes_with_exit_0(tmp_path):
    snippet = tmp_path / "ok.py"
    snippet.write_text("import torch\nx = torch.ones(2, requires_grad=True)\n"
                       "(x * x).sum().backward()\nprint(x.grad)\n")
    out = tmp_path / "ok.json"
    p = subprocess.run([sys.executable, "-m", "graphscope", "export", str(snippet),
                        "--format", "json", "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    line = _one_line(p.stderr)
    assert "completed" in line and str(out) in line
    tr = Trace.from_json(out.read_text(encoding="utf-8"))
    assert tr.status == "ok" and tr.stdout == "tensor([2., 2.])\n"
    assert tr.backward


def test_what_the_snippet_left_running_does_not_outlive_the_command(tmp_path):
    """NOTE [leaving at once]: the command does not wait for its worker to be
    gone after the End, but what the snippet started goes with it, also a
    process that ignores SIGTERM and holds none of the worker's pipes (code
    review: it outlived the command)."""
    snippet = tmp_path / "child.py"
    marker = tmp_path / "pid"
    snippet.write_text(
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'],\n"
        "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n")
    p = subprocess.run([sys.executable, "-m", "graphscope", "export", str(snippet),
                        "-o", str(tmp_path / "child.json")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    pid = int(marker.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _running(pid):
        time.sleep(0.05)
    assert not _running(pid)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_command_killed_after_the_snippet_s_last_line_leaves_no_file(tmp_path):
    """NOTE [the file before the End]: the file's head is written when the
    snippet's code has ended, while its atexit functions still run; the command
    killed then (`timeout 4 graphscope export`) left a .part file behind (code
    review). The file has no name until it is whole."""
    snippet = tmp_path / "slow_exit.py"
    marker = tmp_path / "at_exit"
    snippet.write_text(
        "import atexit, time, torch\n"
        "x = torch.ones(3, requires_grad=True)\n(x * 2).sum().backward()\n"
        f"atexit.register(time.sleep, 60)\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').close())\n")
    out = tmp_path / "slow_exit.json"
    out.write_text("the old trace")
    p = subprocess.Popen([sys.executable, "-m", "graphscope", "export", str(snippet),
                          "-o", str(out), "--timeout", "120"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists()
        time.sleep(0.5)            # the head is written meanwhile
        p.send_signal(signal.SIGTERM)
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert out.read_text() == "the old trace"
    assert sorted(q.name for q in tmp_path.iterdir()) == ["at_exit", "slow_exit.json",
                                                          "slow_exit.py"]


def test_python_dash_m_leaves_with_the_exit_code_and_everything_written(tmp_path):
    """NOTE [leaving at once]: the command ends with os._exit after writing;
    what it wrote to stdout and stderr still arrives whole, and the exit code
    is the command's."""
    snippet = tmp_path / "bad.py"
    snippet.write_text("import torch\nx = torch.ones(3, requires_grad=True)\n"
                       "for i in range(300):\n    x = x * 1.5\n"
                       "raise ValueError('late')\n")
    p = subprocess.run([sys.executable, "-m", "graphscope", "trace", str(snippet)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert "ValueError: late" in _one_line(p.stderr)
    tr = Trace.from_json(p.stdout)          # the whole JSON arrived (> a pipe's buffer)
    assert len(p.stdout) > 1 << 16 and len(tr.ops) == 301


@pytest.mark.parametrize("tail, code", [("", 0), ("raise ValueError('late')\n", 1)])
def test_trace_into_a_reader_that_stops_early(tmp_path, tail, code):
    """`graphscope trace x.py | head`: the reader going away is not an error of
    the command; the exit code and the status line still tell how the run ended."""
    snippet = tmp_path / "long.py"
    snippet.write_text("import torch\nx = torch.ones(3, requires_grad=True)\n"
                       "for i in range(300):\n    x = x * 1.5\n" + tail)
    p = subprocess.Popen([sys.executable, "-m", "graphscope", "trace", str(snippet)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.read(10) == b'{"format":'
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == code, err
    line = _one_line(err)
    assert "stopped early" in line and "cannot write" not in line
    assert ("ValueError" in line) is bool(code)


def test_sys_exit_0_counts_as_completed(tmp_path, capsys):
    snippet = tmp_path / "bye.py"
    snippet.write_text("import sys\nprint('hi')\nsys.exit(0)\nprint('never')\n")
    assert cli.main(["export", str(snippet), "-o", str(tmp_path / "bye.json")]) == 0
    tr = Trace.from_json((tmp_path / "bye.json").read_text())
    assert tr.status == "exit" and tr.stdout == "hi\n"


def test_snippet_error_exits_1_and_still_writes_the_trace(tmp_path, capsys):
    snippet = tmp_path / "bad.py"
    snippet.write_text("import torch\nx = torch.ones(2)\nx.backward()\n")
    out = tmp_path / "bad.dot"
    assert cli.main(["export", str(snippet), "--format", "dot", "-o", str(out)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "RuntimeError" in line and "(line 3)" in line
    assert out.read_text().startswith('digraph "forward"')


def test_timeout_exits_1_with_the_partial_trace(tmp_path, capsys):
    snippet = tmp_path / "loop.py"
    snippet.write_text("import torch\na = torch.ones(1) + 1\nwhile True:\n    pass\n")
    out = tmp_path / "loop.json"
    assert cli.main(["export", str(snippet), "-o", str(out), "--timeout", "1"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "timeout" in line
    tr = Trace.from_json(out.read_text())
    assert tr.status == "timeout"
    assert any(op.name == "add" for op in tr.ops)


def test_trace_subcommand_prints_json_on_stdout(tmp_path, capsys):
    snippet = tmp_path / "t.py"
    snippet.write_text("print('out')\n")
    assert cli.main(["trace", str(snippet)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["format"] == "graphscope-trace" and d["stdout"] == "out\n"


@pytest.mark.parametrize("argv_tail, content, expect", [
    (["missing.py"], None, "no such file"),
    (["empty.py"], b"\n\n", "empty"),
    (["latin.py"], "x = 'caf\u00e9'\n".encode("latin-1"), "not UTF-8"),
    (["ok.py", "--format", "gif"], b"print(1)\n", "invalid choice"),
    (["ok.py", "--timeout", "soon"], b"print(1)\n", "not a number"),
    ([], None, "the following arguments are required"),
])
def test_command_that_cannot_be_carried_out_exits_2(tmp_path, capsys, argv_tail, content, expect):
    if argv_tail and content is not None:
        (tmp_path / argv_tail[0]).write_bytes(content)
    argv = ["export"] + [str(tmp_path / a) if a.endswith(".py") else a for a in argv_tail]
    assert cli.main(argv) == 2
    assert expect in _one_line(capsys.readouterr().err)


def test_export_starts_its_worker_before_reading_the_snippet(tmp_path, monkeypatch):
    """NOTE [a worker before the imports]: the worker imports torch while the
    command imports the rest of GraphScope and reads the snippet, and the run
    takes that worker: one worker in all."""
    from graphscope import worker_process
    events = []
    real_init, real_read = worker_process.Worker.__init__, cli.read_snippet

    def init(self, *a, **k):
        events.append("worker")
        real_init(self, *a, **k)

    def read(path):
        events.append("read")
        return real_read(path)
    monkeypatch.setattr(worker_process.Worker, "__init__", init)
    monkeypatch.setattr(cli, "read_snippet", read)
    snippet = tmp_path / "ok.py"
    snippet.write_text("import torch\nprint(torch.ones(2).sum().item())\n")
    assert cli.main(["export", str(snippet), "-o", str(tmp_path / "ok.json")]) == 0
    assert events == ["worker", "read"]
    assert json.loads((tmp_path / "ok.json").read_text())["stdout"] == "2.0\n"


def test_help_starts_no_worker(capsys, monkeypatch):
    from graphscope import worker_process
    started = []
    monkeypatch.setattr(worker_process, "Worker", lambda *a, **k: started.append(1))
    with pytest.raises(SystemExit):
        cli.main(["export", "--help"])
    with pytest.raises(SystemExit):
        cli.main(["trace", "x.py", "-h"])
    assert started == [] and not cli._EARLY


def test_missing_renderer_exits_2_before_running(tmp_path, capsys, monkeypatch):
    snippet = tmp_path / "ok.py"
    snippet.write_text("print(1)\n")
    monkeypatch.setitem(sys.modules, "graphscope.ui.render", None)
    assert cli.main(["export", str(snippet), "--format", "svg", "-o", str(tmp_path / "g.svg")]) == 2
    assert "svg/png export needs the graph renderer" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "g.svg").exists()


def test_internal_error_is_one_line_not_a_traceback(tmp_path, capsys, monkeypatch):
    snippet = tmp_path / "ok.py"
    snippet.write_text("print(1)\n")

    def broken(*a, **k):
        raise ValueError("boom")
    monkeypatch.setattr(cli, "_run_file", broken)
    monkeypatch.delenv("GRAPHSCOPE_DEBUG", raising=False)
    assert cli.main(["export", str(snippet), "-o", str(tmp_path / "x.json")]) == 2
    assert "internal error: ValueError: boom" in _one_line(capsys.readouterr().err)


def test_window_gets_the_parsed_arguments(tmp_path, monkeypatch):
    seen = {}
    fake = types.ModuleType("graphscope.ui.app")
    fake.main = lambda args: seen.setdefault("args", args) and 0
    monkeypatch.setitem(sys.modules, "graphscope.ui.app", fake)
    snippet = tmp_path / "s.py"
    snippet.write_text("x = 1\n")
    assert cli.main([str(snippet), "--presentation", "--theme", "dark",
                     "--screenshot", str(tmp_path / "o.png"), "--step", "3"]) == 0
    a = seen["args"]
    assert a.file == str(snippet) and a.presentation and a.theme == "dark"
    assert a.step == 3 and a.screenshot.endswith("o.png") and a.scenario is None
    seen.clear()
    assert cli.main([]) == 0  # no arguments: the app opens its welcome scenario
    assert seen["args"].file is None and seen["args"].scenario is None
    seen.clear()
    assert cli.main(["--scenario", "leaf-tensors"]) == 0
    assert seen["args"].scenario == "leaf-tensors"


def test_window_with_a_missing_file_exits_2(tmp_path, capsys):
    assert cli.main([str(tmp_path / "nope.py")]) == 2
    assert "no such file" in _one_line(capsys.readouterr().err)


def test_scenarios_check_hands_over_the_folder(tmp_path, monkeypatch):
    import graphscope.scenarios as sc
    calls = []
    monkeypatch.setattr(sc, "check_main", lambda d, **kw: calls.append((d, kw)) or 3)
    assert cli.main(["scenarios", "check", str(tmp_path)]) == 3
    assert cli.main(["scenarios", "check", "--no-run", "--plain", "-j", "1"]) == 3
    assert calls == [(str(tmp_path), {"run_snippets": True, "plain": False, "jobs": 2}),
                     (None, {"run_snippets": False, "plain": True, "jobs": 1})]
    assert cli.main(["scenarios", "check", str(tmp_path / "missing")]) == 2


def test_export_never_writes_over_the_snippet_itself(tmp_path, capsys):
    """``export mine.py -o mine.py`` and ``export notes.json`` (whose default
    output is its own name) replaced the code with JSON."""
    for name, argv_tail in (("mine.py", ["-o", "mine.py"]), ("notes.json", [])):
        snippet = tmp_path / name
        snippet.write_text("print(1)\n")
        argv = ["export", str(snippet)] + [str(tmp_path / a) if a.endswith(".py") else a
                                           for a in argv_tail]
        assert cli.main(argv) == 2
        assert "the snippet itself" in _one_line(capsys.readouterr().err)
        assert snippet.read_text() == "print(1)\n"


def test_a_pipe_or_device_is_refused_not_read_for_ever(tmp_path, capsys):
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):
        assert cli.main(["export", path, "-o", str(tmp_path / "o.json")]) == 2
        assert "not a regular file" in _one_line(capsys.readouterr().err)


def test_an_output_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys):
    snippet = tmp_path / "ok.py"
    snippet.write_text("open('ran', 'w').write('yes')\n")
    assert cli.main(["export", str(snippet), "-o", str(tmp_path / "no" / "t.json")]) == 2
    assert "there is no folder" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "ran").exists() and not (snippet.parent / "ran").exists()


@pytest.mark.parametrize("where", ["head", "tail", "both"])
def test_a_write_that_fails_half_way_keeps_the_old_file(tmp_path, capsys, monkeypatch, where):
    """The trace goes to a temporary file that replaces the output once whole: a
    full disk left a cut JSON where a good one had been. Its head is written
    when the snippet's code ends, the rest at the End (NOTE [the file before
    the End]): a full disk at either, or at both, fails the export as one."""
    from graphscope import export
    snippet = tmp_path / "ok.py"
    snippet.write_text("print(1)\n")
    out = tmp_path / "t.json"
    out.write_text("the old trace")
    real = export._key_pieces

    def fails_half_way(d, rows, trace, keys, *a):
        pieces = list(real(d, rows, trace, keys, *a))
        tail = "outputs" in keys
        if where == "both" or tail == (where == "tail"):
            yield from pieces[:2]
            raise OSError(28, "No space left on device")
        yield from pieces

    monkeypatch.setattr(export, "_key_pieces", fails_half_way)
    assert cli.main(["export", str(snippet), "-o", str(out)]) == (0 if where == "head" else 2)
    err = _one_line(capsys.readouterr().err)
    if where == "head":   # written again whole at the End, which worked
        assert Trace.from_json(out.read_text()).stdout == "1\n", err
    else:
        assert "No space left" in err
        assert out.read_text() == "the old trace"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.py", "t.json"]   # no leftovers
    monkeypatch.setattr(export, "_key_pieces", real)
    assert cli.main(["export", str(snippet), "-o", str(out)]) == 0
    assert Trace.from_json(out.read_text()).stdout == "1\n"


def test_a_coding_line_python_does_not_know_is_named_as_such(tmp_path, capsys):
    snippet = tmp_path / "odd.py"
    snippet.write_bytes(b"# coding: nonsense\nprint(1)\n")
    assert cli.main(["export", str(snippet)]) == 2
    assert "encoding Python does not know" in _one_line(capsys.readouterr().err)


def test_the_status_line_says_each_thing_once():
    """"SIGSEGV ... at line 4 (line 4)" and "KeyboardInterrupt:  (line 1)"."""
    def trace(status, etype, message, line):
        err = types.SimpleNamespace(type=etype, message=message, line=line)
        return types.SimpleNamespace(end=types.SimpleNamespace(status=status, error=err,
                                                               exit_code=None),
                                     ops=[], tensors={}, backward=[], truncated=False,
                                     truncation=None)
    crash = cli._status_line(trace("crash", "Crash", "killed by SIGSEGV at line 4", 4))
    assert crash.count("line 4") == 1
    ki = cli._status_line(trace("error", "KeyboardInterrupt", "", 1))
    assert "KeyboardInterrupt (line 1)" in ki and "  " not in ki
    assert "ValueError: bad (line 2)" in cli._status_line(trace("error", "ValueError", "bad", 2))
    # "line 42" in the message is not this line 4
    assert "(line 4)" in cli._status_line(trace("error", "ValueError", "see line 42", 4))
    many = cli._status_line(trace("error", "AssertionError", "not close!\n\nMismatch: 1", 9))
    assert "\n" not in many and "AssertionError: not close! … (line 9)" in many
    # a 2 MB message: its start, on a line of its own size (fuzz review)
    huge = cli._status_line(trace("error", "ValueError", "x" * 2_000_000, 1))
    assert len(huge) < 400 and "ValueError: xxx" in huge and "x … (line 1)" in huge


def test_odd_outputs_are_refused_in_one_line(tmp_path, capsys):
    snippet = tmp_path / "ok.py"
    snippet.write_text("print(1)\n")
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    assert cli.main(["export", str(snippet), "-o", str(loop)]) == 2
    assert "cannot write it" in _one_line(capsys.readouterr().err)


def test_trace_with_stdout_closed_says_it_has_nowhere_to_write(tmp_path):
    snippet = tmp_path / "ok.py"
    snippet.write_text("print(1)\n")
    p = subprocess.run(["bash", "-c", 'exec "$0" -m graphscope trace "$1" >&-', sys.executable,
                        str(snippet)], capture_output=False, stderr=subprocess.PIPE,
                       timeout=120, text=True)
    assert p.returncode == 2
    assert "stdout is closed" in p.stderr


def test_a_folder_that_takes_no_new_file_still_gets_the_trace_written_in_place(
        tmp_path, capsys, monkeypatch):
    """The trace goes through a temporary file beside the output; where the folder
    takes none (but the file may be written), it is written in place."""
    import tempfile
    snippet = tmp_path / "ok.py"
    snippet.write_text("print(1)\n")
    out = tmp_path / "t.json"
    out.write_text("old")

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    assert cli.main(["export", str(snippet), "-o", str(out)]) == 0
    assert Trace.from_json(out.read_text()).stdout == "1\n"


def test_export_names_the_script_as_python_does(tmp_path):
    """Python 3.9+ makes a script's __file__ (and its traceback lines) absolute and
    leaves sys.argv[0] as typed; export ran it under the name as typed."""
    (tmp_path / "names.py").write_text(
        "import sys, traceback\nprint(__file__, sys.argv[0])\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()\n")
    plain = subprocess.run([sys.executable, "names.py"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)
    p = subprocess.run([sys.executable, "-m", "graphscope", "trace", "names.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(Path(cli.__file__).parent.parent)})
    d = json.loads(p.stdout)
    assert d["stdout"] == plain.stdout
    assert plain.stdout.startswith(str(tmp_path / "names.py") + " names.py")
    assert d["stderr"] == plain.stderr


def test_a_snippet_named_like_a_standard_module_runs_from_its_own_folder(tmp_path):
    """Fuzz review: `graphscope export resource.py` in the snippet's folder: the
    worker, started there, imported the snippet as the standard library's
    `resource` (it ran once, unrecorded), then died on its missing getrlimit."""
    (tmp_path / "resource.py").write_text(
        "import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\n"
        "print('ok', x.grad)\n")
    p = subprocess.run([sys.executable, "-m", "graphscope", "trace", "resource.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(Path(cli.__file__).parent.parent)})
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["stdout"] == "ok tensor([2., 2.])\n" and d["status"] == "ok"
    assert len(d["backward"]) >= 2


def test_a_pythonpath_of_the_current_folder_stays_importable(tmp_path):
    """Code review: with PYTHONPATH=. the worker's head of sys.path was the user's
    entry, and the snippet's folder replaced it: `import mylib` of a project's
    module, from scripts/train.py, failed where python ran it."""
    (tmp_path / "mylib.py").write_text("VALUE = 3\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.py").write_text("import mylib\nprint('ok', mylib.VALUE)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([".", str(Path(cli.__file__).parent.parent)])}
    plain = subprocess.run([sys.executable, "scripts/train.py"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert plain.stdout == "ok 3\n", plain.stderr
    p = subprocess.run([sys.executable, "-m", "graphscope", "trace", "scripts/train.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert json.loads(p.stdout)["stdout"] == plain.stdout, p.stderr


def test_scenarios_check_of_a_file_says_it_is_a_file(tmp_path, capsys):
    """It said "no such folder" of a file that was there."""
    (tmp_path / "lessons").mkdir()
    lesson = tmp_path / "lessons" / "week3.toml"
    lesson.write_text('title = "Week 3"\nscenarios = ["welcome"]\n')
    scenario = tmp_path / "mine.toml"
    scenario.write_text('id = "mine"\n')
    assert cli.main(["scenarios", "check", str(lesson)]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"graphscope: {lesson}: is a lesson file, not a folder: open it with "
        f"'graphscope --lesson {lesson}', or check it with its scenarios "
        f"('graphscope scenarios check {tmp_path}')")
    assert cli.main(["scenarios", "check", str(scenario)]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"graphscope: {scenario}: is a file, not a folder: check the folder it is in "
        f"('graphscope scenarios check {tmp_path}')")
    assert cli.main(["--scenarios", str(lesson)]) == 2
    assert "is a lesson file, not a folder" in _one_line(capsys.readouterr().err)
