"""The snippet's stdout/stderr as Output messages.

Each ``write`` becomes one Output chunk with its own ``seq`` (NOTE [seq] in
protocol.py), so the console can show exactly what had been printed at any
point of the timeline; concatenating the chunks gives the bytes plain Python
would have written. Past ``max_output`` characters (stdout and stderr
together) output is dropped and one Truncated(reason="output") is sent.
"""
from __future__ import annotations

import builtins
import codecs
import io
import os
import re
import sys

from graphscope import protocol as P
from graphscope.capture.tracebacks import OWN_DIR, TRAMPOLINE


class OutputLimit:
    """Shared character budget of both streams."""

    def __init__(self, limit: int, emit) -> None:
        self.left = limit
        self.limit = limit
        self.emit = emit
        self.hit = False

    def take(self, text: str) -> str:
        """What of ``text`` fits the budget; ``cut()`` after sending it on."""
        if self.left >= len(text):
            self.left -= len(text)
            return text
        kept = text[: max(self.left, 0)]
        self.left = 0
        return kept

    def cut(self) -> None:
        """Say once that output was cut, after the text kept was sent: the notice
        first made the parent drop that text, so a single print over the limit
        showed nothing at all (GUI review)."""
        if not self.hit and self.left <= 0:
            self.hit = True
            self.emit(P.output_cut(self.limit))


_child_streams = None   # fd 1/2 text streams, set in a forked child (write_to_fds)


def write_to_fds() -> None:
    """NOTE [forked children] in session.py: from now on every CapturedStream of
    this process (``sys.stdout``, and one a logging handler kept) writes to fd 1
    and 2, line-buffered as on a terminal, so print's text and its newline go
    out in one write and the lines of several children do not interleave."""
    global _child_streams
    _child_streams = {
        name: io.TextIOWrapper(io.BufferedWriter(io.FileIO(fd, "w", closefd=False)),
                               encoding="utf-8", errors="backslashreplace",
                               line_buffering=True)
        for name, fd in (("stdout", 1), ("stderr", 2))}


# NOTE [anomaly stacks]: with ``torch.autograd.set_detect_anomaly(True)`` torch
# keeps the Python stack of every forward call and prints it when backward
# fails ("Traceback of forward call that caused the error:"). Under GraphScope
# that stack runs through the worker, the session, the recorder and its
# trampoline (``_graphscope_call``), a dozen frames plain Python never shows.
# They are taken out of the warning as it is written: the frames before the
# snippet's first one, GraphScope's own, and the trampoline's.
_FORWARD_STACK = "Traceback of forward call that caused the error:"
_FRAME = re.compile(r'^  File "(?P<file>[^"]*)", line \d+, in (?P<name>.*)$')


def own_frames_out(text: str, snippet_file: str) -> str:
    """``text`` with GraphScope's frames taken out of the forward-call stacks
    of anomaly mode (NOTE [anomaly stacks])."""
    lines = text.split("\n")
    out, i, in_stack, seen_snippet = [], 0, False, False
    while i < len(lines):
        line = lines[i]
        if _FORWARD_STACK in line:
            in_stack, seen_snippet = True, False
            out.append(line)
            i += 1
            continue
        m = _FRAME.match(line) if in_stack else None
        if m is None:
            if in_stack and not line.startswith("    "):
                in_stack = False
            out.append(line)
            i += 1
            continue
        # a frame: its "File" line and the source line under it, if any
        j = i + 1
        while j < len(lines) and lines[j].startswith("    ") and not _FRAME.match(lines[j]):
            j += 1
        path, name = m.group("file"), m.group("name")
        mine = path == snippet_file
        seen_snippet = seen_snippet or mine
        drop = (not seen_snippet
                or (mine and name == TRAMPOLINE)
                or os.path.abspath(path).startswith(OWN_DIR))
        if not drop:
            out.extend(lines[i:j])
        i = j
    return "\n".join(out)


# the PYTHONIOENCODING ``python x.py`` would have had ("" when unset); set by the
# worker from the runner's note of it, None in any other process
USER_IOENCODING = None


