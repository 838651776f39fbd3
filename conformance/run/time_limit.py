"""The per-check time limit in a run: when the timer (:mod:`.check_timer`) is armed,
and what a check that never returns leaves behind.

Armed in the process that runs checks (not the xdist controller) unless the limit is
0 or pytest-timeout is set, from the start of a check's setup to the end of its
teardown.  A check stuck where the signal cannot reach it (native code that released
the GIL) ends its process: a worker leaves a note for the controller
(:mod:`.worker_crashes`) and exits; the main process records the verdict, marks the
rest as not run, writes the report and exits.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.run.check_timer import CheckTimer
from conformance.run.guard import Guard, check_timeout
from conformance.run.option_names import option

#: A worker's exit status after a hang it could not interrupt (the controller reports it).
WORKER_HANG_EXIT = 70


def timeout_note(worker_id: str) -> str:
    """The file (in the shared folder) where a worker says which check hung, and how."""
    return f"timeout-{worker_id}.json"


class TimeLimit:
    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self.config = guard.config
        self.limit = check_timeout(guard.config)
        self.timer: CheckTimer | None = None

    def _pytest_timeout_active(self) -> bool:
        for value in (self.config.getoption("timeout", None), self._ini("timeout")):
            try:
                if value and float(value) > 0:
                    return True
            except (TypeError, ValueError):
                continue
        return False

    def _ini(self, name: str) -> Any:
        try:
            return self.config.getini(name)
        except ValueError:
            return None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.guard.is_controller or self.limit <= 0 or self._pytest_timeout_active():
            return
        backstop = self.guard.side_file(f"hang{self.guard.file_suffix}.txt")
        self.timer = CheckTimer(
            self.limit, self._native_hang, backstop or _pytest_stderr(self.config)
        )

    def pytest_report_header(self) -> list[str]:
        if self.limit <= 0:
            return [f"conformance: no time limit per check ({option('check-timeout')} 0)"]
        if self._pytest_timeout_active():
            return ["conformance: time limit per check left to pytest-timeout (--timeout)"]
        return [f"conformance: time limit per check {self.limit:g} s ({option('check-timeout')})"]

    # --- each check ------------------------------------------------------------------

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if self.timer is not None:
            self.timer.start(self.guard.plan.report_id(nodeid))

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        if self.timer is not None:
            self.timer.finish()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        yield from self._limited()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        yield from self._limited()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Any:
        yield from self._limited()

    def _limited(self) -> Any:
        timer = self.timer
        if timer is None:
            yield
            return
        timer.enter_phase()
        try:
            yield
        finally:
            timer.leave_phase()

    def _native_hang(self, nodeid: str, message: str) -> None:
        """The watchdog's verdict when the signal could not interrupt the check."""
        guard = self.guard
        sys.stderr.write(f"\nconformance: {message}\n")
        if guard.is_worker:
            if guard.shared is not None:
                note = guard.shared / timeout_note(guard.worker_id)
                note.write_text(json.dumps({"nodeid": nodeid, "message": message}))
            os._exit(WORKER_HANG_EXIT)  # the controller reports it and starts a new worker
        guard.set_verdict(nodeid, "failed", message)
        guard.running.clear()
        guard.add_not_run(
            f"the run was stopped because {nodeid} did not respond to its time limit; "
            "python -m conformance --isolate runs the other checks in a new process"
        )
        path = self.config.getoption("conformance_report")
        if path is not None:
            from conformance.report import writer as report

            report.write(report.build(guard.run), Path(self.config.invocation_params.dir) / path)
        if guard.journal is not None:
            guard.journal.ended()
        sys.stderr.flush()
        os._exit(1)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.timer is not None:
            self.timer.finish()


def _pytest_stderr(config: pytest.Config) -> int | None:
    """The copy of the terminal's stderr pytest's faulthandler plugin keeps (capture-proof)."""
    try:
        from _pytest.faulthandler import fault_handler_stderr_fd_key
    except ImportError:
        return None
    return config.stash.get(fault_handler_stderr_fd_key, None)
