"""The words for how a run ended, said in the status bar and the console, and
for how long playing on to its end would take."""
from __future__ import annotations

from graphscope import protocol as P
from graphscope.model.summary import counted

END_STATUS = {
    "ok": "Finished",
    "exit": "Finished (sys.exit)",
    "error": "The snippet raised an exception",
    "timeout": "Stopped: the snippet ran too long (timeout)",
    "crash": "The worker process crashed",
    "stopped": "Stopped",
}


def end_status(end) -> str:
    """The status-bar words for how a run ended. A stop or timeout that came
    after the snippet's last line (a thread that never ends, an atexit function
    that waits) says so: the snippet itself finished, it was not a slow loop."""
    err = end.error
    if (end.status in ("timeout", "stopped") and err is not None
            and P.AFTER_LAST_LINE in (err.message or "")):
        if end.status == "timeout":
            return ("Stopped after the snippet's last line: its threads or atexit "
                    "functions ran too long (timeout)")
        return "Stopped after the snippet's last line (its threads or atexit functions)"
    if end.status == "exit" and end.exit_code:
        return f"Finished (sys.exit, exit code {end.exit_code})"
    if end.status == "crash" and end.exit_code is not None:
        if end.exit_code >= 0:
            # an exit code, not a signal: os._exit(3) in the snippet is no crash
            # (GUI review: "crashed" for a deliberate exit)
            return f"The snippet's process ended with exit code {end.exit_code}"
        return f"The worker process crashed (signal {-end.exit_code})"
    return END_STATUS.get(end.status, end.status)


def playback_note(left: int, speed: float) -> str:
    """What the status line adds when a run is over and playback has a long way
    to go: a 500-iteration loop finished in 1.4 s and then played on at 5 steps
    a second from step 18 of 12,510, 42 minutes, with an empty console and no
    word of End (UX review)."""
    seconds = left / speed
    if seconds < 60:
        return ""
    if seconds < 5400:
        took = counted(max(1, round(seconds / 60)), "minute")
    else:
        took = counted(round(seconds / 3600), "hour")
    return (f" Playing it at {speed:g} steps a second takes {took}: Step \u203a Last step "
            "(End) goes there, and the speed box sets a quicker pace.")
