"""Messages between the capture worker and the window (standard library only).

The worker writes its records on a dedicated pipe (never the snippet's stdout)
as length-prefixed frames (NOTE [frames]); the runner sends the worker its one
``Run`` as a JSON line. As JSON, every message is an object whose ``"t"`` key
names its type; the other keys are the fields of the matching record below.
Nothing read from the pipe is ever ``eval``'d, unpickled or executed: a trace is
data.

Record types double as the rows of a trace (see ``graphscope.model.trace``):
``Op`` is one forward call, ``TensorInfo`` one tensor, ``BackwardStep`` one
autograd Node executed, and so on. Field names follow docs/trace-format.md.

NOTE [seq]: every recorded event that happens at a point in time (an op, a
backward call, a backward step, a branch, an output chunk, a module call) has
``seq``, one counter shared by all of them in the order they happened. The
timeline (model/timeline.py) orders its steps by ``seq``; the console shows the
output chunks whose ``seq`` is at or before the cursor.

NOTE [records]: the records are treated as immutable (nobody assigns to a
field; ``dataclasses.replace`` makes a changed copy) but are not declared
``frozen``: a frozen dataclass sets each field through ``object.__setattr__``
and costs about 7x more to build (12 us against 1.7 us for a TensorInfo here),
and the recorder builds one or two per torch call on its hot path.
``unsafe_hash`` keeps the hashing a frozen record had.
"""
from __future__ import annotations

import dataclasses
import json
import marshal
import operator
import struct
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

PROTOCOL_VERSION = 1

