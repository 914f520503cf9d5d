"""GraphScope side by side with plain PyTorch, torchviz and TorchLens, in one table.

    .venv/bin/python benchmarks/bench_compare.py [--repeat 3] [--limit 60] [--only rnn100,mlp]

The workloads are those of /work/shared/ANCHORS.md (benchmarks/workloads.py).
Every cell runs in its own fresh process (``--cell``, below) with
torch.set_num_threads(1), so one tool's global patching (TorchLens wraps every
torch function) or one runaway Graphviz never touches another cell, and a
cell that takes longer than ``--limit`` seconds is killed and shown as
"> 60 s". Inside a cell, one untimed run on the 5-op workload pays the
one-time costs (imports, TorchLens's wrapping of torch) first; then the
workload is timed ``--repeat`` times and the median shown, fewer times when a
run is slow (a cell stops sampling once one run took over a quarter of the
limit). The two end-to-end columns are whole fresh interpreters, timed from
outside: ``python x.py`` and ``graphscope export x.py --format png``.

Columns (all seconds or milliseconds of wall time):
  plain         forward + loss + backward, exec'd in-process, no tool
  python x.py   the same script as a fresh interpreter (imports torch)
  GS capture    graphscope.capture.session.run_snippet with a list as emit
  GS graph+lay  build_graph, LayeredLayout and tidy() on the captured trace
  GS render png graphscope.ui.render.render_file(trace, path, "png"), offscreen:
                graph, layout, timeline, painting and PNG encoding
  GS render svg the same to SVG, the like-for-like counterpart of `dot -Tsvg`
  GS export     `graphscope export x.py --format png`, a fresh process
                (CLI, worker, capture, pipe, layout, render)
  tv make_dot   torchviz.make_dot(loss, params) after the run
  tv dot        Graphviz `dot -Tsvg` on make_dot's source
  TL trace      torchlens.trace(model, inputs) (forward only, TorchLens has
                no snippet mode: workloads are written as nn.Modules for it)
  TL draw       Trace.draw(..., vis_fileformat="svg"), which runs Graphviz

torchviz and TorchLens are optional (`pip install .[bench]`, Graphviz from
Debian's `graphviz` package); their columns say "not installed" when missing.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import workloads as W  # noqa: E402

# Parts of each in-process cell, in the order the cell runs them.
TOOLS = {
    "plain": ["plain"],
    "graphscope": ["capture", "graph_layout", "render_png", "render_svg"],
    "torchviz": ["make_dot", "dot_svg"],
    "torchlens": ["tl_trace", "tl_draw"],
}


# ----------------------------------------------------------------------------
# The child side: one tool on one workload, results as JSON lines on stdout.
# ----------------------------------------------------------------------------
class CellTimeout(Exception):
    """A part of a cell ran past the limit (only Graphviz, run by the cell itself)."""


def _say(**kw) -> None:
    sys.__stdout__.write(json.dumps(kw) + "\n")
    sys.__stdout__.flush()


def _namespace(w: W.Workload) -> dict:
    g = {"__name__": "__bench__"}
    exec(compile(W.HEADER + w.defs, f"<{w.key}>", "exec"), g)
    return g


class Cell:
    """Times one tool on one workload; ``parts(w, report)`` runs once and calls
    ``report(part, seconds)`` for each timed part."""

    def __init__(self, tool: str, tmp: Path, limit: float):
        self.tool, self.tmp, self.limit = tool, tmp, limit
        import torch
        torch.set_num_threads(1)
        self.torch = torch
        self.notes: list[str] = []
        if tool == "graphscope":
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
            from graphscope import protocol as P
            from graphscope.capture.session import run_snippet
            from graphscope.model.graph import build_graph
            from graphscope.model.layout import LayeredLayout
            from graphscope.model.trace import Trace
            from graphscope.ui.render import ensure_app, render_file
            ensure_app()
            self.gs = (P, run_snippet, build_graph, LayeredLayout, Trace, render_file)
        elif tool == "torchviz":
            import torchviz
            self.make_dot = torchviz.make_dot
        elif tool == "torchlens":
            import torchlens
            self.tl = torchlens

    # each returns nothing; calls report(part, seconds) as parts finish
    def run(self, w: W.Workload, report) -> None:
        getattr(self, "_" + self.tool)(w, report)

    def _plain(self, w, report):
        code = compile(W.snippet(w), f"<{w.key}>", "exec")
        g = {"__name__": "__main__"}
        t0 = time.perf_counter()
        exec(code, g)
        report("plain", time.perf_counter() - t0)

    def _graphscope(self, w, report):
        P, run_snippet, build_graph, LayeredLayout, Trace, render_file = self.gs
        msgs: list = []
        t0 = time.perf_counter()
        end = run_snippet(P.Run(source=W.snippet(w), filename=f"{w.key}.py",
                                max_ops=10_000_000), msgs.append)
        report("capture", time.perf_counter() - t0)
        if end.status != "ok":
            raise RuntimeError(f"snippet ended {end.status}: {end.error}")
        tr = Trace(source=W.snippet(w), filename=f"{w.key}.py")
        tr.extend(msgs)
        tr.apply(end)
        t0 = time.perf_counter()
        graph = build_graph(tr)
        layout = LayeredLayout(graph)
        layout.tidy()
        report("graph_layout", time.perf_counter() - t0)
        out = self.tmp / f"gs_{w.key}.png"
        t0 = time.perf_counter()
        render_file(tr, out, "png")
        report("render_png", time.perf_counter() - t0)
        if not out.stat().st_size:
            raise RuntimeError("empty PNG")
        t0 = time.perf_counter()
        render_file(tr, out.with_suffix(".svg"), "svg")
        report("render_svg", time.perf_counter() - t0)

    def _torchviz(self, w, report):
        g = {"__name__": "__main__"}
        exec(compile(W.snippet(w), f"<{w.key}>", "exec"), g)
        params = dict(g["model"].named_parameters())
        t0 = time.perf_counter()
        try:
            dot = self.make_dot(g["loss"], params=params)
        except RecursionError:
            # torchviz recurses along the graph; a 1,000-op chain is too deep for
            # Python's default limit. Say so, then measure with a raised limit.
            self._note("make_dot: RecursionError at the default recursion limit; "
                       "timed with sys.setrecursionlimit(10**6)")
            sys.setrecursionlimit(10**6)
            t0 = time.perf_counter()
            dot = self.make_dot(g["loss"], params=params)
        report("make_dot", time.perf_counter() - t0)
        src = self.tmp / f"tv_{w.key}.dot"
        src.write_text(dot.source)
        out = self.tmp / f"tv_{w.key}.svg"
        _say(start="dot_svg")
        t0 = time.perf_counter()
        try:
            subprocess.run(["dot", "-Tsvg", str(src), "-o", str(out)], check=True,
                           timeout=self.limit, stdout=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise CellTimeout("dot_svg") from None
        report("dot_svg", time.perf_counter() - t0)

    def _torchlens(self, w, report):
        g = _namespace(w)
        self.torch.manual_seed(0)
        model = g["Model"]()
        inputs = list(g["make_inputs"]())
        t0 = time.perf_counter()
        tr = self.tl.trace(model, inputs)
        report("tl_trace", time.perf_counter() - t0)
        _say(start="tl_draw")
        t0 = time.perf_counter()
        tr.draw(vis_outpath=str(self.tmp / f"tl_{w.key}"), vis_fileformat="svg",
                vis_save_only=True)
        report("tl_draw", time.perf_counter() - t0)

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            _say(note=text)


def cell_main(tool: str, key: str, repeat: int, limit: float) -> int:
    w = W.by_key(key)
    with tempfile.TemporaryDirectory(prefix="gs-bench-") as tmp:
        # Workload output (the MLP prints nothing, but a snippet may) must not
        # mix with the result lines.
        sys.stdout = open(os.devnull, "w")
        cell = Cell(tool, Path(tmp), limit)
        cell.run(W.FIVE_OPS, lambda part, s: None)        # one-time costs, untimed
        _say(ready=True)
        for i in range(repeat):
            took = 0.0

            def report(part, s):
                nonlocal took
                took += s
                _say(sample=i, part=part, s=s)
            try:
                cell.run(w, report)
            except CellTimeout as e:
                _say(sample=i, part=str(e), timeout=True)
                break
            if took > limit / 4:      # a slow cell: fewer samples
                break
        _say(done=True)
    return 0


# ----------------------------------------------------------------------------
# The parent side: start cells, enforce the limit, collect medians.
# ----------------------------------------------------------------------------
class Result:
    """Samples of each part of one cell, or why there are none."""

    def __init__(self):
        self.samples: dict[str, list] = {}
        self.timeout: set[str] = set()
        self.notes: list[str] = []
        self.error: str | None = None

    def median(self, part):
        s = self.samples.get(part)
        return statistics.median(s) if s else None

    def n(self, part) -> int:
        return len(self.samples.get(part, ()))


def _reader(stream, q):
    for line in stream:
        q.put(line)
    q.put(None)


def _kill(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)      # the cell and any dot it started
    except ProcessLookupError:
        pass
    p.wait()


def run_cell(tool: str, w: W.Workload, repeat: int, limit: float) -> Result:
    r = Result()
    parts = TOOLS[tool]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--cell", tool, w.key,
           "--repeat", str(repeat), "--limit", str(limit)]
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", OMP_NUM_THREADS="1")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=ROOT, start_new_session=True)
    q: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(p.stdout, q), daemon=True).start()
    err: list = []
    threading.Thread(target=lambda: err.extend(p.stderr), daemon=True).start()
    # set-up (imports, warm-up) gets its own generous allowance; each part then
    # gets ``limit`` seconds from the moment the previous one reported
    deadline = time.monotonic() + max(120.0, limit)
    running = None        # the part the cell is in now, as far as we know
    done = False
    while True:
        try:
            line = q.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            _kill(p)
            if running is None:
                r.error = "set-up took too long"
            else:
                r.timeout.add(running)
            break
        if line is None:
            break
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if "note" in m:
            r.notes.append(m["note"])
        elif m.get("ready"):
            running = parts[0]
        elif "start" in m:
            running = m["start"]
        elif "sample" in m:
            if m.get("timeout"):
                r.timeout.add(m["part"])
            else:
                r.samples.setdefault(m["part"], []).append(m["s"])
                i = parts.index(m["part"])
                running = parts[(i + 1) % len(parts)]
        elif m.get("done"):
            done = True
        deadline = time.monotonic() + limit + 5.0
    if p.poll() is None:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill(p)
    if not done and not r.timeout and r.error is None:
        tail = "".join(err).strip().splitlines()[-1:] or [f"exit code {p.returncode}"]
        r.error = tail[0][:160]
    return r


def run_fresh(cmd: list, repeat: int, limit: float, cwd) -> Result:
    """Wall time of a whole command, ``repeat`` times (fewer when slow)."""
    r = Result()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT))
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env, cwd=cwd, start_new_session=True)
        try:
            _, e = p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill(p)
            r.timeout.add("run")
            break
        dt = time.perf_counter() - t0
        if p.returncode:
            r.error = (e.strip().splitlines() or [f"exit code {p.returncode}"])[-1][:160]
            break
        r.samples.setdefault("run", []).append(dt)
        if dt > limit / 4:
            break
    return r


def available() -> dict:
    """Which optional tools can run here, and why not where they cannot."""
    import importlib.util
    why = {}
    for tool, mod in (("torchviz", "torchviz"), ("torchlens", "torchlens")):
        if importlib.util.find_spec(mod) is None:
            why[tool] = f"{mod} not installed (pip install .[bench])"
        elif shutil.which("dot") is None:
            why[tool] = "Graphviz `dot` not on PATH (apt-get install graphviz)"
    return why


# ----------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------
def fmt(r: Result | None, part: str, limit: float, repeat: int) -> str:
    if r is None:
        return "n/a"     # tool not installed or not asked for (--tools)
    if r.error and part not in r.samples:
        return "error"
    if part in r.timeout and part not in r.samples:
        return f"> {limit:.0f} s"
    v = r.median(part)
    if v is None:
        return "-"       # an earlier part of the cell timed out
    return fmt_s(v) + ("" if r.n(part) >= repeat else f" ({r.n(part)}x)")


def fmt_s(v: float) -> str:
    if v < 0.01:
        return f"{v * 1e3:.2f} ms"
    if v < 1:
        return f"{v * 1e3:.0f} ms"
    return f"{v:.2f} s"


def ratio(a, b) -> str:
    return "-" if a is None or b is None or b <= 0 else f"{a / b:.1f}x"


def render_ratio(gs: Result | None, tv: Result | None, limit: float, part: str) -> str:
    """How much faster GraphScope's picture is than torchviz's dot (>1: GraphScope faster)."""
    if gs is None or tv is None:
        return "-"
    g = gs.median(part)
    if g is None:
        return "-"
    if "dot_svg" in tv.timeout and not tv.samples.get("dot_svg"):
        return f"> {limit / g:.0f}x"
    d = tv.median("dot_svg")
    return "-" if d is None else f"{d / g:.1f}x"


COLUMNS = [("plain", "plain", "plain"), ("python x.py", "py", "run"),
           ("GS capture", "graphscope", "capture"), ("GS graph+layout", "graphscope", "graph_layout"),
           ("GS render png", "graphscope", "render_png"), ("GS render svg", "graphscope", "render_svg"),
           ("GS export png", "export", "run"),
           ("tv make_dot", "torchviz", "make_dot"), ("tv dot -Tsvg", "torchviz", "dot_svg"),
           ("TL trace", "torchlens", "tl_trace"), ("TL draw svg", "torchlens", "tl_draw")]


def print_table(rows, limit, repeat: int, markdown: bool) -> None:
    heads = ["workload"] + [c[0] for c in COLUMNS] + ["capture/plain", "dot/GS png", "dot/GS svg"]
    table = []
    for w, res in rows:
        cells = [w.title] + [fmt(res.get(tool), part, limit, repeat) for _, tool, part in COLUMNS]
        gs, pl = res.get("graphscope"), res.get("plain")
        cells.append(ratio(gs and gs.median("capture"), pl and pl.median("plain")))
        cells.append(render_ratio(gs, res.get("torchviz"), limit, "render_png"))
        cells.append(render_ratio(gs, res.get("torchviz"), limit, "render_svg"))
        table.append(cells)
    if markdown:
        print("| " + " | ".join(heads) + " |")
        print("|" + "---|" * len(heads))
        for cells in table:
            print("| " + " | ".join(cells) + " |")
        return
    widths = [max(len(h), *(len(c[i]) for c in table)) for i, h in enumerate(heads)]
    print("  ".join(h.rjust(wd) if i else h.ljust(wd) for i, (h, wd) in enumerate(zip(heads, widths))))
    for cells in table:
        print("  ".join(c.rjust(wd) if i else c.ljust(wd) for i, (c, wd) in enumerate(zip(cells, widths))))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per cell part")
    ap.add_argument("--only", help="comma-separated workload keys: "
                    + ",".join(w.key for w in W.WORKLOADS))
    ap.add_argument("--tools", default="plain,py,graphscope,export,torchviz,torchlens")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--cell", nargs=2, metavar=("TOOL", "WORKLOAD"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.cell:
        return cell_main(a.cell[0], a.cell[1], a.repeat, a.limit)

    workloads = [W.by_key(k) for k in a.only.split(",")] if a.only else W.WORKLOADS
    tools = a.tools.split(",")
    missing = available()
    import torch
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, "
          f"torch.set_num_threads(1) in every cell, {os.cpu_count()} cores, "
          f"load average at start {os.getloadavg()[0]:.2f}")
    for tool, why in missing.items():
        if tool in tools:
            print(f"{tool}: skipped, {why}")
    if shutil.which("dot"):
        v = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr.strip()
        print(v)
    print(f"medians of {a.repeat} (fewer where marked (Nx)); a part over {a.limit:.0f} s is "
          f"killed and shown as '> {a.limit:.0f} s'\n", flush=True)

    rows = []
    notes: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="gs-bench-") as tmp:
        for w in workloads:
            path = Path(tmp) / f"{w.key}.py"
            path.write_text(W.snippet(w))
            res: dict[str, Result] = {}
            for tool in tools:
                if tool in missing:
                    continue
                t0 = time.monotonic()
                if tool == "py":
                    res[tool] = run_fresh([sys.executable, str(path)], a.repeat, a.limit, tmp)
                elif tool == "export":
                    res[tool] = run_fresh([sys.executable, "-m", "graphscope", "export", str(path),
                                           "--format", "png", "-o", str(path.with_suffix(".png")),
                                           "--timeout", str(a.limit)], a.repeat, a.limit, ROOT)
                else:
                    res[tool] = run_cell(tool, w, a.repeat, a.limit)
                r = res[tool]
                for n in r.notes:
                    notes.setdefault(f"{w.title}, {tool}: {n}", None)
                if r.error:
                    notes.setdefault(f"{w.title}, {tool}: error: {r.error}", None)
                print(f"  {w.title:34} {tool:10} {time.monotonic() - t0:6.1f} s wall",
                      file=sys.stderr, flush=True)
            rows.append((w, res))
    print()
    print_table(rows, a.limit, a.repeat, a.markdown)
    print()
    print("capture/plain = GS capture / plain (in-process, both warm); dot/GS png and dot/GS svg = "
          "torchviz's `dot -Tsvg` time / GraphScope's render_file time (>1: GraphScope faster); "
          "n/a = tool not installed or not in --tools; "
          "'-' = not reached, an earlier part of the same cell timed out.")
    for n in notes:
        print("note: " + n)
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
