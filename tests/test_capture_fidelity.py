"""Snippets that lean on torch machinery beyond plain ops print exactly what plain
python prints (stdout and stderr, byte for byte) through a real worker: torch.func
transforms, autograd.functional, checkpointing, forward-mode AD, module hooks,
no_grad as a method decorator, a DataLoader, deepcopy/save/load, a tensor hook,
anomaly mode, a thread, warnings from C++ ops and from the snippet.
(torch.compile matches too; compiling takes seconds, so one case only.)"""
from __future__ import annotations

import subprocess
import sys

import pytest

from capture_helpers import alike_in_the_worker, plain_run, worker_trace

SNIPPET = """\
import copy, io, threading, warnings
import torch
from torch.func import grad, vmap
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset
import torch.autograd.forward_ad as fwAD
torch.manual_seed(0)
f = lambda x: (x.sin() ** 2).sum()
x = torch.tensor([0.5, 1.0, 2.0])
print(grad(f)(x), vmap(torch.dot)(torch.ones(3, 2), torch.arange(6.).reshape(3, 2)))
print(torch.autograd.functional.jacobian(lambda v: v ** 2 + v.sin(), x))
lin = torch.nn.Linear(3, 3)
seen = []
h = lin.register_forward_hook(lambda m, i, o: seen.append(tuple(o.shape)))
xr = torch.randn(2, 3, requires_grad=True)
y = checkpoint(lambda t: torch.relu(lin(t)), xr, use_reentrant=False)
y.sum().backward()
h.remove()
print(seen, xr.grad.shape)
with fwAD.dual_level():
    d = fwAD.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0]))
    print(fwAD.unpack_dual(d.sin() * d).tangent)
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2))
    @torch.no_grad()
    def predict(self, v):
        return self.w * v
n = Net()
print(n.predict(torch.ones(2)).requires_grad, copy.deepcopy(n).w)
buf = io.BytesIO(); torch.save(n.state_dict(), buf); buf.seek(0)
print(torch.load(buf))
ds = TensorDataset(torch.arange(8.).reshape(4, 2), torch.arange(4))
for xb, yb in DataLoader(ds, batch_size=3, shuffle=True):
    print(xb.sum().item(), yb.tolist())
v = torch.ones(3, requires_grad=True)
v.register_hook(lambda g: print("hook", g))
with torch.autograd.set_detect_anomaly(True):
    (v * 2).sum().backward()
out = []
th = threading.Thread(target=lambda: out.append((torch.ones(2) * 3).sum().item()))
th.start(); th.join()
print(out, (v * 2).grad)
warnings.warn("mine")
torch.nn.functional.softmax(torch.ones(2, 2))
"""


def test_torch_machinery_prints_the_same_through_the_worker():
    out, err, _ = alike_in_the_worker(SNIPPET, "machinery.py")
    assert "UserWarning: mine" in err and "hook tensor([2., 2., 2.])" in out



FAST_PATHS = """\
import torch, torch.nn as nn
torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1).eval()
with torch.no_grad():
    out = enc(torch.randn(1, 3, 8), src_key_padding_mask=torch.tensor([[False, False, True]]))
print(out[0, 2])
layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
with torch.no_grad():
    print(layer(torch.randn(1, 3, 8))[0, 0, :3].tolist())
mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
q = torch.randn(1, 3, 8)
with torch.no_grad():
    print(mha(q, q, q)[0][0, 0, :3].tolist())
nt = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]) * 2
print(nt.to_padded_tensor(0.0))
"""


def test_the_transformer_modules_take_their_fused_path_as_under_python():
    """NOTE [fast paths]: in eval mode without grad the modules' fused kernels run
    as under plain python (a padded position comes out zeros, the last bits
    match, the nested-tensor warning is printed); the nested tensors they make
    are recorded (a ragged dimension has no size), not an error in the snippet."""
    out, err = plain_run(FAST_PATHS, "fast.py")
    assert "tensor([0., 0., 0., 0., 0., 0., 0., 0.])" in out and "nested" in err
    tr = worker_trace(FAST_PATHS, "fast.py")
    assert tr.status == "ok", tr.error
    assert (tr.stdout, tr.stderr) == (out, err)
    names = [o.name for o in tr.ops]
    assert {"_transformer_encoder_layer_fwd", "_native_multi_head_attention",
            "to_padded_tensor"} <= set(names)
    mul = tr.ops[names.index("mul")]
    assert tr.tensors[mul.outputs[0]].shape == [2, None]
    # in this process: when the run is over, the check is torch's own again
    import warnings
    import torch
    from capture_helpers import capture
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the nested-tensor one, here)
        assert capture(FAST_PATHS).status == "ok"
        # and after the op limit stopped the recording (a long run's last eval)
        cut = capture(FAST_PATHS, max_ops=3)
        assert cut.truncated and cut.stdout == out
    assert torch.overrides.has_torch_function is torch._C._has_torch_function