def stdout_errors() -> str:
    """NOTE [stdout's errors]: the error handler ``python x.py`` would give its
    stdout in this environment. The worker runs with PYTHONIOENCODING=utf-8 (the
    runner reads its fd 1 as UTF-8), which makes it "strict"; python itself, given
    a PYTHONIOENCODING of the user's, takes its ``:errors`` part or "strict", and
    without one uses "surrogateescape" in UTF-8 mode or under the C locale (C,
    POSIX, C.UTF-8) and "strict" otherwise (PEP 538/540). Under C.UTF-8 ``print("\\udcff")``
    printed in python and raised here (fuzz review)."""
    user = USER_IOENCODING
    if user is None:
        return getattr(sys.__stdout__, "errors", None) or "strict"   # (not in a worker)
    encoding, _, errors = user.partition(":")
    if errors:
        return errors
    if encoding:   # the user's own PYTHONIOENCODING named an encoding only
        return "strict"
    # CPython's config_get_stdio_errors: UTF-8 mode, the C and POSIX locales and
    # the locale coercion targets (PEP 538) escape; everything else is strict
    if sys.flags.utf8_mode:
        return "surrogateescape"
    try:
        import locale
        ctype = locale.setlocale(locale.LC_CTYPE) or ""
    except Exception:
        ctype = ""
    return "surrogateescape" if ctype in ("C", "POSIX", "C.UTF-8", "C.utf8", "UTF-8") \
        else "strict"


class CapturedStream(io.TextIOBase):
    """A text stream that turns writes into Output messages."""

    def __init__(self, name: str, emit, seq, limit: OutputLimit) -> None:
        super().__init__()
        self._name = name
        self._emit = emit
        self._seq = seq
        self._limit = limit
        self._encoding = "utf-8"
        # as python's: stderr never fails on a character it cannot encode (a lone
        # surrogate prints as \udcff); stdout as python would set it up here
        self._errors = "backslashreplace" if name == "stderr" else stdout_errors()
        self._line_buffering = False   # as python's stdout on a pipe
        self._write_through = False
        self.snippet_file = None       # the snippet's filename (own_frames_out)
        self._newline = ""             # "" or "\n": written as is (reconfigure(newline=))

    # What a snippet may ask of ``sys.stdout`` as of plain Python's (a
    # TextIOWrapper on a pipe): asking must not raise where it does not there.
    @property
    def encoding(self):
        return self._encoding

    @property
    def errors(self):
        return self._errors

    @property
    def mode(self):
        return "w"

    @property
    def line_buffering(self):
        return self._line_buffering

    @property
    def write_through(self):
        return self._write_through

    @property
    def newlines(self):
        return None

    def fileno(self) -> int:
        # the worker's own fd 1/2, which the runner forwards as output
        return 1 if self._name == "stdout" else 2

    def reconfigure(self, *, encoding=None, errors=None, newline=None,
                    line_buffering=None, write_through=None) -> None:
        """``TextIOWrapper.reconfigure``: an encoding the text cannot be written in
        raises as it would (or replaces, per ``errors``), as under plain Python."""
        if encoding is not None:
            if not isinstance(encoding, str):
                raise TypeError(f"reconfigure() argument 'encoding' must be str or None, "
                                f"not {type(encoding).__name__}")
            codecs.lookup(encoding)   # LookupError for an unknown one, as plain Python
            self._encoding = encoding
            if errors is None:
                errors = "strict"
        if errors is not None:
            if not isinstance(errors, str):
                raise TypeError(f"reconfigure() argument 'errors' must be str or None, "
                                f"not {type(errors).__name__}")
            codecs.lookup_error(errors)
            self._errors = errors
        if newline not in (None, "", "\n", "\r", "\r\n"):
            raise ValueError(f"illegal newline value: {newline!r}")
        if newline is not None:
            self._newline = newline   # what "\n" becomes when written
        if line_buffering is not None:
            self._line_buffering = bool(line_buffering)
        if write_through is not None:
            self._write_through = bool(write_through)

    @property
    def buffer(self):
        """The binary stream under it, as ``sys.stdout.buffer`` is under plain Python."""
        b = self.__dict__.get("_buffer")
        if b is None:
            b = self.__dict__["_buffer"] = CapturedBuffer(self)
        return b

    def detach(self):
        """``TextIOWrapper.detach``: the binary stream, this one unusable after (a
        snippet re-wrapping stdout in another encoding raised UnsupportedOperation)."""
        if self.__dict__.get("_detached"):
            raise ValueError("underlying buffer has been detached")
        b = self.buffer
        self.__dict__["_detached"] = True
        return b

    @property
    def name(self):
        return f"<{self._name}>"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, s) -> int:
        if self.closed:   # as python's: sys.stdout.close(), then print, raises
            raise ValueError("I/O operation on closed file.")
        if self.__dict__.get("_detached"):
            raise ValueError("underlying buffer has been detached")
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self.finish_bytes()
        if _FORWARD_STACK in s and self.snippet_file:
            s = own_frames_out(s, self.snippet_file)
        if self._newline not in ("", "\n"):
            s = s.replace("\n", self._newline)
        if self._encoding != "utf-8" or self._errors != "strict":
            # what the reconfigured stream would put out: an error for a character
            # it cannot encode, or its replacement
            s = s.encode(self._encoding, self._errors).decode(self._encoding, "replace")
        elif not s.isascii():
            # python's strict UTF-8 stream refuses a lone surrogate ("\udcff", from
            # bytes decoded with surrogateescape): UnicodeEncodeError, nothing
            # written (fidelity review: it went through to the console)
            s.encode("utf-8")
        return self.put(s)

    def put(self, s: str) -> int:
        """Send text on (``write`` without its checks; the buffer's way in)."""
        if _child_streams is not None:
            return _child_streams[self._name].write(s)
        if s:
            limit = self._limit
            kept = limit.take(s) if not limit.hit else ""
            if kept:
                self._emit(P.Output(next(self._seq), self._name, kept))
            if len(kept) < len(s):
                limit.cut()
        return len(s)

    def finish_bytes(self) -> None:
        """Text written after bytes, or the end of the run, ends a character the
        bytes left half written (as U+FFFD)."""
        b = self.__dict__.get("_buffer")
        if b is not None:
            b.finish()

    def flush(self) -> None:
        if _child_streams is not None:
            _child_streams[self._name].flush()
            return
        push = getattr(self._emit, "push", None)   # HeldEmit
        if push is not None:
            push()


