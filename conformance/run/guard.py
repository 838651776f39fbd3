"""A verdict for every check, whatever the backend does: hangs, crashes, interruptions.

:class:`Guard` is registered beside :class:`conformance.run.session.ConformanceRun` and
adds to its results:

* the plan: every check collected, so a check that never ran is still a record
  (``skipped``, ``skip_cause`` ``not-run``, and why);
* the time limit (:mod:`conformance.run.timeouts`) in the process that runs checks;
* under pytest-xdist (``python -m conformance --isolate``), an ``error`` record for
  a check whose worker died, naming the signal or exit status and, from the
  worker's faulthandler file, where it was;
* for the ``python -m conformance`` supervisor (:mod:`conformance.run.supervisor`), a
  journal of the run so far, from which the supervisor completes the report when
  the process dies.

Workers and the controller share a folder the controller creates (passed in
``workerinput``): the plan, faulthandler output and time-limit notes, per worker.
"""

from __future__ import annotations

import faulthandler
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import IO, Any

import pytest

from conformance.report.records import CheckIdentity, TestRecord
from conformance.report.writer import ReportedRun
from conformance.run import crashes, nodeids
from conformance.run.option_names import option
from conformance.run.timeouts import DEFAULT_CHECK_TIMEOUT, CheckTimer

JOURNAL_ENV = "CONFORMANCE_SUPERVISOR_DIR"
_SHARED_KEY = "conformance_guard_dir"
NOT_RUN = "not-run"
_WORKER_HANG_EXIT = 70


def check_timeout(config: pytest.Config) -> float:
    value = config.getoption("conformance_check_timeout", None)
    return DEFAULT_CHECK_TIMEOUT if value is None else max(float(value), 0.0)


