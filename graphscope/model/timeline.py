"""One timeline over a run, and the cursor on it (Qt-free).

Steps are the forward ops, a ``backward_call`` marker where each backward pass
starts, and one step per autograd Node the engine ran, all in ``seq`` order
(protocol NOTE [seq]; graph.py NOTE [step numbering]). The cursor is an index
into ``steps``; ``state()`` is a pure function of it, so stepping back really
goes back.

Speed: what accumulates over the run (the gradient each tensor has received,
each leaf's ``.grad`` before/after) is stored as per-step changes with their old
values, applied or undone as the cursor moves; output is a prefix-sum lookup.
One step of the cursor therefore costs O(changes at that step) plus the copy of
the dicts handed out, whatever the trace's size.

Convention for output: the console at step i shows what was printed before step
i was recorded (what the step itself printed included: a hook's, a module's),
and at the last step everything. A print between two steps shows from the later
one: at step i the marked line is step i's, and output of lines after it
(``print(loss)`` after ``c = x * 2``, or after backward() at the pass's last
AccumulateGrad, marked on a leaf's line) read as printed at that line or during
the pass (visual review).
"""
from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field
from typing import Callable, Optional

from graphscope.model.grad_receivers import arriving_tensors, inner_receivers, receivers
from graphscope.model.graph import Graph, build_graph, gc_paused
from graphscope.model.summary import format_summary
from graphscope.model.values import value_at

_MISSING = object()


@dataclass(frozen=True, slots=True)
class Step:
    kind: str                      # "op" | "backward_call" | "backward"
    index: int
    seq: int
    line: Optional[int]
    op: Optional[int] = None       # forward op id (op steps; backward steps: the Node's op)
    backward: Optional[int] = None # BackwardStep id (backward steps)
    call: Optional[int] = None     # BackwardCall id (markers and backward steps)


# what a quiz hides before Reveal: they answer "which line fails?" and "what is missing?"
QUIZ_ANSWERS = frozenset({"error", "missing_requires_grad"})


def shown_flags(node, cursor, flag_steps, values_hidden: bool = False,
                hooks_off=frozenset()) -> frozenset:
    """``node``'s flags as shown at ``cursor``: no mark before the step of the event
    it shows (NOTE [late flags] in graph.py), the quiz's answers left off before
    Reveal, the hook tag only while a hook is on the tensor. The one rule for the
    canvas, its tooltips and the inspector (FrameState.shown_flags)."""
    flags = node.flags or frozenset()
    fs = flag_steps.get(node.id) if flag_steps else None
    if fs:
        later = [f for f, step in fs.items() if step > cursor and f in flags]
        if later:
            flags = frozenset(flags).difference(later)
    if values_hidden and not QUIZ_ANSWERS.isdisjoint(flags):
        flags = frozenset(flags) - QUIZ_ANSWERS
    if hooks_off and "hook" in flags and node.tensor in hooks_off:
        flags = frozenset(flags) - {"hook"}
    return flags


