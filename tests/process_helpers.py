"""Shared by the tests that start worker processes: finding leaked children."""
import os


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
