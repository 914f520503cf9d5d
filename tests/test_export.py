"""JSON and DOT export of a real trace (one worker run shared by the module)."""
import json
import os
import re
import threading
import time

import pytest

from graphscope import export
from graphscope import protocol as P
from graphscope.model.trace import Trace
from graphscope.runner import Runner, run_to_trace

SNIPPET = """\
import torch
x = torch.ones(2, 3, requires_grad=True)
w = torch.randn(3, requires_grad=True)
y = (x * w).sum()
with torch.no_grad():
    z = x * 2
d = y.detach()
y.backward()
print("done")
"""


@pytest.fixture(scope="module")
def trace():
    with Runner(warm=False) as r:
        tr = run_to_trace(SNIPPET, "demo.py", runner=r)
    assert tr.status == "ok", tr.error
    return tr


def _dot_parts(text):
    nodes = dict(re.findall(r'^\s*([to]\d+) \[(.*)\];$', text, re.M))
    edges = re.findall(r'^\s*([to]\d+) -> ([to]\d+)(?: \[(.*)\])?;$', text, re.M)
    return nodes, edges


def test_json_round_trips_through_the_trace_reader(trace):
    text = export.to_json(trace)
    d = json.loads(text)
    assert d["format"] == "graphscope-trace" and d["version"] == 1
    back = Trace.from_json(text)
    assert back.ops == trace.ops
    assert back.tensors == trace.tensors
    assert back.backward == trace.backward
    assert back.stdout == "done\n" and back.status == "ok"


def test_dot_has_boxes_ellipses_and_every_edge_declared(trace):
    text = export.to_dot(trace)
    assert text.startswith('digraph "forward" {') and text.rstrip().endswith("}")
    assert text.count("{") == text.count("}")
    nodes, edges = _dot_parts(text)
    for src, dst, _ in edges:
        assert src in nodes and dst in nodes, (src, dst)
    x = trace.tensor_by_name("x")
    assert "shape=box" in nodes[f"t{x.id}"]
    assert 'x\\n2x3 float32' in nodes[f"t{x.id}"]
    mul = next(o for o in trace.ops if o.name == "mul" and o.grad_enabled)
    assert "shape=ellipse" in nodes[f"o{mul.id}"]
    assert "MulBackward0" in nodes[f"o{mul.id}"]
    # every op appears once
    assert {k for k in nodes if k.startswith("o")} == {f"o{o.id}" for o in trace.ops}


def test_dot_labels_an_unnamed_tensor_as_the_window_does(trace):
    # x * w is never bound to a name: "x * w", not "t2"
    dot = export.to_dot(trace)
    mul = next(o for o in trace.ops if o.name == "mul" and o.grad_enabled)
    tid = mul.outputs[0]
    assert trace.tensors[tid].name is None and mul.expr == "x * w"
    assert re.search(rf't{tid} \[shape=box, label="x \* w\\n', dot)


def test_dot_marks_no_grad_edges_and_regions_and_detach(trace):
    text = export.to_dot(trace)
    nodes, edges = _dot_parts(text)
    z = trace.tensor_by_name("z")
    into_z = [e for e in edges if e[1] == f"t{z.id}"]
    assert into_z and all("dashed" in (e[2] or "") for e in into_z)
    y = trace.tensor_by_name("y")
    into_y = [e for e in edges if e[1] == f"t{y.id}"]
    assert into_y and all("dashed" not in (e[2] or "") for e in into_y)
    cluster = re.search(r"subgraph cluster_\w+ \{(.*?)\n  \}", text, re.S)
    assert cluster and "torch.no_grad(), lines 5-6" in cluster.group(1)
    assert f"t{z.id} [" in cluster.group(1)
    assert any("detach" in (e[2] or "") for e in edges)


