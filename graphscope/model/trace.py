"""The trace: everything one run of a snippet recorded (Qt-free, torch-free).

A Trace is built incrementally from protocol messages as they stream in
(``apply``), or loaded from a trace file (``from_json``). Loading never runs
code: the file is JSON and only known fields are read.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Optional

from graphscope import protocol as P

FORMAT = "graphscope-trace"
VERSION = 1


class ModuleTexts(dict):
    """Tensor id -> the text that labels the tensor a module call returned
    (``note_module_text``); ``pending``: calls the snippet did not write itself
    (the layers inside ``model``), waiting for the call around them."""

    PENDING_MAX = 10_000     # calls from library code no named call ever encloses

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        self.pending: list = []


def note_module_text(texts: dict, msg) -> list:
    """Remember, for the tensor a module call returned, the snippet's text of
    the call (``self.conv(x)``), which labels it when nothing else does. The
    innermost call the snippet wrote wins (post hooks come innermost first):
    ``self.fc(h)`` inside ``Net.forward`` rather than ``net(images)``, whose
    output is the same tensor. The layers inside a call the snippet wrote are
    labelled by their path from it, ``model.0(…)`` inside ``model(x)``: a
    training loop's hidden activations were "t9", "t14", "t19" (visual review).
    Returns the tensor ids newly labelled."""
    outs = getattr(msg, "outputs", None)
    if not outs:
        return []
    expr = getattr(msg, "expr", None)
    pending = getattr(texts, "pending", None)
    if not expr:
        if pending is not None:
            if not msg.path:
                # an outermost call without text (its model has a forward hook, or
                # library code called it): nothing will ever enclose what waits,
                # and each later call would scan it all (code review: quadratic)
                pending.clear()
            elif msg.path.rsplit(".", 1)[-1] != msg.type:
                # (a module that is no registered child of the call around it has
                # its class name for a path: "model.Linear(…)" beside model.0.weight)
                pending.append(msg)
                if len(pending) > ModuleTexts.PENDING_MAX:
                    del pending[:len(pending) // 2]
        return []
    new = []
    if outs[0] not in texts:
        texts[outs[0]] = expr
        new.append(outs[0])
    if pending:
        callee = expr.split("(", 1)[0].strip()
        prefix = f"{msg.path}." if msg.path else ""
        keep = []
        for inner in pending:
            if (callee and inner.path.startswith(prefix) and inner.first_op is not None
                    and msg.first_op is not None and msg.first_op <= inner.first_op
                    and inner.last_op <= msg.last_op):
                tid = inner.outputs[0]
                if tid not in texts:
                    texts[tid] = f"{callee}.{inner.path[len(prefix):]}(\u2026)"
                    new.append(tid)
            else:
                keep.append(inner)
        pending[:] = keep if msg.path else []    # (an outermost call encloses all it can)
    return new


@dataclass
class Trace:
    source: str = ""
    filename: str = "<snippet>"
    ops: list = field(default_factory=list)            # [P.Op] in execution order
    tensors: dict = field(default_factory=dict)        # {int id: P.TensorInfo}
    modules: list = field(default_factory=list)        # [P.ModuleCall]
    backward_calls: list = field(default_factory=list) # [P.BackwardCall]
    backward: list = field(default_factory=list)       # [P.BackwardStep] in execution order
    regions: list = field(default_factory=list)        # [P.Region]
    branches: list = field(default_factory=list)       # [P.Branch]
    outputs: list = field(default_factory=list)        # [P.Output]
    truncated: bool = False
    truncation: Optional[P.Truncated] = None
    # output stopped at its limit, kept apart from ``truncation``: a later limit (the
    # op limit) replaced it there, and the console lost its word (code review)
    output_cut: Optional[P.Truncated] = None
    end: Optional[P.End] = None                        # None while still running
    torch_version: Optional[str] = None
    passes: list = field(default_factory=list)         # filled by model/passes.py (issue 5)
    static: Optional[dict] = None                      # static-capture results (issue 5)
    # tensor id -> in-place ops that changed it, in order (with ``after`` when kept)
    _changes: dict = field(default_factory=dict, repr=False, compare=False)
    # NOTE [aliases] in values.py: tensors that share memory (a view, a detach)
    # as groups, and where each lies in the memory when the trace says
    _alias_of: dict = field(default_factory=dict, repr=False, compare=False)   # id -> group
    _geometry: dict = field(default_factory=dict, repr=False, compare=False)   # id -> Op.alias entry
    # tensor id -> the snippet's text of the module call that returned it (note_module_text)
    _module_texts: dict = field(default_factory=ModuleTexts, repr=False, compare=False)
    # ids of the tensors that retain their grad (retain_grad), kept as messages come:
    # the timeline asks each time it takes in a batch, and a scan of every tensor
    # there made a long run's live view slower with each batch
    _retaining: dict = field(default_factory=dict, repr=False, compare=False)
    # NOTE [deferred factory tensors] in graph.py: a factory's plain output is drawn
    # when the snippet names it (or asks it to retain or require grad); for the
    # ones told so after the line that made them: id -> seq of the last step
    # (op, backward call or step) before, so build_graph draws them where a
    # streamed run did. In the trace file as "named_after" (docs/trace-format.md).
    named_after: dict = field(default_factory=dict)
    # a tensor's requires_grad changed after it was first seen (requires_grad_(),
    # ``.requires_grad = False``): id -> [[seq of the last step before, the new
    # value], ...], so build_graph draws the edges made before as they were
    requires_grad_after: dict = field(default_factory=dict)
    _last_step_seq: int = field(default=-1, repr=False, compare=False)
    _updates: int = field(default=0, repr=False, compare=False)   # tensor_update messages
    # what ``passes`` were split from (``extent``): made at the Outcome, while the
    # worker still frees the snippet's module, and kept at the End if nothing
    # but output came between (10 ms of the 20,000-op chain's export)
    _passes_for: Optional[tuple] = field(default=None, repr=False, compare=False)

    # -- building -----------------------------------------------------------
    def apply(self, msg) -> None:
        """Add one protocol message to the trace."""
        t = msg.T
        if t == "op":
            self.ops.append(msg)
            self._last_step_seq = msg.seq
            if msg.versions:
                for key in msg.versions:
                    self._changes.setdefault(int(key), []).append(msg)
            if msg.after:
                for key in msg.after:
                    if msg.versions is None or key not in msg.versions:   # a view's base
                        self._changes.setdefault(int(key), []).append(msg)
            if (msg.kind == "view" or msg.kind == "detach" or msg.alias) and msg.inputs \
                    and msg.outputs:
                self._note_alias(msg)
            elif msg.kind == "inplace" and msg.name in _REPLACES_MEMORY and msg.inputs:
                self._moved(msg)
        elif t == "tensor":
            self.tensors[msg.id] = msg
            if msg.retains_grad:
                self._retaining[msg.id] = True
        elif t == "tensor_update":
            old = self.tensors.get(msg.id)
            if msg.fields.get("retains_grad"):
                self._retaining[msg.id] = True
            if old is not None:
                if not (old.name or old.requires_grad or old.retains_grad) and any(
                        msg.fields.get(k) for k in _DRAWS):
                    self._note_named(old)
                rg = msg.fields.get("requires_grad")
                if rg is not None and bool(rg) != old.requires_grad:
                    self.requires_grad_after.setdefault(msg.id, []).append(
                        [self._last_step_seq, bool(rg)])
                self.tensors[msg.id] = with_update(old, msg)
            self._updates += 1
        elif t == "backward":
            self.backward.append(msg)
            self._last_step_seq = msg.seq
        elif t == "backward_call":
            self.backward_calls.append(msg)
            self._last_step_seq = msg.seq
        elif t == "module":
            self.modules.append(msg)
            note_module_text(self._module_texts, msg)
        elif t == "region":
            self.regions.append(msg)
        elif t == "branch":
            self.branches.append(msg)
        elif t == "output":
            self.outputs.append(msg)
        elif t == "truncated":
            self.truncated = True
            if msg.reason == "output":
                self.output_cut = msg
            old = self.truncation
            # a limit reached and calls GraphScope failed to record: both are said
            if old is not None and (msg.reason == "unrecorded") != (old.reason == "unrecorded"):
                first, second = (old, msg) if msg.reason == "unrecorded" else (msg, old)
                msg = dataclasses.replace(first, message=f"{first.message} {second.message}")
            self.truncation = msg
        elif t == "end":
            self.end = msg
            if self._passes_for is None or self._passes_for != self.extent():
                self._fill_passes()
        elif t == "outcome":   # the snippet's own code ended: nothing more is recorded
            self._fill_passes()
            self._passes_for = self.extent()
        elif t == "static":  # issue 5: one entry per tool, see docs/trace-format.md
            self.static = {**(self.static or {}), msg.kind: _row(msg)}
        elif t == "ready":
            self.torch_version = msg.torch_version

    def _note_named(self, info) -> None:
        """``Trace.named_after``, for a factory's output only: no other tensor waits
        to be drawn (a chain's outputs, each named ``y`` in turn, would fill it for
        nothing). Every such tensor named after it was made is noted, also one
        named in its own line or one drawn at once (it required grad then):
        build_graph looks the entry up only for a tensor it has deferred."""
        op = self.op_by_id(info.created_by) if info.created_by is not None else None
        if op is not None and op.kind == "factory":
            self.named_after[info.id] = self._last_step_seq

    def _note_alias(self, op) -> None:
        alias = op.alias
        if alias is None:   # not told (a trace from before Op.alias): shared, place unknown
            ids = [op.inputs[0], *op.outputs]
        else:               # {} : every output is a copy
            ids = []
            for key, where in alias.items():
                ids.append(int(key))
                self._geometry[int(key)] = where
        self._join(ids)

    def _moved(self, op) -> None:
        """``x.t_()``, ``x.squeeze_()``, ``x.resize_(...)``: x now lies elsewhere in
        its memory, which the trace does not say (its changes still touch its
        aliases, and theirs it). ``x.data = t``, ``x.set_(t)``: x now uses t's
        memory, as t does (NOTE [aliases] in values.py)."""
        tid = op.inputs[0]
        self._geometry.pop(tid, None)
        if op.name not in ("data", "set_"):
            return
        groups = self._alias_of
        old = groups.pop(tid, None)
        if old is not None and tid in old:
            old.remove(tid)
        if len(op.inputs) > 1:
            src = op.inputs[1]
            where = self._geometry.get(src)
            if where is not None and op.name == "data":
                self._geometry[tid] = where
            self._join([src, tid])

    def _join(self, ids) -> None:
        groups = self._alias_of
        merged = None
        for tid in ids:
            g = groups.get(tid)
            if g is None:
                g = [tid]
                groups[tid] = g
            if merged is None or g is merged:
                merged = g
                continue
            if len(g) > len(merged):
                merged, g = g, merged
            merged.extend(g)
            for t in g:
                groups[t] = merged

    def aliases_of(self, tid: int) -> list:
        """Tensors sharing memory with tensor ``tid`` through views and detaches,
        ``tid`` included (NOTE [aliases] in values.py); [] if none."""
        return self._alias_of.get(tid, [])

    def geometry_of(self, tid: int):
        """``[storage offset, strides, shape, dtype, reads]`` of tensor ``tid`` in the memory it shares
        with its aliases, or None if the trace does not say."""
        return self._geometry.get(tid)

    def _fill_passes(self) -> None:
        # imported here: passes.py reads a Trace, trace.py must not need it at import time
        from graphscope.model.passes import passes_as_dicts
        try:
            self.passes = passes_as_dicts(self)
        except Exception:  # a derived view: never let it stop a trace from loading
            self.passes = []

    def extent(self) -> tuple:
        """How much the trace holds of records, not output: a change with every
        op, tensor, tensor update, backward step, module, region or branch."""
        return (len(self.ops), len(self.tensors), len(self.backward), len(self.backward_calls),
                len(self.modules), len(self.regions), len(self.branches), self._updates)

    def extend(self, msgs) -> None:
        for m in msgs:
            self.apply(m)

    # -- derived views --------------------------------------------------------
    @property
    def stdout(self) -> str:
        return "".join(o.text for o in self.outputs if o.stream == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(o.text for o in self.outputs if o.stream == "stderr")

    @property
    def error(self) -> Optional[P.ErrorInfo]:
        return self.end.error if self.end else None

    @property
    def status(self) -> str:
        return self.end.status if self.end else "running"

    @property
    def finished(self) -> bool:
        return self.end is not None

    def tensor_by_name(self, name: str) -> Optional[P.TensorInfo]:
        """Last tensor bound to snippet variable ``name`` (handy in tests)."""
        found = None
        for t in self.tensors.values():
            if t.name == name:
                found = t
        return found

    def changes_of(self, tid: int) -> list:
        """The in-place ops that changed tensor ``tid``, in order; the value just
        after is in ``op.after[str(tid)]`` when it was kept (NOTE [values after
        in-place])."""
        return self._changes.get(tid, [])

    def op_by_id(self, op_id: int) -> Optional[P.Op]:
        # ops are numbered 0.. in order, so the index is the id unless truncated oddly
        if 0 <= op_id < len(self.ops) and self.ops[op_id].id == op_id:
            return self.ops[op_id]
        return next((o for o in self.ops if o.id == op_id), None)

    # -- files ----------------------------------------------------------------
    def to_dict(self) -> dict:
        def rows(items):
            return [_row(x) for x in items]
        return {
            "format": FORMAT,
            "version": VERSION,
            "source": self.source,
            "filename": self.filename,
            "torch_version": self.torch_version,
            "status": self.status,
            "ops": rows(self.ops),
            "tensors": {str(k): _row(v) for k, v in self.tensors.items()},
            "modules": rows(self.modules),
            "backward_calls": rows(self.backward_calls),
            "backward": rows(self.backward),
            "regions": rows(self.regions),
            "branches": rows(self.branches),
            "outputs": rows(self.outputs),
            "passes": self.passes,
            "static": self.static,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "error": dataclasses.asdict(self.error) if self.error else None,
            "exit_code": self.end.exit_code if self.end else None,
            "duration": self.end.duration if self.end else None,
            "truncated": self.truncated,
            "truncation": _row(self.truncation) if self.truncation else None,
            "output_cut": _row(self.output_cut) if self.output_cut else None,
            "named_after": {str(k): v for k, v in self.named_after.items()},
            "requires_grad_after": {str(k): v for k, v in self.requires_grad_after.items()},
        }

    def to_json(self, indent: Optional[int] = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=True,
                          default=P._json_default)

    @classmethod
    def from_dict(cls, d: dict) -> "Trace":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise TraceFormatError("not a GraphScope trace (missing format: graphscope-trace)")
        if type(d.get("version")) is not int or d["version"] != VERSION:   # not true, not 1.0
            raise TraceFormatError(f"unsupported trace version {d.get('version')!r} (this GraphScope reads {VERSION})")
        for key in ("source", "filename"):
            if not isinstance(d.get(key, ""), str):
                raise TraceFormatError(f"malformed trace: {key} must be text, "
                                       f"not {d[key]!r:.60}")
        _check_top_level(d)
        try:
            tr = cls(source=d.get("source", ""), filename=d.get("filename", "<snippet>"))
            tr.torch_version = d.get("torch_version")
            for key, mtype in (("ops", "op"), ("modules", "module"),
                               ("backward_calls", "backward_call"), ("backward", "backward"),
                               ("regions", "region"), ("branches", "branch"),
                               ("outputs", "output")):
                for row in d.get(key) or []:
                    tr.apply(_checked({**row, "t": mtype}))
            for key, row in (d.get("tensors") or {}).items():
                tr.apply(_checked({**row, "t": "tensor", "id": int(key)}))
            if d.get("output_cut"):
                tr.apply(_checked({**d["output_cut"], "t": "truncated"}))
            if d.get("truncation"):
                tr.apply(_checked({**d["truncation"], "t": "truncated"}))
            tr.truncated = bool(d.get("truncated"))
            named = d.get("named_after") or {}
            if not isinstance(named, dict) or not all(
                    type(v) is int for v in named.values()):
                raise P.ProtocolError(f"named_after must map tensor ids to step seqs, "
                                      f"not {named!r:.60}")
            tr.named_after = {int(k): v for k, v in named.items()}
            rg = d.get("requires_grad_after") or {}
            if not isinstance(rg, dict) or not all(
                    isinstance(ch, list) and ch and all(
                        isinstance(e, list) and len(e) == 2 and type(e[0]) is int
                        and type(e[1]) is bool for e in ch)
                    for ch in rg.values()):
                raise P.ProtocolError(f"requires_grad_after must map tensor ids to lists "
                                      f"of [seq, true|false], not {rg!r:.60}")
            tr.requires_grad_after = {int(k): v for k, v in rg.items()}
            static = d.get("static")
            if static is not None and not isinstance(static, dict):
                raise P.ProtocolError(f"static must be an object, not {static!r:.60}")
            for kind, row in (static or {}).items():
                tr.apply(_checked({**row, "t": "static", "kind": kind}))
            status = d.get("status")
            if status and status != "running":
                if status not in P.END_STATUSES:
                    raise P.ProtocolError(f"status must be one of {', '.join(P.END_STATUSES)}"
                                          f" or running, not {status!r:.60}")
                err = d.get("error")
                if err is not None:
                    if not isinstance(err, dict):
                        raise P.ProtocolError(f"error must be an object, not {err!r:.60}")
                    err = P.error_from_dict(err)
                    P.check_types(err)
                tr.end = P.End(status=status, error=err, exit_code=d.get("exit_code"),
                               duration=d.get("duration"))
                P.check_types(tr.end)
            # passes are derived from the rows: made again here, so a damaged
            # "passes" in the file cannot reach the passes panel
            if tr.end is not None:
                tr._fill_passes()
        except (P.ProtocolError, TypeError, ValueError, KeyError, AttributeError,
                IndexError, RecursionError) as e:
            # a hand-made or damaged file: what is wrong with it, never a traceback
            raise TraceFormatError(f"malformed trace: {e}") from None
        return tr

    @classmethod
    def from_json(cls, text: str) -> "Trace":
        try:
            d = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise TraceFormatError(f"not JSON: {e or 'nested too deeply'}") from None
        return cls.from_dict(d)


# the file's own keys, as docs/trace-format.md gives them (null allowed for each)
_TOP_LEVEL = {"torch_version": str, "stdout": str, "stderr": str, "truncated": bool,
              "tensors": dict, "named_after": dict, "requires_grad_after": dict,
              "static": dict, "output_cut": dict, "truncation": dict,
              **{k: list for k in ("ops", "modules", "backward_calls", "backward", "regions",
                                   "branches", "outputs")}}


def _check_top_level(d: dict) -> None:
    """TraceFormatError unless each of the file's own keys has its type: ``"ops":
    {}`` and ``"truncated": "no"`` were read as no ops and as true (docs review)."""
    for key, tp in _TOP_LEVEL.items():
        v = d.get(key)
        if v is not None and not isinstance(v, tp):
            raise TraceFormatError(f"malformed trace: {key} must be {_TYPE_WORDS[tp]}"
                                   f" or null, not {v!r:.60}")
    for key, row in (d.get("tensors") or {}).items():
        if not (isinstance(key, str) and _TENSOR_KEY.fullmatch(key)):
            raise TraceFormatError(f"malformed trace: tensors must be keyed by tensor id, "
                                   f"not {key!r:.60}")
        if isinstance(row, dict) and "id" in row and row["id"] != int(key):
            raise TraceFormatError(f"malformed trace: tensor {key}'s row says id "
                                   f"{row['id']!r:.60}")


_TENSOR_KEY = re.compile(r"-?[0-9]+")    # (isdigit() takes "²", and int() does not)
_TYPE_WORDS = {str: "text", bool: "true or false", dict: "an object", list: "a list"}


def _checked(row: dict):
    """The message a trace file's row is, its fields' types checked (P.check_types)."""
    msg = P.from_dict(row)
    P.check_types(msg)
    return msg


# TensorUpdate fields that have a factory's plain output drawn (Trace.named_after)
_DRAWS = ("name", "retains_grad", "requires_grad")
_INFO_FIELDS = frozenset(f.name for f in dataclasses.fields(P.TensorInfo)) - {"id"}


def with_update(info: P.TensorInfo, update: P.TensorUpdate) -> P.TensorInfo:
    """``info`` with what ``update`` changed (fields a TensorInfo does not have,
    from a newer worker, are left out): how the Trace applies an update, and
    the export's rows (NOTE [JSON as it comes])."""
    return dataclasses.replace(
        info, **{k: v for k, v in update.fields.items() if k in _INFO_FIELDS})

# in-place ops after which a tensor lies elsewhere in memory (NOTE [aliases] in values.py)
_REPLACES_MEMORY = frozenset({"t_", "transpose_", "swapdims_", "swapaxes_", "squeeze_",
                              "unsqueeze_", "as_strided_", "resize_", "resize_as_", "set_",
                              "data"})


class TraceFormatError(ValueError):
    """A trace file that GraphScope cannot read."""


def _row(msg) -> dict:
    d = P.to_dict(msg)
    d.pop("t", None)
    return d
