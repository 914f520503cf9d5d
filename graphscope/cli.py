"""The ``graphscope`` command (also ``python -m graphscope``).

::

    graphscope [FILE.py] [--scenario ID] [--scenarios DIR] [--lesson FILE]
               [--presentation] [--theme NAME] [--screenshot OUT.png] [--step N]
    graphscope export SNIPPET.py --format json|dot|svg|png [-o OUT] [--timeout S]
    graphscope trace SNIPPET.py [--timeout S]           (JSON trace on stdout)
    graphscope scenarios check [DIR]

Exit codes of ``export``/``trace``: 0 the snippet completed (``sys.exit(0)``
included), 1 it raised, crashed, exited non-zero or timed out (the trace file
is still written), 2 the command itself could not be carried out (bad
arguments, a file that is missing, unreadable, not text or empty, no worker).

No GraphScope traceback reaches the user: every failure is one line on stderr
(``GRAPHSCOPE_DEBUG=1`` shows the traceback of an internal error).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from graphscope.snippet_source import UnreadableSnippet, decode_as_python, read_bytes

PROG = "graphscope"
EXIT_OK, EXIT_SNIPPET_FAILED, EXIT_USAGE = 0, 1, 2
SUBCOMMANDS = ("export", "trace", "scenarios")


class CommandError(Exception):
    """The command cannot be carried out: one line for stderr, exit code 2."""


class _Parser(argparse.ArgumentParser):
    # argparse prints usage and exits 2 itself; raise instead so main() decides
    def error(self, message):
        raise CommandError(f"{message} (see '{self.prog} --help')")


# -- argument parsing --------------------------------------------------------------

def _app_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=(
        "Watch PyTorch build its autograd graph live, then step through backward. "
        f"Other commands: '{PROG} export', '{PROG} trace', '{PROG} scenarios check'."))
    p.add_argument("file", nargs="?", metavar="FILE.py", help="snippet to open (it is not run until Run)")
    p.add_argument("--scenario", metavar="ID", help="open a bundled or loaded scenario by id")
    p.add_argument("--scenarios", metavar="DIR", help="load scenarios from this folder too")
    p.add_argument("--lesson", metavar="FILE", help="walk through a lesson file")
    p.add_argument("--presentation", action="store_true", help="presentation mode (full screen, large text)")
    p.add_argument("--theme", metavar="NAME", help="light, dark or high-contrast")
    p.add_argument("--screenshot", metavar="OUT.png",
                   help="run, go to the end (or --step N), save a screenshot of the window and exit")
    p.add_argument("--step", metavar="N", type=int, help="timeline position for --screenshot, as the window counts it (Step N of M)")
    from graphscope import __version__
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return p


def _sub_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    ex = sub.add_parser("export", help="run a snippet and write its trace or graph",
                        description="Run SNIPPET.py in a worker and write its trace (json), "
                                    "forward graph (dot) or a picture of the graph (svg, png).")
    ex.add_argument("snippet", metavar="SNIPPET.py")
    ex.add_argument("--format", "-f", choices=("json", "dot", "svg", "png"), default="json")
    ex.add_argument("-o", "--output", metavar="OUT",
                    help="output file ('-' for stdout; default: SNIPPET with the format's suffix)")
    ex.add_argument("--timeout", type=_positive_float, default=30.0, metavar="SECONDS",
                    help="stop the snippet after this many seconds (default 30)")
    tr = sub.add_parser("trace", help="run a snippet and print its JSON trace",
                        description="Run SNIPPET.py in a worker and print its trace as JSON "
                                    "on stdout (the same as export --format json -o -).")
    tr.add_argument("snippet", metavar="SNIPPET.py")
    tr.add_argument("--timeout", type=_positive_float, default=30.0, metavar="SECONDS",
                    help="stop the snippet after this many seconds (default 30)")
    sc = sub.add_parser("scenarios", help="work with scenario files")
    scsub = sc.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    scsub.required = True
    chk = scsub.add_parser("check", help="validate scenario files and what their snippets do")
    chk.add_argument("dir", nargs="?", metavar="DIR", help="folder of scenarios (default: bundled)")
    chk.add_argument("--no-run", action="store_true",
                     help="check the files only, without running the snippets")
    chk.add_argument("--plain", action="store_true",
                     help="run the snippets under plain python instead of GraphScope's "
                          "worker (checks the scenario files, not the capture)")
    chk.add_argument("-j", "--jobs", type=int, default=2, metavar="N",
                     help="snippets run at once (default 2)")
    return p


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    return v


# -- reading a snippet ---------------------------------------------------------------

def read_snippet(path: str) -> str:
    """The snippet's text, decoded as Python would (UTF-8 or its coding line).
    Raises CommandError with a one-line reason otherwise."""
    try:
        text = decode_as_python(read_bytes(path))
    except UnreadableSnippet as e:
        raise CommandError(f"{path}: {e.reason}") from None
    if not text.strip():
        raise CommandError(f"{path}: the file is empty, nothing to run")
    return text


# -- commands --------------------------------------------------------------------

STATUS_MESSAGE_CHARS = 300   # of an error's message on the status line


def _status_line(trace) -> str:
    end = trace.end
    n_ops, n_bw = len(trace.ops), len(trace.backward)
    counts = f"{n_ops} ops, {len(trace.tensors)} tensors, {n_bw} backward steps"
    if trace.truncated and trace.truncation is not None:
        counts += f"; {trace.truncation.message}"
    if end is None:
        return f"the run did not finish ({counts})"
    err = end.error
    # (a crash's message may already say where: "... at line 4")
    where = (f" (line {err.line})" if err is not None and err.line
             and not re.search(rf"\bline {err.line}\b", err.message or "") else "")
    if end.status == "ok":
        return f"completed: {counts}"
    if end.status == "exit":
        return f"exited with code {end.exit_code}: {counts}"
    if err is not None:
        # one line: a message over several (an assert_close report) keeps its first
        message = (err.message or "").strip()
        first = message.splitlines()[0] if message else ""
        if len(first) > STATUS_MESSAGE_CHARS:
            # (raise ValueError("x" * 2_000_000) made a 2 MB "line": fuzz review;
            # the trace file has the whole message)
            first = first[:STATUS_MESSAGE_CHARS].rstrip()
        if first != message:
            first += " …"
        said = f"{err.type}: {first}" if first else err.type
        return f"{end.status}: {said}{where}; {counts}"
    return f"{end.status}: {counts}"


def _completed(trace) -> bool:
    end = trace.end
    return end is not None and (end.status == "ok" or (end.status == "exit" and not end.exit_code))


def _run_file(path: str, source: str, timeout: float, also=None, into=None):
    from graphscope.runner import Runner, run_to_trace
    # one run: a second warm worker would be wasted work; the first is the one
    # main() started (NOTE [a worker before the imports]), if it did
    runner = Runner(warm=False, worker=_take_early_worker())
    try:
        # absolute, as python 3.9+ makes a script's __file__ and its traceback lines
        # (sys.argv[0] stays as typed, as python leaves it)
        # (a command that leaves at once after its write, NOTE [leaving at once],
        # does not wait for the worker to be gone: NOTE [a worker that has sent
        # its End] in capture/worker.py; main() called from Python does)
        trace = run_to_trace(source, os.path.abspath(path), timeout=timeout, runner=runner,
                             also=also, argv=[str(path)], reaped=not _leaving, into=into)
    finally:
        runner.close(wait=not _leaving)
    err = trace.error
    if err is not None and err.type == "WorkerStartError":
        raise CommandError(err.message)
    return trace


def cmd_export(args) -> int:
    from graphscope import export
    out = args.output or str(Path(args.snippet).with_suffix("." + args.format))
    if args.format in ("svg", "png"):
        if out == "-":
            raise CommandError(f"{args.format} export needs an output file (-o FILE.{args.format})")
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        try:
            export.renderer()  # before running anything: fail fast
        except export.ExportError as e:
            raise CommandError(str(e)) from None
    if out != "-":
        _check_output(out, args.snippet)   # before the run: a run is not wasted on it
    elif "stdout" in _CLOSED_AT_START:
        raise CommandError("stdout is closed: nowhere to write the trace (-o FILE)")
    # JSON: the rows are encoded while the snippet runs (NOTE [JSON as it comes]),
    # and to a file most of it is written while the run ends (NOTE [the file
    # before the End])
    source = read_snippet(args.snippet)
    rows = into = None
    if args.format == "json":
        if out == "-":
            rows = export.RowText()
        else:
            from graphscope.model.trace import Trace
            into = Trace(source=source, filename=os.path.abspath(args.snippet))
            rows = export.JsonFile(into, out)
    try:
        also = None if rows is None else rows.take if into is not None else rows.extend
        trace = _run_file(args.snippet, source, args.timeout, also, into)
        try:
            export.write(trace, out, args.format, rows=rows)
        except export.ExportError as e:
            raise CommandError(str(e)) from None
        except BrokenPipeError:
            if out != "-":
                raise CommandError(f"{out}: cannot write it (broken pipe)") from None
            # `graphscope trace x.py | head`: the reader had enough; the run's outcome stands
            _quiet_stdout()
            _say(f"{args.snippet}: {_status_line(trace)}; the reader of stdout stopped early")
            return EXIT_OK if _completed(trace) else EXIT_SNIPPET_FAILED
        except OSError as e:
            raise CommandError(f"{out}: cannot write it ({e.strerror or e})") from None
    finally:
        if into is not None:
            rows.abandon()   # (the file written: nothing is left to drop)
    where = "stdout" if out == "-" else out
    _say(f"{args.snippet}: {_status_line(trace)}; wrote {where}")
    return EXIT_OK if _completed(trace) else EXIT_SNIPPET_FAILED


def _check_output(out: str, snippet: str) -> None:
    """CommandError when ``out`` cannot be written or is the snippet itself
    (``export mine.py -o mine.py``, or ``export notes.json`` whose default
    output is its own name, replaced the code with JSON)."""
    p = Path(out)
    try:
        if p.exists() and os.path.samefile(p, snippet):
            raise CommandError(f"{out}: that is the snippet itself; choose another "
                               "output file (-o FILE)")
    except OSError:
        pass
    if p.is_dir():
        raise CommandError(f"{out}: is a folder (-o takes a file name)")
    try:
        parent = p.resolve().parent
    except (OSError, RuntimeError) as e:   # a symlink loop
        raise CommandError(f"{out}: cannot write it ({e})") from None
    if not parent.is_dir():
        raise CommandError(f"{out}: cannot write it (there is no folder {parent})")
    if not os.access(parent if not p.exists() else p, os.W_OK):
        raise CommandError(f"{out}: cannot write it (permission denied)")


def _quiet_stdout() -> None:
    """Send what is left for stdout nowhere: its reader is gone, and flushing
    the buffer into the closed pipe at exit would raise again."""
    try:
        sys.stdout = open(os.devnull, "w")
    except OSError:
        pass


def cmd_trace(args) -> int:
    args.output, args.format = "-", "json"
    return cmd_export(args)


def cmd_scenarios(args) -> int:
    try:
        from graphscope.scenarios import check_main, not_a_folder
    except ImportError as e:
        raise CommandError(f"scenario checking is not available ({e})") from None
    why = not_a_folder(args.dir) if args.dir is not None else None
    if why:
        raise CommandError(f"{args.dir}: {why}")
    return int(check_main(args.dir, run_snippets=not args.no_run, plain=args.plain,
                          jobs=max(1, args.jobs)) or 0)


def cmd_app(args) -> int:
    if args.file is not None:
        p = Path(args.file)
        if not p.is_file():
            raise CommandError(f"{args.file}: no such file" if not p.exists()
                               else f"{args.file}: not a file")
    if args.scenarios is not None:
        from graphscope.scenarios import not_a_folder
        why = not_a_folder(args.scenarios)
        if why:
            raise CommandError(f"{args.scenarios}: {why}")
    if args.lesson is not None and not Path(args.lesson).is_file():
        raise CommandError(f"{args.lesson}: " + ("is a folder, not a lesson file"
                                                  if Path(args.lesson).is_dir() else "no such file"))
    try:
        from graphscope.ui.app import main as app_main
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("graphscope"):
            raise CommandError("the GraphScope window is not available in this installation") from None
        raise CommandError(f"the window needs Qt, which could not be loaded: {e}") from None
    except ImportError as e:
        raise CommandError(f"the window needs Qt, which could not be loaded: {e}") from None
    return int(app_main(args) or 0)


def _say(text: str) -> None:
    print(f"{PROG}: {text}", file=sys.stderr)


def _stand_in_for_closed_streams() -> None:
    """Python makes ``sys.stdout``/``sys.stderr`` None when the process starts with
    that descriptor closed (``graphscope export x.py 2>&-``); ``print(file=None)``
    then writes to stdout, so the status line went into the JSON of ``trace``, and
    the final flush raised. What would go to a closed stream goes nowhere."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))
            _CLOSED_AT_START.add(name)


