"""Starting the window: ``graphscope [FILE] [--theme T] [--screenshot OUT.png [--step N]]``.

``main(args)`` takes the CLI's parsed namespace (attributes: file, scenario,
scenarios, lesson, presentation, theme, screenshot, step; missing ones count
as unset) and returns the process exit code.

Headless: with ``--screenshot`` the window is drawn offscreen (the platform is
switched to ``offscreen`` when there is no display), the snippet (or the
scenario's snippet, its quiz left unrevealed) runs, the cursor goes to the end
(or step N) and a picture of the whole window is saved, at 1600x1000, or at a
projector's 1920x1080 with ``--presentation``.
Exit 0 on success, 1 (message on stderr) when the window could not be produced
or what it was asked to show could not be opened (``--scenario`` with an unknown
id; with ``--screenshot``, a ``--lesson`` that did not load: the window opens on
its problems instead).
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Optional

SCREENSHOT_SIZE = (1600, 1000)
RUN_WAIT_MS = 120_000      # a cold first worker imports torch; then snippets are quick


def _arg(args, name, default=None):
    return getattr(args, name, default) if args is not None else default


def _ensure_platform(headless: bool) -> None:
    if headless and not os.environ.get("QT_QPA_PLATFORM") and not (
            os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"


def _classroom():
    """The classroom wiring (quiz, scenario browser, presentation), when installed."""
    if importlib.util.find_spec("graphscope.ui.classroom") is None:
        return None
    from graphscope.ui import classroom
    return classroom


def _no_display() -> bool:
    """True when Qt would have nowhere to show a window (it aborts the process then)."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return False
    return sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def main(args=None) -> int:
    screenshot: Optional[str] = _arg(args, "screenshot")
    _ensure_platform(bool(screenshot))
    if _no_display():
        print("graphscope: no display to open the window on (DISPLAY is not set).\n"
              "Run it in a desktop session, or save a picture instead:\n"
              "  graphscope FILE.py --screenshot OUT.png", file=sys.stderr)
        return 1
    from PySide6.QtWidgets import QApplication

    _quiet_offscreen_noise()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("GraphScope")
    app.setOrganizationName("GraphScope")
    from graphscope.ui.gui_thread_gc import GuiThreadCollector
    collector = GuiThreadCollector(app)   # NOTE [collections on the GUI thread]
    try:
        return _open_window(app, args, screenshot)
    finally:
        collector.stop()


def _open_window(app, args, screenshot) -> int:
    from graphscope.ui.main_window import MainWindow

    theme = _arg(args, "theme") or "light"
    try:
        window = MainWindow(theme=theme)
    except KeyError as e:                      # unknown theme name
        print(f"graphscope: {e.args[0] if e.args else e}", file=sys.stderr)
        return 1
    window.resize(*SCREENSHOT_SIZE)
    run_now = False

    file = _arg(args, "file")
    scenario_id = _arg(args, "scenario")
    if file:
        p = Path(file)
        if not p.is_file():
            what = "is a folder, not a Python file" if p.is_dir() else "does not exist"
            print(f"graphscope: {file} {what}", file=sys.stderr)
            if screenshot:
                return 1
        elif not window.open_file(p):
            title, text = window.last_message or ("", f"cannot open {file}")
            print(f"graphscope: {text}", file=sys.stderr)
            if screenshot:
                return 1
        run_now = bool(screenshot)
    classroom = _classroom()
    handled = False
    if classroom is not None and hasattr(classroom, "install"):
        # the classroom layer handles --scenario/--scenarios/--lesson/--presentation
        handled = bool(classroom.install(window, args))
        # a headless picture of a scenario shows its graph: run the snippet (the quiz
        # stays unrevealed, and hidden output stays hidden)
        run_now = run_now or (handled and bool(screenshot))
    lesson_failed = _say_lesson_problems(window)
    if lesson_failed and screenshot:
        window.controller.shutdown()
        return 1
    if not file and not handled:
        # a lesson that did not open leaves its problems on screen (status line,
        # Scenarios panel), not the welcome scenario run over them
        sc = (_load_scenario(scenario_id or "welcome")
              if scenario_id or not lesson_failed else None)
        if sc is None and scenario_id:
            print(f"graphscope: no scenario with id {scenario_id!r}", file=sys.stderr)
            return 1
        if sc is not None:
            window.load_snippet(sc.snippet, sc.snippet_filename)
            run_now = True

    if screenshot:
        # presentation mode sizes the window for a projector itself
        size = None if _arg(args, "presentation") else SCREENSHOT_SIZE
        return _screenshot(app, window, screenshot, _arg(args, "step"), run_now, size)
    window.show()
    if run_now:
        window.run()
    restore = _end_on_signals(app, window)
    try:
        return app.exec()
    finally:
        restore()


