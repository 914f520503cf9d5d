"""Backward passes: one BackwardStep per autograd Node the engine executes.

``Tensor.backward``, ``torch.autograd.backward`` and ``torch.autograd.grad``
all reach the recorder's ``__torch_function__`` (the first calls the second
with the mode off, so it is one call); ``BackwardTracer.run`` then

1. emits the BackwardCall,
2. walks the graph from the roots iteratively (chains of 20,000 ops are
   normal; recursion would overflow) and puts a prehook and a post hook on
   every Node it finds,
3. runs the real call. The mode is off while its handler runs, so torch calls
   made inside the user's tensor hooks and custom ``autograd.Function.backward``
   run normally but are not recorded as ops (re-entering the mode would
   dispatch ``Tensor.backward`` to itself again),
4. removes every handle in ``finally``, whatever the engine raised.

NOTE [node ids]: a Node's Python wrapper is not stable (PyTorch makes a new
one when the old one died), so the forward op that made a Node and the
Node's stable id are stored in ``node.metadata`` (a dict owned by the C++
Node), under ``_KEY``. AccumulateGrad nodes can be recreated for the same leaf
across graphs, so their id is keyed by the leaf's tensor id instead: two
backward calls into the same leaf show the same node.

Each step is emitted from the Node's post hook, which the engine calls right
after the node ran (so post-hook order is execution order) with both the
gradients that arrived and those it sent; a leaf's new ``.grad`` is readable
there too. Only AccumulateGrad nodes also get a prehook, to read ``.grad``
before: a hook costs about 2 us to register from Python (a RemovableHandle
each; more when the cyclic GC runs, see NOTE [gc during capture] in
quiet_gc.py), so there is one per node, not two. A node that raises emits no
step (the error message names it). Everything a step says about its node is
read once, in the walk; the hook only summarises gradients, through the
recorder's SummaryMemo (a gradient a node sends on is the one the next node
receives, summarised once).
"""
from __future__ import annotations

import torch
from torch.autograd.graph import get_gradient_edge

from graphscope import protocol as P
from graphscope.capture.node_owners import node_name
from graphscope.capture.tensor_facts import grad_fn_of, no_subclass_dispatch, version_of
from graphscope.capture.call_sites import call_as_caller
from graphscope.capture.tracebacks import exc_key

_KEY = "graphscope"
Tensor = torch.Tensor


