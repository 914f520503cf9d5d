"""The comparison workloads of /work/shared/ANCHORS.md, as snippet texts.

Every tool measured in ``bench_compare.py`` needs the same computation in a
different shape: GraphScope takes any snippet, torchviz takes the loss tensor,
TorchLens takes an ``nn.Module`` and its inputs. So each workload is written
once as a module class ``Model`` plus ``make_inputs()`` (in ``DEFS``), and
``snippet(w)`` turns it into the plain script that all sides run:

    model = Model(); inputs = make_inputs()
    loss = model(*inputs); loss.backward()

Plain, GraphScope and torchviz run that script; TorchLens gets ``Model()`` and
``make_inputs()`` from the same definitions. Seeds are fixed so every side
computes the same numbers. (bench_capture.py and bench_export.py keep their own
copies of similar snippets on purpose: their numbers stay comparable over time.)
"""
from __future__ import annotations

from dataclasses import dataclass

HEADER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.set_num_threads(1)
"""

RUN = """
torch.manual_seed(0)
model = Model()
inputs = make_inputs()
loss = model(*inputs)
loss.backward()
"""


@dataclass(frozen=True)
class Workload:
    key: str          # short name for --only
    title: str        # row label in the table
    defs: str         # defines Model (an nn.Module returning a scalar loss) and make_inputs()
    big: bool = False  # a deep graph: torchviz needs a raised recursion limit


FIVE_OPS = Workload("5op", "5-op snippet", """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([0.5, -1.0, 2.0]))

    def forward(self, x):
        y = x * self.w          # mul
        z = y.sin()             # sin
        s = z + 1               # add
        q = s ** 2              # pow
        return q.mean()         # mean

def make_inputs():
    return (torch.tensor([1.0, 2.0, 3.0], requires_grad=True),)
""")

MLP = Workload("mlp", "MLP 64-128-128-10", """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(),
                                 nn.Linear(128, 128), nn.ReLU(),
                                 nn.Linear(128, 10))

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y)

def make_inputs():
    return torch.randn(32, 64), torch.randint(0, 10, (32,))
""")


def _rnn(steps: int) -> Workload:
    return Workload(f"rnn{steps}", f"RNNCell unrolled {steps} steps", f"""
STEPS = {steps}

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.RNNCell(16, 32)
        self.head = nn.Linear(32, 1)

    def forward(self, xs):
        h = torch.zeros(xs.shape[1], 32)
        for t in range(STEPS):
            h = self.cell(xs[t], h)   # the cell's 4 weights feed every step
        return self.head(h).pow(2).mean()

def make_inputs():
    return (torch.randn(STEPS, 4, 16),)
""", big=steps >= 500)


TRANSFORMER = Workload("transformer", "2-layer TransformerEncoder", """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, src):
        return self.encoder(src).pow(2).mean()

def make_inputs():
    return (torch.randn(8, 16, 64),)
""")

CHAIN = Workload("chain", "chain of 20,000 elementwise ops", """
class Model(nn.Module):
    def forward(self, x):
        y = x
        for i in range(10_000):        # 20,000 elementwise ops
            y = y * 1.0001
            y = y + 0.0001
        return y.sum()

def make_inputs():
    return (torch.randn(16, requires_grad=True),)
""", big=True)

WORKLOADS = [FIVE_OPS, MLP, _rnn(100), _rnn(500), TRANSFORMER, CHAIN]


def snippet(w: Workload) -> str:
    """The plain script of workload ``w``: forward, loss and backward."""
    return HEADER + w.defs + RUN


def by_key(key: str) -> Workload:
    for w in WORKLOADS:
        if w.key == key:
            return w
    raise KeyError(f"unknown workload {key!r} (choose from {', '.join(w.key for w in WORKLOADS)})")
