"""Shared by the tests that start worker processes: finding leaked children, and
the two autouse fixtures a module of such tests imports to check for them."""
import os

import pytest

from graphscope.runner import shared_runner


def children() -> set:
    """Live (non-zombie) child processes of this test process, from /proc."""
    me, kids = os.getpid(), set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(rest[1]) == me and rest[0] != "Z":
            kids.add(int(d))
    return kids


@pytest.fixture(autouse=True)
def no_leaked_workers():
    """After each test: no worker left but the shared runner's warm one."""
    before = children()
    yield
    # a test that failed while its run went on (an interrupt that did nothing and
    # a runaway loop) left the shared runner busy: the next test's start was
    # refused with "a run is already in progress" and failed too
    if shared_runner().running:
        shared_runner().stop()
        shared_runner().wait(5)
    leaked = children() - before - shared_runner().worker_pids()
    assert not leaked, f"worker processes left behind: {leaked}"


@pytest.fixture(scope="module", autouse=True)
def all_workers_gone_at_the_end():
    """After the module: closing the shared runner leaves no process behind."""
    before = children()
    yield
    shared_runner().close()
    assert not (children() - before)
