"""Which recorded op an autograd Node belongs to: the tag an op puts on the
Nodes it made (NOTE [node ids] in backward.py), and the Nodes inside a call
the mode saw as one (NOTE [composite ops])."""
from __future__ import annotations

import torch

_AccumulateGrad = torch._C._functions.AccumulateGrad


_node_names: dict = {}     # autograd Node type -> its name()


def node_name(g) -> str:
    """``g.name()`` without ``torch::autograd::``, cached per Node type.

    Only types named like their nodes are cached (``MulBackward0``, a custom
    Function's ``MyFnBackward``): a Node class without its own Python type
    shares a generic one, whose nodes may have different names."""
    tp = type(g)
    try:
        return _node_names[tp]
    except KeyError:
        n = g.name().removeprefix("torch::autograd::")
        if n == tp.__name__ and len(_node_names) < 10_000:
            _node_names[tp] = n
        return n


def tag(node, op_id, tid, only_new: bool = False) -> None:
    """Tag autograd ``node`` as op ``op_id``'s, for tensor ``tid`` (NOTE [node ids]
    in backward.py); with ``only_new``, unless an earlier op tagged it."""
    try:
        meta = node.metadata
        if not (only_new and "graphscope" in meta):
            meta["graphscope"] = [op_id, tid, None, None]
    except Exception:
        pass


_SUBGRAPH_LIMIT = 256


def inner_nodes(g, op_id, in_fns=()):
    """NOTE [composite ops]: the mode sees ``F.cross_entropy`` or
    ``F.multi_head_attention_forward`` as one call, but the call made several
    autograd nodes (``NllLossBackward0`` after ``LogSoftmaxBackward0``; an
    ``nn.Linear``'s ``TBackward0`` for its weight). So does a C++ composite
    called straight from the snippet (``F.linear``, a batched ``@``: its
    ``MmBackward0`` inside an ``UnsafeViewBackward0``), which
    ``may_have_inner`` spots. Walking back from the output's node ``g`` to
    nodes that belong to earlier ops (tagged), to the inputs' nodes ``in_fns`` (their
    nodes ``in_fns``, even when no recorded op made them: another thread's) or to leaves
    (AccumulateGrad) finds them: each is tagged as inside op ``op_id`` (so its
    backward step says ``within``) and the list ``[[name, [next, ...]], ...]``
    (index 0 is ``g``; a next of -1 is a node outside, an input's) becomes
    ``Op.subgraph``, so a viewer can expand the op without a backward pass.
    None when ``g`` is the only node. At most ``_SUBGRAPH_LIMIT`` nodes."""
    index = {id(g): 0}
    rows = [[node_name(g), []]]
    keep = [g]          # wrappers alive during the walk: ids stay unique
    stack = [g]
    outside = {id(n) for n in in_fns if n is not None and n is not g}
    while stack:
        node = stack.pop()
        row = rows[index[id(node)]]
        for n, _ in node.next_functions:
            if n is None:
                continue
            i = index.get(id(n))
            if i is None:
                meta = n.metadata
                if "graphscope" in meta or type(n) is _AccumulateGrad or id(n) in outside \
                        or len(rows) >= _SUBGRAPH_LIMIT:
                    row[1].append(-1)
                    continue
                i = index[id(n)] = len(rows)
                meta["graphscope"] = [None, None, None, op_id]
                rows.append([node_name(n), []])
                keep.append(n)
                stack.append(n)
            row[1].append(i)
    return rows if len(rows) > 1 else None


def may_have_inner(g, in_fns) -> bool:
    """Whether output node ``g`` of a call the mode saw as one leads to a node
    that is neither an input's (``in_fns``: the inputs' nodes) nor a leaf's, so
    the call made more than one node (NOTE [composite ops]). Under a
    microsecond: an elementwise op's next nodes are its inputs' own."""
    ids = None
    for n, _ in g.next_functions:
        if n is None or type(n) is _AccumulateGrad:
            continue
        if ids is None:
            if len(in_fns) < 8:
                for f in in_fns:
                    if f is n:
                        break
                else:
                    return True
                continue
            # torch.cat / torch.stack of a long list: a set, not a scan per input
            ids = {id(f) for f in in_fns if f is not None}
        if id(n) not in ids:
            return True
    return False