def _end_on_signals(app, window) -> None:
    """NOTE [ending on a signal]: Ctrl+C in the terminal and SIGTERM (``kill``, a
    logout) end GraphScope as they end other programs: the window closes without
    its questions, its workers stop, and unsaved text is kept in a file named on
    stderr. (Ctrl+C printed a KeyboardInterrupt traceback from inside Qt's paint
    code and the app ran on; SIGTERM left the snippet's subprocesses behind: GUI
    review.) Python runs a signal handler only between its own bytecodes, and
    an idle Qt loop runs none: a timer lets it in every 200 ms."""
    import signal
    from PySide6.QtCore import QTimer

    def end(signum, _frame) -> None:
        QTimer.singleShot(0, lambda: _close_for_signal(app, window, signum))

    before = {sig: signal.signal(sig, end) for sig in (signal.SIGINT, signal.SIGTERM)}
    tick = QTimer(app)
    tick.timeout.connect(lambda: None)
    tick.start(200)

    def restore() -> None:
        # after the loop: a signal during the shutdown that follows (a slow worker)
        # ends the process as it would have without us, not a timer nobody runs
        tick.stop()
        for sig, old in before.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
    return restore


def _close_for_signal(app, window, signum) -> None:
    try:
        kept = window.keep_unsaved()
    except OSError as e:
        kept = None
        print(f"graphscope: unsaved changes could not be kept: {e}", file=sys.stderr)
    if kept is not None:
        print(f"graphscope: unsaved changes to {window.display_name} kept in {kept}",
              file=sys.stderr)
    # the workers first, directly: a signal while the close question is open comes
    # inside closeEvent, and Qt does not run closeEvent again (code review)
    window.shutdown_workers()
    window.ask_unsaved = lambda *_: "discard"
    from PySide6.QtWidgets import QApplication
    modal = QApplication.activeModalWidget()
    if modal is not None:
        modal.close()
    window.close()
    app.quit()


def _say_lesson_problems(window) -> bool:
    """What went wrong with ``--lesson``, on stderr in one line, as ``--scenario``
    with an unknown id says it; True when nothing of the lesson opened (exit 1
    with ``--screenshot``). A lesson that did not load used to open the welcome
    scenario, silently and with exit status 0 (teacher's review)."""
    report = getattr(getattr(window, "classroom", None), "lesson_report", None)
    message = report.message() if report is not None else ""
    if message:
        print(f"graphscope: {message}", file=sys.stderr)
    return bool(message) and report.failed


def _quiet_offscreen_noise() -> None:
    """The offscreen platform warns on every window shown ("does not support
    propagateSizeHints"); that is Qt talking about itself, not news for a user
    of --screenshot. Everything else still reaches stderr."""
    if os.environ.get("QT_QPA_PLATFORM") != "offscreen":
        return
    from PySide6.QtCore import qInstallMessageHandler

    def handler(mode, context, message):
        if "propagateSizeHints" not in message:
            sys.stderr.write(message + "\n")

    qInstallMessageHandler(handler)


def _load_scenario(scenario_id: str):
    try:
        from graphscope import scenarios
        return scenarios.find(scenario_id)
    except Exception:          # a broken scenario folder must not stop the window
        return None


def _screenshot(app, window, out: str, step, run: bool, size) -> int:
    from PySide6.QtCore import QEventLoop, QSize, QTimer

    window.set_speed(0)                       # instant: no animation to wait for
    window.show()
    app.processEvents()
    if run:
        loop = QEventLoop()
        window.run_finished.connect(lambda _end: loop.quit())
        QTimer.singleShot(RUN_WAIT_MS, loop.quit)
        window.run()
        if window.is_running():
            loop.exec()
        if window.is_running():
            window.stop()
            print("graphscope: the snippet did not finish in time; showing what was recorded",
                  file=sys.stderr)
    if step is not None:
        # N as the timeline counts it ("Step N of M", from 1), not the 0-based cursor
        window.set_cursor(int(step) - 1)
    else:
        window.step_last()
    window.fit_when_done()
    app.processEvents()
    ok = window.screenshot(out, QSize(*size) if size else None)
    window.controller.shutdown()
    window.ask_unsaved = lambda *_: "discard"
    window.close()
    if not ok:
        print(f"graphscope: could not write the screenshot to {out}", file=sys.stderr)
        return 1
    print(out)
    return 0