class CapturedBuffer(io.BufferedIOBase):
    """Bytes written to ``sys.stdout.buffer``: decoded as UTF-8 (a character
    split between two writes waits for its second half) into the text stream."""

    def __init__(self, text: CapturedStream) -> None:
        super().__init__()
        self._text = text
        self._decode = codecs.getincrementaldecoder("utf-8")("replace").decode

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        if isinstance(b, str):
            raise TypeError(f"a bytes-like object is required, not '{type(b).__name__}'")
        view = memoryview(b)
        if not view.c_contiguous:   # as the real buffer says
            raise BufferError("memoryview: underlying buffer is not C-contiguous")
        data = view.tobytes()
        s = self._decode(data)
        if s:
            self._text.put(s)
        return len(data)

    def flush(self) -> None:
        self._text.flush()

    def finish(self) -> None:
        """A character left half written shows as U+FFFD, before text written
        after it (print) or at the end of the run."""
        s = self._decode(b"", True)
        if s:
            self._text.put(s)


class ClosedStdin(io.TextIOBase):
    """stdin for the snippet: always at end of file (there is no keyboard).

    Where the process's own stdin is ``/dev/null`` (the worker's), it answers as
    python's ``sys.stdin`` on ``/dev/null`` does: ``fileno()`` 0 (so ``select``
    on it works), its ``buffer``, ``errors`` and ``seekable()``; a snippet asking
    ``sys.stdin.fileno()`` or ``.buffer`` failed with an error python does not
    raise (fidelity review). In a process with a terminal or a pipe there (the
    in-process API in a notebook) reading it could wait for a keyboard, so it
    stays a stream of its own without a descriptor."""

    name = "<stdin>"
    mode = "r"
    line_buffering = False

    def __init__(self) -> None:
        super().__init__()
        self._null = _null_stdin()

    def fileno(self) -> int:
        if self._null is None:
            raise io.UnsupportedOperation("fileno")
        return self._null.fileno()

    @property
    def buffer(self):
        if self._null is not None:
            return self._null.buffer
        return io.BufferedReader(io.BytesIO())

    @property
    def errors(self):
        return self._null.errors if self._null is not None else "strict"

    @property
    def write_through(self) -> bool:
        return self._null.write_through if self._null is not None else False

    def seekable(self) -> bool:
        return self._null is not None and self._null.seekable()

    def readable(self) -> bool:
        return True

    def read(self, size=-1) -> str:
        return ""

    def readline(self, size=-1) -> str:
        return ""

    @property
    def encoding(self):
        return "utf-8"

    def isatty(self) -> bool:
        return False


def _null_stdin():
    """The process's ``sys.__stdin__`` if it reads ``/dev/null``, else None."""
    stdin = sys.__stdin__
    try:
        if stdin is not None and os.path.samestat(os.fstat(stdin.fileno()),
                                                  os.stat(os.devnull)):
            return stdin
    except (OSError, ValueError, AttributeError):
        pass
    return None


INPUT_EOF = P.INPUT_EOF


_python_input = builtins.input


def closed_input(*args):
    """``builtins.input`` while the snippet runs: what python's does with stdin at
    end of file (errors flushed, the prompt written to stdout and flushed, then
    EOFError), with an explanation for the message. A snippet that put its own
    ``sys.stdin`` in place (``io.StringIO("7\\n")``) reads from it, as under python."""
    if not isinstance(sys.stdin, ClosedStdin):
        return _python_input(*args)
    if len(args) > 1:
        raise TypeError(f"input expected at most 1 argument, got {len(args)}")
    try:
        sys.stderr.flush()
    except Exception:
        pass
    if args:
        sys.stdout.write(str(args[0]))
        sys.stdout.flush()
    raise EOFError(INPUT_EOF)