BUILTINS = """\
import builtins
builtins.DEBUG = True
print(DEBUG, __builtins__.__name__, type(__builtins__).__name__)
def shout(*args, **kwargs):
    builtins._print(*[str(a).upper() for a in args], **kwargs)
builtins._print, builtins.print = builtins.print, shout
print("loud")
builtins.print = builtins._print
try:
    input(42)
except EOFError:
    print("eof")
import io, sys
sys.stdin = io.StringIO("7\\n")
print(int(input("n? ")) * 2)
"""


def test_the_snippet_s_builtins_are_python_s_builtins_module():
    """Names the snippet adds to or replaces in ``builtins`` are seen by its own
    code (it had a copy of the dict); input() writes its prompt, then EOF."""
    out, err = plain_run(BUILTINS, "b.py")
    assert out == "True builtins module\nLOUD\n42eof\nn? 14\n", (out, err)
    tr = worker_trace(BUILTINS, "b.py")
    assert tr.status == "ok", tr.error
    assert (tr.stdout, tr.stderr) == (out, err)


STREAMS = """\
import sys
sys.stdout.reconfigure(encoding="utf-8")
print(sys.stdout.line_buffering, sys.stdout.mode, sys.stdout.fileno(), sys.stderr.fileno(),
      sys.stdout.newlines, sys.stdout.encoding, sys.stdout.write_through)
sys.stdout.reconfigure(encoding="ascii", errors="backslashreplace")
print("h\\u00e9llo")
sys.stdout.reconfigure(encoding="utf-8", errors="strict")
sys.stdout.reconfigure(line_buffering=True)
print("\\u00e9 ok", sys.stdout.line_buffering)
sys.stdout.reconfigure(newline="\\r\\n")
print("crlf")
sys.stdout.reconfigure(newline="")
sys.stdout.reconfigure(encoding="ascii")
try:
    print("\\u00e9")
except UnicodeEncodeError as e:
    sys.stderr.write(type(e).__name__ + "\\n")
"""


def test_the_snippet_s_stdout_answers_as_a_text_stream_does():
    # tools call sys.stdout.reconfigure(encoding=...) and read .mode, .fileno():
    # none of it may fail where plain Python does not
    out, err = plain_run(STREAMS, "streams.py")
    assert "h\\xe9llo" in out and "crlf\r\n" in out and err == "UnicodeEncodeError\n"
    tr = worker_trace(STREAMS, "streams.py")
    assert tr.status == "ok", tr.error
    assert (tr.stdout, tr.stderr) == (out, err)


ANOMALY = """\
import torch
torch.autograd.set_detect_anomaly(True)
def f(x):
    return torch.sqrt(x) * 0
x = torch.tensor([0.0], requires_grad=True)
f(x).sum().backward()
"""


def test_anomaly_mode_shows_the_forward_stack_plain_python_shows():
    # NOTE [anomaly stacks]: the worker's, session's and recorder's frames are not
    # the snippet's; the stack of the forward call reads as under plain Python
    _, err = plain_run(ANOMALY, "anomaly.py")
    tr = worker_trace(ANOMALY, "anomaly.py")
    assert tr.error.type == "RuntimeError"

    def warning(text):
        return text[:text.index("(Triggered internally")]
    assert 'in f\n    return torch.sqrt(x) * 0' in warning(err)
    assert warning(tr.stderr) == warning(err)


AT_EXIT = """
import atexit, threading, time
import torch
atexit.register(lambda: print("atexit, last registered, first run"))
atexit.register(print, "atexit, first registered")
class Noisy:
    def __del__(self):
        print("del", self.k)
n = Noisy(); n.k = "a global"
_p = Noisy(); _p.k = "a _private global"
c = Noisy(); c.k = "in a cycle"; c.me = c
def late():
    time.sleep(0.2)
    print("a thread, after the last line")
threading.Thread(target=late).start()
print("the last line")
"""


AFTER_THE_END = [
    # a pool left open: python's threading shutdown tells its threads to finish
    """
from concurrent.futures import ThreadPoolExecutor
import torch
ex = ThreadPoolExecutor(2)
print(ex.submit(lambda: torch.ones(2).sum().item()).result())
print("last line")
""",
    # a __del__ at the end sees the globals still bound (the namespace is freed
    # by the collector), in python's order
    """
import logging, sys, torch
logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
log = logging.getLogger("demo")
class A:
    def __init__(s, k): s.k = k
    def __del__(s):
        log.info("del %s sees earlier=%s torch=%s", s.k, earlier, torch.__name__)
earlier = 1
a = A("a"); b = A("b")
first, second = b, a
del a, b
""",
]


def test_what_python_prints_after_the_last_line_is_printed_too():
    """NOTE [the end of a run]: threads joined, atexit functions, then the
    namespace freed and cycles collected, as python does."""
    tr = worker_trace(AT_EXIT)
    out, _ = plain_run(AT_EXIT)
    assert tr.status == "ok" and tr.stdout == out
    assert out.splitlines()[:4] == [
        "the last line", "a thread, after the last line", "atexit, first registered",
        "atexit, last registered, first run"]
    assert sorted(out.splitlines()[4:]) == [
        "del a _private global", "del a global", "del in a cycle"]
    for source in AFTER_THE_END:
        tr = worker_trace(source)
        out, _ = plain_run(source)
        assert tr.status == "ok" and tr.stdout == out and out, source


