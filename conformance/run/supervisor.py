"""``python -m conformance`` outlives a run that dies: it completes the report.

Before anything heavy is imported, the command forks (POSIX): the child runs the
suite, journaling as it goes (:mod:`conformance.run.journal`: the report's
header and plan once, then each check's start and record); the parent waits.  If
the child dies without finishing (a segfault, ``os._exit``, a hard time limit),
the parent writes the report from the journal: the checks that finished as they
did, the one that was running as an ``error`` naming the signal or exit status and
where it was (from the child's faulthandler file), and the rest as not run.  The
fork costs about a millisecond; the journal a write per check.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from conformance.run.journal import JOURNAL_ENV, replay

EXIT_FAILED = 1
#: pytest's code for an internal error: the suite (or pytest) itself broke.
EXIT_INTERNAL_ERROR = 3


#: Exit codes pytest gives before any check ran: interrupted, internal error, usage error,
#: no checks collected (1 needs a check that ran; before that it is a backend's exit).
PYTEST_OWN_EXITS = frozenset({0, 2, 3, 4, 5})


def supervised(run: Callable[[], int], report_path: str | None, limit: float) -> int:
    """``run()`` in a forked child; a child that dies still leaves a complete report."""
    if not hasattr(os, "fork"):
        return run()
    folder = Path(tempfile.mkdtemp(prefix="conformance-run-"))
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child leaves through os._exit)
        code = EXIT_FAILED
        try:
            os.environ[JOURNAL_ENV] = str(folder)
            code = run()
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else EXIT_FAILED
        except BaseException:
            # os._exit below would drop it silently: say what broke, as pytest would.
            traceback.print_exc()
            code = EXIT_INTERNAL_ERROR
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    # Ctrl-C reaches the child too (same process group); it writes the report.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    forward = signal.signal(signal.SIGTERM, lambda signum, _: os.kill(child, signum))
    try:
        _, status = os.waitpid(child, 0)
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, forward)
    returncode = os.waitstatus_to_exitcode(status)
    try:
        return complete(folder, returncode, report_path, limit)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def complete(folder: Path, returncode: int, report_path: str | None, limit: float) -> int:
    """The child's exit code when it finished its report; else the report it could not write."""
    from conformance.report import writer as report
    from conformance.report.records import Results, TestRecord
    from conformance.run import crashes

    journal = replay(folder)
    if journal.ended:
        return returncode
    fault = "".join(_text(folder / name) for name in ("fault.txt", "hang.txt"))
    if fault:
        sys.stderr.write(fault)
    if journal.skeleton is None and journal.warming is not None:
        sys.stderr.write(
            f"conformance: the run died in the warm-up, in the first call of the backend's "
            f"{journal.warming}: {_death(returncode).replace(' in the middle of the check', '')}"
            "; python -m conformance --isolate "
            "judges it in worker processes, its checks failing where it kills one\n"
        )
        # The backend's own call ended the process: its failure, whatever status it
        # chose (a 4 would read as bad input, a 3 as the suite's internal error).
        return EXIT_FAILED
    if journal.skeleton is None:
        if not fault and returncode in PYTEST_OWN_EXITS:
            return returncode  # pytest ended it (a usage error, no checks): it said why
        # It died before its checks were collected: nothing to report but the death.
        sys.stderr.write(f"conformance: the run died before any check: {_death(returncode)}\n")
        return returncode if returncode > 0 else EXIT_FAILED
    results = Results()
    results.records.update(journal.records)
    culprits = journal.running[-1:]
    for nodeid in culprits:
        message = crashes.crash_message(nodeid, returncode, fault, limit)
        outcome = "failed" if crashes.hard_timeout(fault) else "error"
        planned = journal.plan.get(nodeid) or journal.records.get(nodeid)
        results.set_verdict(planned or TestRecord.unplanned(nodeid), outcome, message)
        sys.stderr.write(f"\nconformance: {message}\n")
    why = f"{culprits[0]} ended the process" if culprits else _death(returncode)
    results.add_not_run(
        journal.plan.values(),
        f"{why}; python -m conformance --isolate runs every check in a worker process "
        "that is replaced when it dies",
    )
    data = dict(journal.skeleton)
    data["summary"] = results.summary()
    data["tests"] = [asdict(r) for r in results.sorted_records()]
    if report_path is not None:
        report.write(data, report_path)
        sys.stderr.write(f"conformance: report written to {report_path}\n")
    return returncode if returncode > 0 else EXIT_FAILED


def _death(returncode: int) -> str:
    from conformance.run.crashes import describe_exit

    return describe_exit(returncode).replace("its process", "the process", 1)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