def test_write_json_and_dot_files(trace, tmp_path):
    export.write(trace, tmp_path / "t.json", "json")
    export.write(trace, tmp_path / "t.dot", "dot")
    assert Trace.from_json((tmp_path / "t.json").read_text()).ops == trace.ops
    assert (tmp_path / "t.dot").read_text() == export.to_dot(trace)
    with pytest.raises(export.ExportError):
        export.write(trace, tmp_path / "t.gif", "gif")


def test_a_new_file_gets_the_mode_the_umask_gives_and_an_old_one_keeps_its_own(trace, tmp_path):
    """The file is written beside its place and moved there: it must get the mode
    ``open`` would have given it, and a file it replaces keeps its mode."""
    import os
    old = os.umask(0o027)
    calls = []
    real = os.umask
    try:
        # read from /proc, never set (os.umask(0) then back left a moment in which
        # another thread's new file was world-writable): no call to os.umask at all
        os.umask = lambda m: calls.append(m) or real(m)
        try:
            export.write(trace, tmp_path / "new.json", "json")
        finally:
            os.umask = real
        assert calls == [] and real(0o027) == 0o027
        kept = tmp_path / "kept.json"
        kept.write_text("{}")
        kept.chmod(0o604)
        export.write(trace, kept, "json")
    finally:
        os.umask(old)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o640
    assert kept.stat().st_mode & 0o777 == 0o604 and kept.stat().st_size > 2


def test_dot_quotes_awkward_names():
    from graphscope import protocol as P
    tr = Trace()
    tr.apply(P.TensorInfo(id=0, shape=[2], dtype="float32", name='a"b\\c'))
    tr.apply(P.Op(id=0, seq=0, name="mul", qualname="torch.mul", line=1, grad_enabled=True,
                  inputs=[0, 7], outputs=[1]))
    text = export.to_dot(tr)
    assert 'label="a\\"b\\\\c\\n2 float32"' in text
    nodes, edges = _dot_parts(text)
    assert "t7" in nodes and "t1" in nodes  # tensors not in the table still get nodes


@pytest.mark.skipif(not os.environ.get("QT_QPA_PLATFORM"), reason="needs offscreen Qt")
def test_svg_export_through_the_renderer(trace, tmp_path):
    try:
        export.renderer()
    except export.ExportError as e:
        pytest.skip(str(e))
    out = tmp_path / "g.svg"
    export.write(trace, out, "svg")
    text = out.read_text(encoding="utf-8", errors="replace")
    assert "<svg" in text