# A value summary: {"value": nested list | number | None, "stats": {...} | None,
# "shape": [...], "dtype": "float32"} -- see summary() in capture/summaries.py.
Summary = dict


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class TensorInfo:
    """A tensor the snippet created or used, as first seen."""
    T: ClassVar[str] = "tensor"
    id: int
    shape: list
    dtype: str
    device: str = "cpu"
    requires_grad: bool = False
    is_leaf: bool = True
    grad_fn: Optional[str] = None
    name: Optional[str] = None          # snippet variable bound to it, once known
    value: Any = None                   # nested list / number when small, else None
    stats: Optional[dict] = None        # {numel, min, max, mean, std} when not small
    grad: Any = None                    # final .grad value (small) ...
    grad_stats: Optional[dict] = None   # ... or its statistics
    created_by: Optional[int] = None    # op id that produced it, None for inputs
    is_param: bool = False              # an nn.Parameter
    retains_grad: bool = False
    version: int = 0                    # version counter when first seen
    seq: int = 0


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class TensorUpdate:
    """Later facts about a tensor: its name, final .grad, retain_grad(), ..."""
    T: ClassVar[str] = "tensor_update"
    id: int
    fields: dict


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class Op:
    """One torch call the snippet made (function, method, operator, factory)."""
    T: ClassVar[str] = "op"
    id: int
    seq: int
    name: str                    # short name: "mul", "sum", "linear", "tensor"
    qualname: str                # "torch.Tensor.__mul__", "torch.nn.functional.linear"
    line: Optional[int]          # 1-based line in the snippet (innermost snippet frame)
    grad_enabled: bool
    inputs: list                 # tensor ids, in argument order
    outputs: list                # tensor ids
    grad_fn: Optional[str] = None  # autograd node name of the first output, e.g. "MulBackward0"
    module: Optional[str] = None   # qualified module path, e.g. "encoder.layers.1.linear1"
    inference: bool = False
    kind: str = "call"           # call | factory | inplace | view | detach | requires_grad |
                                 # grad_read | grad_write | retain_grad | item | bool |
                                 # hook | unhook
    versions: Optional[dict] = None  # in-place: {tensor id (str): [before, after]}
    scalars: Optional[list] = None   # non-tensor arguments worth showing, as text
    after: Optional[dict] = None     # in-place: {tensor id (str): [value, stats]} just after
    subgraph: Optional[list] = None  # autograd nodes the call made: [[name, [next...]], ...]
    alias: Optional[dict] = None     # view/detach: {tensor id (str): [storage offset, strides,
                                     # shape, dtype, reads]} of the input and the outputs
                                     # sharing its memory (docs/trace-format.md)
    failed: Optional[str] = None     # the call raised: the exception's class name
    expr: Optional[str] = None       # the snippet's text of the call ("y ** 2"), when the
                                     # snippet made it directly
    undoes: Optional[int] = None     # unhook: the id of the hook op whose hook it removed


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class ModuleCall:
    """An nn.Module call: which ops ran inside it."""
    T: ClassVar[str] = "module"
    seq: int
    path: str                    # qualified path from the outermost module called
    type: str                    # class name, e.g. "Linear"
    line: Optional[int]
    first_op: int                # first op id inside the call
    last_op: int                 # last op id inside the call (first_op - 1 if none)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    expr: Optional[str] = None   # the snippet's text of the call ("self.conv(x)"), when
                                 # the snippet's own code called the module


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class BackwardCall:
    """A call to ``Tensor.backward`` or ``torch.autograd.grad``."""
    T: ClassVar[str] = "backward_call"
    id: int
    seq: int
    kind: str                    # "backward" | "grad"
    line: Optional[int]
    roots: list                  # tensor ids backward starts from
    inputs: list = field(default_factory=list)   # autograd.grad's inputs
    retain_graph: bool = False
    create_graph: bool = False
    # the gradient given for each root (``backward(gradient=v)``, ``grad_outputs=``):
    # a tensor id or null, one per root; empty when none was given
    seeds: list = field(default_factory=list)


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class BackwardStep:
    """One autograd Node executed by the engine, in execution order."""
    T: ClassVar[str] = "backward"
    id: int
    seq: int
    call: int                    # BackwardCall id
    grad_fn: str                 # Node.name() without "torch::autograd::"
    node: int                    # stable id of the Node within the run
    op: Optional[int]            # forward op that created this Node
    tensor: Optional[int]        # leaf tensor (AccumulateGrad) or the op's output
    next: list = field(default_factory=list)          # node ids gradients are sent to (None-free)
    grad_outputs: list = field(default_factory=list)  # Summary per gradient arriving
    grad_inputs: list = field(default_factory=list)   # Summary per gradient sent on
    grad_before: Any = None      # AccumulateGrad: leaf .grad before (Summary or None)
    grad_after: Any = None       # AccumulateGrad: leaf .grad after (Summary or None)
    within: Optional[int] = None # a Node inside op ``within``'s sub-graph (Op.subgraph)
    released: bool = False       # the pass freed what the Node saved (no retain_graph)


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class Region:
    """A source span where grad mode was changed."""
    T: ClassVar[str] = "region"
    kind: str                    # no_grad | enable_grad | inference_mode | set_grad_enabled
    grad_enabled: Optional[bool]  # None: decided at run time (set_grad_enabled(phase == "train"))
    start_line: int
    end_line: int
    form: str                    # with | decorator | call
    label: str                   # "torch.no_grad(), lines 3-4"


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class Branch:
    """A tensor's value decided Python control flow."""
    T: ClassVar[str] = "branch"
    id: int
    seq: int
    line: Optional[int]
    kind: str                    # "bool" (if t / while t) | "item" | "tolist" ...
    tensor: Optional[int]
    value: Any                   # the Python value handed to the program
    op: Optional[int] = None     # op id of the read


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class Output:
    """A chunk of the snippet's stdout or stderr."""
    T: ClassVar[str] = "output"
    seq: int
    stream: str                  # "stdout" | "stderr"
    text: str


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class Truncated:
    """Recording stopped at a limit; the snippet kept running."""
    T: ClassVar[str] = "truncated"
    reason: str                  # "ops" | "output"
    limit: int
    message: str


def output_cut(limit: int) -> Truncated:
    """The Truncated message for output past ``limit`` characters, one wording
    whether the worker's python streams or the runner (which also counts what
    C code and subprocesses write to fd 1/2) reached it first."""
    return Truncated("output", limit, f"Output stopped after {limit:,} characters (the "
                                      "limit); the snippet kept running.")


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class ErrorInfo:
    type: str                    # exception class name, "SyntaxError", "Timeout", "Crash", "Stopped"
    message: str
    line: Optional[int] = None
    column: Optional[int] = None
    traceback: Optional[str] = None  # as python prints it (tracebacks.python_frames)
    op: Optional[int] = None     # op in progress when it was raised, if any
    tensor: Optional[int] = None # tensor involved, if known


END_STATUSES = ("ok", "exit", "error", "timeout", "crash", "stopped")


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class End:
    """How the snippet ended. ``status``: one of END_STATUSES."""
    T: ClassVar[str] = "end"
    status: str
    error: Optional[ErrorInfo] = None
    exit_code: Optional[int] = None
    duration: Optional[float] = None


