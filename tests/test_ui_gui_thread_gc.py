"""NOTE [collections on the GUI thread]: cycles made on another thread are
freed on the GUI thread's timer, never by a collection on that thread."""
import gc
import threading

from graphscope.ui.gui_thread_gc import GuiThreadCollector


class _Cycle:
    freed_on: list = []

    def __init__(self):
        self.me = self

    def __del__(self):
        _Cycle.freed_on.append(threading.current_thread().name)


def test_cycles_made_on_a_reader_thread_are_freed_on_the_gui_thread(qtbot):
    collector = GuiThreadCollector(interval_ms=20)
    try:
        assert not gc.isenabled()
        _Cycle.freed_on = []

        def reader():
            for _ in range(3):
                _Cycle()
            # far more than the young generation's threshold: with automatic
            # collection on, one of these allocations collects here
            junk = [[i] for i in range(20_000)]
            del junk

        t = threading.Thread(target=reader, name="graphscope-reader")
        t.start()
        t.join()
        assert _Cycle.freed_on == []          # nothing collected on that thread
        qtbot.waitUntil(lambda: len(_Cycle.freed_on) == 3, timeout=5000)
        assert set(_Cycle.freed_on) == {"MainThread"}
    finally:
        collector.stop()


def test_stopping_puts_automatic_collection_back_as_it_was():
    was = gc.isenabled()
    gc.enable()
    try:
        c = GuiThreadCollector()
        assert not gc.isenabled()
        c.stop()
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_a_full_collection_waits_for_a_quarter_new_long_lived_objects(monkeypatch):
    """As python's own collector: walking a big trace's objects in every full
    collection would make the stepping hitch."""
    gc.collect()
    quarter = len(gc.get_objects(generation=2)) // 4
    old = gc.get_threshold()
    gens = []
    real = gc.collect
    monkeypatch.setattr(gc, "collect", lambda g=2: (gens.append(g), real(g))[1])
    gc.set_threshold(100, 1, 1)
    c = GuiThreadCollector(interval_ms=60_000)   # (checked by hand below)
    survivors = []
    try:
        while len(survivors) < quarter * 0.7:
            survivors.extend([i] for i in range(1000))
            c.check()
        assert 1 in gens and 2 not in gens       # young ones only, so far
        while len(survivors) < quarter * 3 + 10_000 and 2 not in gens:
            survivors.extend([i] for i in range(1000))
            c.check()
        assert 2 in gens                         # a quarter new: a full one is due
    finally:
        c.stop()
        gc.set_threshold(*old)