def test_a_thread_that_never_ends_does_not_hide_how_the_run_ended():
    """python would hang; the run waits a few seconds, says which thread is
    still running, and keeps the snippet's own error."""
    tr = worker_trace("""
import threading, time, torch
stop = threading.Event()
def heartbeat():
    while not stop.is_set():
        time.sleep(0.05)
threading.Thread(target=heartbeat, name="heartbeat").start()
x = torch.ones(2, 3)
y = x @ x
""")
    assert tr.status == "error" and tr.error.type == "RuntimeError" and tr.error.line == 9
    assert "heartbeat still ran" in tr.stderr and "python would wait" in tr.stderr


def test_an_atexit_callback_that_raises_is_reported_without_graphscope_frames():
    """python reports it on stderr ("Exception ignored in atexit callback"),
    with no frame of its own; ours (process_exit.py) were in the report."""
    src = ("import atexit, sys\natexit.register(sys.exit, 4)\n"
           "def g():\n    raise ValueError('x')\natexit.register(g)\nprint('hi')\n")
    out, err = plain_run(src, "ae.py")
    tr = worker_trace(src, "ae.py")
    assert (tr.status, tr.stdout) == ("ok", out)
    assert "graphscope" not in tr.stderr and "process_exit" not in tr.stderr
    assert tr.stderr.count("Exception ignored in atexit callback") == 2 == err.count(
        "Exception ignored in atexit callback")
    assert "SystemExit: 4" in tr.stderr and 'File "ae.py", line 4, in g' in tr.stderr


def test_a_saved_snippet_has_the_loader_python_gives_its_main(tmp_path):
    """``__loader__`` was None; ``python FILE`` gives a SourceFileLoader."""
    import graphscope
    path = tmp_path / "loaded.py"
    src = "print(type(__loader__).__name__, __loader__.name, __loader__.path == __file__)\n"
    path.write_text(src)
    out, _ = plain_run(src, "loaded.py")
    assert out == "SourceFileLoader __main__ True\n"
    assert graphscope.trace(src, str(path), timeout=120).stdout == out
    assert graphscope.trace("print(__loader__)\n", timeout=120).stdout == "None\n"   # not saved


CAUGHT = """\
import logging, traceback
import torch
a = torch.ones(2, 3)
try:
    a @ a
except RuntimeError as e:
    traceback.print_exc()
    print(len(traceback.extract_tb(e.__traceback__)))
def shapes():
    return torch.ones(2) + torch.ones(3)
try:
    shapes()
except RuntimeError:
    logging.exception("caught")
"""


def test_a_caught_torch_error_prints_without_graphscope_s_frames():
    """``try: a @ b`` then ``traceback.print_exc()``: the traceback showed the
    recorder's frames and a trampoline line dressed as the snippet's (NOTE [our
    frames in tracebacks])."""
    out, err = plain_run(CAUGHT, "caught.py")
    assert "Traceback" in err and "RuntimeError" in err
    tr = worker_trace(CAUGHT, "caught.py")
    assert tr.status == "ok", tr.error
    assert "graphscope" not in tr.stderr and "_graphscope_call" not in tr.stderr
    assert tr.stdout == out
    assert tr.stderr == err


def test_the_module_namespace_has_python_s_names():
    """``print(__annotations__)`` raised NameError; python's __main__ has it."""
    src = "x: int = 3\nprint(sorted(k for k in globals() if k.startswith('__')), __annotations__)\n"
    out, err = plain_run(src, "names.py")
    tr = worker_trace(src, "names.py")
    assert tr.status == "ok", tr.error
    assert tr.stdout == out


def test_an_exception_group_shows_every_sub_exception():
    """A failing asyncio.TaskGroup printed only "ExceptionGroup: unhandled errors
    in a TaskGroup (2 sub-exceptions)": what failed was never shown."""
    src = ("import asyncio\nasync def job(i):\n    raise ValueError(f'job {i} failed')\n"
           "async def main():\n    async with asyncio.TaskGroup() as tg:\n"
           "        for i in range(2):\n            tg.create_task(job(i))\n"
           "asyncio.run(main())\n")
    tr = worker_trace(src, "group.py")
    assert tr.status == "error" and tr.error.type == "ExceptionGroup"
    tb = tr.error.traceback
    assert "Exception Group Traceback" in tb
    assert "ValueError: job 0 failed" in tb and "ValueError: job 1 failed" in tb
    assert "graphscope" not in tb