_CLOSED_AT_START: set = set()   # "stdout": a trace for stdout would go nowhere


# NOTE [a worker before the imports]: ``graphscope export`` spends about 40 ms
# on its own imports (the runner, the trace model, the exporter) before it
# gets to start the worker, which then spends a second importing torch: time
# that ``python x.py`` does not pay, and 1-2% of the 1.5x an export may take
# beside it. So ``export`` and ``trace`` start their worker first, with
# nothing but worker_process.py imported, and the imports, the argument
# checks and the reading of the snippet happen while the worker imports
# torch. A command that fails before its run (bad arguments, a missing file)
# ends the worker unused: a second of a core spent for nothing, on an error.
_EARLY: list = []   # the worker started by main(), until _run_file takes it


def _start_worker_early(argv) -> None:
    if not argv or argv[0] not in _LEAVE_AT_ONCE or "-h" in argv or "--help" in argv:
        return
    from graphscope.worker_process import Worker
    try:
        _EARLY.append(Worker())
    except OSError:
        pass   # the run starts one again and reports why it cannot


def _take_early_worker():
    return _EARLY.pop() if _EARLY else None


def _end_early_worker() -> None:
    while _EARLY:
        _EARLY.pop().discard()


def main(argv=None) -> int:
    """Entry point; returns the exit code (never raises, except SystemExit from --help)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _stand_in_for_closed_streams()
    try:
        _start_worker_early(argv)   # (in the try: a Ctrl+C during its start is one line)
        if argv and argv[0] in SUBCOMMANDS:
            args = _sub_parser().parse_args(argv)
            handler = {"export": cmd_export, "trace": cmd_trace,
                       "scenarios": cmd_scenarios}[args.command]
        else:
            args = _app_parser().parse_args(argv)
            handler = cmd_app
        return handler(args)
    except CommandError as e:
        _say(str(e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("interrupted")
        return 130
    except BrokenPipeError:  # `graphscope trace x.py | head` (before the run ended)
        _quiet_stdout()
        return EXIT_OK
    except Exception as e:  # a GraphScope bug: one line, traceback only on request
        if os.environ.get("GRAPHSCOPE_DEBUG"):
            raise
        _say(f"internal error: {type(e).__name__}: {e} (set GRAPHSCOPE_DEBUG=1 for details)")
        return EXIT_USAGE
    finally:
        _end_early_worker()   # not taken: the command failed before its run


# NOTE [leaving at once]: after `graphscope export` has written its file, all
# that is left is the interpreter freeing the trace: a few hundred thousand
# objects for the 20,000-op chain, one at a time, 0.18 s of its 2.8 s. The
# process is ending anyway, so the command flushes its streams and leaves with
# ``os._exit``; the operating system takes the memory back in one go. Only
# for the commands that hold a whole trace (export, trace), and only as the
# process's own entry point: ``main()`` called from Python (the tests) returns.
_LEAVE_AT_ONCE = {"export", "trace"}
_leaving = False   # set by entry() for those: the process ends right after main()


def entry() -> int:
    """The ``graphscope`` command and ``python -m graphscope``: :func:`main`,
    then leave (NOTE [leaving at once])."""
    global _leaving
    argv = sys.argv[1:]
    _leaving = bool(argv) and argv[0] in _LEAVE_AT_ONCE
    code = main()
    if _leaving:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):   # a closed pipe: nothing more can go there
                pass
        os._exit(code)
    return code


if __name__ == "__main__":
    raise SystemExit(entry())
