"""--step N means the step the window shows as "Step N of M" (counted from 1)."""
import types

from graphscope.ui import app as app_mod


class _Window:
    def __init__(self):
        self.cursor = None
        self.controller = types.SimpleNamespace(shutdown=lambda: None)

    def set_speed(self, _v): pass
    def show(self): pass
    def fit_when_done(self): pass
    def close(self): pass
    def step_last(self): self.cursor = "last"
    def set_cursor(self, v): self.cursor = v
    def screenshot(self, _out, _size): return True


def test_step_n_is_the_step_the_window_labels_n(qapp, tmp_path):
    w = _Window()
    assert app_mod._screenshot(qapp, w, str(tmp_path / "o.png"), 8, False, None) == 0
    assert w.cursor == 7                     # 0-based cursor behind "Step 8 of M"
    w = _Window()
    app_mod._screenshot(qapp, w, str(tmp_path / "o.png"), None, False, None)
    assert w.cursor == "last"