SUBCLASS = """\
import torch
class Counted(torch.Tensor):
    calls = []
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})
x = torch.ones(3).as_subclass(Counted).requires_grad_()
n = len(Counted.calls)
y = x * 2
y.add_(1)
print("inplace", Counted.calls[n:]); n = len(Counted.calls)
z = y[1:]
print("view", Counted.calls[n:]); n = len(Counted.calls)
if y.sum() > 0:
    pass
print("branch", Counted.calls[n:]); n = len(Counted.calls)
v = y.sum().item()
print("item", Counted.calls[n:]); n = len(Counted.calls)
y.retain_grad()
print("retain", Counted.calls[n:]); n = len(Counted.calls)
h = y.register_hook(lambda g: g)
print("hook", Counted.calls[n:]); n = len(Counted.calls)
s = y.sum()
s.backward()
print("backward", Counted.calls[n:]); n = len(Counted.calls)
g = x.grad
print("grad", Counted.calls[n:]); n = len(Counted.calls)
d = x.detach()
print("detach", Counted.calls[n:]); n = len(Counted.calls)
h.remove()
with torch.no_grad():
    x.mul_(0.5)
print("nograd inplace", Counted.calls[n:]); n = len(Counted.calls)
x.grad = None
print("grad set", Counted.calls[n:]); n = len(Counted.calls)
gg = torch.autograd.grad((x * 3).sum(), x)
print("autograd.grad", Counted.calls[n:]); n = len(Counted.calls)
print(len(Counted.calls))
"""


def test_a_tensor_subclass_sees_only_the_snippet_s_own_calls():
    """NOTE [subclass reads]: reading a subclass's values and flags went through
    its own __torch_function__ (the LoggingTensor of torch's docs logged 31 lines
    for ``t + 1``; a strict one refused and the op went unrecorded), on every
    path: ops, in-place changes, views, branches, .grad reads and writes,
    hooks, backward and autograd.grad."""
    out, err = plain_run(SUBCLASS, "sub.py")
    assert out.endswith("20\n")
    tr = worker_trace(SUBCLASS, "sub.py")
    assert tr.status == "ok", tr.error
    assert tr.stdout == out and tr.stderr == err
    assert not tr.truncated
    assert [op.name for op in tr.ops].count("add_") == 1 and tr.backward


PATCHED = """\
import torch
orig_sum = torch.Tensor.sum
calls = 0
def counting_sum(self, *args, **kwargs):
    global calls
    calls += 1
    return orig_sum(self, *args, **kwargs)
torch.Tensor.sum = counting_sum
def counted(orig):                 # a Python method (Tensor.backward), kept in a closure
    def wrapper(*args, **kwargs):
        global calls
        calls += 10
        return orig(*args, **kwargs)
    return wrapper
torch.Tensor.backward = counted(torch.Tensor.backward)
x = torch.ones(3, requires_grad=True)
y = (x * 2).sum()
y.backward()
print("calls:", calls, x.grad)
"""


def test_a_tensor_method_the_snippet_wrapped_runs_once():
    """NOTE [patched methods]: the mode is handed the wrapper; calling it ran the
    snippet's wrapper twice (``calls: 2``)."""
    out, err = plain_run(PATCHED, "patched.py")
    assert out == "calls: 11 tensor([2., 2., 2.])\n"
    tr = worker_trace(PATCHED, "patched.py")
    assert tr.status == "ok", tr.error
    assert tr.stdout == out
    assert [op.name for op in tr.ops if op.name == "sum"] == ["sum"]
    assert len(tr.backward_calls) == 1 and len(tr.backward) == 3   # the pass is recorded


def test_stderr_writes_what_it_cannot_encode_as_python_does():
    src = "import sys\nprint('x\\udcffy', file=sys.stderr)\nprint(sys.stderr.errors)\n"
    out, err = plain_run(src, "surrogate.py")
    tr = worker_trace(src, "surrogate.py")
    assert (tr.stdout, tr.stderr) == (out, err) == ("backslashreplace\n", "x\\udcffy\n")


HOOKED = """\
import sys, traceback
def hook(t, v, tb):
    print("custom hook:", t.__name__, v, len(traceback.extract_tb(tb)), file=sys.stderr)
sys.excepthook = hook
def f():
    raise ValueError("handled by hook")
f()
"""


def test_the_snippet_s_excepthook_gets_its_uncaught_error():
    """Python hands an uncaught error to a ``sys.excepthook`` the snippet set, from
    the snippet's frames on; GraphScope printed its own traceback instead."""
    out, err = plain_run(HOOKED, "hooked.py")
    assert err == "custom hook: ValueError handled by hook 2\n"
    tr = worker_trace(HOOKED, "hooked.py")
    assert tr.status == "error" and tr.error.type == "ValueError"
    assert (tr.stdout, tr.stderr) == (out, err)


