"""How a long expression is cut to fit a node's box (NOTE [labels cut whole]):
what is inside brackets goes first, then both ends are kept around one cut
between tokens, and only a name too long for either is cut inside. The model
cuts labels to EXPR_CHARS; the canvas asks again with fewer letters when big
text still does not fit (``ui/canvas_paint._recut``)."""
from __future__ import annotations

from typing import Optional


EXPR_CHARS = 22   # an expression label longer than this is cut: boxes grow with labels


def expr_label(expr: Optional[str], chars: int = EXPR_CHARS) -> Optional[str]:
    """The text of an expression as a node label: at most ``chars`` long (a box's;
    the canvas asks again with fewer when big text still does not fit).

    NOTE [labels cut whole]: a label that does not fit loses what is inside
    brackets first, as a reader skims code: ``((…) ** 2).mean()``,
    ``torch.cat([…], dim=1)``, ``self.cell(…)``, keeping what fits of the
    first arguments (``torch.sigmoid(hidden…)``). Cuts between characters gave
    "(predictio…rgets) ** 2" and "model(…max(dim=-1)", which read as typos,
    and "torch…@ w2 + b2)", which dropped the call (visual review). Only when
    that cannot make it fit are both ends kept around one cut, still between
    tokens where that keeps enough of each; a name too long for any of this
    is cut inside."""
    if not expr:
        return None
    if len(expr) <= chars:
        return expr
    chars = max(chars, 5)
    toks = _elide_groups(_tokens(expr), chars)
    if sum(map(len, toks)) <= chars:
        return "".join(toks)
    ends = _between_tokens(toks, chars)
    if ends is not None:
        return ends
    if _operator_at_top(toks):
        # whole operands will not fit: the start alone, which says nothing false
        # (both ends around a cut in the letters made "probs…- probs" of
        # ``probs.detach() - probs``: NOTE [a cut that reads true]); at an
        # operand's end when that loses little, else as Qt cuts ("predictions -
        # targ…": the operator and most of the name kept)
        start = _head_only(toks, chars)
        if start is not None and len(start) >= chars - 6:
            return start
        return _start_only(expr, chars)
    # (what the brackets held is left out already: "…ttention(…)", not "…k, v)")
    return _between_chars("".join(toks), chars)


_OPENS, _CLOSES = "([{", ")]}"
_SINGLE = _OPENS + _CLOSES + ".,\'\""
_CUT = "\u2026"


def _tokens(expr: str) -> list:
    """``expr`` in pieces a cut may fall between: names and numbers, quoted
    strings, runs of space, single brackets, dots and commas, runs of other
    operator characters (``**``, ``->``)."""
    toks, i, n = [], 0, len(expr)
    while i < n:
        c = expr[i]
        j = i + 1
        if _word(c):
            while j < n and _word(expr[j]):
                j += 1
        elif c in "'\"":
            while j < n and expr[j] != c:
                j += 2 if expr[j] == "\\" else 1
            j = min(j + 1, n)
        elif c.isspace():
            while j < n and expr[j].isspace():
                j += 1
        elif c not in _SINGLE:
            while j < n and not (_word(expr[j]) or expr[j].isspace() or expr[j] in _SINGLE):
                j += 1
        toks.append(expr[i:j])
        i = j
    return toks


def _groups(toks: list) -> list:
    """(opening index, closing index, length of what is between) of each
    bracket pair with something other than a cut between."""
    out, stack = [], []
    for i, t in enumerate(toks):
        if t in _OPENS:
            stack.append(i)
        elif t in _CLOSES and stack:
            a = stack.pop()
            inner = toks[a + 1:i]
            if inner and inner != [_CUT]:
                out.append((a, i, sum(map(len, inner))))
    return out


