"""Trace export: JSON (the trace file), DOT (a readable forward graph), SVG/PNG.

JSON is ``Trace.to_dict`` (docs/trace-format.md). DOT is written here without
Graphviz: tensors are boxes (variable name, shape, dtype), ops are ellipses
(op name, autograd node), edges where data flowed without autograd tracking
are dashed, ``detach()`` edges dotted, and each grad-disabled region a
labelled cluster. SVG and PNG are drawn by the window's canvas code
(``graphscope.ui.render``), imported only when asked for, so exporting JSON
or DOT never loads Qt.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import stat
import sys
import tempfile
import threading
from typing import Optional

from graphscope import protocol as P
from graphscope.model.trace import with_update

FORMATS = ("json", "dot", "svg", "png")


class ExportError(Exception):
    """An export that cannot be carried out (unknown format, no renderer)."""


def to_json(trace, indent=None, rows: "Optional[RowText]" = None) -> str:
    """The trace file's text (see docs/trace-format.md): ``Trace.to_dict`` as
    ``json.dumps`` writes it, with the big row lists (ops, tensors, backward
    steps) encoded by a faster path to the same text, or taken from ``rows``
    when it followed the run (NOTE [JSON as it comes])."""
    if indent is not None:
        d = _without_rows(trace)
        d["ops"] = _rows(trace.ops)
        d["tensors"] = {str(k): r for k, r in zip(trace.tensors, _rows(trace.tensors.values()))}
        d["backward"] = _rows(trace.backward)
        return json.dumps(d, indent=indent, allow_nan=True, default=P._json_default)
    return "".join(json_pieces(trace, rows))


def _without_rows(trace) -> dict:
    """``trace.to_dict()`` with empty ops, tensors and backward (the big lists are
    encoded by a faster path)."""
    return dataclasses.replace(trace, ops=[], tensors={}, backward=[]).to_dict()


_PIECE = 2000   # rows joined into one piece: few writes, no 13 MB intermediate strings


def json_pieces(trace, rows: "Optional[RowText]" = None):
    """``to_json(trace, rows=rows)`` in pieces, for writing a big trace to a
    file without first making its whole text (and then its bytes) in memory."""
    d = _without_rows(trace)
    if rows is None or not rows.matches(trace):
        rows = RowText()
        rows.extend_from(trace)
    yield from _key_pieces(d, rows, trace, list(d))


def _key_pieces(d: dict, rows: "RowText", trace, keys: list, known: Optional[dict] = None):
    """The text json.dumps(d) gives (separators ", " and ": ", keys in order)
    for ``keys``, a run of d's keys, with the big row lists taken from ``rows``
    (and the text of other values from ``known``, by key, where given): the
    opening brace with the first key, the closing one with the last."""
    enc = rows._enc
    known = known or {}
    big = {"ops": ("[", rows.op_pieces, "]"), "backward": ("[", rows.step_pieces, "]"),
           "tensors": ("{", lambda: rows.tensor_pieces(trace), "}")}
    order = list(d)
    if not order:
        yield "{}"
        return
    for k in keys:
        sep = "{" if k == order[0] else ", "
        if k in known:
            yield sep + enc(k) + ": " + known[k]
        elif k not in big:
            yield sep + enc(k) + ": " + enc(d[k])
        else:
            opening, pieces, closing = big[k]
            yield sep + enc(k) + ": " + opening
            for i, piece in enumerate(pieces()):
                if i:
                    yield ", "
                yield piece
            yield closing
        if k == order[-1]:
            yield "}"


# NOTE [JSON as it comes]: a 20,000-op trace is 26 MB of JSON, and encoding it
# took 0.6 s after the run, a fifth of `graphscope export` on the chain
# benchmark. Ops and backward steps never change once recorded, and a tensor's
# record changes only by being replaced (TensorUpdate), so their text can be
# made while the run goes on: the runner's reader thread hands each batch to
# ``RowText.extend`` as well as to the Trace, on the parent's own core while
# the worker runs the snippet on the other. Rows are joined into pieces of
# ``_PIECE`` as they come, and an update is applied and encoded when it
# comes (``with_update``, as the Trace applies it: 2,283 names bound late
# were 19 ms of the chain's writing at its end), so ``to_json`` only strings
# the pieces together. A record the Trace holds that differs from the one
# encoded (a RowText that missed a message) is encoded again there.
class RowText:
    """The JSON text of a trace's ops, backward steps and tensor records, made
    from its messages as they arrive (``extend`` takes the runner's batches)."""

    def __init__(self) -> None:
        self._ops = _Pieces()
        self._backward = _Pieces()
        self._tensors: dict = {}     # id -> (the TensorInfo encoded, its text)
        self._enc = _encoder()
        self._broken = False

    def extend(self, msgs) -> None:
        if self._broken:
            return
        enc = self._enc
        add_op, add_step = self._ops.add, self._backward.add
        tensors = self._tensors
        try:
            for m in msgs:
                t = m.T
                if t == "op":
                    add_op(enc(_row_of(m)))
                elif t == "backward":
                    add_step(enc(_row_of(m)))
                elif t == "tensor":
                    tensors[m.id] = (m, _item_key(m.id, enc) + enc(_row_of(m)))
                elif t == "tensor_update":
                    got = tensors.get(m.id)
                    if got is not None:
                        info = with_update(got[0], m)
                        tensors[m.id] = (info, _item_key(m.id, enc) + enc(_row_of(info)))
        except Exception:   # never in the way of the run: to_json encodes it all again
            self._broken = True

    def extend_from(self, trace) -> None:
        """Follow a finished ``trace`` (rows of its records as they are now)."""
        self.extend(trace.ops)
        self.extend(trace.backward)
        self.extend(trace.tensors.values())

    def matches(self, trace) -> bool:
        """Whether this followed all of ``trace`` (else ``to_json`` starts over)."""
        return (not self._broken and self._ops.count == len(trace.ops)
                and self._backward.count == len(trace.backward))

    def op_pieces(self) -> list:
        return self._ops.pieces()

    def step_pieces(self) -> list:
        return self._backward.pieces()

    def tensor_pieces(self, trace) -> list:
        """``"id": {...}`` for every tensor of ``trace``, in its order, in pieces."""
        enc, known = self._enc, self._tensors
        items = []
        for k, info in trace.tensors.items():
            got = known.get(k)
            items.append(got[1] if got is not None and (got[0] is info or got[0] == info)
                         else _item_key(k, enc) + enc(_row_of(info)))
        return [", ".join(items[i:i + _PIECE]) for i in range(0, len(items), _PIECE)]


# NOTE [the file before the End]: when the snippet's own code has ended (the
# worker's Outcome), nothing more is recorded (NOTE [the end of a run]): what
# is left of the run is the worker doing what python does after the last
# line, 40-60 ms for the 20,000-op chain as it frees the snippet's graph,
# while the export waited. So ``JsonFile`` writes the file's head then: every
# key before ``outputs``, ops, tensors and backward steps among them (28 MB,
# 25 ms), with the Outcome's status. At the End it writes the rest (output,
# passes, how the run ended) and the file takes the target's place. If the
# head no longer holds (the End's status is not the Outcome's, as when the
# worker was stopped or died after the last line, or a record came after the
# Outcome), the file is written again whole from the Trace, as before. The
# file has no name until it is whole (``O_TMPFILE``, where Linux has it), so a
# command killed while the snippet's atexit functions run leaves nothing.
class JsonFile:
    """A JSON trace file written while the run ends (NOTE [the file before the
    End]): ``take`` follows the runner's batches (the export's ``also``),
    after ``trace`` took them; :func:`write` then calls :meth:`finish`."""

    def __init__(self, trace, path) -> None:
        self.rows = RowText()
        self._trace = trace
        self._path = path
        self._lock = threading.Lock()   # the head (reader thread) against finish()
        self._file = None                # the file being written (no name yet, if it can)
        self._tmp: Optional[str] = None  # its temporary name where it has one
        self._head: Optional[tuple] = None   # (status, trace extent) it was written with
        self._passes: tuple = (None, "")     # the passes encoded with the head, their text
        self._done = False
        self._cancelled = False          # abandon(): the head's writer stops at its next piece

    def take(self, msgs) -> None:
        self.rows.extend(msgs)
        if self._head is None and not self._done:
            for m in reversed(msgs):
                if m.T == "outcome":
                    self._write_head(m)
                    break

    def _write_head(self, outcome) -> None:
        trace = self._trace
        with self._lock:
            if self._done or self._cancelled:
                return
            try:
                if not self.rows.matches(trace):
                    return
                self._file, self._tmp = _unfinished_file(self._path)
                if self._file is None:
                    return   # written in place, at the End
                d = _without_rows(trace)
                d["status"] = outcome.status
                self._file.writelines(self._unless_cancelled(
                    _key_pieces(d, self.rows, trace, _head_and_tail(d)[0])))
                self._file.flush()
                if self._cancelled:   # (after its last piece)
                    raise _Cancelled()
                self._head = (outcome.status, trace.extent())
                # (the passes are split at the Outcome too, model/trace.py: 40,000 op
                # ids for the chain, 5 ms to encode)
                self._passes = (trace.passes, self.rows._enc(trace.passes))
            except Exception:   # never in the way of the run: finish() writes it all
                self._drop()

    def _unless_cancelled(self, pieces):
        for piece in pieces:
            if self._cancelled:
                raise _Cancelled()
            yield piece

    def finish(self, trace, path) -> bool:
        """Write the rest and put the file in place; False when this wrote
        nothing that holds (the caller writes the file as before). Errors in
        writing raise as ``write``'s do."""
        with self._lock:
            self._done = True
            f, head = self._file, self._head
            if f is None or head is None or path != self._path or trace is not self._trace:
                self._drop()
                return False
            try:
                d = _without_rows(trace)
                if (d["status"], trace.extent()) == head and self.rows.matches(trace):
                    passes, text = self._passes
                    known = {"passes": text} if trace.passes is passes else None
                    f.writelines(_key_pieces(d, self.rows, trace, _head_and_tail(d)[1], known))
                else:   # the head no longer holds: all of it again
                    f.seek(0)
                    f.truncate()
                    f.writelines(json_pieces(trace, self.rows))
                _put_in_place(f, self._tmp, path)
            except BaseException:
                self._drop()
                raise
            self._file = self._tmp = None
            return True

    def written(self) -> int:
        """Bytes of the file written so far (0 when none is being written)."""
        f = self._file
        try:
            return os.fstat(f.fileno()).st_size if f is not None else 0
        except (OSError, ValueError):
            return 0

    def abandon(self) -> None:
        """The export ends without its file (Ctrl+C, an error): no leftovers.
        Returns at once, also while the head is being written (a second Ctrl+C
        then left a named temporary file: code review); its writer stops at its
        next piece. An unnamed file goes with the process in any case."""
        self._cancelled = True
        if self._lock.acquire(blocking=False):
            try:
                self._done = True
                self._drop()
            finally:
                self._lock.release()
        elif self._tmp is not None:
            # a named file (no O_TMPFILE here) goes now: the command may leave
            # before its writer sees the flag (review)
            _unlink(self._tmp)

    def _drop(self) -> None:
        f, tmp = self._file, self._tmp
        self._file = self._tmp = None
        self._head = None
        if f is not None:
            try:
                f.close()
            except OSError:
                pass
        if tmp is not None:
            _unlink(tmp)


class _Cancelled(Exception):
    pass


def _head_and_tail(d: dict) -> tuple:
    """The keys of a trace file written when the snippet's code ended, and those
    written at the End: from ``outputs`` on (output may still come)."""
    keys = list(d)
    i = keys.index("outputs")
    return keys[:i], keys[i:]


def _unfinished_file(path) -> tuple:
    """``(file, tmp)``: a text file for ``path``'s content, in its folder, with
    the mode the target has (or would get). Where Linux allows, it has no name
    until ``_put_in_place`` gives it one (``O_TMPFILE``): an export killed
    between the snippet's last line and the End (``timeout 4 graphscope
    export``, an atexit function that sleeps) left a 28 MB ``.part`` file behind
    (code review). Elsewhere it is a named temporary file (``tmp``).
    ``(None, None)`` where the target is written in place (``_replacing``)."""
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        return None, None
    folder = os.path.dirname(target) or "."
    flag = getattr(os, "O_TMPFILE", None)
    if flag is not None and os.path.isdir("/proc/self/fd"):
        try:
            fd = os.open(folder, flag | os.O_WRONLY, 0o600)
        except OSError:   # a file system without it: a name from the start
            pass
        else:
            try:
                os.fchmod(fd, _mode_for(target))
                return os.fdopen(fd, "w", encoding="utf-8"), None
            except BaseException:
                os.close(fd)
                raise
    _, tmp = _temporary_beside(target)
    if tmp is None:
        return None, None
    try:
        return open(tmp, "w", encoding="utf-8"), tmp
    except BaseException:
        _unlink(tmp)
        raise


def _put_in_place(f, tmp: Optional[str], path) -> None:
    """Close ``f`` (from ``_unfinished_file``) and make it the file at ``path``."""
    target = os.path.realpath(path)
    f.flush()
    if tmp is None:   # no name yet: one beside the target, then the target's
        folder, name = os.path.split(target)
        # (a directory fd makes python call linkat, which follows /proc's link to
        # the file; its link() would try to link the symbolic link itself)
        dfd = os.open(folder or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for _ in range(100):
                part = f".{name}.{os.urandom(4).hex()}.part"
                try:
                    os.link(f"/proc/self/fd/{f.fileno()}", part, src_dir_fd=dfd,
                            dst_dir_fd=dfd, follow_symlinks=True)
                    break
                except FileExistsError:
                    continue
            else:
                raise FileExistsError(f"no free temporary name beside {path}")
        finally:
            os.close(dfd)
        tmp = os.path.join(folder, part)
    try:
        f.close()
        os.replace(tmp, target)
    except BaseException:
        _unlink(tmp)
        raise


class _Pieces:
    """Encoded rows joined ``_PIECE`` at a time as they come."""

    def __init__(self) -> None:
        self.count = 0
        self._done: list = []
        self._rows: list = []

    def add(self, text: str) -> None:
        rows = self._rows
        rows.append(text)
        self.count += 1
        if len(rows) >= _PIECE:
            self._done.append(", ".join(rows))
            self._rows = []

    def pieces(self) -> list:
        return self._done + [", ".join(self._rows)] if self._rows else list(self._done)


def _item_key(k, enc) -> str:
    """``"7": ``, a tensor record's key as json.dumps writes an int key (made
    while the run goes on: at its end, 20,000 keys took 35 ms to encode)."""
    return f'"{k}": ' if type(k) is int else enc(str(k)) + ": "


def _encoder():
    """``json.dumps`` with the trace file's settings as one reusable C encoder
    (``json.dumps`` builds a new one per call)."""
    try:
        from json.encoder import c_make_encoder, encode_basestring_ascii
    except ImportError:  # pragma: no cover - CPython always has it
        c_make_encoder = None
    if c_make_encoder is None:  # pragma: no cover
        return lambda o: json.dumps(o, allow_nan=True, default=P._json_default)
    c_enc = c_make_encoder(None, P._json_default, encode_basestring_ascii, None,
                           ": ", ", ", False, False, True)
    return lambda o: "".join(c_enc(o, 0))


def _row_of(m) -> dict:
    """``trace._row(m)`` for a flat record (no nested dataclass), faster."""
    cls = type(m)
    return dict(zip(P.ROW_FIELDS[cls], P.ROW_GETTERS[cls](m)))


def _rows(msgs) -> list:
    return [_row_of(m) for m in msgs]


def _q(text) -> str:
    """A DOT double-quoted string."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + s.replace("\n", "\\n") + '"'


def _shape_text(info) -> str:
    if info is None:
        return ""
    from graphscope.model.summary import shape_text
    return f"{shape_text(info.shape)} {info.dtype}"


def _tensor_node(tid, info, trace=None) -> str:
    if info is None:
        return f"  t{tid} [shape=box, label={_q(f't{tid}')}];"
    label = info.name or f"t{tid}"
    if trace is not None:
        from graphscope.model.node_text import tensor_label   # the window's own label
        label = tensor_label(trace, info)
    attrs = ["shape=box", f"label={_q(label + chr(10) + _shape_text(info))}"]
    style = ["rounded"]
    if info.requires_grad:
        attrs.append("penwidth=2")
        if info.is_leaf:
            style.append("filled")
            attrs.append('fillcolor="#fde8c8"')  # leaves that collect .grad
    attrs.append(f"style={_q(','.join(style))}")
    return f"  t{tid} [{', '.join(attrs)}];"


def _op_node(op) -> str:
    label = op.name + (f"\n{op.grad_fn}" if op.grad_fn else "")
    if op.line is not None:
        label += f"\nline {op.line}"
    attrs = ["shape=ellipse", f"label={_q(label)}"]
    if op.module:
        attrs.append(f"tooltip={_q(op.module)}")
    return f"  o{op.id} [{', '.join(attrs)}];"


def to_dot(trace, name: str = "forward") -> str:
    """A DOT digraph of the trace's forward graph (no Graphviz needed to produce it)."""
    tensors = trace.tensors
    lines = [f"digraph {_q(name)} {{",
             "  rankdir=LR;",
             '  node [fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];']

    # Grad-disabled regions: the ops that ran with grad off on the region's lines.
    regions = [r for r in trace.regions if not r.grad_enabled]
    members: dict[int, list] = {i: [] for i in range(len(regions))}
    placed_tensors: set = set()
    op_region: dict[int, int] = {}
    for op in trace.ops:
        if op.grad_enabled or op.line is None:
            continue
        for i, r in enumerate(regions):
            if r.start_line <= op.line <= r.end_line:
                op_region[op.id] = i
                members[i].append(op)
                break

    declared: set = set()

    def declare_tensor(tid, out):
        if tid in declared:
            return
        declared.add(tid)
        out.append(_tensor_node(tid, tensors.get(tid), trace))

    for i, r in enumerate(regions):
        if not members[i]:
            continue
        lines.append(f"  subgraph cluster_region{i} {{")
        lines.append(f"    label={_q(r.label)}; style=\"dashed,filled\"; fillcolor=\"#eeeeee\";")
        body: list = []
        for op in members[i]:
            body.append(_op_node(op))
            for tid in op.outputs:
                declare_tensor(tid, body)
                placed_tensors.add(tid)
        lines.extend("  " + b for b in body)
        lines.append("  }")

    for op in trace.ops:
        if op.id not in op_region:
            lines.append(_op_node(op))
    for op in trace.ops:
        for tid in list(op.inputs) + list(op.outputs):
            declare_tensor(tid, lines)

    for op in trace.ops:
        tracked = op.grad_enabled and not op.inference
        for tid in op.inputs:
            lines.append(f"  t{tid} -> o{op.id}{_edge_attrs(op, tensors.get(tid), tracked)};")
        for tid in op.outputs:
            lines.append(f"  o{op.id} -> t{tid}{_edge_attrs(op, tensors.get(tid), tracked)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _edge_attrs(op, info, tracked) -> str:
    if op.kind == "detach":
        return ' [style=dotted, label="detach"]'
    if not tracked or info is None or not info.requires_grad:
        return " [style=dashed]"  # data flowed, autograd did not see it
    return ""


def write(trace, path, fmt: str, rows: Optional[RowText] = None) -> None:
    """Write ``trace`` to ``path`` ("-" = stdout for json/dot) as ``fmt``
    (``rows``: the JSON rows made during the run, see ``to_json``; a
    :class:`JsonFile` that followed the run for ``path`` may have written
    most of the file already)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if isinstance(rows, JsonFile):
        if fmt == "json" and rows.finish(trace, path):
            return
        rows = rows.rows
    if fmt in ("json", "dot"):
        if fmt == "dot":
            text = to_dot(trace)
            pieces, last = [text], text[-1:]
        else:
            pieces, last = json_pieces(trace, rows), "}"
        if str(path) == "-":
            sys.stdout.writelines(pieces)
            if last != "\n":
                sys.stdout.write("\n")
            sys.stdout.flush()
        else:
            with _replacing(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
                f.writelines(pieces)
        return
    if str(path) == "-":
        raise ExportError(f"{fmt} export needs an output file (-o FILE.{fmt})")
    with _replacing(path) as tmp:
        try:
            renderer()(trace, str(tmp), fmt)
        except OSError as e:
            # said of the file the user named, not of our temporary one
            raise OSError(e.errno, (e.strerror or str(e)).replace(str(tmp), str(path))) \
                from None


@contextlib.contextmanager
def _replacing(path):
    """A temporary file beside ``path`` that takes its place once written whole:
    a write that fails half way (a full disk, a file size limit) left a cut
    file where a good one had been (review finding). A path that exists and
    is not a regular file (``/dev/null``, a pipe) is written in place: it
    must never be replaced by a file."""
    target, tmp = _temporary_beside(path)
    if tmp is None:
        yield target
        return
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        _unlink(tmp)
        raise


def _temporary_beside(path) -> tuple:
    """``(target, tmp)``: the real path of ``path`` and a new temporary file
    beside it with the mode the target has (or would get), or ``(target,
    None)`` where the target is to be written in place (``_replacing``)."""
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        return target, None
    folder, name = os.path.split(target)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder or ".", prefix=f".{name}.", suffix=".part")
    except OSError:
        # a folder that takes no new file, around a file that may be written: in place
        return target, None
    os.close(fd)
    try:
        os.chmod(tmp, _mode_for(target))
    except BaseException:
        _unlink(tmp)
        raise
    return target, tmp


def _mode_for(target) -> int:
    """The permissions a file written in place of ``target`` gets: the target's
    own, or what a new file would get."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _umask() -> int:
    """The process's umask, read without changing it: ``os.umask`` can only be
    read by setting it, and in the window a thread of Qt's own (Python's wait
    for the GIL) could create a file in the moment it is 0, world-writable.
    Linux shows it in /proc."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)   # elsewhere: set to a strict mask for the moment it takes
    os.umask(mask)
    return mask


def renderer():
    """``graphscope.ui.render.render_file``, or ExportError saying why it is missing
    (call it before running anything, so a missing renderer fails fast)."""
    try:
        from graphscope.ui.render import render_file
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("graphscope"):
            raise ExportError("svg/png export needs the graph renderer "
                              "(graphscope.ui.render is not available)") from None
        raise ExportError(f"svg/png export needs the graph renderer, which needs Qt: {e}") from None
    except ImportError as e:  # Qt present but its system libraries are not
        raise ExportError(f"svg/png export needs the graph renderer, which needs Qt: {e}") from None
    return render_file
