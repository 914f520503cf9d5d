"""Decision nodes: where a tensor's value decided Python control flow
(NOTE [branch nodes]). A mixin of ``GraphBuilder`` (graph.py): it uses the
builder's graph, step counter, source text and lookups, and keeps the
decisions of the current pass in ``_decisions`` / ``_undecided``."""
from __future__ import annotations

import ast
from typing import Optional

from graphscope import protocol as P
from graphscope.model.graph_types import Edge, GraphDelta, Node


class BranchDecisions:
    def _on_branch(self, msg: P.Branch) -> GraphDelta:
        if msg.tensor is None:
            return GraphDelta()
        self._branch_tensors.add(msg.tensor)
        d = GraphDelta()
        for nid in self._tensor_node_ids(msg.tensor):
            node = self.graph.nodes[nid]
            if "branch" not in node.flags:
                self._restyle(node, node.flags | {"branch"}, d)
        self._decision_node(msg, d)
        return d

    # NOTE [branch nodes]: a Branch that decided an ``if`` / ``while`` / conditional
    # expression / ``assert`` becomes a decision node ``b<line>.<k>`` (kind "op", flag
    # "branch": the canvas draws a flowchart hexagon) after the tensor it read, joined
    # by a "nograd" edge: Python control flow, not autograd. Its label is the condition
    # as written (``if y.item() > 1.5``), its detail the value read and where it sent
    # the program (``2.0 → if, line 5``). Reads at the same line while the
    # program stays in its loop (a ``while``, an ``if`` in a ``for``) fold into one node
    # that counts them and shows the last; an op outside the loop or a backward call
    # ends that, so a function called twice, or two passes, show two decisions. Where the value alone does
    # not tell the direction, the next op on another line does: the node is updated
    # then (GraphDelta.changed). A value read for printing or arithmetic (no control
    # statement at its line) is no decision and draws nothing.
    def _decision_node(self, msg: P.Branch, d: GraphDelta) -> None:
        from graphscope.model import diagnostics as dg   # it imports this module
        if msg.line is None or not self.source:
            return
        if self._tree is None:
            try:
                self._tree = ast.parse(self.source)
            except (SyntaxError, ValueError):
                self._tree = False
        if not self._tree:
            return
        ctl = dg._control_at(self._tree, msg.line)
        if ctl is None:
            return
        g = self.graph
        dec = self._decisions.get(msg.line)
        src = self._input_node_plain(msg.tensor)
        if dec is None or dec.ctl is not ctl:
            k = self._decision_count[msg.line] = self._decision_count.get(msg.line, -1) + 1
            nid = f"b{msg.line}.{k}"
            node = Node(id=nid, kind="op", label=_condition_label(self.source, ctl),
                        detail="", op=msg.op, line=msg.line, step=self.step,
                        flags=_BRANCH_FLAGS)
            span = _loop_span(self._tree, ctl)
            dec = self._decisions[msg.line] = _Decision(node, ctl, span)
            # a condition in no loop is read once per evaluation (``if a and b`` reads
            # twice on its own line: one evaluation while no other line runs)
            at = _placed(ctl)
            dec.once = not isinstance(ctl, ast.While) and span == (
                at.lineno, at.end_lineno or at.lineno)
            g._add_node(node)
            d.nodes.append(node)
            if msg.op is not None:
                g.op_nodes.setdefault(msg.op, []).append(nid)
        dec.count += 1
        dec.last = msg
        dec.went = dg._went(_Ops([]), ctl, msg, [])
        if src is not None and len(dec.sources) < self.fanout_limit and src not in dec.sources \
                and not (dec.linked and self._behind(src, dec.linked)):
            # (a loop's condition read again on what its body computed: with the
            # control edge into that body the edge would close a cycle; the
            # readings before it show what the decision reads)
            dec.sources.append(src)
            d.edges.append(g._add_edge(Edge(src, dec.node.id, "nograd", self.step)))
        if not dec.linked and dec not in self._to_link:
            self._to_link.append(dec)
        if dec.went is None:
            if dec not in self._undecided:
                self._undecided.append(dec)
        elif dec in self._undecided:
            self._undecided.remove(dec)
        self._describe(dec, d)

    def _input_node_plain(self, tid) -> Optional[str]:
        """The newest node drawing tensor ``tid`` (drawn now if it was deferred)."""
        if tid is None:
            return None
        if tid in self._pending:
            self._materialise(tid, None, self.step, GraphDelta())
        return self.graph.tensor_node.get(tid)

    def _decide_pending(self, op: P.Op, d: GraphDelta) -> None:
        """The first op after an undecided branch, on another line, says which way it went."""
        from graphscope.model import diagnostics as dg
        for dec in list(self._undecided):
            went = dg._went(_Ops([op]), dec.ctl, dec.last, [op.seq])
            if went is None and (op.line is None or op.line == dec.last.line):
                continue            # still evaluating the condition's own line
            dec.went = went
            self._undecided.remove(dec)
            self._describe(dec, d)

    def _describe(self, dec: "_Decision", d: GraphDelta) -> None:
        from graphscope.model import diagnostics as dg
        b = dec.last
        value = dg._value_text(b.value)
        where = _direction_text(dec.ctl, dec.went)
        text = f"{value} \u2192 {where}" if where else f"read {value}"
        if dec.count > 1:
            text = f"{dec.count}\u00d7, last {text}"
        node = dec.node
        if text != node.detail:
            node.detail = text
            # NOTE [late flags] in graph.py: the text it had at each step (at the
            # first read of a while loop it said "3×, last 6.0 → loop ended": review)
            # A text settled by the op right after the read (which way it went)
            # replaces the one of the step before: one entry for an ``if`` read
            # once, none counted in late_count for the node's own step (a new
            # decision each iteration of a training loop redrew the cached layer
            # twice an iteration: code review); a loop's later reads add entries.
            hist = self.graph.detail_steps.setdefault(node.id, [])
            if hist and hist[-1][0] >= self.step - 1:
                hist[-1] = (hist[-1][0], text)
            else:
                hist.append((self.step, text))
                if len(hist) > 1:
                    self.graph.late_count += 1
            if node not in d.nodes and node not in d.changed:
                d.changed.append(node)

    # NOTE [where a decision sent the program]: a decision node is joined by a
    # "control" edge (dotted, in the decision's colour: Python control flow, no
    # data) to the first drawn op of the code it chose: the if-body or else-body,
    # the loop body, the chosen value of a conditional expression (or a function
    # called from there, whose lines are elsewhere). Without it the hexagon was a
    # dead end, drawn after the branch it chose (challenge-2: ``y = x * 2 if
    # x.sum() > 5 else x + 2`` showed the mul before the decision that picked it:
    # visual review). The edge also places the chosen op after the decision, in
    # the order the program ran. A decision that ran no code of its own (an
    # ``if`` skipped, a loop that ended, an assert) gets no edge: what comes next
    # would have run either way; except an ``if`` whose body leaves the block
    # (``return``, ``raise``, ``break``, ``continue``), skipped: what follows it
    # is its else. A decision read again in its loop is one node,
    # with one edge, from the first reading that entered its body.
    def _link_decisions(self, op: P.Op, d: GraphDelta) -> None:
        line = op.line
        if line is None:
            return
        created = self.graph.op_nodes.get(op.id) or ()
        target = next((nid for nid in created if self.graph.nodes[nid].kind == "op"), None)
        for dec in list(self._to_link):
            ctl, went, read = dec.ctl, dec.went, dec.last
            if went is None:
                continue                      # the next op on another line decides
            chosen = _chosen(ctl, went, self._tree or None)
            if chosen is None:                # skipped, ended, asserted: nothing chosen
                self._to_link.remove(dec)
                continue
            test = getattr(ctl, "test", None)
            if not isinstance(ctl, ast.IfExp) and test is not None and \
                    test.lineno <= line <= (test.end_lineno or test.lineno):
                continue                      # still evaluating the condition
            if not (chosen[0] <= line <= chosen[1] or self._called_from(line, ctl)):
                self._to_link.remove(dec)     # the chosen code made no op
                continue
            if target is None:
                continue                      # an op that drew nothing (yet): the next one
            self._to_link.remove(dec)
            dec.linked = target
            if target != dec.node.id and target not in self.graph.succs.get(dec.node.id, ()):
                d.edges.append(self.graph._add_edge(
                    Edge(dec.node.id, target, "control", self.step)))

    def _called_from(self, line: int, ctl) -> bool:
        """Whether ``line`` is in a function that does not hold ``ctl``: one the
        chosen code called. (Not any function's line: in ``def forward``, the ``for``
        after ``depth = 1 if x.norm() < 1 else 3`` was taken for the value chosen.)"""
        spans = self.__dict__.get("_def_spans")
        if spans is None:
            spans = self._def_spans = [
                (n.lineno, n.end_lineno or n.lineno) for n in ast.walk(self._tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            ] if self._tree else []
        at = _placed(ctl).lineno
        return any(a <= line <= b and not a <= at <= b for a, b in spans)

    def _decisions_before_op(self, op: P.Op, d: GraphDelta) -> None:
        """An op ran: it may say where an undecided branch went, and an op outside a
        decision's loop ends that decision."""
        if self._undecided:
            self._decide_pending(op, d)
        if self._decisions and op.line is not None:
            # an op outside a decision's loop: the loop is over, a new evaluation of the
            # line (the function called again) is a new decision (NOTE [branch nodes])
            for line, dec in list(self._decisions.items()):
                if not dec.span[0] <= op.line <= dec.span[1]:
                    del self._decisions[line]
                elif dec.once and op.line != line:
                    # an ``if`` in no loop, its body running: when its condition is
                    # read again, that is the function called again, a new decision
                    # (``f(a), f(b)`` showed one "2×, last False" for two graphs)
                    del self._decisions[line]


_BRANCH_FLAGS = frozenset({"branch"})




class _Decision:
    """One decision node while its line keeps being evaluated (NOTE [branch nodes])."""
    __slots__ = ("node", "ctl", "span", "count", "last", "went", "sources", "once", "linked")

    def __init__(self, node: Node, ctl, span: tuple):
        self.node, self.ctl, self.span = node, ctl, span
        self.count, self.last, self.went, self.sources = 0, None, None, []
        self.once = False   # not in a loop: a new reading after its body ran is new
        self.linked = None   # the op node it chose (NOTE [where a decision sent the program])


class _Ops:
    """The few ops ``diagnostics._went`` looks at, in a trace's shape."""
    __slots__ = ("ops",)

    def __init__(self, ops):
        self.ops = ops


def _placed(ctl):
    """The node whose lines stand for ``ctl``: a comprehension's ``if`` has none of
    its own (``[x[i] for i in r if x[i] > 0]`` failed with AttributeError)."""
    if isinstance(ctl, ast.comprehension):
        return ctl.ifs[0] if ctl.ifs else ctl.iter
    return ctl


def _loop_span(tree, ctl) -> tuple:
    """Lines of the innermost loop around (or being) ``ctl``: while ops run there, new
    evaluations of ``ctl`` are the same decision repeated."""
    at = _placed(ctl)
    best = ctl if isinstance(ctl, ast.While) else None
    for n in ast.walk(tree):
        if isinstance(n, (ast.For, ast.While, ast.AsyncFor)) and n is not ctl \
                and n.lineno <= at.lineno <= (n.end_lineno or n.lineno) \
                and (best is None or n.lineno > best.lineno):
            if best is ctl:
                break      # ctl is itself the loop
            best = n
    best = best or at
    return (best.lineno, best.end_lineno or best.lineno)


def _chosen(ctl, went, tree=None) -> Optional[tuple]:
    """Lines of the code ``ctl`` chose to run when it went ``went``; None if it chose
    none of its own (NOTE [where a decision sent the program])."""
    if isinstance(ctl, ast.IfExp):
        part = ctl.body if went else ctl.orelse
        return (part.lineno, part.end_lineno or part.lineno)
    if isinstance(ctl, (ast.If, ast.While)):
        body = ctl.body if went else (ctl.orelse if isinstance(ctl, ast.If) else None)
        if body:
            return (body[0].lineno, body[-1].end_lineno or body[-1].lineno)
        if isinstance(ctl, ast.If) and tree is not None and \
                isinstance(ctl.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)):
            # ``if x.sum() > 0: return ...`` skipped: what follows it is its else
            # (challenge-1's second call; the two returns of f are its two graphs)
            rest = _after(tree, ctl)
            if rest:
                return (rest[0].lineno, rest[-1].end_lineno or rest[-1].lineno)
    return None


