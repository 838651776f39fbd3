"""Run the conformance suite once per job, each in a child process forked from one warm parent.

``python -m release_mutants.run_many JOBS.json`` reads a list of jobs
``{"args": [...], "report": path, "log": path, "cwd": path}``, imports torch and the
suite once, then runs ``pytest.main(args + report options)`` in a forked child per
job (two at a time) and prints ``{"exit_codes": [...]}`` as JSON.  Every run is a
separate process with its own plugin state, as a backend author's run is, without
paying torch's import time per run.  Without ``os.fork`` it falls back to one
``python -m pytest`` subprocess per job.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

PARALLEL = 2
# No unraisable-exception plugin: its cleanup collects garbage five times per run,
# most of a short run's time with torch loaded.
REPORT_OPTIONS = [
    "-p",
    "no:cacheprovider",
    "-q",
    "-p",
    "no:benchmark",
    "-p",
    "no:unraisableexception",
]


def _pytest_args(job: dict) -> list[str]:
    return [*job["args"], *REPORT_OPTIONS, "--conformance-report", job["report"]]


def _child(job: dict) -> None:
    """In the forked child: run pytest with output to the job's log, then exit."""
    code = 3
    try:
        os.chdir(job["cwd"])
        log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        import pytest

        code = int(pytest.main(_pytest_args(job)))
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _run_forked(jobs: list[dict]) -> list[int]:
    # What every run needs, imported once before forking.
    import hypothesis  # noqa: F401
    import numpy  # noqa: F401
    import pytest  # noqa: F401
    import torch

    import conformance.run.plugin  # noqa: F401
    import reference.revisions  # noqa: F401

    torch.set_num_threads(1)
    # Everything imported so far is never collected: the children skip scanning it.
    gc.collect()
    gc.freeze()
    codes: list[int] = [0] * len(jobs)
    running: dict[int, int] = {}
    pending = list(enumerate(jobs))
    while pending or running:
        while pending and len(running) < PARALLEL:
            index, job = pending.pop(0)
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
                [sys.executable, "-m", "pytest", *_pytest_args(job)],
                cwd=job["cwd"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        codes.append(done.returncode)
    return codes


def main() -> None:
    jobs = json.loads(Path(sys.argv[1]).read_text())
    codes = _run_forked(jobs) if hasattr(os, "fork") else _run_subprocesses(jobs)
    print(json.dumps({"exit_codes": codes}))


if __name__ == "__main__":
    main()