class BackwardTracer:
    def __init__(self, recorder) -> None:
        self.r = recorder
        self.n_calls = 0
        self.running = 0              # backward calls under way (the engine runs hooks)
        self.n_steps = 0
        self.n_nodes = 0
        self.acc_nodes: dict[int, int] = {}   # leaf tensor id -> node id
        self._handles: list = []

    # -- backward call ----------------------------------------------------------------
    def run(self, func, args, kwargs):
        r = self.r
        is_grad = func is torch.autograd.grad
        if is_grad:
            outputs = args[0] if args else kwargs.get("outputs")
            inputs = args[1] if len(args) > 1 else kwargs.get("inputs")
            retain = _arg(args, kwargs, 3, "retain_graph", None)
            create = bool(_arg(args, kwargs, 4, "create_graph", False))
            grads = _arg(args, kwargs, 2, "grad_outputs", None)
        elif func is torch.autograd.backward:
            # (tensors, grad_tensors, retain_graph, create_graph, grad_variables, inputs)
            outputs = args[0] if args else kwargs.get("tensors")
            inputs = _arg(args, kwargs, 5, "inputs", None)
            retain = _arg(args, kwargs, 2, "retain_graph", None)
            create = bool(_arg(args, kwargs, 3, "create_graph", False))
            grads = _arg(args, kwargs, 1, "grad_tensors", None)
            if grads is None:
                grads = kwargs.get("grad_variables")   # (its old, deprecated name)
        else:
            outputs = args[0]
            inputs = _arg(args, kwargs, 4, "inputs", None)
            retain = _arg(args, kwargs, 2, "retain_graph", None)
            create = bool(_arg(args, kwargs, 3, "create_graph", False))
            grads = _arg(args, kwargs, 1, "gradient", None)
        if retain is None:
            retain = create
        roots = _tensors(outputs)
        ins = _tensors(inputs)
        if r.n_ops >= r.max_ops:
            r._truncate()
        if not r.recording:
            return func(*args, **kwargs)

        frame, opaque = r.where(2)
        if opaque:   # NOTE [static tracers] in recorder.py
            return call_as_caller(func, args, kwargs)
        seq = next(r.seq)
        call_id = self.n_calls
        self.n_calls = call_id + 1
        with no_subclass_dispatch():   # NOTE [subclass reads] in recorder.py
            if frame is not None:
                r.names.scan(frame)
            root_ids = [r.tensor_id(t, seq) for t in roots]
            for t, tid in zip(roots, root_ids):
                if t._base is not None:
                    r._own_regenerated(t, tid)   # v.backward() on a view whose base changed
            in_ids = [r.tensor_id(t, seq) for t in ins]
            seed_ids = [None if g is None else r.tensor_id(g, seq)
                        for g in _seeds(outputs, grads)]
        if not any(i is not None for i in seed_ids):
            seed_ids = []
        r.emit(P.BackwardCall(call_id, seq, "grad" if is_grad else "backward",
                              frame.f_lineno if frame is not None else None,
                              root_ids, in_ids, bool(retain), create, seed_ids))

        befores: dict[int, object] = {}   # AccumulateGrad node id -> leaf .grad before
        versions = None   # (leaf, version counter) before the engine ran (NOTE [changed in hooks])
        cleared: list = []   # leaves whose .grad a hook set to None as it was accumulated
        handles = self._handles
        start = len(handles)
        self.running += 1
        try:
            with no_subclass_dispatch():
                leaves, held = self._hook_graph(call_id, roots, befores, bool(retain), cleared)
                versions = [(t, version_of(t)) for t in leaves]
            result = call_as_caller(func, args, kwargs)
            del held
            self._changed_in_hooks(versions, cleared, frame)
        except BaseException as e:
            if r.failed is None or r.failed[0] != exc_key(e):
                r.failed = (exc_key(e), None, root_ids[0] if root_ids else None, None)
            if versions is not None:   # a hook that ran before the error may have changed one
                self._changed_in_hooks(versions, cleared, frame)
            raise
        finally:
            self.running -= 1
            for h in handles[start:]:
                h.remove()
            del handles[start:]
            befores.clear()
        with no_subclass_dispatch():
            if create and r.recording:
                self._record_made_graph(is_grad, args, kwargs, result, roots, ins, leaves,
                                        frame)
            if is_grad and r.recording:
                for t in _tensors(result):
                    r.tensor_id(t, seq)
        return result

    # NOTE [changed in hooks]: the snippet's hooks run inside the engine, where
    # the mode is off (the docstring's step 3), so a torch call they make is not
    # recorded. One such call changes what every later step shows: an optimizer
    # fused into backward (``p.register_post_accumulate_grad_hook`` stepping
    # ``p`` in place), after which the leaf drawn with its old value fed the
    # next op a value it no longer had. So the version counter of every leaf
    # the pass reaches is read before the engine runs and after it returns (or
    # raises), and the leaves that changed get one in-place op at the backward
    # call's line, "changed in a hook", with their values after (the
    # ``_foreach`` ops of an optimizer are recorded so too): one read per leaf
    # per pass, nothing per op. Such a hook usually clears ``p.grad`` too, which
    # AccumulateGrad's post hook sees as a ``.grad`` of None right after
    # accumulating: those leaves get a ``.grad = None`` write (else the step's
    # incoming gradient would stand for the ``.grad`` from then on). A change
    # to a non-leaf, or one undone before the pass ends, is not seen.
    def _changed_in_hooks(self, versions, cleared, frame) -> None:
        r = self.r
        try:
            with no_subclass_dispatch():
                changed = [(t, v) for t, v in versions if version_of(t) != v]
                if changed and r.recording:
                    r._record("changed in a hook", "a hook the snippet registered",
                              "inplace", False, [t for t, _ in changed], [], changed,
                              None, frame)
                for t in cleared:
                    tid = r.ids.get(t)
                    if t._grad is None and tid is not None and r.recording:
                        op = r._record("grad", "torch.Tensor.grad", "grad_write", False, [t],
                                       [], None, ["None"], frame)
                        if op is not None:
                            r.emit(P.TensorUpdate(tid, {"grad": None, "grad_stats": None}))
        except Exception as bad:   # NOTE [the snippet's call comes first] in recorder.py
            r.could_not_record(bad)

    def _record_made_graph(self, is_grad, args, kwargs, result, roots, ins, leaves,
                           frame) -> None:
        """NOTE [graphs made by backward]: the gradients a ``create_graph=True``
        call made, with graphs of their own, as the output of one op."""
        r = self.r
        if is_grad:
            made = [t for t in _tensors(result) if grad_fn_of(t) is not None]
            # a grad_outputs that requires grad is data of the new graph too
            # (grad(y, x, go, create_graph=True) is go times dy/dx)
            data = roots + ins + [t for t in _tensors(_arg(args, kwargs, 2, "grad_outputs",
                                                            None)) if t.requires_grad]
            name, qual = "autograd.grad", "torch.autograd.grad"
        else:
            made, owners = [], []
            for leaf in leaves:
                try:
                    g = leaf._grad
                except Exception:
                    g = None
                # a .grad this call made: new to the recorder (an older one, of a
                # leaf this call did not reach, is not its)
                if (g is not None and grad_fn_of(g) is not None and r.ids.get(g) is None
                        and not any(g is m for m in made)):
                    made.append(g)
                    owners.append(leaf)
            # from the roots and the leaves whose .grad it made (the new graph reads
            # them: d(x**3)/dx = 3 * x**2)
            data = roots + (ins or owners)
            name, qual = "backward", "torch.Tensor.backward"
        if made:
            r._record(name, qual, "call", torch.is_grad_enabled(), data, made, None, None,
                      frame)

    # NOTE [graphs made by backward]: with ``create_graph=True`` the backward pass
    # is itself recorded by autograd: the gradient ``torch.autograd.grad`` returns
    # has a graph of its own (``3 * x ** 2`` for ``y = x ** 3``), made of nodes the
    # engine created while running the backward formulas, in C++, where the mode
    # sees nothing. So the call is recorded as one op from the roots and inputs to
    # the gradients it returned (``.backward(create_graph=True)``: from the roots
    # and the leaves to their new ``.grad``), owning those nodes as a composite op owns its
    # inner ones (NOTE [composite ops]): a second pass through them is stepped
    # inside it, and the picture shows dy made from y and x.
    def _hook_graph(self, call_id, roots, befores, retain: bool = True,
                    cleared=None) -> tuple[list, list]:
        """Put a post hook on every Node reachable from the roots (and a prehook
        on AccumulateGrad nodes).

        What a step reports about its node (id, name, forward op, tensor, the
        ids of the nodes it sends to) is fixed before the engine starts, so it
        is read here once, in the walk, and bound to the node's hook: the hook
        itself only summarises gradients.
        """
        stack = []
        held = []          # root leaves' AccumulateGrad nodes, kept through the call
        for t in roots:
            node = t.grad_fn
            if node is None and t.requires_grad:
                try:
                    node = get_gradient_edge(t).node
                except Exception:
                    node = None
                else:
                    # a leaf's AccumulateGrad lives only while something holds
                    # it: let go before the call, the engine made a new one
                    # without the hooks (x.backward(v) on a leaf: no step)
                    held.append(node)
            if node is not None:
                stack.append(node)
        infos: dict = {}   # id(node) -> its node_info, read once per node in this walk
        leaves = []        # the leaves of the AccumulateGrad nodes reached
        keep = []          # wrappers stay alive during the call, so id() stays unique
        handles = self._handles
        node_info = self._node_info
        emit_step = self._emit_step
        r = self.r
        pre_summary = r.memo.summary
        summary_as = r.memo.summary_as
        seq = r.seq
        # The hooks run inside the recorder's __torch_function__ (Tensor.backward's
        # handler), where the mode is off: the torch calls that summarise a
        # gradient are never recorded, so the hooks need no guard of their own.
        while stack:
            node = stack.pop()
            key = id(node)
            info = infos.get(key)
            if info is None:
                info = infos[key] = node_info(node)
                keep.append(node)
            elif info[3]:
                continue   # hooked already
            info[3] = True
            nxt = []
            for n, _ in node.next_functions:
                if n is not None:
                    ni = infos.get(id(n))
                    if ni is None:
                        ni = infos[id(n)] = node_info(n)
                        keep.append(n)
                    nxt.append(ni[2])
                    if not ni[3]:
                        stack.append(n)
            # NOTE [released]: without retain_graph the engine frees what each
            # Node saved right after running it; a Node that saved nothing
            # (AddBackward0) can be run again, so only the others are marked
            fixed = (info[2], node_name(node), info[0], info[1], nxt, info[5],
                     not retain and _saves_tensors(node))

            if info[4]:   # AccumulateGrad
                leaves.append(node.variable)
                # (the leaf may be a subclass: its .grad is read without its
                # __torch_function__, NOTE [subclass reads] in recorder.py)
                def pre(grad_outputs, node=node, nid=info[2]):
                    with no_subclass_dispatch():
                        g = node.variable._grad
                        befores[nid] = pre_summary(g) if g is not None else None
                handles.append(node.register_prehook(pre))

                def post(grad_inputs, grad_outputs, node=node, fixed=fixed):
                    with no_subclass_dispatch():
                        g = node.variable._grad
                        before = befores.pop(fixed[0], None)
                        if g is None:
                            after = None   # a hook of the leaf's took it (NOTE [changed in hooks])
                            if cleared is not None:
                                cleared.append(node.variable)
                        elif before is None and grad_outputs:
                            # into an empty .grad: the incoming gradient or a copy
                            # (NOTE [same elements] in summaries.py)
                            pre_summary(grad_outputs[0])
                            after = summary_as(g, grad_outputs[0])
                        else:
                            after = pre_summary(g)
                        emit_step(call_id, fixed, next(seq), grad_outputs, grad_inputs,
                                  before, after)
            else:
                def post(grad_inputs, grad_outputs, fixed=fixed):
                    emit_step(call_id, fixed, next(seq), grad_outputs, grad_inputs,
                              None, None)

            handles.append(node.register_hook(post))
        del keep
        return leaves, held

    def _node_info(self, node) -> list:
        """[forward op, tensor, node id, hooked in this walk, is AccumulateGrad,
        op whose sub-graph holds it] of ``node`` (NOTE [node ids]), assigning the
        id; a copy per walk, so the hooked flag starts False."""
        meta = node.metadata
        info = meta.get(_KEY)
        if info is None:
            info = meta[_KEY] = [None, None, None, None]
        acc = _is_acc(node)
        if info[2] is None:
            if acc:
                tid = self.r.tensor_id(node.variable, 0)
                nid = self.acc_nodes.get(tid)
                if nid is None:
                    nid = self.acc_nodes[tid] = self._new_node()
                info[1] = tid
            else:
                nid = self._new_node()
            info[2] = nid
        return [info[0], info[1], info[2], False, acc, info[3]]

    def _new_node(self) -> int:
        n = self.n_nodes
        self.n_nodes = n + 1
        return n

    def _emit_step(self, call_id, fixed, seq, grad_outputs, grad_inputs, before,
                   after) -> None:
        nid, gname, op, tensor, nxt, within, released = fixed
        sm = self.r.memo.summary
        sid = self.n_steps
        self.n_steps = sid + 1
        self.r.emit(P.BackwardStep(
            sid, seq, call_id, gname, nid, op, tensor, list(nxt),
            [sm(g) for g in grad_outputs], [sm(g) for g in grad_inputs], before, after,
            within, released))

    def remove_all(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()


_SAVED_NAMES: dict = {}   # Node type -> its ``_raw_saved_*`` attribute names


def _saves_tensors(node) -> bool:
    """Whether ``node`` holds saved tensors (NOTE [released]), read from the raw
    ``SavedTensor`` handles (``_raw_saved_*``; a custom Function's
    ``_raw_saved_tensors``) and what they store (``.data``: None for a slot
    autograd left empty, as ``addmm``'s matrices when only the bias needs a
    gradient), never unpacked: unpacking runs the snippet's saved-tensor hooks
    (``checkpoint`` would recompute its forward)."""
    tp = type(node)
    names = _SAVED_NAMES.get(tp)
    if names is None:
        names = _SAVED_NAMES[tp] = tuple(a for a in dir(node) if a.startswith("_raw_saved_"))
    try:
        for a in names:
            v = getattr(node, a)
            for st in (v if isinstance(v, (tuple, list)) else (v,)):
                if st is not None and _holds(st):
                    return True
    except Exception:
        return False    # already freed, or unreadable: this pass frees nothing new
    return False


def _holds(st) -> bool:
    try:
        return st.data is not None
    except Exception:
        return True     # something is stored that cannot be read without unpacking


def _is_acc(node) -> bool:
    return type(node).__name__ == "AccumulateGrad"


def _arg(args, kwargs, i, name, default):
    if name in kwargs:
        return kwargs[name]
    return args[i] if len(args) > i else default


def _seeds(outputs, grads) -> list:
    """The gradient given for each root (``backward(gradient=v)``, ``grad_outputs=``,
    ``grad_tensors=``), a tensor or None, in the order of ``_tensors(outputs)``."""
    outs = [outputs] if isinstance(outputs, Tensor) else (
        list(outputs) if isinstance(outputs, (list, tuple)) else [])
    if grads is None or isinstance(grads, Tensor):
        gs = [grads]
    elif isinstance(grads, (list, tuple)):
        gs = list(grads)
    else:
        gs = []
    gs += [None] * (len(outs) - len(gs))
    return [g if isinstance(g, Tensor) else None
            for o, g in zip(outs, gs) if isinstance(o, Tensor)]


def _tensors(obj) -> list:
    if obj is None:
        return []
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for t in obj if isinstance(t, Tensor)]
    return []