# in the message of a stop or timeout that came after the snippet's own code had
# ended (runner._after_the_end), which the window explains differently
AFTER_LAST_LINE = "after the snippet's last line"


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class Outcome:
    """Worker -> runner: how the snippet's own code ended, sent before the worker
    does what python does after the last line (NOTE [the end of a run]). The End
    says the same; if the process is stopped, times out or dies after this, the
    runner's End keeps it (``runner._after_the_end``). The runner hands it on to
    its listener: after it come only output and the End (the Trace splits its
    passes then; the export writes most of its file, NOTE [the file before the
    End] in export.py). Fields as End's."""
    T: ClassVar[str] = "outcome"
    status: str
    error: Optional[ErrorInfo] = None
    exit_code: Optional[int] = None
    duration: Optional[float] = None


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class Ready:
    """Worker is up with torch imported and waits for a Run."""
    T: ClassVar[str] = "ready"
    pid: int
    torch_version: str
    python: str



# The worker's exit status when the snippet closed the event pipe's descriptor
# (``os.closerange(3, ...)``): the worker, the runner and the window agree on it.
EXIT_PIPE_CLOSED = 72

# The function the recorder runs a call through, compiled under the snippet's file
# name and line (NOTE [warning attribution] in capture/call_sites.py): the worker's
# tracebacks leave it out, and so does the runner's reading of a faulthandler dump
TRAMPOLINE = "_graphscope_call"

# The message of the EOFError ``input()`` raises in the worker, which has no
# keyboard (capture/output.py); the window explains it (model/diagnostics.py)
INPUT_EOF = ("input() is not available: GraphScope runs the snippet without a keyboard, "
             "so stdin is at end of file. Put the value in the code instead.")

@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class Run:
    """Window -> worker: run this snippet (sent once; a worker runs one snippet)."""
    T: ClassVar[str] = "run"
    source: str
    filename: str = "<snippet>"
    max_ops: int = 200_000
    max_output: int = 4_000_000       # characters of stdout+stderr kept
    value_limit: int = 64             # elements up to which values are kept whole
    memory_limit: Optional[int] = None  # bytes of address space, None = default
    static: Optional[dict] = None     # static-capture request (issue 5), or None
    argv: Optional[list] = None       # sys.argv for the snippet; None: [filename]
    cwd: Optional[str] = None         # the snippet's working folder; None: the worker's


@dataclass(slots=True, unsafe_hash=True)  # NOTE [records]
class StaticResult:
    """One static capture of a snippet's function or module (issue 5), made after
    the snippet ran and the recorder was off. ``kind``: fx | jit | export |
    explain | timing. Stored in ``Trace.static[kind]``; see docs/trace-format.md."""
    T: ClassVar[str] = "static"
    kind: str
    target: str
    ok: bool
    summary: str = ""            # one plain-language sentence: what happened
    text: str = ""               # the captured graph as the tool prints it
    graph: list = field(default_factory=list)     # [{name, op, target, args, line}]
    error: Optional[dict] = None  # {type, message, explanation, line}
    warnings: list = field(default_factory=list)  # [{category, message, line}]
    details: dict = field(default_factory=dict)   # kind-specific (jit: eager vs traced, ...)
    duration: float = 0.0


MESSAGE_TYPES: dict[str, type] = {
    cls.T: cls for cls in (TensorInfo, TensorUpdate, Op, ModuleCall, BackwardCall,
                           BackwardStep, Region, Branch, Output, Truncated, End,
                           Outcome, Ready, Run, StaticResult)
}


# NOTE [rows]: on the event pipe the worker writes most records as a row,
# ``(t, field1, field2, ...)`` in the dataclass's field order (NOTE [frames]),
# rather than an object with keys: the keys are the same for every Op, so
# writing and parsing them for each of 60,000 messages was a third of the bytes
# and a good part of the encoding time. ``decode_frames`` reads one back
# (fields a newer worker appended are ignored). Records holding a
# nested record (End, Outcome) stay objects. Both ends use this module, so the order is
# always the same; trace files (export) keep named fields.
ROW_FIELDS: dict[type, tuple] = {
    cls: tuple(f.name for f in dataclasses.fields(cls))
    for cls in MESSAGE_TYPES.values() if cls is not End and cls is not Outcome
}
_ROW_SIZES = {cls.T: (cls, len(names)) for cls, names in ROW_FIELDS.items()}
# a record's fields as a tuple, in one C call (the worker's encoder, the export)
ROW_GETTERS = {cls: operator.attrgetter(*names)
               for cls, names in ROW_FIELDS.items() if len(names) > 1}