def _after(tree, stmt) -> list:
    """The statements after ``stmt`` in the block that holds it (a function's, a
    loop's, an ``except``'s, a ``case``'s: ast.walk reaches them all)."""
    for n in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(n, field, None)
            if isinstance(block, list) and stmt in block:
                rest = block[block.index(stmt) + 1:]
                if not rest and isinstance(n, ast.If):
                    # the last of an ``if``'s block (an ``elif`` skipped): the program
                    # goes on after that ``if`` (code review: ``elif v.sum() > 100:
                    # return ...`` pointed nowhere)
                    return _after(tree, n)
                return rest
    return []


def _condition_label(source: str, ctl) -> str:
    test = ctl.ifs[0] if isinstance(ctl, ast.comprehension) else ctl.test
    text = " ".join((ast.get_source_segment(source, test) or "condition").split())
    kw = {ast.While: "while", ast.Assert: "assert"}.get(type(ctl), "if")
    label = f"{kw} {text}"
    return label if len(label) <= 40 else label[:39] + "\u2026"


def _direction_text(ctl, went) -> str:
    """Where the program went: ``if, line 5``, ``loop ended``; '' if unknown. Short:
    it is the second line of a box as wide as any ("2.0 → if-branch (line 5)" lost
    its line number to the ellipsis: UX review)."""
    if went is None:
        return ""
    if isinstance(ctl, ast.If):
        if went:
            return f"if, line {ctl.body[0].lineno}"
        return f"else, line {ctl.orelse[0].lineno}" if ctl.orelse else "if skipped"
    if isinstance(ctl, ast.While):
        return f"loop, line {ctl.body[0].lineno}" if went else "loop ended"
    if isinstance(ctl, ast.IfExp):
        return "first value" if went else "else value"
    if isinstance(ctl, ast.Assert):
        return "assert passed" if went else "assert failed"
    return "kept" if went else "skipped"
