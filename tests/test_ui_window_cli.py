"""`graphscope FILE.py --screenshot OUT.png [--step N]`: the headless path, as a user runs it."""
import os
import subprocess
import sys
import textwrap

import pytest
from PySide6.QtGui import QImage


def _env():
    env = dict(os.environ)
    # no display and no platform chosen: the app must pick offscreen by itself
    for k in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"):
        env.pop(k, None)
    return env


def _graphscope(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "graphscope", *map(str, args)],
                          capture_output=True, text=True, env=_env(), timeout=timeout)


def test_screenshot_of_a_run_at_a_step(tmp_path):
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent("""\
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        with torch.no_grad():
            y = x * 2
        z = y.sum()
        z.backward()
    """), encoding="utf-8")
    out = tmp_path / "shot.png"
    r = _graphscope(snippet, "--screenshot", out, "--step", 1)
    assert r.returncode == 0, r.stderr
    img = QImage(str(out))
    assert not img.isNull()
    assert (img.width(), img.height()) == (1600, 1000)
    # not blank: many colours, and the canvas area is not one flat colour
    colours = {img.pixel(x, y) for x in range(0, 1600, 7) for y in range(0, 1000, 7)}
    assert len(colours) > 40
    canvas = {img.pixel(x, y) for x in range(500, 1300, 5) for y in range(150, 650, 5)}
    assert len(canvas) > 5


def test_screenshot_of_a_missing_file_fails_with_a_message(tmp_path):
    out = tmp_path / "shot.png"
    r = _graphscope(tmp_path / "nope.py", "--screenshot", out)
    assert r.returncode != 0
    assert "nope.py" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()
    r = _graphscope(tmp_path, "--screenshot", out)          # a directory
    assert r.returncode != 0 and "Traceback" not in r.stderr


def test_window_without_a_display_says_so_instead_of_aborting(tmp_path):
    snippet = tmp_path / "snippet.py"
    snippet.write_text("import torch\n", encoding="utf-8")
    out = _graphscope(snippet, timeout=60)
    assert out.returncode == 1
    assert "no display" in out.stderr and "--screenshot" in out.stderr
    assert "Traceback" not in out.stderr and "Aborted" not in out.stderr


def test_a_lesson_that_does_not_load_fails_as_an_unknown_scenario_does(tmp_path):
    """It exited 0, said nothing and pictured the welcome scenario instead."""
    lesson = tmp_path / "latin1.toml"
    lesson.write_bytes(b'title = "Caf\xe9 lesson"\nscenarios = ["t-five"]\n')
    out = tmp_path / "shot.png"
    r = _graphscope("--lesson", lesson, "--screenshot", out, timeout=60)
    assert r.returncode == 1 and not out.exists()
    assert r.stderr == (f"graphscope: cannot open the lesson: {lesson}:1: "
                        "the file is not UTF-8 text: save it as UTF-8\n")
    r = _graphscope("--scenario", "does-not-exist", "--screenshot", out, timeout=60)
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1 and not out.exists()


def test_a_lesson_with_an_unknown_id_opens_and_names_it(tmp_path):
    lesson = tmp_path / "week3.toml"
    lesson.write_text('title = "Week 3"\nscenarios = ["nope", "welcome"]\n')
    out = tmp_path / "shot.png"
    r = _graphscope("--lesson", lesson, "--screenshot", out)
    assert r.returncode == 0 and out.exists()
    assert r.stderr == (f"graphscope: the lesson {lesson} names scenarios that were not "
                        "found: 'nope'; it opened with the other 1\n")



def _children(pid: int) -> list:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_the_window_ends_cleanly_on_ctrl_c_and_sigterm(tmp_path, sig):
    """NOTE [ending on a signal] in ui/app.py (GUI review): Ctrl+C printed a
    KeyboardInterrupt traceback from Qt's paint code and the app ran on. Ctrl+C
    and SIGTERM now close the window and stop its workers, and the app exits 0."""
    import signal
    import time
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    # with no file the app opens and runs the welcome scenario: a worker runs
    app = subprocess.Popen([sys.executable, "-m", "graphscope"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _children(app.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = _children(app.pid)
        assert workers, "no worker started"
        time.sleep(1.0)
        app.send_signal(getattr(signal, sig))
        out, err = app.communicate(timeout=30)
    finally:
        if app.poll() is None:
            app.kill()
    assert app.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    time.sleep(0.5)
    for pid in workers:
        assert not os.path.exists(f"/proc/{pid}") or \
            open(f"/proc/{pid}/stat").read().split()[2] == "Z"