def test_stdout_closed_or_detached_behaves_as_python_s():
    closed = ("import sys\nprint('before')\nsys.stdout.close()\ntry:\n    print('after')\n"
              "except ValueError as e:\n    sys.stderr.write(f'ValueError: {e}\\n')\n")
    out, err = plain_run(closed, "closed.py")
    tr = worker_trace(closed, "closed.py")
    assert (tr.stdout, tr.stderr) == (out, err) == ("before\n",
                                                    "ValueError: I/O operation on closed file.\n")
    detached = ("import sys, io\nraw = sys.stdout.detach()\n"
                "sys.stdout = io.TextIOWrapper(raw, encoding='utf-8')\nprint('again')\n")
    out, err = plain_run(detached, "detached.py")
    tr = worker_trace(detached, "detached.py")
    assert tr.status == "ok", tr.error
    assert (tr.stdout, tr.stderr) == (out, err) == ("again\n", "")


def test_the_snippet_sees_only_its_own_threads():
    src = ("import threading\nt = threading.Thread(target=lambda: None)\nt.start(); t.join()\n"
           "print(threading.active_count(), [t.name for t in threading.enumerate()])\n")
    out, err = plain_run(src, "threads.py")
    assert out == "1 ['MainThread']\n"
    assert worker_trace(src, "threads.py").stdout == out


PROFILED = """\
import torch
from torch.profiler import profile
x = torch.ones(3, 3, requires_grad=True)
with profile() as prof:
    y = (x @ x).relu().sum()
    y.backward()
print(sorted({e.key for e in prof.key_averages()}))
"""


def test_the_snippet_s_profiler_sees_only_its_own_ops():
    """NOTE [while the snippet profiles]: GraphScope's reads of values added
    clone, copy_, equal and resolve_conj to the snippet's own profile."""
    out, err = plain_run(PROFILED, "profiled.py")
    tr = worker_trace(PROFILED, "profiled.py")
    assert tr.status == "ok", tr.error
    assert tr.stdout == out
    y = next(t for t in tr.tensors.values() if t.name == "y")
    assert y.shape == [] and y.value is None          # made while profiling: not read


@pytest.mark.parametrize("body", ["raise RuntimeError('hook broke')", "print('in hook'); sys.exit(3)"])
def test_an_excepthook_that_fails_or_exits_ends_as_under_python(body):
    """A hook that raised showed GraphScope's frames and the error it was handling;
    one that called sys.exit was reported as a failing hook."""
    src = (f"import sys\ndef hook(t, v, tb):\n    {body}\nsys.excepthook = hook\n"
           "raise ValueError('orig')\n")
    out, err = plain_run(src, "hookx.py")
    tr = worker_trace(src, "hookx.py")
    assert (tr.stdout, tr.stderr) == (out, err)
    assert "graphscope" not in tr.stderr
    if "exit" in body:
        assert tr.status == "exit" and tr.end.exit_code == 3 and tr.error is None


def test_a_thread_outliving_the_run_with_stderr_closed_ends_cleanly():
    src = ("import sys, threading, time\nthreading.Thread(target=time.sleep, args=(7,)).start()\n"
           "print('main done')\nsys.stderr.close()\n")
    tr = worker_trace(src, "late.py")
    assert tr.status == "ok", tr.error
    assert tr.stdout == "main done\n"


def test_a_forked_child_s_error_handled_by_the_hook_is_printed_once():
    src = ("import sys, os\nsys.excepthook = lambda t, v, tb: print('hook:', v, file=sys.stderr)\n"
           "pid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\n    print('parent done')\n"
           "else:\n    raise ValueError('child')\n")
    out, err = plain_run(src, "forked.py")
    assert err == "hook: child\n"
    tr = worker_trace(src, "forked.py")
    assert (tr.stdout, tr.stderr) == (out, err)


TYPO_IN_A_FUNCTION = """
import torch
learning_rate = 0.1
def step(x):
    return x * learnin_rate
step(torch.ones(1))
"""

TYPO_IN_AN_ATTRIBUTE = """
import torch
x = torch.ones(2, requires_grad=True)
x.sum().bakward()
"""


@pytest.mark.parametrize("src", [TYPO_IN_A_FUNCTION, TYPO_IN_AN_ATTRIBUTE])
def test_a_typo_s_error_keeps_python_s_did_you_mean(src):
    """Fidelity review: python 3.11's traceback module leaves out the hint its C
    printer adds ("Did you mean: 'learning_rate'?"), the line a student with a
    typo reads first. The error's text in the trace is python's, byte for byte."""
    _, err = plain_run(src, "typo.py")
    tr = worker_trace(src, "typo.py")
    assert "Did you mean" in err
    assert tr.error.traceback == err


COMPILED_FUNCTION = """
import torch
lin = torch.nn.Linear(2, 1)
@torch.compile(backend="eager")
def f(x):
    return lin(x).relu()
print(f(torch.ones(1, 2)).shape)
"""


def test_a_compiled_function_calling_a_module_prints_what_python_prints():
    """Fidelity review: Dynamo traced GraphScope's module hooks too, and warned on
    stderr that it does not know how to trace ``sys._getframe``. (Slow: compiling
    takes seconds; the one torch.compile test here.)"""
    out, err = plain_run(COMPILED_FUNCTION, "compiled.py")
    tr = worker_trace(COMPILED_FUNCTION, "compiled.py")
    assert tr.error is None
    assert (tr.stdout, tr.stderr) == (out, err) == ("torch.Size([1, 1])\n", "")


