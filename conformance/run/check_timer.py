"""A time limit per check, and where a check that ran past it was stuck.

Three layers, because a backend can block in three ways:

1. in Python code, or in native code that returns to the interpreter now and then
   (``time.sleep``, a lock, an event): ``SIGALRM`` in the main thread raises a
   failure naming the check, the limit and the backend call it was in, and the
   run goes on;
2. in native code that released the GIL (a device synchronisation that never
   ends): the signal handler never runs, so a watchdog thread notices the check
   is still running a grace period later and calls ``on_native_hang`` with the
   same message (the caller writes the verdict and ends the process);
3. in native code that holds the GIL: no Python code runs at all, so
   ``faulthandler.dump_traceback_later(exit=True)``, whose thread is C, dumps the
   stack and ends the process after a second grace period; a supervisor (the
   ``python -m conformance`` parent, or the xdist controller) reports it.

pytest-timeout has the first layer (``signal``) or a variant of the third
(``thread``: dump and kill), not both, and its message names the limit only; the
suite's own timer names the backend call, which is what a backend author acts on.
"""

from __future__ import annotations

import faulthandler
import signal
import sysconfig
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import IO, Any

import pytest

from conformance.run.nodeids import CHECKS_DIR, PACKAGE_DIR
from conformance.run.option_names import option

DEFAULT_CHECK_TIMEOUT = 60.0
_SUPPORT_FILE = str(CHECKS_DIR / "_support.py")
_HARNESS_DIRS = tuple(
    str(Path(p).resolve())
    for p in (
        sysconfig.get_paths()["stdlib"],
        Path(pytest.__file__).parent,
        Path(pytest.__file__).parent.parent / "_pytest",
        Path(pytest.__file__).parent.parent / "pluggy",
    )
)


def grace(limit: float) -> float:
    """How long after the limit the watchdog waits for the signal to take effect."""
    return max(2.0, min(15.0, limit / 4))


def _kind(path: str) -> str:
    """``check``, ``suite``, ``harness`` (stdlib, pytest) or ``backend`` (everything else)."""
    if path.startswith(str(CHECKS_DIR)):
        return "check" if Path(path).name.startswith("test_") else "suite"
    if path.startswith(str(PACKAGE_DIR)):
        return "suite"
    if path.startswith(_HARNESS_DIRS) or path.startswith("<"):
        return "harness"
    return "backend"


def where_stuck(frame: FrameType | None) -> str:
    """The backend call a thread is in: the check's ``attempt`` label and the innermost
    frame of backend code (``stuck in get_output(), at hang.py:12 in Hang.get_output``)."""
    label = backend = check = None
    while frame is not None:
        code = frame.f_code
        if label is None and code.co_name == "attempt" and code.co_filename == _SUPPORT_FILE:
            label = frame.f_locals.get("where")
        kind = _kind(code.co_filename)
        if backend is None and kind == "backend":
            backend = frame
        if check is None and kind == "check":
            check = frame
        frame = frame.f_back
    parts = []
    if backend is not None:
        name = getattr(backend.f_code, "co_qualname", backend.f_code.co_name)
        parts.append(f"stuck in {label or name + '()'}")
        parts.append(f"at {backend.f_code.co_filename}:{backend.f_lineno} in {name}")
    elif label is not None:
        parts.append(f"stuck in {label}")
    if check is not None:
        parts.append(f"check line {Path(check.f_code.co_filename).name}:{check.f_lineno}")
    return ", ".join(parts) or "stuck outside any Python frame"


def timeout_message(nodeid: str, limit: float, frame: FrameType | None, *, native: bool) -> str:
    text = (
        f"{nodeid}: timed out after {limit:g} s ({option('check-timeout')}; 0 disables it): "
        f"{where_stuck(frame)}"
    )
    if native:
        text += (
            "; it did not respond to the time limit (blocked in native code), so the "
            "process running it was stopped"
        )
    return text


class CheckTimer:
    """Arms the three layers for one check at a time (``start`` ... ``finish``)."""

    def __init__(
        self,
        limit: float,
        on_native_hang: Callable[[str, str], None],
        backstop_file: IO[Any] | int | None = None,
    ) -> None:
        self.limit = limit
        self.on_native_hang = on_native_hang
        self.backstop_file = backstop_file
        self.uses_signal = (
            hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        )
        self._main = threading.main_thread().ident
        self._nodeid: str | None = None
        self._deadline = 0.0
        self._previous: Any = None
        self._wake = threading.Condition()
        self._watchdog: threading.Thread | None = None

    # --- the check's whole protocol ------------------------------------------------

    def start(self, nodeid: str) -> None:
        with self._wake:
            self._nodeid = nodeid
            self._deadline = time.monotonic() + self.limit
            self._wake.notify()
        if self._watchdog is None:
            self._watchdog = threading.Thread(
                target=self._watch, name="conformance-check-timeout", daemon=True
            )
            self._watchdog.start()
        if self.backstop_file is not None:
            faulthandler.dump_traceback_later(
                self.limit + 2 * grace(self.limit), exit=True, file=self.backstop_file
            )

    def finish(self) -> None:
        with self._wake:
            self._nodeid = None
            self._wake.notify()
        if self.backstop_file is not None:
            faulthandler.cancel_dump_traceback_later()

    # --- each phase (setup, call, teardown): the signal ---------------------------

    def enter_phase(self) -> None:
        if not self.uses_signal or self._nodeid is None:
            return
        remaining = max(self._deadline - time.monotonic(), 0.001)
        self._previous = signal.signal(signal.SIGALRM, self._on_alarm)
        signal.setitimer(signal.ITIMER_REAL, remaining)

    def leave_phase(self) -> None:
        if not self.uses_signal or self._previous is None:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)
        self._previous = None

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        nodeid = self._nodeid
        if nodeid is None:
            return
        pytest.fail(timeout_message(nodeid, self.limit, frame, native=False), pytrace=False)

    # --- the watchdog thread ------------------------------------------------------

    def _watch(self) -> None:
        with self._wake:
            while True:
                if self._nodeid is None:
                    self._wake.wait()
                    continue
                nodeid, due = self._nodeid, self._deadline + grace(self.limit)
                left = due - time.monotonic()
                if left > 0:
                    self._wake.wait(left)
                    continue
                import sys

                frame = sys._current_frames().get(self._main or 0)
                message = timeout_message(nodeid, self.limit, frame, native=True)
                self._nodeid = None
                break
        self.on_native_hang(nodeid, message)