@pytest.mark.skipif(not os.environ.get("QT_QPA_PLATFORM"), reason="needs offscreen Qt")
def test_png_export_of_a_small_graph_is_big_enough_for_a_slide(trace, tmp_path):
    try:
        export.renderer()
    except export.ExportError as e:
        pytest.skip(str(e))
    from PySide6.QtGui import QImage
    from graphscope.ui import render
    graph, layout, frame = render.scene_for_trace(trace)
    at_one = render.render_image(graph, layout, frame)        # 1 px per scene unit
    assert max(at_one.width(), at_one.height()) < 1600        # the case this is about
    out = tmp_path / "g.png"
    export.write(trace, out, "png")
    img = QImage(str(out))
    assert not img.isNull()
    assert max(img.width(), img.height()) >= 1600
    # scaled, not padded: the same aspect ratio as the 1x picture, at most 3x larger
    assert abs(img.width() / img.height() - at_one.width() / at_one.height()) < 0.05
    assert img.width() <= 3 * at_one.width() + 2
    # not blank: a good share of pixels differ from the background corner
    small = img.scaled(200, 200 * img.height() // img.width())
    bg = small.pixel(0, 0)
    ink = sum(small.pixel(x, y) != bg for x in range(small.width()) for y in range(small.height()))
    assert ink > 0.02 * small.width() * small.height()


def test_json_rows_made_during_the_run_give_the_same_file():
    """NOTE [JSON as it comes]: the export encodes rows while the snippet runs;
    the file must be the text json.dumps gives for Trace.to_dict, byte for byte,
    also for tensors whose records were replaced after they were encoded (a name
    bound later, the final .grad)."""
    rows = export.RowText()
    with Runner(warm=False) as r:
        tr = run_to_trace(SNIPPET, "demo.py", runner=r, also=rows.extend)
    assert rows.matches(tr)
    x = tr.tensor_by_name("x")
    assert x.grad is not None            # set by an update after x was first encoded
    expected = json.dumps(tr.to_dict(), allow_nan=True)
    assert export.to_json(tr, rows=rows) == expected
    assert export.to_json(tr) == expected
    partial = export.RowText()
    partial.extend(tr.ops[:3])           # followed only part of the run: not used
    assert not partial.matches(tr)
    assert export.to_json(tr, rows=partial) == expected


def _export_while_it_ends(source, out):
    """Run ``source`` as ``graphscope export`` does (NOTE [the file before the
    End]); returns the trace and the size of its temporary file when the End came."""
    tr = Trace(source=source, filename="demo.py")
    jf = export.JsonFile(tr, out)
    at_end = []

    def take(batch):
        if any(m.T == "end" for m in batch):
            at_end.append(jf.written())
            at_end.extend(p.name for p in out.parent.iterdir())   # (it has no name yet)
        jf.take(batch)

    with Runner(warm=False) as r:
        got = run_to_trace(source, "demo.py", runner=r, also=take, into=tr)
    assert got is tr
    export.write(tr, out, "json", rows=jf)
    return tr, at_end


def test_the_file_is_written_while_the_run_ends_and_is_the_same_text(tmp_path):
    """NOTE [the file before the End]: most of the file is written when the
    snippet's code has ended, before the End; what follows (output of an atexit
    function, how the run ended) is added at the End, and the file is the text
    json.dumps gives for Trace.to_dict, byte for byte."""
    out = tmp_path / "t.json"
    source = SNIPPET + "import atexit\natexit.register(print, 'bye')\n"
    tr, at_end = _export_while_it_ends(source, out)
    assert tr.status == "ok" and tr.stdout == "done\nbye\n"
    text = out.read_text(encoding="utf-8")
    assert text == json.dumps(tr.to_dict(), allow_nan=True)
    ops_text = json.dumps(tr.to_dict()["ops"])
    assert at_end[0] > len(ops_text)   # the head was on disk before the End
    assert at_end[1:] == []             # ... in a file with no name yet
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]


def test_a_run_that_ends_otherwise_than_its_code_did_is_written_again(tmp_path):
    """The head holds the status the snippet's code ended with; an atexit
    function that leaves with os._exit(3) ends the run as an exit: the file is
    then written again whole, with that status."""
    out = tmp_path / "t.json"
    tr, at_end = _export_while_it_ends(
        SNIPPET + "import atexit, os\natexit.register(os._exit, 3)\n", out)
    assert tr.status == "exit" and tr.end.exit_code == 3
    assert at_end[0] > 0   # a head was written, with status "ok"
    text = out.read_text(encoding="utf-8")
    assert text == json.dumps(tr.to_dict(), allow_nan=True)
    assert json.loads(text)["status"] == "exit"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]


def _head_written_slowly(tmp_path, monkeypatch):
    """A JsonFile for tmp_path/t.json whose head (a piece every 0.1 s, a slow
    disk) is being written on another thread: ``(trace, file, thread)``."""
    real = export._key_pieces

    def slow(*a, **k):
        for piece in real(*a, **k):
            time.sleep(0.1)
            yield piece

    monkeypatch.setattr(export, "_key_pieces", slow)
    tr = Trace(source="print(1)\n", filename="demo.py")
    jf = export.JsonFile(tr, tmp_path / "t.json")
    writer = threading.Thread(target=jf.take, args=([P.Outcome("ok")],))
    writer.start()
    time.sleep(0.35)
    return tr, jf, writer