LONE_SURROGATE = '''
print("ok θ")
print("bad \\udcff")
'''


def test_a_lone_surrogate_is_refused_by_stdout_as_python_refuses_it():
    """Fidelity review: python's strict UTF-8 stdout raises UnicodeEncodeError
    for a lone surrogate and writes nothing of that print; the captured stream
    let it through to the console."""
    out, err = plain_run(LONE_SURROGATE, "sur.py")
    tr = worker_trace(LONE_SURROGATE, "sur.py")
    assert out == tr.stdout == "ok θ\n"
    assert tr.error.type == "UnicodeEncodeError" and tr.error.traceback == err


@pytest.mark.parametrize("ioencoding", [None, "utf-8", "utf-8:replace", ":", "utf-8:"])
def test_stdout_s_error_handler_is_python_s_for_the_environment(ioencoding, tmp_path):
    """NOTE [stdout's errors] in capture/output.py (fuzz review): under C.UTF-8,
    python's stdout escapes a lone surrogate ("surrogateescape") where the worker's
    raised; with PYTHONIOENCODING it is its errors part, else strict."""
    import os
    import subprocess
    import sys
    from graphscope.runner import Runner, run_to_trace
    src = 'import sys\nprint(sys.stdout.errors)\nprint("bad \\udcff")\nprint("after")\n'
    f = tmp_path / "sur.py"
    f.write_text(src, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONIOENCODING"}
    env["LC_ALL"] = "C.UTF-8"
    if ioencoding:
        env["PYTHONIOENCODING"] = ioencoding
    plain = subprocess.run([sys.executable, str(f)], capture_output=True, env=env, timeout=60)
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)            # (the worker is spawned in that environment)
    runner = Runner(warm=False)
    try:
        tr = run_to_trace(src, str(f), runner=runner, timeout=60)
    finally:
        runner.close()
        os.environ.clear()
        os.environ.update(saved)
    assert tr.stdout == plain.stdout.decode("utf-8", "replace")
    assert (tr.error is None) == (plain.returncode == 0)


FREED = """\
import torch
class Big:
    def __del__(self):
        print("Big freed")
def f():
    b = Big()
    return torch.ones(2).sum().item()
print(f())
print("after f")
x = torch.zeros(1) + 1
def g():
    b = Big()
    return torch.ones(2) @ torch.ones(3)
try:
    g()
except RuntimeError:
    print("caught")
print("after except")
"""


def test_a_function_s_locals_are_freed_when_it_returns_as_under_python():
    """The recorder kept the last op's frame (and a failed call's exception, with
    its traceback), so a returned function's locals lived until the next op:
    "Big freed" came after "after f" (fidelity review; NOTE [no frame kept])."""
    out, err = plain_run(FREED, "freed.py")
    assert out.splitlines()[:2] == ["Big freed", "2.0"]
    tr = worker_trace(FREED, "freed.py")
    assert tr.status == "ok", tr.error
    assert tr.stdout == out and tr.stderr == err


def test_an_error_of_the_snippet_s_own_is_not_blamed_on_a_caught_one():
    """The recorder knows a failed call's exception by its id, not by holding it:
    the snippet's own RuntimeError, at the address of a caught matmul error, was
    marked as that matmul's (code review). Its type and message must match too."""
    tr = worker_trace("import torch\nfor i in range(3):\n    try:\n"
                      "        torch.ones(2) @ torch.ones(3)\n    except RuntimeError:\n"
                      "        pass\nx = torch.ones(2) * 2\nraise RuntimeError('my own error')\n")
    assert tr.status == "error" and tr.error.message == "my own error"
    assert tr.error.op is None and tr.error.tensor is None


def test_each_call_of_a_snippet_function_names_its_result():
    """A loop's calls of f each make a frame, often at the address of the last: the
    recorder, keeping no frame, took them for one and looked for names once
    (code review: only the last of four results was named)."""
    tr = worker_trace("import torch\ndef f(x):\n    return (x * 2).sum()\n"
                      "t = torch.ones(3, requires_grad=True)\nouts = []\n"
                      "for i in range(4):\n    a = f(t)\n    outs.append(a)\n")
    assert tr.status == "ok", tr.error
    sums = [o.outputs[0] for o in tr.ops if o.name == "sum"]
    assert [tr.tensors[s].name for s in sums] == ["a"] * 4


def test_a_small_run_leaves_the_stack_limit_its_children_inherit_alone():
    """The worker raised its C stack limit for every run, and the snippet's child
    processes gave each thread a 120 MB stack (code review: under a memory limit a
    child started 26 of its 40 threads). Only a run of many ops raises it (NOTE
    [a deep graph's C stack])."""
    src = "import resource\nprint(resource.getrlimit(resource.RLIMIT_STACK))\n"
    out, _ = plain_run(src, "limit.py")
    tr = worker_trace(src, "limit.py")
    assert tr.status == "ok" and tr.stdout == out


