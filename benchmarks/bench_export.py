"""End to end: `graphscope export x.py --format json` vs plain `python x.py`.

Both sides start a fresh interpreter that imports torch, with
torch.set_num_threads(1) in the workload itself, so the difference is what
GraphScope adds: the CLI process, the worker, recording, the event pipe, and
writing the JSON. Target: at most 1.5x. Then the latency from Run to a
complete trace of a tiny snippet when a warm worker is ready.

    .venv/bin/python benchmarks/bench_export.py [--repeat N] [--only NAME]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKLOADS = {
    "chain-20k": """\
import torch
torch.set_num_threads(1)
x = torch.randn(100, requires_grad=True)
y = x
for i in range(10_000):          # 20,000 elementwise ops
    y = y * 1.0001
    y = y + 0.0001
y.sum().backward()
print(float(x.grad.sum()))
""",
    "mlp-200-steps": """\
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X = torch.randn(256, 64)
Y = torch.randint(0, 10, (256,))
for step in range(200):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), Y)
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
""",
    # big tensors, few ops: the cost is the statistics of each 20 MB output
    # (NOTE [stats of a big tensor] in capture/summaries.py)
    "big-tensors": """\
import torch
torch.set_num_threads(1)
acc = 0.0
for i in range(150):
    a = torch.ones(5_000_000) * i          # 20 MB each
    b = (a + 1).relu()
    acc += b[0].item()
print(acc)
""",
    "transformer-2-layers": """\
import torch
import torch.nn as nn
torch.set_num_threads(1)
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
x = torch.randn(8, 32, 64)
out = encoder(x)
out.sum().backward()
print(tuple(out.shape))
""",
}


def _time(cmd, env=None) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    return time.perf_counter() - t0, p


def bench_workloads(repeat: int, only: str | None) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    print(f"{'workload':<22}{'python x.py':>13}{'graphscope export':>19}{'ratio':>8}"
          f"{'ops':>8}{'bw steps':>10}{'json MB':>9}  status")
    with tempfile.TemporaryDirectory() as tmp:
        for name, src in WORKLOADS.items():
            if only and only not in name:
                continue
            path = Path(tmp) / f"{name}.py"
            path.write_text(src)
            out = Path(tmp) / f"{name}.json"
            plain, gs = [], []
            for _ in range(repeat):
                dt, p = _time([sys.executable, str(path)], env)
                if p.returncode:
                    sys.exit(f"{name}: plain python failed:\n{p.stderr}")
                plain.append(dt)
                dt, q = _time([sys.executable, "-m", "graphscope", "export", str(path),
                               "--format", "json", "-o", str(out), "--timeout", "600"], env)
                gs.append(dt)
            d = json.loads(out.read_text())
            status = d["status"] + (" (truncated)" if d["truncated"] else "")
            if d["stdout"] != p.stdout:
                status += " STDOUT DIFFERS"
            a, b = statistics.median(plain), statistics.median(gs)
            print(f"{name:<22}{a:>12.2f}s{b:>18.2f}s{b / a:>7.2f}x{len(d['ops']):>8}"
                  f"{len(d['backward']):>10}{out.stat().st_size / 1e6:>9.1f}  {status}")


def bench_latency(n: int) -> None:
    sys.path.insert(0, str(ROOT))
    from graphscope.runner import Runner, run_to_trace
    src = "import torch\nx = torch.ones(3, requires_grad=True)\n(x * 2).sum().backward()\nprint(x.grad)\n"
    times = []
    with Runner(warm=True) as r:
        for _ in range(n):
            if not r.warm_ready(timeout=60):
                sys.exit("warm worker did not become ready")
            t0 = time.perf_counter()
            tr = run_to_trace(src, runner=r)
            times.append(time.perf_counter() - t0)
            assert tr.status == "ok" and tr.backward, tr.error
    print(f"\nRun -> complete trace, tiny snippet, warm worker ready ({n} runs): "
          f"median {statistics.median(times) * 1000:.0f} ms, "
          f"min {min(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only")
    ap.add_argument("--latency-runs", type=int, default=5)
    a = ap.parse_args()
    print(f"python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores (numbers are medians of {a.repeat})\n")
    bench_workloads(a.repeat, a.only)
    bench_latency(a.latency_runs)


if __name__ == "__main__":
    main()
