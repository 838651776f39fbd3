"""A verdict for every check, whatever the backend does: hangs, crashes, interruptions.

:class:`Guard` is registered beside :class:`conformance.run.session.ConformanceRun`
with two helpers that share its state, one job each:

* :class:`Guard` itself keeps the plan (:mod:`.check_plan`: every check collected, so
  a check that never ran is still a record, ``skipped`` with cause ``not-run`` and
  why), which checks are running, and where the process's side files go (the
  faulthandler output, for whoever outlives the process); for the
  ``python -m conformance`` supervisor it keeps the run's :mod:`.journal`;
* :class:`conformance.run.time_limit.TimeLimit` bounds each check in time;
* :class:`conformance.run.worker_crashes.WorkerCrashes`, under pytest-xdist
  (``python -m conformance --isolate``), gives a check whose worker died an
  ``error`` record naming the signal or exit status and where it was.

Workers and the controller share a folder the controller creates (passed in
``workerinput``): the plan, faulthandler output and time-limit notes, per worker.
Every verdict goes into the run's :class:`~conformance.report.records.Results`, which
alone edits the records; :mod:`conformance.report.writer` writes them.
"""

from __future__ import annotations

import faulthandler
import os
import shutil
from pathlib import Path
from typing import IO, Any

import pytest

from conformance.report.records import TestRecord
from conformance.report.writer import ReportedRun
from conformance.run.check_plan import CheckPlan
from conformance.run.check_timer import DEFAULT_CHECK_TIMEOUT
from conformance.run.journal import Journal

#: The workerinput key of the folder the controller shares with its workers.
SHARED_FOLDER_KEY = "conformance_guard_dir"
_PLAN_FILE = "plan.json"


def check_timeout(config: pytest.Config) -> float:
    value = config.getoption("conformance_check_timeout", None)
    return DEFAULT_CHECK_TIMEOUT if value is None else max(float(value), 0.0)


class Guard:
    def __init__(
        self, run: ReportedRun, config: pytest.Config, journal: Journal | None = None
    ) -> None:
        self.run = run
        self.config = config
        self.is_worker = hasattr(config, "workerinput")
        self.is_controller = config.pluginmanager.has_plugin("dsession")
        self.worker_id = (
            str(config.workerinput.get("workerid", "gw")) if self.is_worker else "main"  # type: ignore[attr-defined]
        )
        self.plan = CheckPlan()
        self.running: dict[str, None] = {}  # pytest node ids, in the order they started
        #: The folder shared with xdist workers (a worker's from its workerinput; the
        #: controller's once it starts one).
        self.shared: Path | None = None
        self.owns_shared = False
        if self.is_worker:
            folder = config.workerinput.get(SHARED_FOLDER_KEY)  # type: ignore[attr-defined]
            self.shared = Path(folder) if folder else None
        #: the supervisor's, in the process that runs the checks (:mod:`.journal`)
        self.journal = journal
        self._files: list[IO[Any]] = []

    # --- what the helpers share ------------------------------------------------------

    @property
    def file_suffix(self) -> str:
        """``-gw0`` in a worker's side file names: workers share one folder."""
        return f"-{self.worker_id}" if self.is_worker else ""

    def side_file(self, name: str) -> IO[Any] | None:
        """A file, open for this process's life, where whoever outlives it reads it: the
        shared folder (a worker) or the supervisor's (the main process); None elsewhere."""
        if self.is_worker:
            folder = self.shared
        else:
            folder = self.journal.folder if self.journal is not None else None
        if folder is None:
            return None
        stream = open(folder / name, "w")  # noqa: SIM115 (open for the process's life)
        self._files.append(stream)
        return stream

    def shared_text(self, name: str) -> str:
        if self.shared is None:
            return ""
        try:
            return (self.shared / name).read_text(errors="replace")
        except OSError:
            return ""

    def read_worker_plan(self) -> None:
        """The controller learns the plan from the workers' collection."""
        if self.plan.records or self.shared is None:
            return
        text = self.shared_text(_PLAN_FILE)
        if text:
            self.plan = CheckPlan.from_json(text)

    def set_verdict(self, nodeid: str, outcome: str, message: str) -> TestRecord:
        """The verdict of the check the report calls ``nodeid``, reached outside its own
        test report (a time limit, a death)."""
        record = self.run.results.set_verdict(self.plan.planned(nodeid), outcome, message)
        if self.journal is not None:
            self.journal.recorded(record)
        return record

    def add_not_run(self, reason: str) -> None:
        self.run.results.add_not_run(self.plan.records.values(), reason)

    # --- the process -----------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.is_controller:
            return
        fault = self.side_file(f"fault{self.file_suffix}.txt")
        if fault is not None:
            # Where a fatal signal hit, for whoever outlives this process to read.
            faulthandler.enable(file=fault)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.plan = CheckPlan.of_items(session.items)
        if self.is_worker and self.shared is not None:
            temporary = self.shared / f".plan-{self.worker_id}.json"
            temporary.write_text(self.plan.to_json())
            os.replace(temporary, self.shared / _PLAN_FILE)
        if self.journal is not None:
            from conformance.report import writer as report

            self.journal.planned(report.build(self.run), self.plan.records.values())

    # --- each check ------------------------------------------------------------------

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.running[nodeid] = None
        if self.journal is not None:
            self.journal.started(self.plan.report_id(nodeid))

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.running.pop(nodeid, None)
        if self.journal is not None:
            report_id = self.plan.report_id(nodeid)
            self.journal.finished(report_id)
            record = self.run.results.records.get(report_id)
            if record is not None:
                self.journal.recorded(record)

    # --- the end ---------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker or session.exitstatus == pytest.ExitCode.USAGE_ERROR:
            return  # a usage error is one line, before any check: no records
        self.read_worker_plan()
        reason = _stop_reason(session)
        for nodeid in list(self.running):
            report_id = self.plan.report_id(nodeid)
            self.set_verdict(
                report_id, "error", f"{report_id}: {reason} while this check was running"
            )
        self.add_not_run(reason)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.journal is not None:
            self.journal.ended()
        for stream in self._files:
            stream.close()
        if self.owns_shared and self.shared is not None:
            shutil.rmtree(self.shared, ignore_errors=True)


def _stop_reason(session: pytest.Session) -> str:
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        return "the run was interrupted (KeyboardInterrupt)"
    for reason in (session.shouldfail, session.shouldstop):
        if reason:
            return f"the run stopped early ({reason})"
    return "the run ended before this check (a worker limit reached, or stopped)"
