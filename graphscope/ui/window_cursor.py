"""What the window shows at the timeline's cursor: stepping and playback, the
frame on the canvas, editor, console and inspector, and the selected node. A
mixin of ``MainWindow``: it uses the window's ``live`` run, its widgets
(``canvas``, ``editor``, ``console``, ``inspector``, ``timeline_bar``,
``problems``) and its play timer."""
from __future__ import annotations

import dataclasses
from typing import Optional

from graphscope.model.summary import counted
from graphscope.model.timeline import nothing_drawn_text
from graphscope.ui.end_status import end_status


class CursorViews:
    @property
    def timeline(self):
        return self.live.timeline if self.live else None

    def cursor(self) -> int:
        return self.live.timeline.cursor if self.live else 0

    def set_cursor(self, value: int) -> None:
        self._step(lambda tl: tl.set_cursor(value))

    def _on_bar_cursor(self, shown: int) -> None:
        self.set_cursor(shown - 1)

    def step_forward(self) -> None:
        self._step(lambda tl: tl.step_forward())

    def step_back(self) -> None:
        self._step(lambda tl: tl.step_back())

    def step_first(self) -> None:
        self._step(lambda tl: tl.first())

    def step_last(self) -> None:
        self._step(lambda tl: tl.last())

    def _step(self, move) -> None:
        """A stepping button: stepping by hand ends playback, then show the new frame."""
        if self.live:
            self._stop_playing()
            move(self.live.timeline)
            self._show_cursor()

    def set_speed(self, steps_per_second: float) -> None:
        """Playback speed in steps per second; 0 = instant (no animation)."""
        self.speed = steps_per_second
        self.timeline_bar.set_speed(steps_per_second)
        self.canvas.set_animated(steps_per_second != 0)
        if self._play_timer.isActive():
            if steps_per_second == 0:
                self._play_timer.stop()
                self.timeline_bar.set_playing(False)
                if self.live:
                    self.live.timeline.last()
                    self._show_cursor()
            else:
                self._play_timer.setInterval(int(1000 / steps_per_second))

    def toggle_playing(self) -> None:
        self.set_playing(not self._play_timer.isActive())

    def set_playing(self, playing: bool) -> None:
        if not playing or self.live is None:
            self._stop_playing()
            return
        tl = self.live.timeline
        if tl.cursor >= len(tl) - 1:
            if self.controller.is_running():
                # at the live end of a run still going: follow what comes next
                # (it went back to the first step, and the view stayed at the last)
                self._following = True
            else:
                # from the top, and the first step shown at once: the next tick
                # drew step 2, step 1 never, with "Step 7 of 7" on screen a tick
                # long (GUI review)
                tl.first()
                self._show_cursor()
        if self.speed == 0:
            tl.last()
            self._show_cursor()
            self.timeline_bar.set_playing(False)
            return
        self._play_timer.start(int(1000 / self.speed))
        self.timeline_bar.set_playing(True)

    def _stop_playing(self) -> None:
        self._following = False
        self._play_timer.stop()
        self.timeline_bar.set_playing(False)
        if getattr(self, "_playback_said", False) and self.live is not None \
                and self.live.trace.end is not None:
            self._end_status_line(self.live.trace.end)    # without how long playing takes

    def is_playing(self) -> bool:
        return self._play_timer.isActive()

    def _on_play_tick(self) -> None:
        live = self.live
        if live is None:
            self._stop_playing()
            return
        tl = live.timeline
        if tl.cursor < len(tl) - 1:
            tl.step_forward()
            self._show_cursor()
        if tl.cursor >= len(tl) - 1 and not self.controller.is_running():
            if self._following:
                self._fit_if_auto()
            self._stop_playing()       # reached the end of a finished run

    def _show_cursor(self) -> None:
        """Show the frame at the cursor everywhere: canvas, editor, inspector, console."""
        live = self.live
        if live is None:
            return
        tl = live.timeline
        frame = self._frame()
        self.canvas.set_frame(frame)
        if self._following:
            # live building: the view grows with the graph (unless the user zoomed);
            # once the run is over the view stays put while stepping
            self._fit_if_auto()
        self.editor.set_marker_line(None if self._edited else frame.line)
        cur = frame.current
        self.console.show_outputs(live.trace.outputs, frame.outputs_upto,
                                  self._console_note(frame.outputs_upto),
                                  self._after_the_pass(cur, frame.outputs_upto))
        phase = tl.phase(tl.cursor)
        # the bar counts steps shown (cursor + 1), so "0 / n" is before the first step
        self.timeline_bar.set_cursor(tl.cursor + 1, len(tl), phase,
                                     frame.focus.index if frame.focus is not None else None)
        self._enable_steps(tl.cursor + 1, len(tl))
        # nothing to play in a run of no steps (a static capture, a print): Play
        # stayed enabled at "Step 0 of 0" and did nothing (GUI review)
        self._set_playable(len(tl) > 0 or self.controller.is_running())
        if self._banner_ready:
            # the explanation belongs to the moment it happened: the run's last step
            at_end = tl.cursor >= len(tl) - 1
            self.banner.setVisible(at_end and not self._banner_dismissed)
        self._show_inspector(frame)
        self.cursor_changed.emit(tl.cursor)

    def _after_the_pass(self, cur, upto: int):
        """At the last step of a finished run, when it is a backward one: the
        console's divider before what the lines after the pass printed (the
        step is marked on a leaf's line, and ``print(x.grad)`` under it read as
        printed during the pass: visual review). Before the last step such
        output shows from the next step on (NOTE in model/timeline.py)."""
        live = self.live
        tl = live.timeline
        if cur is None or cur.kind != "backward" or live.trace.end is None \
                or tl.cursor < len(tl) - 1:
            return None
        first = tl.first_output_after(cur.index)
        if first >= upto:
            return None
        return first, "[printed after the backward pass, by the lines that follow it:]"

    def _enable_steps(self, shown: int, total: int) -> None:
        """The toolbar's step buttons as the bar's, ``shown`` steps of ``total`` (visual
        review: at the last step the toolbar's looked usable while the bar's were
        greyed; before any run, 0 of 0, all four did: UX review)."""
        for act in (self.first_action, self.back_action):
            act.setEnabled(shown > 0)
        for act in (self.forward_action, self.last_action):
            act.setEnabled(shown < total)

    def shown_frame(self):
        """``_frame()``: what the canvas shows at the cursor, for a picture of it
        (an exported or copied graph showed the ``.grad`` a quiz hid: GUI review)."""
        return self._frame()

    def _frame(self):
        """The timeline's state at the cursor, as it may be shown: while output is
        hidden without gradient values (labels on edges and leaves would say what
        ``print(x.grad)`` prints). The edges a backward step sends gradients along
        stay lit, their chips saying "∂ ?": with none, backward looked like forward
        but for the moving ring (visual review). Which edges carry a gradient the
        ring's path through the graph shows anyway."""
        frame = self.live.timeline.state()
        if self.output_hidden:
            frame = dataclasses.replace(frame, edge_grads=dict.fromkeys(frame.edge_grads, "?"),
                                        leaf_grads={}, grad_of={}, retained_grads={},
                                        error=None, values_hidden=True)
        return frame

    def _console_note(self, upto: Optional[int] = None) -> Optional[str]:
        """What the console says after the output: at the last step, that output
        was cut at the limit (a print over it showed an empty console and no word
        of why: GUI review) and how the run ended when it did not end well; before
        it, in a finished run, what was printed later (``_later_note``). ``upto``:
        the chunks shown at this step."""
        live = self.live
        end = live.trace.end if live else None
        if end is None:
            return None
        if live.timeline.cursor < len(live.timeline) - 1:
            return self._later_note(live, upto)
        cut = live.trace.output_cut
        cut = f"[{cut.message}]\n" if cut is not None else ""
        said = self._end_note(end)
        return (cut + (said or "")) or None

    def _later_note(self, live, upto: Optional[int]) -> Optional[str]:
        """Before the last step of a finished run: how much it printed after this
        step (the console shows what was printed up to the step). An empty console
        under "Finished", the cursor at step 18 of 12,510, read as a run that
        printed nothing (UX review)."""
        outputs = live.trace.outputs
        if upto is None or upto >= len(outputs):
            return None
        # (a print is several chunks: "0", " ", "1.25", "\n"; lines are counted by
        # their ends, and a last line without one)
        known = getattr(self, "_output_lines", None)    # (outputs, line ends before each chunk)
        if known is None or known[0] is not outputs or len(known[1]) != len(outputs) + 1:
            before = [0]
            for o in outputs:
                before.append(before[-1] + o.text.count("\n"))
            known = self._output_lines = (outputs, before)
        lines = known[1][-1] - known[1][upto] + (not outputs[-1].text.endswith("\n"))
        return f"[{counted(lines, 'more line')} printed after this step]\n" if lines else None

    def _end_note(self, end) -> Optional[str]:
        if end.status == "error" and end.error:
            e = end.error
            if e.traceback and e.traceback.lstrip().startswith("Traceback"):
                # as python prints it: the calls that led to the line (an error in a
                # function named only the function's line), and Python's own hints
                # ("Did you mean: 'y'?"), which the message alone leaves out (student review)
                return e.traceback if e.traceback.endswith("\n") else e.traceback + "\n"
            where = f" (line {e.line})" if e.line else ""
            return f"{e.type}: {e.message}{where}\n"
        if end.status in ("crash", "timeout", "stopped"):
            return f"[{end_status(end)}]\n"
        return None

    # -- selection ---------------------------------------------------------------
    def _show_inspector(self, frame) -> None:
        """The selected node; with none selected, the node of the current step, so
        stepping alone tells the story (the op that ran, the gradients it passed)."""
        live = self.live
        if self.canvas.selected() is None:
            self._selected = None          # the user clicked the canvas background
        if self._selected and self._selected in live.graph.nodes:
            self.inspector.show_node(live.graph.nodes[self._selected], live.trace, frame, "Selected",
                                     live.graph)
            return
        nid = self._current_node(frame)
        if nid is None:
            self.inspector.clear_node(nothing_drawn_text(live.trace, frame.current)
                                      if frame is not None else "")
        else:
            self.inspector.show_node(live.graph.nodes[nid], live.trace, frame, "At this step",
                                     live.graph)

    def _current_node(self, frame) -> Optional[str]:
        cur = frame.current if frame is not None else None
        if cur is None:
            return None
        g = self.live.graph
        if cur.kind == "op" and cur.op is not None:
            ids = g.op_nodes.get(cur.op) or []
            for i in ids:                     # the op itself, else what it made
                if i.startswith("o"):
                    return i
            if ids:
                return ids[0]
        hl = [i for i in sorted(frame.highlight or ()) if i in g.nodes]
        return hl[0] if hl else None

    def _on_canvas_clicked(self, node_id: str) -> None:
        self.select_node(node_id)
        if node_id and self.live is not None and node_id in self.live.graph.nodes:
            self.side_tabs.setCurrentWidget(self.inspector)   # a click asks about that node

    def select_node(self, node_id: str) -> None:
        """Select a node (canvas click, problem click); "" clears the selection."""
        live = self.live
        if live is not None and not node_id:
            self._selected = None
            self.canvas.select(None)
            self._show_inspector(self._frame())
            return
        if live is None or node_id not in live.graph.nodes:
            return
        self._selected = node_id
        node = live.graph.nodes[node_id]
        self.canvas.select(node_id)
        self.inspector.show_node(node, live.trace, self._frame(), "Selected", live.graph)
        if node.line and not self._edited:
            self.editor.go_to_line(node.line)

    def selected_node(self) -> Optional[str]:
        return self._selected

    def _on_line_clicked(self, line: int) -> None:
        if self.live is None or self._edited:
            return   # (NOTE [edited after a run]: line numbers of another text)
        ids = self.live.graph.nodes_of_line(line)
        if not ids:
            return
        # prefer the op (what the line did), else the first tensor it made
        op_ids = [i for i in ids if i.startswith("o")]
        first = (op_ids or ids)[0]
        self._selected = first
        self.canvas.select(first)
        if hasattr(self.canvas, "select_many"):
            self.canvas.select_many(ids)
        self.inspector.show_node(self.live.graph.nodes[first], self.live.trace,
                                 self._frame(), f"Made by line {line}", self.live.graph)

    def _on_problem_activated(self, line, node_ids: list) -> None:
        if line and not self._edited:   # (NOTE [edited after a run])
            self.editor.go_to_line(line)
        if node_ids and self.live and node_ids[0] in self.live.graph.nodes:
            self.select_node(node_ids[0])

    def _refresh_problems(self) -> None:
        if self.live is None or self.output_hidden:
            self.problems.set_problems([])
            self.bottom_tabs.setTabText(1, "Problems")
            return
        rows = self.live.problem_rows()
        self.problems.set_problems(rows)
        # errors and warnings are counted; notes ("tensors made here have no
        # grad_fn" for every no_grad block) are listed only: "Problems (1)" on a
        # correct snippet looked like a mistake to a beginner (first-time user review)
        n = sum(1 for r in rows if r.severity in ("error", "warning"))
        self.bottom_tabs.setTabText(1, f"Problems ({n})" if n else "Problems")
