"""Every bundled scenario shows what it claims: run through GraphScope's worker
(one worker per snippet, the path the app takes) and with plain python, and the
two agree.

Cost: each worker imports torch (about 1.5 s of CPU), so the worker runs go two
at a time. The plain-python side imports torch once and forks a child per
snippet; the child runs the file as ``python FILE`` would (``__main__``, its own
argv and sys.path, uncaught exceptions printed by the default hook), so it sees
what a learner's terminal shows. ``test_fork_runner_matches_a_fresh_python``
checks that claim against real fresh interpreters.
"""
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from graphscope import scenarios as S

BUNDLED, _PROBLEMS = S.load_dir(S.bundled_dir())
BY_ID = {s.id: s for s in BUNDLED}
IDS = sorted(BY_ID)

# Where GraphScope's capture changes what a snippet does (a fidelity bug in the
# worker, not in the scenario), name it here with the reason: the plain-python
# tests still hold it, and the worker tests are marked xfail until it is fixed.
KNOWN_CAPTURE_BUGS: dict = {}

# Claims that notes and explanations make about code other than the snippet
# (the fix the note proposes, what an optimizer does), run the same way.
CLAIMS = {
    "practice-2 note: floats build the graph": (
        "import torch\n"
        "x = torch.tensor(2.0, requires_grad=True); y = torch.tensor(3.0, requires_grad=True); z = x + y\n"
        "print(z.grad_fn.name())\n",
        "AddBackward0\n"),
    "practice-4 note: with requires_grad the program prints tensor(36.)": (
        BY_ID["practice-4-missing-requires-grad"].snippet.replace(
            "torch.tensor(2.0)", "torch.tensor(2.0, requires_grad=True)"),
        "tensor(36.)\n"),
    "optimizer-step-no-grad: torch.optim.SGD makes the same update, under no_grad": (
        "import torch\n"
        "v = torch.tensor([1.0, -2.0], requires_grad=True)\n"
        "opt = torch.optim.SGD([v], lr=0.1)\n"
        "(v ** 2).sum().backward()\n"
        "opt.step()\n"
        "print(v, v.is_leaf, v.grad_fn)\n",
        "tensor([ 0.8000, -1.6000], requires_grad=True) True None\n"),
}

FORK_RUNNER = r'''
import json, os, runpy, shutil, sys, tempfile, time, traceback
import torch  # once, in the parent; each snippet runs in a forked child

results = []
for job in json.load(sys.stdin):
    d = tempfile.mkdtemp(prefix="graphscope-plain-")
    path = os.path.join(d, job["filename"])
    with open(path, "w", encoding="utf-8") as f:
        f.write(job["source"])
    out, err = path + ".stdout", path + ".stderr"
    sys.stdout.flush(); sys.stderr.flush()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT), 1)
        os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT), 2)
        sys.argv = [path]
        sys.path[0] = d
        os.chdir(d)
        code = 0
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    results.append({"id": job["id"], "returncode": rc, "seconds": time.perf_counter() - t0,
                    "stdout": open(out, encoding="utf-8").read(),
                    "stderr": open(err, encoding="utf-8").read()})
    shutil.rmtree(d, ignore_errors=True)   # 42 folders left in /tmp by every run of the suite
json.dump(results, sys.__stdout__)
'''


def run_plain_many(scenarios, extra=()):
    """{id: (Outcome, seconds)} for each scenario (and each ``(id, source)`` in
    ``extra``), run as plain python (forked)."""
    jobs = [{"id": s.id, "filename": s.snippet_filename, "source": s.snippet} for s in scenarios]
    jobs += [{"id": i, "filename": "claim.py", "source": src} for i, src in extra]
    p = subprocess.run([sys.executable, "-c", FORK_RUNNER], input=json.dumps(jobs),
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONIOENCODING="utf-8"))
    assert p.returncode == 0, p.stderr
    return {r["id"]: (S.outcome_of_process(r["returncode"], r["stdout"], r["stderr"]), r["seconds"])
            for r in json.loads(p.stdout)}


@pytest.fixture(scope="module")
def plain():
    return run_plain_many(BUNDLED, [(name, src) for name, (src, _) in CLAIMS.items()])


@pytest.fixture(scope="module")
def traced():
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = pool.map(lambda s: S.run_traced(s.snippet, s.snippet_filename), BUNDLED)
        return dict(zip((s.id for s in BUNDLED), outcomes))


def test_bundled_folder_has_no_problems():
    assert _PROBLEMS == [] and len(BUNDLED) >= 31


@pytest.mark.parametrize("sid", IDS)
def test_plain_python_shows_what_the_scenario_claims(sid, plain):
    outcome, _ = plain[sid]
    assert S.compare(BY_ID[sid], outcome) == [], outcome.stderr[-2000:]


@pytest.mark.parametrize("sid", IDS)
def test_graphscope_worker_shows_what_the_scenario_claims(sid, traced, request):
    if sid in KNOWN_CAPTURE_BUGS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_CAPTURE_BUGS[sid], strict=False))
    outcome = traced[sid]
    assert S.compare(BY_ID[sid], outcome) == [], outcome


@pytest.mark.parametrize("sid", IDS)
def test_graphscope_and_plain_python_agree(sid, traced, plain, request):
    if sid in KNOWN_CAPTURE_BUGS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_CAPTURE_BUGS[sid], strict=False))
    a, (b, _) = traced[sid], plain[sid]
    assert (a.status, a.error_type) == (b.status, b.error_type)
    if BY_ID[sid].expect.stdout is not None:  # byte-identical where the output is deterministic
        assert a.stdout == b.stdout
    if b.error_message is not None:
        # plain python's traceback text may carry extra lines (notes, TorchScript frames)
        first = b.error_message.splitlines()[0]
        assert first in (a.error_message or "")


@pytest.mark.parametrize("claim", sorted(CLAIMS))
def test_claims_in_notes_and_explanations_hold(claim, plain):
    outcome, _ = plain[claim]
    assert (outcome.status, outcome.stdout) == ("ok", CLAIMS[claim][1]), outcome.stderr[-2000:]


def test_snippets_are_quick(plain):
    # Not a timing assertion on the machine's speed: a guard against a snippet
    # that does far more work than a classroom example should (a slip such as
    # range(10**7)). The budget is generous; typical snippets take ~0.1 s.
    slow = {sid: round(t, 2) for sid, (_, t) in plain.items() if sid in BY_ID and t > 10}
    assert slow == {}


def test_fork_runner_matches_a_fresh_python(plain):
    picked = [BY_ID[i] for i in ("practice-4-missing-requires-grad", "static-jit-trace-branch")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        fresh_runs = list(pool.map(lambda s: S.run_plain(s.snippet, s.snippet_filename), picked))
    # warnings name the file by its (temporary) path: compare from the file name on
    warnings = lambda o: [re.sub(r"^\S*/", "", ln) for ln in o.stderr.splitlines() if "Warning" in ln]  # noqa: E731
    for s, fresh in zip(picked, fresh_runs):
        f, _ = plain[s.id]
        assert (f.status, f.stdout, f.error_type, f.error_message) == \
               (fresh.status, fresh.stdout, fresh.error_type, fresh.error_message)
        assert warnings(f) == warnings(fresh)  # the TracerWarning a learner sees
    assert warnings(plain["static-jit-trace-branch"][0])[0].startswith(
        "static-jit-trace-branch.py:4: TracerWarning: Converting a tensor to a Python boolean")