# NOTE [frames]: on the event pipe each message is a frame: the byte FRAME_MAGIC,
# a 4-byte little-endian length, then the message in ``marshal`` (version
# MARSHAL_VERSION): a record as the tuple ``(t, field1, ...)`` of NOTE [rows],
# End as its dict. The worker sends its messages in batch frames: the byte
# FRAME_BATCH, the length, then one ``marshal``led list of such rows and dicts
# (one call to write, and to read, a few hundred messages). Records hold only str, int, float, bool, None, lists and
# dicts with str keys, which marshal writes as they are, so the runner reads
# back what JSON would have given; floats are 8 bytes, not 17 digits. Measured
# on the 20,000-op chain's 62,000 messages, a frame each (before batches): 4.9/
# 2.2/7.9 us to write a TensorInfo/Op/BackwardStep as JSON against 1.3/0.9/1.9
# us, and a third of the parse time in the runner (the window's own process, where the GUI thread
# waits for it). ``marshal`` is safe here for what it is used for: it builds
# values, never runs code (unlike pickle), both ends are the same GraphScope
# with the same Python, and trace files stay JSON. A frame that does not
# decode to a message is skipped. A frame without the magic byte, or longer
# than MAX_FRAME (output is capped far below it), means something else wrote
# into the pipe (the snippet, through an fd it inherited): the stream cannot
# be trusted past it, so ``decode_frames`` raises ProtocolError, carrying the
# messages read before it; a partial frame left when the pipe closes is the
# same.
FRAME_MAGIC = 0xA7
FRAME_BATCH = 0xA8      # a frame of many messages (NOTE [event batching] in worker.py)
FRAME_HEAD = struct.Struct("<BI")
MARSHAL_VERSION = 4
MAX_FRAME = 1 << 28


class ProtocolError(ValueError):
    """Data on the pipe that is not a GraphScope message (``messages``: those
    read before it, for ``decode_frames``)."""

    messages: list = []


def decode_frames(buf: bytearray) -> list:
    """The messages of the complete frames at the start of ``buf`` (NOTE
    [frames]), which are removed from it; a partial frame stays for the next read."""
    out: list = []
    n = len(buf)
    i = 0
    head = FRAME_HEAD.unpack_from
    size_of_head = FRAME_HEAD.size
    loads = marshal.loads
    take = _take_row
    with memoryview(buf) as view:
        while n - i >= size_of_head:
            magic, size = head(buf, i)
            if (magic != FRAME_MAGIC and magic != FRAME_BATCH) or size > MAX_FRAME:
                err = ProtocolError(f"bytes that are not a GraphScope frame at {i:,} "
                                    f"(0x{bytes(view[i:i + 5]).hex()})")
                err.messages = out
                view.release()
                del buf[:]
                raise err
            j = i + size_of_head + size
            if j > n:
                break
            try:
                obj = loads(view[i + size_of_head:j])
            except Exception:   # EOFError, ValueError, TypeError: not ours
                obj = None
            i = j
            if magic == FRAME_BATCH:
                if type(obj) is list:
                    for row in obj:
                        take(row, out)
            else:
                take(obj, out)
    del buf[:i]
    return out


def _take_row(obj, out: list, sizes=_ROW_SIZES) -> None:
    """Append the message ``obj`` is (a row, NOTE [rows], or a dict) to ``out``;
    anything else is skipped."""
    if type(obj) is tuple or type(obj) is list:   # NOTE [rows]
        e = sizes.get(obj[0]) if obj and type(obj[0]) is str else None
        if e is not None:
            try:
                out.append(e[0](*obj[1:e[1] + 1]))
            except TypeError:
                pass
    elif type(obj) is dict:
        try:
            out.append(from_dict(obj))
        except ProtocolError:
            pass


def to_dict(msg) -> dict:
    """Message -> plain dict with its ``"t"`` key (JSON-ready)."""
    d = {"t": msg.T}
    for f in dataclasses.fields(msg):
        v = getattr(msg, f.name)
        if dataclasses.is_dataclass(v):
            v = dataclasses.asdict(v)
        d[f.name] = v
    return d


def encode(msg) -> bytes:
    """One message as one line of JSON (framing: ``\\n``-terminated UTF-8)."""
    return (json.dumps(to_dict(msg), separators=(",", ":"), allow_nan=True,
                       default=_json_default) + "\n").encode("utf-8")


def _json_default(o):
    # numpy scalars, torch.Size and the like that slipped into a summary
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    try:
        return float(o)
    except Exception:
        return repr(o)


def from_dict(d: dict):
    """Plain dict (with ``"t"``) -> message. Unknown keys are ignored so a newer
    worker can talk to an older window; unknown types raise ProtocolError."""
    if not isinstance(d, dict):
        raise ProtocolError(f"expected an object, got {type(d).__name__}")
    t = d.get("t")
    cls = MESSAGE_TYPES.get(t)
    if cls is None:
        raise ProtocolError(f"unknown message type {t!r}")
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: v for k, v in d.items() if k in names}
    if (cls is End or cls is Outcome) and isinstance(kwargs.get("error"), dict):
        kwargs["error"] = error_from_dict(kwargs["error"])
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise ProtocolError(f"bad {t!r} message: {e}") from None