def test_abandoning_the_file_does_not_wait_for_its_head(tmp_path, monkeypatch):
    """Ctrl+C while the head is written (a slow disk): abandon() returned only
    when the head was whole, and a second Ctrl+C meanwhile left a temporary file
    (code review). It returns at once; the writer stops at its next piece."""
    tr, jf, writer = _head_written_slowly(tmp_path, monkeypatch)
    t0 = time.monotonic()
    jf.abandon()
    assert time.monotonic() - t0 < 0.09
    writer.join(5)
    assert not writer.is_alive() and jf.written() == 0
    assert list(tmp_path.iterdir()) == []
    assert not jf.finish(tr, tmp_path / "t.json")   # nothing of it holds


def test_abandoning_a_named_file_removes_it_at_once(tmp_path, monkeypatch):
    """Where O_TMPFILE is not to be had (NFS) the file has a name from the
    start; the command leaves right after abandon(), before the writer's next
    piece, and left the .part file behind (review)."""
    monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    tr, jf, writer = _head_written_slowly(tmp_path, monkeypatch)
    assert [p.name for p in tmp_path.iterdir()][0].endswith(".part")   # named
    jf.abandon()
    assert list(tmp_path.iterdir()) == []      # at once, not at the writer's next piece
    writer.join(5)
    assert list(tmp_path.iterdir()) == []


def test_json_written_in_pieces_is_the_same_text(tmp_path, monkeypatch, capsys):
    """write() streams the JSON in pieces of rows (no whole-file string): the
    file, and stdout, hold the same text as to_json, also where a row list is
    split across pieces."""
    rows = export.RowText()
    with Runner(warm=False) as r:
        tr = run_to_trace(SNIPPET, "demo.py", runner=r, also=rows.extend)
    expected = json.dumps(tr.to_dict(), allow_nan=True)
    assert len(tr.ops) > 3 and len(tr.tensors) > 3 and len(tr.backward) > 3
    for piece in (2, 3, 10_000):
        monkeypatch.setattr(export, "_PIECE", piece)
        out = tmp_path / f"t{piece}.json"
        export.write(tr, out, "json", rows=rows)
        assert out.read_text(encoding="utf-8") == expected
        export.write(tr, "-", "json")
        assert capsys.readouterr().out == expected + "\n"
    empty = Trace(source="", filename="e.py")
    assert export.to_json(empty) == json.dumps(empty.to_dict(), allow_nan=True)


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(version=True), "unsupported trace version"),
    (lambda d: d.update(version=1.0), "unsupported trace version"),
    (lambda d: d.update(tensors=[1]), "malformed trace"),
    (lambda d: d.update(status="error", error="boom"), "malformed trace"),
    (lambda d: d["ops"][0].update(inputs=None), "inputs must be list"),
    (lambda d: d["ops"][0].update(inputs=["t0"]), "inputs must hold whole numbers"),
    (lambda d: d["ops"][0].update(alias="zz"), "alias must be dict"),
    (lambda d: d["ops"][0].update(seq="3"), "seq must be int"),
    (lambda d: d["ops"][0].update(grad_enabled=1), "grad_enabled must be bool"),
    # the run's end and the static results (docs review: these loaded, then a crash
    # trace with "exit_code": "x" raised a TypeError in the window's status line)
    (lambda d: d.update(status=5), "status must be one of"),
    (lambda d: d.update(status="bogus"), "status must be one of"),
    (lambda d: d.update(status="crash", exit_code="x"), "exit_code must be int"),
    (lambda d: d.update(status="exit", exit_code=True), "exit_code must be int"),
    (lambda d: d.update(duration="x"), "duration must be float"),
    (lambda d: d.update(status="error", error={"type": 3, "message": None}), "type must be str"),
    (lambda d: d.update(static="x"), "static must be an object"),
    (lambda d: d.update(static={"fx": {"target": 3, "ok": True}}), "target must be str"),
    # the file's own keys and the sub-graph's entries (docs review: these loaded,
    # "truncated": "no" as true and "ops": {} as no ops)
    (lambda d: d.update(truncated="no"), "truncated must be true or false"),
    (lambda d: d.update(ops={}), "ops must be a list"),
    (lambda d: d.update(tensors=[]), "tensors must be an object"),
    (lambda d: d.update(stdout=5), "stdout must be text"),
    (lambda d: d.update(torch_version=5), "torch_version must be text"),
    (lambda d: d.update(named_after=[]), "named_after must be an object"),
    (lambda d: d.update(tensors={"a": {}}), "keyed by tensor id"),
    (lambda d: d.update(tensors={"--1": {}}), "keyed by tensor id"),
    (lambda d: d.update(tensors={"\u00b2": {}}), "keyed by tensor id"),
    (lambda d: next(iter(d["tensors"].values())).update(id="0"), "row says id '0'"),
    (lambda d: d["ops"][0].update(subgraph=[5]), "subgraph must be a list of [name"),
    (lambda d: d["ops"][0].update(subgraph=[["A", [7]]]), "subgraph must be a list of [name"),
])
def test_a_damaged_trace_file_is_refused_with_what_is_wrong(trace, change, words):
    """A hand-edited trace with ``"inputs": null`` loaded, then failed in the model
    with a TypeError; others escaped as AttributeError or RecursionError. Every
    one is now a TraceFormatError saying what is wrong."""
    from graphscope.model.trace import TraceFormatError
    d = json.loads(export.to_json(trace))
    change(d)
    with pytest.raises(TraceFormatError, match=re.escape(words)):
        Trace.from_json(json.dumps(d))


