"""Many ``python -m conformance`` runs, each in a child process forked from one warm parent.

``python -m warm_runs JOBS.json`` reads a list of jobs ``{"argv": [...], "cwd": path,
"log": path}`` and runs ``python -m conformance ARGV`` for each, in ``cwd``, its output
into ``log``, as many at a time as there are CPUs, then prints ``{"exit_codes": [...]}``
as JSON.  The parent imports only the third-party packages every run imports first
(torch, numpy, hypothesis, pytest: most of a run's start-up), never the suite: each
child imports ``conformance`` and ``reference`` afresh and runs the command as
``python -m`` does (:func:`runpy.run_module`), so each run is what a new process would
be, without paying torch's import per run.  Without ``os.fork`` each job is a
``python -m conformance`` subprocess.
"""

from __future__ import annotations

import gc
import json
import os
import runpy
import subprocess
import sys
import traceback
from pathlib import Path

#: A child that broke before the command ran (pytest's internal-error code).
BROKEN = 3


def _child(job: dict) -> None:
    """In the forked child: ``python -m conformance ARGV`` with output to the job's log."""
    code = BROKEN
    try:
        os.chdir(job["cwd"])
        log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        sys.argv = ["conformance", *job["argv"]]
        try:
            runpy.run_module("conformance", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _run_forked(jobs: list[dict]) -> list[int]:
    import hypothesis  # noqa: F401
    import numpy  # noqa: F401
    import pytest  # noqa: F401
    import torch  # noqa: F401

    # What is imported so far is never collected: the children skip scanning it.
    gc.collect()
    gc.freeze()
    parallel = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2)
    codes = [BROKEN] * len(jobs)
    running: dict[int, int] = {}
    pending = list(enumerate(jobs))
    while pending or running:
        while pending and len(running) < parallel:
            index, job = pending.pop(0)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(job)
            running[pid] = index
        pid, status = os.wait()
        codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
    return codes


def _run_subprocesses(jobs: list[dict]) -> list[int]:
    codes = []
    for job in jobs:
        with open(job["log"], "w") as log:
            done = subprocess.run(
                [sys.executable, "-m", "conformance", *job["argv"]],
                cwd=job["cwd"], stdout=log, stderr=subprocess.STDOUT, check=False,
            )  # fmt: skip
        codes.append(done.returncode)
    return codes


def main() -> None:
    jobs = json.loads(Path(sys.argv[1]).read_text())
    codes = _run_forked(jobs) if hasattr(os, "fork") else _run_subprocesses(jobs)
    print(json.dumps({"exit_codes": codes}))


if __name__ == "__main__":
    main()
