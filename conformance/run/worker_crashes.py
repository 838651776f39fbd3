"""A check whose xdist worker died gets a record (``python -m conformance --isolate``).

The controller shares a folder with its workers (:class:`conformance.run.guard.Guard`
keeps it): each worker's plan, faulthandler output and time-limit note land there.
When xdist reports a worker's death, the check it was running gets ``failed`` (it ran
past its time limit) or ``error`` naming the signal or exit status and, from the
worker's faulthandler file, where it was; xdist starts a new worker for the rest.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from conformance.run import crashes
from conformance.run.guard import SHARED_FOLDER_KEY, Guard, check_timeout
from conformance.run.time_limit import timeout_note


class WorkerCrashes:
    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        guard = self.guard
        if guard.shared is None:
            guard.shared = Path(tempfile.mkdtemp(prefix="conformance-workers-"))
            guard.owns_shared = True
        node.workerinput[SHARED_FOLDER_KEY] = str(guard.shared)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        guard = self.guard
        guard.read_worker_plan()
        worker = getattr(report, "node", None)
        worker_id = getattr(getattr(worker, "gateway", None), "id", "gw")
        nodeid = guard.plan.report_id(crashitem)
        note = guard.shared_text(timeout_note(worker_id))
        if note:
            outcome, message = "failed", str(json.loads(note)["message"])
            (guard.shared / timeout_note(worker_id)).unlink()  # type: ignore[operator]
        else:
            fault = guard.shared_text(f"fault-{worker_id}.txt") + guard.shared_text(
                f"hang-{worker_id}.txt"
            )
            limit = check_timeout(guard.config)
            outcome = "failed" if crashes.hard_timeout(fault) else "error"
            message = crashes.crash_message(nodeid, _returncode(worker), fault, limit)
            message += "; the other checks ran in a new worker process"
        guard.set_verdict(nodeid, outcome, message)
        guard.running.pop(crashitem, None)
        # xdist logs the crash as a failed call; the terminal counts it as the report does.
        report.longrepr = message
        if outcome == "error":
            report.when = "setup"


def _returncode(worker: Any) -> int | None:
    """The exit status of a dead xdist worker (execnet's popen, a private attribute)."""
    popen = getattr(getattr(getattr(worker, "gateway", None), "_io", None), "popen", None)
    if popen is None:
        return None
    try:
        return int(popen.wait(timeout=5))
    except Exception:
        return None
