"""Suite-wide guards.

- Qt runs offscreen (also when pytest is started without ./run.sh).
- No modal dialog may ever block a test: a blocked test would hang CI until its
  time limit. QMessageBox's static prompts answer "Discard" unless a test sets
  ``window.ask_unsaved`` itself to check the prompt.
- Settings (recent files, theme) go to a temporary folder, never the user's.
- Cyclic garbage is collected on the GUI thread, as in the window (NOTE
  [collections on the GUI thread] in ui/gui_thread_gc.py): a collection on a
  runner's reader thread that freed a test's old widgets hung the suite once;
  what is due is collected after every test too.
- Workers see PYTHONIOENCODING=utf-8, as ``capture_helpers.plain_run`` gives the
  plain python they are compared with: stdout's error handler then does not
  depend on the machine's locale (NOTE [stdout's errors] in capture/output.py).
"""
import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["PYTHONIOENCODING"] = "utf-8"


@pytest.fixture(autouse=True)
def _no_blocking_dialogs(monkeypatch, tmp_path):
    try:
        from PySide6.QtCore import QSettings
        from PySide6.QtWidgets import QMessageBox
    except ImportError:  # pragma: no cover - Qt is a hard dependency
        yield
        return
    monkeypatch.setattr(QMessageBox, "question",
                        staticmethod(lambda *a, **k: QMessageBox.StandardButton.Discard))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    yield


@pytest.fixture(scope="session", autouse=True)
def _gui_thread_collector(qapp):
    from graphscope.ui.gui_thread_gc import GuiThreadCollector
    collector = GuiThreadCollector()
    yield collector
    collector.stop()


@pytest.fixture(autouse=True)
def _collect_after_each_test(_gui_thread_collector):
    yield
    _gui_thread_collector.check()