def _elide_groups(toks: list, chars: int) -> list:
    """The label's tokens with bracket contents left out (NOTE [labels cut
    whole]): the smallest group whose leaving out makes it fit, else the
    biggest, and again, as far as that goes; as they were when what fits says
    no name ("(…)")."""
    orig, toks = toks, list(toks)
    length = sum(map(len, toks))
    # (a few rounds: past them what is left is a long run of small groups,
    # "f0(ab) + f1(ab) + ...", which both ends around one cut say as well, and
    # each round reads every token: 125 ms for 400 of them)
    for _round in range(8):
        if length <= chars:
            break
        groups = _groups(toks)
        need = length - chars
        enough = [g for g in groups if g[2] - 1 >= need]
        if enough:
            a, b, inner = min(enough, key=lambda g: g[2])
            room = chars - (length - inner + 1)
            keep = _first_arguments(toks[a + 1:b], room)
        elif groups:
            # (the first of equals: a chain's last call says what made the tensor)
            a, b, inner = max(groups, key=lambda g: (g[2], -g[0]))
            keep = []
        else:
            break
        if inner <= 1 and not keep:
            break          # ("[0]" for "[…]" saves nothing)
        toks[a + 1:b] = keep + [_CUT]
        length = sum(map(len, toks))
    if not any(len(t) > 1 and _word(t[0]) for t in toks):
        return orig       # "(…)" says nothing
    return toks


def _first_arguments(inner: list, room: int) -> list:
    """The longest start of a group's tokens that fits ``room`` and ends where
    an argument or operand does (before a space or comma, at the group's own
    level: ``x.unsqueeze`` of ``x.unsqueeze(0)`` would read as a call of it);
    after an operator, a space, so that "predictions - …" reads as one."""
    best: list = []
    depth = 0
    for k, t in enumerate(inner):
        if t in _OPENS:
            depth += 1
        elif t in _CLOSES:
            depth -= 1
        nxt = inner[k + 1] if k + 1 < len(inner) else None
        if depth or nxt is None or not (nxt.isspace() or nxt == ","):
            continue
        head = inner[:k + 1]
        if nxt.isspace() and not (_word(t[0]) or t in _CLOSES or t[0] in "'\""):
            head = head + [" "]      # after an operator ("predictions - …"), not ":,"
        if sum(map(len, head)) <= room:
            best = head
    return best


def _between_tokens(toks: list, chars: int) -> Optional[str]:
    """Both ends of the label around one cut between tokens, what is left out
    holding whole bracket pairs, the end not starting with a call of what is
    left out, and at least three characters of each end or a whole name; the
    pair that keeps most (then the longer end: a chain's last call); failing
    both ends, the last call alone ("…set_grad_enabled(…)").

    Only heads and tails that fit are tried, and whether what lies between is
    whole pairs is read off running depths: trying every pair of places took
    0.7 s for a 1,300-character expression, and a 60-term sum's labels (each
    partial sum has one) 2.7 s (code review)."""
    n = len(toks)
    depth = [0] * (n + 1)           # bracket depth before each token
    for k, t in enumerate(toks):
        depth[k + 1] = depth[k] + (1 if t in _OPENS else -1 if t in _CLOSES else 0)
    ends, used = [], 0              # tails that fit: (first token of the tail, its text)
    for j in range(n - 1, 0, -1):
        used += len(toks[j])
        if used > chars + 2:         # (", " and "." beside the cut are dropped)
            break
        ends.append(j)
    best, score = None, None
    used = 0
    for i in range(0, n):
        used += len(toks[i - 1]) if i else 0
        if used > chars + 2:
            break
        head = "".join(toks[:i]).rstrip(". ,")
        if i and ((len(head) < 3 and not head.isidentifier()) or head.endswith(_CUT)):
            continue     # (a short name is an end: "x…requires_grad_()", code review)
        # from the cut on: the least depth, so that a tail's start can be checked
        # for "nothing closed that the middle did not open"; the loosest operator
        # at the cut's own depth; whether a name or number was passed
        level = depth[i]
        low, loose, named = level, None, False
        lows, looses, nameds = {}, {}, {}
        first = ends[-1] if ends else n      # (kept only where a tail may start)
        for k in range(i, n + 1):
            low = min(low, depth[k])
            if k >= first:
                lows[k], looses[k], nameds[k] = low, loose, named
            if k < n:
                t = toks[k]
                if depth[k] == level and t in _BINDS:
                    loose = _BINDS[t] if loose is None else min(loose, _BINDS[t])
                named = named or _word(t[0]) or t[0] in "'\""
        for j in ends:
            if j <= i:
                continue
            if depth[j] != level or lows[j] < level:
                continue     # the middle, toks[i:j], is not whole bracket pairs
            if not nameds[j] or not _faithful(toks, i, j, looses[j]):
                continue     # NOTE [a cut that reads true]
            tail = "".join(toks[j:]).lstrip(". ,")
            if (len(tail) < 3 and not tail.isidentifier()) or tail.startswith(_CUT):
                continue
            if not head and not (_word(tail[0]) and tail.endswith(")")):
                continue     # no head: only a name's call ("…set_grad_enabled(…)")
            before = toks[j - 1]
            if tail[0] in "([" and (_word(before[-1]) or before in _CLOSES):
                continue   # a call or index of what was left out: "stack…(…).mean()"
            if len(head) + 1 + len(tail) <= chars:
                s = (len(head) + len(tail) - (0 if head else chars), len(tail))   # (one end: last)
                if score is None or s > score:
                    best, score = head + _CUT + tail, s
    return best


