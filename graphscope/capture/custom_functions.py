"""A custom ``torch.autograd.Function``'s ``apply`` recorded as one op
(NOTE [custom Functions])."""
from __future__ import annotations

import sys

import torch

from graphscope.capture.tensor_facts import flatten_tensors, grad_fn_of, version_of

Tensor = torch.Tensor
_APPLY_CODE = torch.autograd.function.Function.apply.__func__.__code__


# NOTE [custom Functions]: ``MyFn.apply(x)`` is not a torch function the mode
# sees; what it sees are the calls ``forward`` makes, run with autograd off,
# and then the output comes back with ``MyFnBackward`` as its node. Recorded
# as they are, those calls drew ``x -> round (no grad) -> y``: as if the
# Function were outside the graph, the very thing the custom-function
# scenario asks about. So a torch call made with grad mode off (as inside
# every ``forward``) looks for ``Function.apply`` on the stack (the outermost
# one: a Function whose forward uses another is one op); when it is there,
# the calls inside are not recorded, and a profile function
# (``sys.setprofile``, for as long as that apply runs: its ``return`` event
# hands over the outputs) records the apply as one op, ``MyFn``, whose
# output's node is ``MyFnBackward``. An output that is an input (``mark_dirty``)
# makes it an in-place op, with versions and the value after. An in-place
# change the forward makes to any other tensor (a counter the snippet keeps)
# is still recorded: the snippet sees it. Not done when the snippet has a
# profile function of its own; if it sets one inside the forward, the apply
# is not recorded and the recording goes on after it. Left as before: a
# forward run with grad mode on (``torch.enable_grad()`` inside it). Inside a
# forward, ``sys.getprofile()`` returns the watch, not None. An apply whose
# forward raised, and so ended the run, is recorded then, as a failed op.
class CustomFunctions:
    """The custom Function apply a recorder is inside, if any."""

    def __init__(self, recorder) -> None:
        self.r = recorder
        self.state = None    # (apply frame, class, inputs, their versions, their nodes)
        self._watch = None   # the profile function watching for the apply's return
        self.raised = None   # the state of the last apply that raised

    def skips(self, f, ins, kind) -> bool:
        """Whether a torch call made with grad mode off, or inside a custom
        forward (frame ``f`` and up), runs inside one and is not recorded."""
        if self.state is None and not self._enter(f):
            return False
        if sys.getprofile() is not self._watch:
            self.end()   # the snippet set a profiler inside the forward
            return False
        if kind == "inplace" and ins:
            target = ins[0]   # a tensor it was not given: the snippet sees the change
            return any(t is target for t in self.state[2])
        return True

    def _enter(self, f) -> bool:
        apply = None
        snippet = self.r.filename
        while f is not None:
            code = f.f_code
            if code is _APPLY_CODE:
                apply = f
            elif code.co_name == "<module>" and code.co_filename == snippet:
                break   # the snippet's own top level: nothing above it is the snippet's
            f = f.f_back
        if apply is None or sys.getprofile() is not None:
            return False
        cls, ins = _apply_call(apply)
        # the inputs as they were: versions (mark_dirty) and nodes (NOTE [composite ops])
        self.state = (apply, cls, ins, [(t, version_of(t)) for t in ins],
                      [grad_fn_of(t) for t in ins])

        def watch(frame, event, arg):
            if event == "return" and frame is apply:
                state = self.state
                self.end()
                if arg is None:
                    # raised (an apply never returns None): kept until the run's
                    # error is known (record_failed)
                    self.raised = state
                    return
                try:
                    with torch._C.DisableTorchFunction():
                        self._record(state, arg)
                except Exception:
                    pass   # a fact lost, never the snippet's run

        sys.setprofile(watch)
        self._watch = watch
        return True

    def end(self) -> None:
        if self._watch is not None and sys.getprofile() is self._watch:
            sys.setprofile(None)
        self.state = self._watch = None

    def record_failed(self, e: BaseException):
        """The run ended with ``e``: when it came out of the last apply that raised
        (the calls inside a forward are not recorded), that apply is recorded as a
        failed op, so the picture marks where the run failed. Returns (its op id,
        its first input's tensor id), or None."""
        state, self.raised = self.raised, None
        if not self.r.recording:
            return None
        # the outermost apply the error came out of (a forward may raise before
        # any torch call, checking its input: then no watch ever started)
        apply = None
        tb = e.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is _APPLY_CODE:
                apply = tb.tb_frame
                break
            tb = tb.tb_next
        if apply is None:
            return None   # not from a custom Function
        if state is None or state[0] is not apply:
            state = (apply, *_apply_call(apply), None, None)
        cls = state[1]
        if cls is None:
            return None
        name, qual = _names(cls)
        with torch._C.DisableTorchFunction():
            op_id = self.r._record(name, qual, "call", torch.is_grad_enabled(), state[2], [],
                                   None, None, self.r.snippet_frame_from(apply.f_back),
                                   failed=type(e).__name__)
        if op_id is None:
            return None
        return op_id, (self.r.ids.get(state[2][0]) if state[2] else None)

    def _record(self, state, result) -> None:
        r = self.r
        if state is None or result is None or not r.recording:
            return   # the forward raised (the error is the snippet's), or recording ended
        apply, cls, ins, before, in_fns = state
        outs: list = []
        if isinstance(result, Tensor):
            outs.append(result)
        else:
            flatten_tensors(result, outs)
        if not outs or cls is None:
            return
        name, qual = _names(cls)
        dirty = [(t, v) for t, v in before if any(t is o for o in outs)]
        # an output may be an input, or a view of one: it then shares its memory
        r._record(name, qual, "inplace" if dirty else "call", torch.is_grad_enabled(), ins,
                  outs, dirty or None, None, r.snippet_frame_from(apply.f_back), in_fns,
                  may_share=True)


def _apply_call(apply) -> tuple:
    """(the Function class, its tensor arguments) of a running ``Function.apply`` frame."""
    local = apply.f_locals
    ins: list = []
    flatten_tensors(list(local.get("args") or ()), ins)
    flatten_tensors(local.get("kwargs") or {}, ins)
    return local.get("cls"), ins


def _names(cls) -> tuple:
    """(op name, qualified name) of a custom Function's apply."""
    name = getattr(cls, "__name__", "Function")
    return name, f"{getattr(cls, '__module__', '')}.{getattr(cls, '__qualname__', name)}.apply"