@dataclass
class FrameState:
    cursor: int
    visible_steps: int             # nodes with node.step <= visible_steps are shown
    current: Optional[Step]
    line: Optional[int]
    highlight: set
    edge_grads: dict               # (src, dst) -> gradient text, at a backward step
    leaf_grads: dict               # tensor id -> (before Summary, after Summary), latest change
    grad_of: dict                  # tensor id -> Summary of the gradient it has received so far
    stdout_upto: int               # characters of stdout printed by then
    stderr_upto: int = 0
    outputs_upto: int = 0          # output chunks (Trace.outputs prefix) printed by then
    retained_grads: dict = field(default_factory=dict)  # retain_grad'd non-leaves: tensor id -> Summary
    accumulated: Optional[int] = None  # tensor id whose .grad changed at this step
    backward_call: Optional[int] = None  # the backward pass the cursor is in
    error: object = None           # ErrorInfo when the cursor is on the step that raised (the last)
    values_hidden: bool = False    # a quiz before Reveal: views hide values read (branch nodes)
    # graph node id -> the step at which a backward pass freed what it saved (NOTE
    # [released] in capture/backward.py): freed at this cursor when <= cursor. Shared
    # with the timeline, read only.
    freed_at: dict = field(default_factory=dict)
    # tensor ids with a hook of the snippet's that is not on at this cursor (not yet
    # registered, or removed: NOTE [hook removal] in capture/recorder.py): their
    # nodes leave the "hook" tag off
    hooks_off: frozenset = frozenset()
    # leaves whose .grad changed at this very step (accumulated into, zeroed, set):
    # only they read "before -> after"; the others show the value they have
    grad_changed: frozenset = frozenset()
    # NOTE [late flags] in graph.py (the in-place tag, the error, a hook): the
    # graph's node id -> {flag: step it was raised at}, shared, not copied; the
    # marks of steps after this cursor are left off. ``marks_key`` changes only
    # when the cursor crosses such a step (or new ones come in), so a view keyed
    # on it redraws its nodes then and not at every step.
    flag_steps: dict = field(default_factory=dict)
    detail_steps: dict = field(default_factory=dict)   # Graph.detail_steps, shared
    marks_key: tuple = (0, 0)
    # NOTE [pass focus]: the pass the cursor is in, when the run has several
    focus: Optional["PassFocus"] = None

    def detail_at(self, node) -> str:
        """A decision node's text as it was at this cursor (its detail otherwise)."""
        hist = self.detail_steps.get(node.id) if self.detail_steps else None
        if not hist:
            return node.detail
        i = bisect.bisect_right(hist, self.visible_steps, key=lambda e: e[0])
        return hist[i - 1][1] if i else ""

    def flags_later(self, node_id: str) -> frozenset:
        """The flags of ``node_id`` raised after this cursor."""
        fs = self.flag_steps.get(node_id)
        if not fs:
            return frozenset()
        return frozenset(f for f, step in fs.items() if step > self.visible_steps)

    def shown_flags(self, node) -> frozenset:
        """``node``'s flags as shown at this cursor (``shown_flags``)."""
        return shown_flags(node, self.visible_steps, self.flag_steps, self.values_hidden,
                           self.hooks_off)


# NOTE [pass focus]: PyTorch builds a new graph on every forward pass and frees
# it when backward has walked it. With several passes on the canvas (an RNN run
# over two sequences, a training loop) their graphs sit side by side, and a
# student stepping through the second backward could not tell which nodes it
# walks: rows of the first pass looked the same. The nodes of earlier passes
# that the current pass's graph does not reach are drawn faded. The current
# pass's graph is every node made in its steps, the nodes its backward steps
# walk (an older graph, when it was retained) and its backward call's roots,
# and everything those were computed from
# (a weight made before the first pass, a hidden state carried over without
# detach()). The passes are the timeline bar's bands (``set_passes``); a run of
# one pass fades nothing. The canvas fades nodes, their edges, "freed" pills and
# a grad-mode box whose nodes all fade, at every level of detail but the
# rasterised one (over 6,000 visible nodes: canvas_density.py); the marks of
# the error and of a missing requires_grad never fade.
@dataclass(frozen=True, slots=True)
class PassFocus:
    index: int                     # which band (pass) of ``Timeline.set_passes``
    start: int                     # its first step: only nodes made before it fade
    end: int
    keep: frozenset                # nodes made before ``start`` that its graph reaches

    def faded(self, node) -> bool:
        return node.step is not None and node.step < self.start and node.id not in self.keep