# NOTE [a cut that reads true]: "left_part…* 3.0 - 1.0" for
# ``left_part + right_part * 3.0 - 1.0`` read as left_part times three,
# "inputs…weight_hidden" hid the ``@``, "probs…- probs" the ``.detach()`` of
# ``probs.detach() - probs`` (visual review). A cut between tokens leaves out
# either the rest of one operand (a chain: ``.float().``), with no operator
# after it, or whole operands together with operators that bind tighter than
# the ones it keeps on both sides (``left_part + … - 1.0``); and it always
# leaves out a name or number, never an operator alone.
_BINDS = {op: rank for rank, ops in enumerate((
    ("or",), ("and",), ("not",), ("in", "is", "<", ">", "<=", ">=", "==", "!="),
    ("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "@", "/", "//", "%"),
    ("**",))) for op in ops}


def _faithful(toks: list, i: int, j: int, loose) -> bool:
    """Whether leaving out ``toks[i:j]`` keeps what the rest says true (NOTE [a
    cut that reads true]); ``loose``: the loosest operator left out at the
    cut's depth (its rank in _BINDS), None when there is none."""
    before = next((t for t in reversed(toks[:i]) if not t.isspace()), None)
    after = next((t for t in toks[j:] if not t.isspace()), None)
    if loose is None:
        # the rest of an operand: what follows must not be an operator applied
        # to what was cut short ("probs…- probs")
        return after is None or after not in _BINDS
    # whole operands: kept operators on both sides (or an edge of the text or
    # of a bracket) that bind no tighter than those left out
    for t in (before, after):
        if t is None or t in _OPENS or t in _CLOSES or t == ",":
            continue
        if t not in _BINDS or _BINDS[t] >= loose:
            return False
    return True


def _head_only(toks: list, chars: int) -> Optional[str]:
    """The label's start up to a token's end, then a cut, when what it leaves out
    begins with an operator at the top level (whole operands: "hidden_layer.detach()…"
    for ``hidden_layer.detach() - hidden_layer``, where both ends around one
    cut in the letters hid the ``.detach()``: visual review)."""
    used, best = 0, None
    level = 0
    for k, t in enumerate(toks):
        if used + len(t) + 1 > chars:
            break
        used += len(t)
        level += 1 if t in _OPENS else -1 if t in _CLOSES else 0
        nxt = next((u for u in toks[k + 1:] if not u.isspace()), None)
        if level == 0 and nxt in _BINDS:
            best = "".join(toks[:k + 1]).rstrip()
    return best + _CUT if best and len(best) >= 3 else None


def _operator_at_top(toks: list) -> bool:
    level = 0
    for t in toks:
        level += 1 if t in _OPENS else -1 if t in _CLOSES else 0
        if level == 0 and t in _BINDS:
            return True
    return False


def _start_only(expr: str, chars: int) -> str:
    """The start of ``expr`` and a cut, as Qt cuts a text that does not fit."""
    return expr[:chars - 1].rstrip(". ,") + _CUT


def _between_chars(expr: str, chars: int) -> str:
    """Both ends of ``expr`` around one cut that may fall inside a name."""
    n = (chars - 1) // 2
    head, tail = expr[:n], expr[-(chars - 1 - n):]
    # cut between tokens, not inside a name ("torch.stac…"), and no dot or space
    # or comma beside the ellipsis ("F.relu(s….conv(x))" reads as a typo)
    if _word(expr[n]) and _word(head[-1]):
        cut = max(head.rfind(c) for c in " .([")
        if cut >= len(head) // 2:     # (not at the cost of most of it)
            head = head[:cut + 1]
    if _word(tail[0]) and _word(expr[-len(tail) - 1]):
        cut = min((i for i in (tail.find(c) for c in " .") if i >= 0), default=-1)
        if 0 <= cut <= len(tail) // 2:
            tail = tail[cut:]
    return head.rstrip(". ") + _CUT + tail.lstrip(". ,")


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"