class Journal:
    """JSON lines appended with one unbuffered write each: they survive ``os._exit``."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, **entry: Any) -> None:
        os.write(self.fd, (json.dumps(entry) + "\n").encode())


class Guard:
    def __init__(self, run: ReportedRun, config: pytest.Config) -> None:
        self.run = run
        self.config = config
        self.is_worker = hasattr(config, "workerinput")
        self.is_controller = config.pluginmanager.has_plugin("dsession")
        self.limit = check_timeout(config)
        self.plan: dict[str, TestRecord] = {}
        self.canonical: dict[str, str] = {}  # pytest node id -> report node id
        self.running: dict[str, None] = {}
        self.timer: CheckTimer | None = None
        self._files: list[IO[Any]] = []
        self.shared: Path | None = None
        self._own_shared = False
        if self.is_worker:
            folder = config.workerinput.get(_SHARED_KEY)  # type: ignore[attr-defined]
            self.shared = Path(folder) if folder else None
        supervisor = os.environ.pop(JOURNAL_ENV, None)
        self.supervised = Path(supervisor) if supervisor and not self.is_worker else None
        self.journal = Journal(self.supervised / "journal") if self.supervised else None
        self.worker_id = (
            str(config.workerinput.get("workerid", "gw")) if self.is_worker else "main"  # type: ignore[attr-defined]
        )

    # --- setup ----------------------------------------------------------------------

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

    def _side_file(self, name: str) -> IO[Any] | None:
        folder = self.shared if self.is_worker else self.supervised
        if folder is None:
            return None
        stream = open(folder / name, "w")  # noqa: SIM115 (open for the process's life)
        self._files.append(stream)
        return stream

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.is_controller:
            return
        suffix = f"-{self.worker_id}" if self.is_worker else ""
        fault = self._side_file(f"fault{suffix}.txt")
        if fault is not None:
            # Where a fatal signal hit, for whoever outlives this process to read.
            faulthandler.enable(file=fault)
        if self.limit > 0 and not self._pytest_timeout_active():
            backstop = self._side_file(f"hang{suffix}.txt")
            self.timer = CheckTimer(
                self.limit, self._native_hang, backstop or _pytest_stderr(self.config)
            )

    def pytest_report_header(self) -> list[str]:
        if self.limit <= 0:
            return [f"conformance: no time limit per check ({option('check-timeout')} 0)"]
        if self._pytest_timeout_active():
            return ["conformance: time limit per check left to pytest-timeout (--timeout)"]
        return [f"conformance: time limit per check {self.limit:g} s ({option('check-timeout')})"]

    # --- xdist: the shared folder and crashed workers --------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        if self.shared is None:
            self.shared = Path(tempfile.mkdtemp(prefix="conformance-workers-"))
            self._own_shared = True
        node.workerinput[_SHARED_KEY] = str(self.shared)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        self._read_worker_plan()
        worker = getattr(report, "node", None)
        worker_id = getattr(getattr(worker, "gateway", None), "id", "gw")
        nodeid = self.canonical.get(crashitem, crashitem)
        note = self._shared_text(f"timeout-{worker_id}.json")
        if note:
            entry = json.loads(note)
            outcome, message = "failed", str(entry["message"])
            (self.shared / f"timeout-{worker_id}.json").unlink()  # type: ignore[operator]
        else:
            fault = self._shared_text(f"fault-{worker_id}.txt") + self._shared_text(
                f"hang-{worker_id}.txt"
            )
            returncode = _returncode(worker)
            outcome = "failed" if crashes.hard_timeout(fault) else "error"
            message = crashes.crash_message(nodeid, returncode, fault, self.limit)
            message += "; the other checks ran in a new worker process"
        self._set(nodeid, outcome, message)
        self.running.pop(crashitem, None)
        # xdist logs the crash as a failed call; the terminal counts it as the report does.
        report.longrepr = message
        if outcome == "error":
            report.when = "setup"

    def _shared_text(self, name: str) -> str:
        if self.shared is None:
            return ""
        try:
            return (self.shared / name).read_text(errors="replace")
        except OSError:
            return ""

    def _read_worker_plan(self) -> None:
        if self.plan or self.shared is None:
            return
        text = self._shared_text("plan.json")
        if text:
            data = json.loads(text)
            self.plan = {r["nodeid"]: TestRecord(**r) for r in data["plan"]}
            self.canonical = data["canonical"]

    def _set(self, nodeid: str, outcome: str, message: str) -> None:
        base = self.plan.get(nodeid) or TestRecord.unplanned(nodeid)
        record = replace(base, outcome=outcome, message=message, skip_cause=None)
        self.run.results.records[nodeid] = record
        if self.journal is not None:
            self.journal.write(record=asdict(record))

    # --- the plan ------------------------------------------------------------------

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            if not nodeids.in_checks(item.path):
                continue
            check = CheckIdentity.of_item(item)
            if check is None:
                continue
            record = TestRecord.of_check(check, "skipped", "not run", NOT_RUN)
            skip = item.get_closest_marker("skip")
            if check.skip_cause and skip is not None:
                # Skipped whatever happens (a device not declared or not here): say so.
                reason = skip.kwargs.get("reason") or (skip.args[0] if skip.args else "")
                record = replace(record, message=str(reason), skip_cause=check.skip_cause)
            self.plan[record.nodeid] = record
            self.canonical[item.nodeid] = record.nodeid
        if self.is_worker and self.shared is not None:
            data = {
                "plan": [asdict(r) for r in self.plan.values()],
                "canonical": self.canonical,
            }
            temporary = self.shared / f".plan-{self.worker_id}.json"
            temporary.write_text(json.dumps(data))
            os.replace(temporary, self.shared / "plan.json")
        if self.journal is not None:
            from conformance.report import writer as report

            self.journal.write(
                skeleton=report.build(self.run),
                plan=[asdict(r) for r in self.plan.values()],
            )

    # --- each check ----------------------------------------------------------------

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.running[nodeid] = None
        if self.journal is not None:
            self.journal.write(start=self.canonical.get(nodeid, nodeid))
        if self.timer is not None:
            self.timer.start(self.canonical.get(nodeid, nodeid))

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.running.pop(nodeid, None)
        if self.timer is not None:
            self.timer.finish()
        if self.journal is not None:
            record = self.run.results.records.get(self.canonical.get(nodeid, nodeid))
            self.journal.write(finish=self.canonical.get(nodeid, nodeid))
            if record is not None:
                self.journal.write(record=asdict(record))

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
        sys.stderr.write(f"\nconformance: {message}\n")
        if self.is_worker:
            if self.shared is not None:
                note = self.shared / f"timeout-{self.worker_id}.json"
                note.write_text(json.dumps({"nodeid": nodeid, "message": message}))
            os._exit(_WORKER_HANG_EXIT)  # the controller reports it and starts a new worker
        self._set(nodeid, "failed", message)
        self.running.clear()
        self._add_not_run(
            f"the run was stopped because {nodeid} did not respond to its time limit; "
            "python -m conformance --isolate runs the other checks in a new process"
        )
        path = self.config.getoption("conformance_report")
        if path is not None:
            from conformance.report import writer as report

            report.write(report.build(self.run), Path(self.config.invocation_params.dir) / path)
        if self.journal is not None:
            self.journal.write(finished=True)
        sys.stderr.flush()
        os._exit(1)

    # --- the end -------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker or session.exitstatus == pytest.ExitCode.USAGE_ERROR:
            return  # a usage error is one line, before any check: no records
        self._read_worker_plan()
        reason = _stop_reason(session)
        for nodeid in list(self.running):
            canonical = self.canonical.get(nodeid, nodeid)
            self._set(canonical, "error", f"{canonical}: {reason} while this check was running")
        self._add_not_run(reason)

    def _add_not_run(self, reason: str) -> None:
        records = self.run.results.records
        for nodeid, planned in self.plan.items():
            if nodeid in records:
                continue
            if planned.skip_cause == NOT_RUN:
                records[nodeid] = replace(planned, message=f"not run: {reason}")
            else:
                records[nodeid] = planned  # skipped anyway (a device not declared or not here)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.timer is not None:
            self.timer.finish()
        if self.journal is not None:
            self.journal.write(finished=True)
        for stream in self._files:
            stream.close()
        if self._own_shared and self.shared is not None:
            shutil.rmtree(self.shared, ignore_errors=True)


def _stop_reason(session: pytest.Session) -> str:
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        return "the run was interrupted (KeyboardInterrupt)"
    for reason in (session.shouldfail, session.shouldstop):
        if reason:
            return f"the run stopped early ({reason})"
    return "the run ended before this check (a worker limit reached, or stopped)"


def _pytest_stderr(config: pytest.Config) -> int | None:
    """The copy of the terminal's stderr pytest's faulthandler plugin keeps (capture-proof)."""
    try:
        from _pytest.faulthandler import fault_handler_stderr_fd_key
    except ImportError:
        return None
    return config.stash.get(fault_handler_stderr_fd_key, None)


def _returncode(worker: Any) -> int | None:
    """The exit status of a dead xdist worker (execnet's popen, a private attribute)."""
    popen = getattr(getattr(getattr(worker, "gateway", None), "_io", None), "popen", None)
    if popen is None:
        return None
    try:
        return int(popen.wait(timeout=5))
    except Exception:
        return None