def test_an_error_raised_again_with_new_words_keeps_its_op():
    """A snippet that rewrites ``e.args`` and raises it again: the error is still
    the matmul's (code review: keyed by its message, it lost its op)."""
    tr = worker_trace("import torch\na = torch.ones(2, requires_grad=True)\nb = a * 2\n"
                      "try:\n    c = b @ torch.ones(3)\nexcept RuntimeError as e:\n"
                      "    e.args = (f'in layer 1: {e.args[0]}',)\n    raise\n")
    assert tr.status == "error" and tr.error.message.startswith("in layer 1:")
    matmul = [o for o in tr.ops if o.failed]
    assert len(matmul) == 1 and tr.error.op == matmul[0].id


TRACERS = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

@torch.compile(backend="eager", fullgraph=True)
def f(x):
    return torch.sin(x) * 2

x = torch.ones(3, requires_grad=True)
f(x).sum().backward()
print(x.grad)

class M(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1

ep = torch.export.export(M(), (torch.randn(3),))
print(ep.module()(torch.tensor([-1., 0., 2.])))
g = make_fx(lambda t: t.sin() + t.numel(), tracing_mode="symbolic")(torch.randn(3))
print(len(list(g.graph.nodes)))
with FakeTensorMode():
    a = torch.empty(4, 5)
    print(a.T.shape)
"""


def test_compilers_exporters_and_fake_tensors_run_as_under_python():
    """Fuzz review: Dynamo traced the recorder's own __torch_function__, and
    torch.compile(fullgraph=True) failed on it; torch.export and make_fx in
    symbolic mode failed with "pending unbacked symbols" (a summary read a
    tensor with symbolic shapes); a FakeTensor's data pointer warned on stderr,
    naming GraphScope's file. Compiled and traced code is passed through."""
    out, err, tr = alike_in_the_worker(TRACERS, "tracers.py")
    assert "tensor([1.0806, 1.0806, 1.0806])" in out and "torch.Size([5, 4])" in out
    # the eager parts are recorded: x, its backward, the exported module's run
    assert tr.tensor_by_name("x") is not None and tr.backward


def test_the_snippet_sees_the_environment_python_gives_it(tmp_path):
    """Fuzz review: os.environ held PYTHONIOENCODING=utf-8, PYTHONUNBUFFERED and
    GraphScope's own variables, which the runner sets for its worker."""
    import json
    import os
    import subprocess
    import sys
    (tmp_path / "env.py").write_text(
        "import os\nprint(sorted(k for k in os.environ if 'GRAPHSCOPE' in k or "
        "k in ('PYTHONIOENCODING', 'PYTHONUNBUFFERED')), os.environ.get('PYTHONPATH'))\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": root}
    plain = subprocess.run([sys.executable, "env.py"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert plain.stdout == f"[] {root}\n"
    gs = subprocess.run([sys.executable, "-m", "graphscope", "trace", "env.py"], cwd=tmp_path,
                        env=env, capture_output=True, text=True, timeout=120)
    assert json.loads(gs.stdout)["stdout"] == plain.stdout, gs.stderr


def test_a_line_separator_in_a_string_does_not_shift_the_lines_quoted():
    """Python ends a source line at \\n, \\r\\n or \\r only; ``str.splitlines`` also at
    U+2028 and others. The snippet's lines were registered for tracebacks with
    it, and the lines GraphScope quotes counted with it: with U+2028 in a string
    on line 2, a stop in a loop said "It was running line 5" of line 6's text
    (code review). The traceback a snippet prints is python's, and the line an
    error names is the one python names."""
    from graphscope.model.diagnostics import line_text
    from graphscope.snippet_source import source_lines
    src = ('import traceback\ns = "a\u2028b\x0cc"\nimport torch\ntry:\n'
           '    raise ValueError("here")\nexcept ValueError:\n    traceback.print_exc()\n'
           'print(len(s))\n')
    _out, err, _tr = alike_in_the_worker(src)
    assert 'raise ValueError("here")' in err
    tr = worker_trace(src + 'torch.ones(2).view(3)\n')
    assert tr.error.line == 9
    assert line_text(tr.source, 9) == "torch.ones(2).view(3)"
    assert len(source_lines(src)) == 8 and len(src.splitlines()) == 10


def test_a_loaded_or_unpickled_tensor_has_its_shape_and_values():
    """torch.load and pickle.loads rebuild a tensor as torch.empty((0,)) then set_
    onto the data (unseen by the mode): the loaded weight was recorded as an
    ``empty`` op of shape [0] and value [] (NOTE [unpickled tensors])."""
    import torch
    tr = worker_trace("""
        import io, pickle
        import torch
        torch.manual_seed(0)
        m = torch.nn.Linear(3, 2)
        buf = io.BytesIO()
        torch.save(m.state_dict(), buf)
        buf.seek(0)
        sd = torch.load(buf)
        w = sd["weight"] * 1
        p = pickle.loads(pickle.dumps(torch.tensor([1.0, 2.0], requires_grad=True)))
        q = p * 3
        print(p.requires_grad, q.grad_fn.name())
        """)
    torch.manual_seed(0)
    want = torch.nn.Linear(3, 2).weight.tolist()
    mul = [o for o in tr.ops if o.name == "mul"]
    w_in = tr.tensors[mul[0].inputs[0]]
    assert w_in.shape == [2, 3] and w_in.value == want
    p_in = tr.tensors[mul[1].inputs[0]]
    assert p_in.shape == [2] and p_in.value == [1.0, 2.0] and p_in.requires_grad
    assert not [o for o in tr.ops if o.name == "empty" and o.line in (9, 11)]
    assert not [o for o in tr.ops if o.name == "requires_grad"]
    assert tr.stdout == "True MulBackward0\n"


def test_a_loaded_tensor_of_a_newer_dtype_has_its_shape_and_values():
    """uint16, float8 and the other newer dtypes are rebuilt by _rebuild_tensor_v3,
    which the first fix missed: p was still an empty op of shape [0] (code review)."""
    tr = worker_trace("""
        import io
        import torch
        t = torch.tensor([1, 2, 3], dtype=torch.uint16)
        buf = io.BytesIO()
        torch.save(t, buf)
        buf.seek(0)
        p = torch.load(buf)
        q = p.to(torch.int32) + 1
        """)
    assert not [o for o in tr.ops if o.name == "empty"]
    to = next(o for o in tr.ops if o.name == "to")
    p = tr.tensors[to.inputs[0]]
    assert p.shape == [3] and p.value == [1, 2, 3] and p.name == "p"


UNCAUGHT = {
    # the student's own module, where the error is raised
    "helper": "import torch\nimport helper\nhelper.broken()\n",
    # through nn.Module calls (the recorder's global hooks take the hooked path)
    "module": ("import torch\nnet = torch.nn.Sequential(torch.nn.Linear(3, 4))\n"
               "net(torch.randn(2, 5))\n"),
    # a module with a hook of its own: python takes the hooked path too
    "hooked": ("import torch\nlin = torch.nn.Linear(3, 4)\n"
               "lin.register_forward_hook(lambda m, i, o: None)\nlin(torch.randn(2, 5))\n"),
    # torch functions written in Python, which hand themselves to the mode
    "backward": ("import torch\nx = torch.ones(2, requires_grad=True)\ny = (x * 2).sum()\n"
                 "y.backward()\ny.backward()\n"),
    "cross_entropy": ("import torch\nimport torch.nn.functional as F\n"
                      "F.cross_entropy(torch.randn(3, 4), torch.tensor([0, 1, 7]))\n"),
    # raised from another, in a function of the snippet's
    "chained": ("import torch\ndef f():\n    try:\n        torch.ones(2) @ torch.ones(3)\n"
                "    except RuntimeError as e:\n        raise ValueError('wrapped') from e\nf()\n"),
}


@pytest.mark.parametrize("case", sorted(UNCAUGHT))
def test_an_uncaught_error_shows_the_traceback_python_prints(tmp_path, case):
    """NOTE [the traceback python prints]: every frame from the snippet's module on,
    the student's own helper module and torch's included (only the snippet's were
    kept, and an error raised in ``helper.py`` showed just ``import helper``:
    fidelity review), without the entries the recording adds."""
    import graphscope
    (tmp_path / "helper.py").write_text("import torch\nW = torch.ones(2, 3)\n\n"
                                        "def broken():\n    return W @ W\n")
    path = tmp_path / "uncaught.py"
    path.write_text(UNCAUGHT[case])
    plain = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                           cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=120)
    tr = graphscope.trace(UNCAUGHT[case], str(path), timeout=120)
    assert tr.status == "error"
    assert "Traceback" in plain.stderr
    assert tr.error.traceback == plain.stderr
    # the editor marks the snippet's innermost line: the call into helper.py or torch,
    # the raise inside the snippet's own f
    assert tr.error.line == (6 if case == "chained" else UNCAUGHT[case].count("\n"))


STDIN = """\
import select, sys
s = sys.stdin
print(s.fileno(), s.name, s.mode, s.encoding, s.line_buffering, s.seekable(), s.closed)
print(select.select([s], [], [], 0)[0] == [s], repr(s.buffer.read()), repr(s.read()),
      repr(s.readline()), list(s))
try:
    input("How many epochs? ")
except EOFError:
    print("EOF")
"""


def test_stdin_answers_as_python_s_on_dev_null():
    """The worker's stdin is /dev/null, as a terminal's ``python x.py < /dev/null``:
    ``sys.stdin.fileno()`` raised ``UnsupportedOperation`` and ``.buffer``,
    ``.name``, ``.mode`` were missing, where python answers (fidelity review).
    (``input()`` still explains itself in its EOFError's message.)"""
    alike_in_the_worker(STDIN, "stdin.py")