_CHECKED_LISTS = frozenset({"inputs", "outputs", "roots", "next"})   # lists of ids
_HINTS: dict = {}


def check_types(msg) -> None:
    """ProtocolError unless every field of ``msg`` has its declared type (``int``,
    ``str``, ``list`` ..., or None where Optional; id lists hold whole numbers).
    For messages read from a file (``Trace.from_dict``): the worker's own are
    right by construction, but a hand-edited trace with ``"inputs": null``
    loaded, then failed deep in the model with a TypeError."""
    cls = type(msg)
    name_of = getattr(cls, "T", cls.__name__)   # (ErrorInfo is part of End, not a message)
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = {f.name: _expected(t) for f, t in zip(
            dataclasses.fields(cls),
            (typing.get_type_hints(cls)[f.name] for f in dataclasses.fields(cls)))}
    for name, (types, optional) in hints.items():
        v = getattr(msg, name)
        if v is None:
            if optional or types is None:
                continue
        elif types is None or (isinstance(v, types) and not (
                isinstance(v, bool) and bool not in types)):
            if name in _CHECKED_LISTS and isinstance(v, list) and not all(
                    type(i) is int for i in v):
                raise ProtocolError(f"bad {name_of!r} message: {name} must hold whole "
                                    f"numbers, not {v!r:.60}")
            continue
        raise ProtocolError(f"bad {name_of!r} message: {name} must be "
                            f"{' or '.join(t.__name__ for t in types or ())}"
                            f"{' or null' if optional else ''}, not {v!r:.60}")
    # one level down where the model reads without looking: shapes and summaries
    if cls is TensorInfo:
        _check_shape(cls.T, "shape", msg.shape)
    elif cls is Op and msg.subgraph is not None:
        # [[name, [next, ...]], ...]: next is another entry's index, or -1
        n = len(msg.subgraph)
        if not all(isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
                   and isinstance(e[1], list)
                   and all(type(i) is int and -1 <= i < n for i in e[1])
                   for e in msg.subgraph):
            raise ProtocolError(f"bad {cls.T!r} message: subgraph must be a list of "
                                f"[name, [next, ...]], not {msg.subgraph!r:.60}")
    elif cls is BackwardCall:
        if not all(i is None or type(i) is int for i in msg.seeds):
            raise ProtocolError(f"bad {cls.T!r} message: seeds must hold tensor ids "
                                f"or null, not {msg.seeds!r:.60}")
    elif cls is BackwardStep:
        for name in ("grad_outputs", "grad_inputs"):
            for summary in getattr(msg, name):
                _check_summary(cls.T, name, summary)
        for name in ("grad_before", "grad_after"):
            _check_summary(cls.T, name, getattr(msg, name))


def _check_shape(t: str, name: str, shape) -> None:
    if shape is not None and not (isinstance(shape, list) and all(
            d is None or (type(d) is int and d >= 0) for d in shape)):
        raise ProtocolError(f"bad {t!r} message: {name} must be a list of sizes, "
                            f"not {shape!r:.60}")


def _check_summary(t: str, name: str, summary) -> None:
    """A Summary (``{value, stats, shape, dtype}``) or None."""
    if summary is None:
        return
    if not isinstance(summary, dict) or not isinstance(summary.get("dtype", ""), str) or \
            not isinstance(summary.get("stats") or {}, dict):
        raise ProtocolError(f"bad {t!r} message: {name} holds {summary!r:.60}, "
                            "not a summary")
    _check_shape(t, name + " shape", summary.get("shape"))


def _expected(tp) -> tuple:
    """(accepted Python types or None for anything, None allowed) of an annotation."""
    args = typing.get_args(tp)
    optional = type(None) in args
    if optional:
        rest = [a for a in args if a is not type(None)]
        tp = rest[0] if len(rest) == 1 else typing.Any
    origin = typing.get_origin(tp) or tp
    if origin in (int, str, bool, list, dict):
        return (origin,), optional
    if origin is float:
        return (float, int), optional
    return None, optional


def error_from_dict(d: dict) -> ErrorInfo:
    names = {f.name for f in dataclasses.fields(ErrorInfo)}
    return ErrorInfo(**{k: v for k, v in d.items() if k in names})


def decode(line: bytes | str):
    """One JSON line (an object: the runner's Run) -> message."""
    try:
        d = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        raise ProtocolError(f"not JSON: {e}") from None
    return from_dict(d)
