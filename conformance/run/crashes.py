"""Words for a check that ended its process: the signal or exit status, and where it was.

Used by whoever outlives the process: the xdist controller (``--isolate``) and the
``python -m conformance`` supervisor.  ``fault_text`` is what :mod:`faulthandler`
wrote for the dead process (a fatal signal, or the hard time limit of
:mod:`conformance.run.check_timer`), if anything.
"""

from __future__ import annotations

import re
import signal

from conformance.run.check_timer import _kind

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<name>\S+)')


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "its process ended (exit status unknown)"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
            meaning = signal.strsignal(-returncode) or ""
        except ValueError:
            name, meaning = f"signal {-returncode}", ""
        return f"its process was killed by {name}" + (f" ({meaning})" if meaning else "")
    return (
        f"its process exited with status {returncode} in the middle of the check "
        "(os._exit(), exit() or abort handling in native code)"
    )


def where_it_died(fault_text: str) -> str:
    """The innermost backend frame and the check line of a faulthandler dump."""
    backend = check = None
    for line in fault_text.splitlines():
        if line.startswith("Thread ") and "Current thread" not in line:
            if backend or check:
                break  # only the thread that crashed (listed first by faulthandler)
            continue
        match = _FRAME.match(line)
        if match is None:
            continue
        kind = _kind(match["path"])
        if backend is None and kind == "backend":
            backend = f"at {match['path']}:{match['line']} in {match['name']}"
        if check is None and kind == "check":
            check = f"check line {match['path'].rpartition('/')[2]}:{match['line']}"
    return ", ".join(p for p in (backend, check) if p)


def hard_timeout(fault_text: str) -> bool:
    """faulthandler's ``dump_traceback_later`` writes ``Timeout (h:mm:ss)!`` first."""
    return fault_text.lstrip().startswith("Timeout (")


def crash_message(nodeid: str, returncode: int | None, fault_text: str, limit: float) -> str:
    where = where_it_died(fault_text)
    if hard_timeout(fault_text):
        text = (
            f"{nodeid}: timed out after {limit:g} s (--check-timeout; 0 disables it) and did "
            "not respond (blocked in native code holding the GIL), so its process was stopped"
        )
    else:
        text = f"{nodeid}: the check crashed: {describe_exit(returncode)}"
    return text + (f"; {where}" if where else "")