class Timeline:
    """The run's steps and a cursor. Views ``subscribe`` and redraw from ``state()``."""

    def __init__(self, trace, graph: Optional[Graph] = None):
        self.trace = trace
        self.graph = graph if graph is not None else build_graph(trace)
        self._late_sorted: list = []   # steps of the late flags (NOTE [late flags] in graph.py)
        self._late_total = 0
        self._bands: list = []          # NOTE [pass focus]: (first step, last step) per pass
        self._senders = None            # _arriving_at_leaf: (backward steps seen, index)
        self._band_starts: list = []
        self._band_order: list = []
        self._band_reach: list = []
        self._focus: dict = {}          # band index -> PassFocus
        self._listeners: list[Callable] = []
        self._cursor = -1
        self._reset()
        self.refresh()
        self._cursor = len(self.steps) - 1

    # -- steps ------------------------------------------------------------------
    def _reset(self):
        self.steps: list[Step] = []
        self._seqs: list[int] = []
        self._n_ops = self._n_calls = self._n_bw = 0
        self._bw_by_id: dict[int, object] = {}
        self._grad_owner: dict[int, int] = {}   # a .grad tensor id -> its leaf (w.grad reads)
        self._node_tensor: dict[int, int] = {}   # autograd Node id -> tensor it belongs to
        self._deltas: list = []                  # per step: [(which, key, old, new)]
        self._tail = ({}, {})                    # (grad_of, leaf_grads) after the last step
        self._mat = ({}, {})                     # materialised at _mat_pos
        self._mat_pos = -1
        self._out_n = 0
        self._out_seqs: list[int] = []
        self._out_stdout: list[int] = [0]        # prefix sums of characters
        self._out_stderr: list[int] = [0]
        self._current_call = None
        self._retaining: list = []
        self._freed_at: dict[str, int] = {}      # graph node -> step its saved values were freed
        self._hook_spans: dict[int, list] = {}   # tensor id -> [[hook op, from step, to step]]
        self._backward_steps: list[int] = []     # indices of the backward steps (phase())

    def refresh(self, follow: bool = False) -> int:
        with gc_paused():
            return self._refresh(follow)

    def _refresh(self, follow: bool) -> int:
        """Take in what the trace gained since the last call; returns the new step count.

        With ``follow`` the cursor moves to the new last step (live building).
        """
        tr = self.trace
        new = (tr.ops[self._n_ops:] + tr.backward_calls[self._n_calls:] + tr.backward[self._n_bw:])
        if new:
            new.sort(key=lambda m: m.seq)
            if self._seqs and new[0].seq < self._seqs[-1]:
                # arrived out of order: rebuild (rare; never while streaming in order)
                keep = self._cursor
                self._reset()
                self._cursor = keep
                return self._refresh(follow)
            self._n_ops, self._n_calls, self._n_bw = len(tr.ops), len(tr.backward_calls), len(tr.backward)
            for ev in new:
                self._add_step(ev)
        while self._out_n < len(tr.outputs):
            o = tr.outputs[self._out_n]
            self._out_seqs.append(o.seq)
            out, err = self._out_stdout[-1], self._out_stderr[-1]
            if o.stream == "stderr":
                err += len(o.text)
            else:
                out += len(o.text)
            self._out_stdout.append(out)
            self._out_stderr.append(err)
            self._out_n += 1
        # a handful of tensors at most; looked up here so state() stays O(changes)
        self._retaining = [tid for tid in tr._retaining
                           if (info := tr.tensors.get(tid)) is not None and info.retains_grad]
        old = self._cursor
        if follow or self._cursor >= len(self.steps):
            self._cursor = len(self.steps) - 1
        if self._cursor != old:
            self._notify()
        return len(self.steps)

    def _add_step(self, ev) -> None:
        i = len(self.steps)
        t = ev.T
        delta = ()          # shared: 20,000 forward steps change no gradient
        if t == "op":
            step = Step("op", i, ev.seq, ev.line, op=ev.id)
            if ev.kind in _GRAD_KINDS or ev.versions or ev.after:
                delta = self._grad_tensor_changes(ev)
            elif ev.kind == "hook" and ev.inputs and not ev.failed:
                self._hook_spans.setdefault(ev.inputs[0], []).append([ev.id, i, None])
            elif ev.kind == "unhook" and ev.inputs:
                for span in self._hook_spans.get(ev.inputs[0], ()):
                    if span[0] == getattr(ev, "undoes", None) and span[2] is None:
                        span[2] = i
        elif t == "backward_call":
            self._current_call = ev.id
            step = Step("backward_call", i, ev.seq, ev.line, call=ev.id)
        else:
            self._bw_by_id[ev.id] = ev
            op = self.trace.op_by_id(ev.op) if ev.op is not None else None
            line = op.line if op is not None else None
            if line is None and ev.within is not None:   # inside a composite op's sub-graph
                host = self.trace.op_by_id(ev.within)
                line = host.line if host is not None else None
            if line is None and ev.tensor is not None:
                info = self.trace.tensors.get(ev.tensor)
                if info is not None and info.created_by is not None:
                    mk = self.trace.op_by_id(info.created_by)
                    line = mk.line if mk else None
            if line is None:
                call = self._call(ev.call)
                line = call.line if call else None
            step = Step("backward", i, ev.seq, line, op=ev.op, backward=ev.id, call=ev.call)
            if ev.tensor is not None:
                self._node_tensor.setdefault(ev.node, ev.tensor)
            if getattr(ev, "released", False):
                nid = node_of_backward(self.graph, ev)
                if nid is not None and nid not in self._freed_at:
                    self._freed_at[nid] = i
            delta = self._grad_changes(ev, op)
        if step.kind != "op":
            self._backward_steps.append(i)
        self.steps.append(step)
        self._seqs.append(ev.seq)
        self._deltas.append(delta)

    def _marks_key(self, cursor: int) -> tuple:
        """(late flags raised by ``cursor``, late flags in all): FrameState.marks_key."""
        g = self.graph
        if self._late_total != g.late_count:
            self._late_sorted = sorted(
                [step for fs in g.flag_steps.values() for step in fs.values()]
                + [step for hist in g.detail_steps.values() for step, _ in hist[1:]])
            self._late_total = g.late_count
        return (bisect.bisect_right(self._late_sorted, cursor), self._late_total)

    def _hooks_off(self, cursor: int) -> frozenset:
        """Tensors whose hooks are all off at ``cursor`` (a handful of tensors at most)."""
        if not self._hook_spans:
            return frozenset()
        return frozenset(tid for tid, spans in self._hook_spans.items()
                         if not any(a <= cursor and (b is None or cursor < b) for _, a, b in spans))

    def _call(self, call_id):
        calls = self.trace.backward_calls
        if 0 <= (call_id or 0) < len(calls) and calls[call_id].id == call_id:
            return calls[call_id]
        return next((c for c in calls if c.id == call_id), None)

    def _grad_tensor_changes(self, op) -> list:
        """A leaf's ``.grad`` changed by the program, not by backward: set to None
        (``opt.zero_grad()``) or to another tensor (``w.grad = g``), or changed in
        place (``w.grad.zero_()``, ``w.grad.data.zero_()``, a slice of it, the
        ``_foreach`` ops of an optimizer; NOTE [values after in-place] in
        values.py). ``w.grad`` reads and writes tell which tensor is whose
        gradient (``_grad_owner``), ``.data`` / ``detach()`` hand that on."""
        grad_tail, leaf_tail = self._tail
        owner = self._grad_owner
        changes = []

        def put(which, d, key, new):
            _put(changes, which, d, key, new)

        def set_grad(leaf, new):
            last = leaf_tail.get(leaf)
            put(1, leaf_tail, leaf, (last[1] if last else None, new))
            put(0, grad_tail, leaf, new)

        kind = op.kind
        if kind == "grad_read" or kind == "detach":
            if op.inputs and op.outputs:
                leaf = op.inputs[0] if kind == "grad_read" else owner.get(op.inputs[0])
                if leaf is not None:
                    owner[op.outputs[0]] = leaf
            return ()
        if kind == "grad_write":
            if not op.inputs:
                return ()
            leaf = op.inputs[0]
            if len(op.inputs) > 1 and owner.get(op.inputs[1]) == leaf:
                # its own .grad put back (``w.grad += 1`` stores the changed
                # tensor again): the change was the in-place op's, nothing here
                return ()
            for g in [g for g, who in owner.items() if who == leaf]:
                del owner[g]   # no longer its .grad
            if len(op.inputs) > 1:          # w.grad = g
                owner[op.inputs[1]] = leaf
                set_grad(leaf, self._summary_at(op.inputs[1], op.seq))
            elif leaf in leaf_tail or leaf in grad_tail:   # w.grad = None
                set_grad(leaf, None)
            return changes or ()
        after = op.after or {}
        for key in (op.versions or {}).keys() | after.keys():
            leaf = owner.get(int(key))
            if leaf is None:
                continue
            if key in after:
                set_grad(leaf, self._summary_at(int(key), op.seq))
            else:   # changed, but too big for the value to be kept
                info = self.trace.tensors.get(int(key))
                set_grad(leaf, {"value": None, "stats": None,
                                "shape": list(info.shape) if info else None,
                                "dtype": info.dtype if info else "",
                                "note": f"changed by {op.name}, too big to keep"})
        return changes or ()

    def _summary_at(self, tid: int, seq: int) -> Optional[dict]:
        """Tensor ``tid`` as a Summary, as it is at ``seq`` (values.value_at)."""
        at = value_at(self.trace, tid, None, seq)
        info = self.trace.tensors.get(tid)
        if at is None or info is None:
            return None
        return {"value": at.value, "stats": at.stats, "shape": list(info.shape),
                "dtype": info.dtype}

    def _grad_changes(self, ev, op) -> list:
        grad_tail, leaf_tail = self._tail
        changes = []

        def put(which, d, key, new):
            _put(changes, which, d, key, new)

        if _is_accumulate(ev.grad_fn):
            tid = ev.tensor
            if tid is not None:
                after = ev.grad_after if ev.grad_after is not None else (
                    ev.grad_outputs[0] if ev.grad_outputs else None)
                put(1, leaf_tail, tid, (ev.grad_before, after))
                if after is not None:
                    put(0, grad_tail, tid, after)
        elif op is not None:
            for k, s in enumerate(ev.grad_outputs):
                if s is not None and k < len(op.outputs):
                    put(0, grad_tail, op.outputs[k], s)
        elif ev.tensor is not None and ev.grad_outputs and ev.grad_outputs[0] is not None:
            put(0, grad_tail, ev.tensor, ev.grad_outputs[0])
        return changes or ()

    # -- cursor ---------------------------------------------------------------------
    def __len__(self):
        return len(self.steps)

    def len(self) -> int:
        return len(self.steps)

    @property
    def cursor(self) -> int:
        return self._cursor

    def set_cursor(self, index: int) -> int:
        n = len(self.steps)
        index = max(-1 if n == 0 else 0, min(int(index), n - 1))
        if index != self._cursor:
            self._cursor = index
            self._notify()
        return self._cursor

    def step_forward(self) -> int:
        return self.set_cursor(self._cursor + 1)

    def step_back(self) -> int:
        return self.set_cursor(self._cursor - 1)

    def first(self) -> int:
        return self.set_cursor(0)

    def last(self) -> int:
        return self.set_cursor(len(self.steps) - 1)

    def subscribe(self, callback: Callable) -> Callable:
        """``callback(cursor)`` after every cursor change; returns an unsubscribe function."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def _notify(self):
        for cb in list(self._listeners):
            cb(self._cursor)

    def index_of_op(self, op_id: int) -> Optional[int]:
        """Step index of a forward op (e.g. to jump to where a node appeared)."""
        op = self.trace.op_by_id(op_id)
        if op is None:
            return None
        i = bisect.bisect_left(self._seqs, op.seq)
        return i if i < len(self.steps) and self.steps[i].op == op_id and self.steps[i].kind == "op" else None

    def steps_of_line(self, line: int) -> list[int]:
        return [s.index for s in self.steps if s.line == line]

    # -- passes ----------------------------------------------------------------------------
    def pass_steps(self, passes) -> list:
        """(first step, last step) of each of ``passes`` (model/passes.py), None for
        one with no step here: its ops, its backward steps and its backward call."""
        op_step, bw_step, call_step = self.op_steps(), {}, {}
        for i, st in enumerate(self.steps):
            if st.kind == "backward":
                bw_step.setdefault(st.backward, i)
            elif st.kind == "backward_call":
                call_step.setdefault(st.call, i)
        out = []
        for p in passes:
            idx = [op_step[o] for o in p.ops if o in op_step]
            idx += [bw_step[b] for b in p.backward if b in bw_step]
            if p.call in call_step:
                idx.append(call_step[p.call])
            out.append((min(idx), max(idx)) if idx else None)
        return out

    def pass_spans(self, passes) -> list:
        """``pass_steps`` as the timeline bar draws them, one after another: a pass
        whose first steps, run while the pass before it ran, only made inputs
        (practice-1 builds its three inputs first) begins after that pass, or the
        two bands were drawn over each other (visual review). Passes written
        interleaved keep their steps (a code review: a third one lay over both
        others, and the cursor's pass was the wrong one)."""
        out = []
        end = -1
        op_step = self.op_steps()
        for p, span in zip(passes, self.pass_steps(passes)):
            if (span is not None and span[0] <= end < span[1]
                    and self._only_inputs(p, end, op_step)):
                span = (end + 1, span[1])
            if span is not None:
                end = max(end, span[1])
            out.append(span)
        return out

    def _only_inputs(self, p, end: int, op_step: dict) -> bool:
        """Whether the ops of pass ``p`` at steps up to ``end`` only made tensors
        outside the graph (inputs, a layer's initialisation)."""
        for op_id in p.ops:
            at = op_step.get(op_id)
            if at is not None and at <= end:
                op = self.trace.op_by_id(op_id)
                if op is not None and op.grad_fn:
                    return False
        return True

    def op_steps(self) -> dict:
        """Op id -> the step it is (its first, for an op drawn twice)."""
        out: dict = {}
        for i, st in enumerate(self.steps):
            if st.kind == "op":
                out.setdefault(st.op, i)
        return out

    def set_passes(self, bands) -> None:
        """The run's passes as ``(first step, last step, ...)`` (the timeline bar's
        bands): the state of a cursor then says which one it is in (NOTE [pass
        focus]). Fewer than two: no focus."""
        self._bands = [(int(b[0]), int(b[1])) for b in bands] if len(bands) > 1 else []
        self._focus = {}
        # (first step, band index) in step order: the band of a cursor by bisection
        # (a training loop has a band per iteration, and every state() asks)
        order = sorted(range(len(self._bands)), key=lambda k: self._bands[k][0])
        self._band_starts = [self._bands[k][0] for k in order]
        self._band_order = order
        # the furthest end of the bands begun so far: where a walk back can stop
        self._band_reach = list(itertools.accumulate(
            (self._bands[k][1] for k in order), max))

    def focus_at(self, cursor: int) -> Optional[PassFocus]:
        """The pass ``cursor`` is in: the latest begun of those that span it (passes
        of separate computations, without backward, may interleave: code review),
        else, between two passes, the latest begun (a read or print belongs with
        the graph just built)."""
        i = bisect.bisect_right(self._band_starts, cursor)
        if i == 0:
            return None
        best = self._band_order[i - 1]
        j = i - 1
        while j >= 0 and self._band_reach[j] >= cursor:
            k = self._band_order[j]
            if self._bands[k][1] >= cursor:
                best = k
                break
            j -= 1
        f = self._focus.get(best)
        if f is None:
            f = self._focus[best] = self._pass_focus(best)
        return f

    def _pass_focus(self, k: int) -> PassFocus:
        a, b = self._bands[k]
        g = self.graph
        i, j = g.count_upto(a - 1), g.count_upto(b)
        seeds = set(itertools.islice(g.nodes, i, j))
        for c in range(max(a, 0), min(b, len(self.steps) - 1) + 1):
            # what its backward walks (an older graph, when retained) and starts
            # from; not what a read looks at: ``print(loss.item())`` after the
            # update, in the next iteration's pass, kept the whole iteration
            # before bright (visual review)
            if self.steps[c].kind != "op":
                seeds |= self._highlight(self.steps[c])
        seen, stack = set(seeds), list(seeds)
        preds = g.preds
        while stack:
            for q in preds.get(stack.pop(), ()):
                if q not in seen:
                    seen.add(q)
                    stack.append(q)
        nodes = g.nodes
        keep = frozenset(n for n in seen if n in nodes and nodes[n].step is not None
                         and nodes[n].step < a)
        return PassFocus(k, a, b, keep)

    # -- state -----------------------------------------------------------------------------
    def _materialise(self, c: int):
        grad, leaf = self._mat
        dicts = (grad, leaf)
        while self._mat_pos < c:
            self._mat_pos += 1
            for which, key, _old, new in self._deltas[self._mat_pos]:
                dicts[which][key] = new
        while self._mat_pos > c:
            for which, key, old, _new in reversed(self._deltas[self._mat_pos]):
                if old is _MISSING:
                    dicts[which].pop(key, None)
                else:
                    dicts[which][key] = old
            self._mat_pos -= 1
        return grad, leaf

    def phase(self, index: int) -> str:
        """What part of the run step ``index`` is: "forward", "backward", or "after
        backward" (an op that records no graph and comes after its pass's
        backward: reading the results, ``loss.item()``, ``w.grad``, or the update,
        ``w -= ...``; these read as "forward" steps after the backward ones: first-
        time user review); "" outside the steps."""
        if not 0 <= index < len(self.steps):
            return ""
        cur = self.steps[index]
        if cur.kind.startswith("backward"):
            return "backward"
        if cur.kind == "op" and self._after_backward(cur):
            return "after backward"
        return "forward"

    def _after_backward(self, cur: Step) -> bool:
        trace = self.trace
        op = trace.op_by_id(cur.op)
        if op is None or op.grad_fn:
            return False
        if op.failed and op.kind != "inplace" and op.grad_enabled and any(
                (t := trace.tensors.get(i)) is not None and t.requires_grad for i in op.inputs):
            # it raised before recording: the next forward's first op, not a read of
            # the results (b * x of an inference tensor b, after a first backward:
            # visual review). An in-place one is the update that failed
            # (w -= lr * w.grad outside no_grad): after backward (code review)
            return False
        bw = self._backward_steps
        focus = self.focus_at(cur.index)         # (None in a run of one pass)
        # in a loop: after the backward of this iteration's pass (its update), not the
        # next iteration's input, made before its forward
        start = focus.start if focus is not None else 0
        k = bisect.bisect_left(bw, start)
        return k < len(bw) and bw[k] < cur.index

    def first_output_after(self, index: int) -> int:
        """The index of the first output chunk printed after step ``index``
        (the number of chunks when none was)."""
        return bisect.bisect_right(self._out_seqs, self._seqs[index])

    def state(self, cursor: Optional[int] = None) -> FrameState:
        """Everything the views show at ``cursor`` (default: the timeline's cursor)."""
        c = self._cursor if cursor is None else max(-1, min(int(cursor), len(self.steps) - 1))
        grad, leaf = self._materialise(c)
        cur = self.steps[c] if c >= 0 else None
        # output printed by then
        if c < 0:
            # before the first step nothing has printed yet; a run with no steps at
            # all (no tensor op: a print, or an error before any) printed everything
            k = 0 if self.steps else len(self._out_seqs)
        elif c + 1 < len(self._seqs):
            k = bisect.bisect_left(self._out_seqs, self._seqs[c])
        else:
            k = len(self._out_seqs)
        highlight, edge_grads, accumulated, call = set(), {}, None, None
        if cur is not None:
            highlight = self._highlight(cur)
            call = cur.call
            if cur.kind == "backward":
                ev = self._bw_by_id[cur.backward]
                edge_grads = self._edge_grads(ev)
                if _is_accumulate(ev.grad_fn):
                    accumulated = ev.tensor
        retained = {tid: grad[tid] for tid in self._retaining if tid in grad}
        err = None
        if c >= 0 and c == len(self.steps) - 1 and self.trace.end is not None:
            err = self.trace.end.error
        return FrameState(
            cursor=c, visible_steps=c, current=cur, line=cur.line if cur else None,
            highlight=highlight, edge_grads=edge_grads, leaf_grads=dict(leaf),
            grad_of=dict(grad), stdout_upto=self._out_stdout[k], stderr_upto=self._out_stderr[k],
            outputs_upto=k, retained_grads=retained, accumulated=accumulated,
            backward_call=call, error=err, freed_at=self._freed_at,
            hooks_off=self._hooks_off(c),
            grad_changed=frozenset(key for which, key, _o, _n in self._deltas[c] if which == 1)
            if c >= 0 else frozenset(),
            flag_steps=self.graph.flag_steps, detail_steps=self.graph.detail_steps,
            marks_key=self._marks_key(c), focus=self.focus_at(c) if self._bands else None)

    def _highlight(self, cur: Step) -> set:
        g = self.graph
        if cur.kind == "op":
            ids = g.op_nodes.get(cur.op)
            if ids:
                return set(ids)
            op = self.trace.op_by_id(cur.op)
            return {g.tensor_node[t] for t in (op.inputs if op else ()) if t in g.tensor_node}
        if cur.kind == "backward_call":
            call = self._call(cur.call)
            return {g.tensor_node[t] for t in (call.roots if call else ()) if t in g.tensor_node}
        ev = self._bw_by_id[cur.backward]
        nid = node_of_backward(g, ev)
        return {nid} if nid else set()

    def _edge_grads(self, ev) -> dict:
        g = self.graph
        out = {}
        if _is_accumulate(ev.grad_fn) and ev.tensor is not None:
            return self._arriving_at_leaf(ev)
        if ev.op is None and ev.within is not None and f"o{ev.within}" in g.nodes:
            # a Node inside a composite op: what it sends to the op's inputs leaves
            # the op on their edges
            return self._leaving_composite(ev, ev.within)
        if ev.op is None or f"o{ev.op}" not in g.nodes:
            return out
        onode = f"o{ev.op}"
        op = self.trace.op_by_id(ev.op)
        if op is None:
            return out

        outs = arriving_tensors(op, ev)
        for k, s in enumerate(ev.grad_outputs):
            if s is not None and k < len(outs):
                dst = g.out_node.get((op.id, outs[k]))
                if dst:
                    _put_grad(out, (onode, dst), s)
        self._along_inputs(out, op.id, self._grad_targets(ev, op))
        return out

    def _arriving_at_leaf(self, ev) -> dict:
        """At a leaf's AccumulateGrad step, the gradients that arrive on each of its
        edges, which the engine has summed into the one it accumulates: a weight
        used twice showed ".grad: None -> 8.0" and nothing of the 3.0 and 5.0 that
        make it (first-time user review)."""
        # (call, node id) -> the steps that sent that node gradients; made again once
        # more steps have streamed in (a leaf reached while its call still runs)
        n_steps = len(self.trace.backward)
        known = self._senders
        if known is None or known[0] != n_steps:
            index: dict = {}
            for e in self.trace.backward:
                for n in set(e.next):
                    # (once per sender: MulBackward0 of x * x lists x's node twice,
                    # and each listing added both its gradients again, "6.0 + 6.0 +
                    # 6.0 + 6.0" beside .grad 12.0: visual review)
                    index.setdefault((e.call, n), []).append(e)
            known = self._senders = (n_steps, index)
        g = self.graph
        out = {}
        for e in known[1].get((ev.call, ev.node), ()):
            if e.seq > ev.seq:
                continue
            if e.op is None and e.within is not None:
                # from a Node inside a composite op: along the op's input edge
                host, targets = e.within, self._inner_targets(e)
            else:
                op = self.trace.op_by_id(e.op) if e.op is not None else None
                if op is None:
                    continue
                host, targets = op.id, self._grad_targets(e, op)
            if f"o{host}" in g.nodes:
                self._along_inputs(out, host, [(t, s) for t, s in targets if t == ev.tensor])
        return out

    def _leaving_composite(self, ev, host: int) -> dict:
        """The edges from the composite op ``host``'s inputs that step ``ev`` (a Node
        inside it) sends gradients along."""
        out: dict = {}
        self._along_inputs(out, host, self._inner_targets(ev))
        return out

    def _along_inputs(self, out: dict, host: int, targets) -> None:
        """Each ``(tensor id, gradient)`` of ``targets`` on the edge from that input
        of op ``host`` to it (inputs the graph does not draw are left out)."""
        for tid, s in targets:
            src = self.graph.in_src.get((host, tid))
            if src:
                _put_grad(out, (src, f"o{host}"), s)

    def _inner_targets(self, ev) -> list:
        return [(t, s) for t, _, s in inner_receivers(self.trace, ev, self._node_tensor)
                if t is not None]

    def _grad_targets(self, ev, op) -> list:
        """Pair each gradient the Node sends on with the op input it is for."""
        return [(t, s) for t, _, s in receivers(self.trace, ev, op, self._node_tensor)
                if t is not None]


def nothing_drawn_text(trace, step) -> str:
    """What a step that drew no node did, for a student looking at an empty canvas:
    the first steps of a training snippet (``nn.Sequential(...)`` setting up its
    layers) showed a blank graph and "Nothing selected" (visual review). "" when
    the step is not an op's."""
    if step is None or step.kind != "op" or step.op is None:
        return ""
    op = trace.op_by_id(step.op)
    if op is None:
        return ""
    name = getattr(op, "qualname", None) or op.name     # ("torch.empty", not "empty")
    where = f"Line {op.line} ran {name}" if op.line else f"This step ran {name}"
    if not op.grad_enabled:
        why = ("with grad off (a layer setting up its parameters, a no_grad block): "
               "autograd records nothing of it")
    elif not op.inputs:
        why = ("to make a tensor (a layer's parameter, an input): it is drawn where "
               "the graph uses it")
    elif op.grad_fn is None:
        why = ("on tensors that do not require grad: its result is drawn where the "
               "graph uses it")
    else:
        why = "and drew nothing new here"
    return f"{where} {why}."


def _put_grad(out: dict, edge, summary) -> None:
    """The gradient ``summary`` on ``edge``; two on one edge (a tensor an op reads
    twice) are shown summed, as autograd sums them: "2.0 + 3.0"."""
    text = format_summary(summary)
    out[edge] = out[edge] + " + " + text if edge in out else text


def _put(changes: list, which: int, d: dict, key, new) -> None:
    """``d[key] = new``, noting ``(which, key, old, new)`` in ``changes`` so the
    step can be undone (``Timeline._materialise``)."""
    old = d.get(key, _MISSING)
    if old is not new:
        changes.append((which, key, old, new))
        d[key] = new


_GRAD_KINDS = frozenset({"grad_read", "grad_write", "detach"})


def _is_accumulate(name: str) -> bool:
    return bool(name) and name.endswith("AccumulateGrad")


def node_of_backward(graph: Graph, ev) -> Optional[str]:
    """The graph node a backward step belongs to: the op's node, else the tensor's."""
    if ev.op is not None and f"o{ev.op}" in graph.nodes and not _is_accumulate(ev.grad_fn):
        return f"o{ev.op}"
    if ev.within is not None and f"o{ev.within}" in graph.nodes:
        return f"o{ev.within}"   # a Node inside a composite op (NOTE [composite ops])
    if ev.tensor is not None:
        nid = f"t{ev.tensor}"
        if nid in graph.nodes:
            return nid
        return graph.tensor_node.get(ev.tensor)
    return None