def test_passes_in_a_trace_file_are_made_again_from_its_rows(trace):
    """A trace whose "passes" was damaged ("xx") loaded, then the passes panel
    raised AttributeError: passes are derived, so they are derived again."""
    from graphscope.model.passes import passes_of
    d = json.loads(export.to_json(trace))
    good = d["passes"]
    assert good
    d["passes"] = "xx"
    tr = Trace.from_json(json.dumps(d))
    assert tr.passes == good
    assert len(passes_of(tr)) == len(good)


def test_a_trace_nested_too_deeply_is_refused():
    from graphscope.model.trace import TraceFormatError
    with pytest.raises(TraceFormatError, match="not JSON"):
        Trace.from_json("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(source=5), "source must be text"),
    (lambda d: next(iter(d["tensors"].values())).update(shape=[2, "3"]), "list of sizes"),
    (lambda d: d["backward"][0].update(grad_outputs=["x"]), "not a summary"),
    (lambda d: d["backward"][0]["grad_outputs"][0].update(shape=[1.5]), "list of sizes"),
])
def test_a_damaged_trace_is_refused_one_level_down_too(trace, change, words):
    """Shapes and gradient summaries are read by the model without a check: a
    fuzzed trace loaded, then failed in build_graph (review finding)."""
    from graphscope.model.trace import TraceFormatError
    d = json.loads(export.to_json(trace))
    assert d["backward"] and d["backward"][0]["grad_outputs"]
    change(d)
    with pytest.raises(TraceFormatError, match=re.escape(words)):
        Trace.from_json(json.dumps(d))


def test_the_trace_format_page_s_example_is_what_graphscope_writes():
    """docs/trace-format.md shows a whole trace file for a snippet; it had fallen
    behind the format (the passes' ``new_graph``: docs review). It is checked
    against a real run, all but the run's duration and torch's version."""
    from pathlib import Path
    import graphscope
    doc = (Path(__file__).resolve().parent.parent / "docs" / "trace-format.md").read_text()
    example = doc[doc.index("## Example"):]
    source = re.search(r"```python\n(.*?)```", example, re.S).group(1)
    shown = json.loads(re.search(r"```json\n(.*?)```", example, re.S).group(1))
    written = json.loads(export.to_json(graphscope.trace(source, "example.py")))
    for key in ("duration", "torch_version"):
        assert key in shown and key in written
        del shown[key], written[key]
    assert written == shown
