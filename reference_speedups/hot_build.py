"""A faster path built off the caller's thread, once calls show it is worth building.

Only in a process that asks for run-time builds (:func:`allow`, or
``$OUTPUTS_REFERENCE_COMPILE=1``): the benchmarks do, a conformance run never does
(its checks need the rules, not the speed), so it never starts a compiler.  Even
then no caller waits for a compile.  A :class:`HotBuild` is the tiering JIT
runtimes do: callers keep their eager path and report each call that a built path
would serve (:meth:`HotBuild.note_hot_call`); the :data:`HOT_CALLS`-th starts the
build on a daemon thread; from the moment it is ready, :attr:`HotBuild.run` holds
it.  A build that fails leaves its callers eager for the rest of the process, and
:meth:`HotBuild.state` says why.  ``$OUTPUTS_REFERENCE_COMPILE=0`` builds nothing.

Used by the rank count (:mod:`reference.compiled_ranks`, one build per device) and
the unpadding's list builder (:mod:`reference.compiled_unpad`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

__all__ = ["HOT_CALLS", "SWITCH", "HotBuild", "allow", "enabled", "root_cause", "wait_all"]

#: Calls a built path would serve before its build starts: a decode loop, a
#: benchmark; not a one-off check.
HOT_CALLS = 16
#: The environment variable that allows run-time builds (``1``) or forbids them
#: even after :func:`allow` (``0``).
SWITCH = "OUTPUTS_REFERENCE_COMPILE"
_allowed = False

Built = TypeVar("Built")


def allow(allowed: bool = True) -> None:
    """Let this process build faster paths at run time (a benchmark's, not a check's)."""
    global _allowed
    _allowed = allowed


def enabled() -> bool:
    """Whether builds may run: allowed by :func:`allow` or ``$OUTPUTS_REFERENCE_COMPILE=1``,
    and not forbidden by ``$OUTPUTS_REFERENCE_COMPILE=0``."""
    switch = os.environ.get(SWITCH, "")
    return switch == "1" or (_allowed and switch != "0")


class HotBuild(Generic[Built]):
    """One path, built once on a background thread after :data:`HOT_CALLS` calls.

    ``build`` returns ``(kind, built)``: what was built, in words (``"C loop"``),
    for :meth:`state`, and the thing itself, which :attr:`run` then holds.
    """

    def __init__(self, build: Callable[[], tuple[str, Built]], thread_name: str) -> None:
        self._build = build
        self._thread_name = thread_name
        self._lock = threading.Lock()
        self.hot_calls = 0
        self.started = False
        self.done = threading.Event()
        #: The built path once it is ready, else None (read without a lock: a
        #: caller sees None or the finished thing, never a half-built one).
        self.run: Built | None = None
        self.kind = ""
        self.failure: str | None = None

    @property
    def building(self) -> bool:
        return self.started and not self.done.is_set()

    def note_hot_call(self) -> None:
        """Count one call the built path would serve; start the build on the last.

        With the switch off nothing counts and nothing builds."""
        if self.started or not enabled():
            return
        with self._lock:
            if self.started:
                return
            self.hot_calls += 1
            if self.hot_calls < HOT_CALLS:
                return
            self.started = True
        threading.Thread(target=self._build_now, name=self._thread_name, daemon=True).start()

    def build_here(self) -> None:
        """Build now, on this thread, unless a build has started or the switch is off:
        for a process that forks workers (they inherit the built path)."""
        if not enabled():
            return
        with self._lock:
            if self.started:
                return
            self.started = True
        self._build_now()

    def _build_now(self) -> None:
        try:
            self.kind, self.run = self._build()
        except Exception as error:  # any failure leaves the callers eager, with its reason
            self.failure = root_cause(error)
        finally:
            self.done.set()

    def state(self) -> str:
        """``eager (N of 16 hot calls)``, ``compiling``, ``compiled (KIND)`` or
        ``eager: compile failed (WHY)``."""
        if not self.started:
            return f"eager ({self.hot_calls} of {HOT_CALLS} hot calls)"
        if not self.done.is_set():
            return "compiling"
        if self.run is None:
            return f"eager: compile failed ({self.failure})"
        return f"compiled ({self.kind})"


def wait_all(builds: Iterable[HotBuild], timeout: float | None = None) -> None:
    """Wait, up to ``timeout`` seconds in all, for every build started so far."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for build in list(builds):
        if build.started:
            build.done.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))


def root_cause(error: BaseException) -> str:
    """The root cause in one line: dynamo wraps a backend's error in its own."""
    while (inner := getattr(error, "inner_exception", None) or error.__cause__) is not None:
        error = inner
    return f"{type(error).__name__}: {error}".splitlines()[0][:300]
