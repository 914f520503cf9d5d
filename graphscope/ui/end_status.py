"""The words for how a run ended, said in the status bar and the console."""
from __future__ import annotations

from graphscope import protocol as P

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
