"""``python -m conformance`` (or ``pytest``) runs, each in a child forked from a warm parent.

Every such run's start-up is mostly torch's import (1.8 s of a run's 2.7 s; 2 s more for
dynamo in a run of a vLLM text).  The parent imports torch, dynamo and numpy once, never
pytest, hypothesis or the suite: each child imports ``conformance`` and ``reference``
afresh and runs the command as ``python -m`` does (:func:`runpy.run_module`), its
environment, working folder, ``sys.path`` and standard streams its own, so each run is
what a new process would be, without paying torch's import per run.  Two ways to use it:

``python -m warm_runs JOBS.json``
    a batch: runs each job of the list, as many at a time as there are CPUs, then
    prints ``{"exit_codes": [...]}`` as JSON.
``python -m warm_runs --serve``
    a server: reads one job per line on stdin, runs it, answers one line
    ``{"exit_code": N}`` (``null`` when it ran past its ``timeout``) on stdout.

A job is ``{"argv": [...], "cwd": path, "log": path}`` with, optionally, ``"module"``
(``conformance``, the default, or ``pytest``), ``"err"`` (a separate file for stderr),
``"env"`` (the whole environment; ``PYTHONPATH`` in it sets ``sys.path`` as at a start)
and ``"timeout"`` (seconds).  Without ``os.fork`` each job is a ``python -m``
subprocess.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import runpy
import subprocess
import sys
import time
import traceback
from pathlib import Path

#: A child that broke before the command ran (pytest's internal-error code).
BROKEN = 3
#: What the parent's own start put on ``sys.path`` (its cwd, its PYTHONPATH), which a
#: child's start would have set from its own cwd and PYTHONPATH instead.
_STARTED_WITH = [os.getcwd(), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]


def _child_sys_path(cwd: str, environment: dict[str, str]) -> list[str]:
    """``sys.path`` as ``python -m`` started in ``cwd`` with ``environment`` would have it."""
    own = [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    rest = [p for p in sys.path if p not in _STARTED_WITH and p != ""]
    return [cwd, *own, *rest]


def _exit_code(stop: SystemExit) -> int:
    """The status ``python`` exits with for ``stop``, printing a message as it does."""
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1


def _child(job: dict) -> None:
    """In the forked child: ``python -m MODULE ARGV`` with the job's cwd, env and streams."""
    code = BROKEN
    try:
        os.chdir(job["cwd"])
        if "env" in job:
            os.environ.clear()
            os.environ.update(job["env"])
            sys.path[:] = _child_sys_path(job["cwd"], job["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = (
            os.open(job["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            if "err" in job
            else log
        )
        os.dup2(log, 1)
        os.dup2(err, 2)
        module = job.get("module", "conformance")
        sys.argv = [module, *job["argv"]]
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            code = _exit_code(stop)
        except BaseException:
            traceback.print_exc()
            code = 1
        # What the interpreter's own exit would run (the command's atexit handlers).
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _warm_up() -> None:
    """Import what every run imports first; it is never collected in the children.

    torch and numpy only: pytest and hypothesis are imported afresh by each child, so
    pytest rewrites their assertions as in a new process, and hypothesis reads the
    child's environment (``$CI`` picks its profile at import).
    """
    import numpy  # noqa: F401

    # torch and, since vLLM's texts decorate their producers with torch.compile, its
    # dynamo: 2 s more of each run of a release text.
    import torch._dynamo  # noqa: F401

    gc.collect()
    gc.freeze()


def _fork(job: dict) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(job)
    return pid


def _run_forked(jobs: list[dict]) -> list[int]:
    _warm_up()
    parallel = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2)
    codes = [BROKEN] * len(jobs)
    running: dict[int, int] = {}
    pending = list(enumerate(jobs))
    while pending or running:
        while pending and len(running) < parallel:
            index, job = pending.pop(0)
            running[_fork(job)] = index
        pid, status = os.wait()
        codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
    return codes


def _run_subprocesses(jobs: list[dict]) -> list[int]:
    codes = []
    for job in jobs:
        with open(job["log"], "w") as log:
            done = subprocess.run(
                [sys.executable, "-m", job.get("module", "conformance"), *job["argv"]],
                cwd=job["cwd"], stdout=log, stderr=subprocess.STDOUT, check=False,
            )  # fmt: skip
        codes.append(done.returncode)
    return codes


def _wait(pid: int, timeout: float | None) -> int | None:
    """The child's exit status; ``None`` (and the child killed) past ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG if deadline else 0)
        if done:
            return os.waitstatus_to_exitcode(status)
        if deadline is not None and time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.005)


def serve() -> None:
    """One job per line of stdin, one ``{"exit_code": N}`` line back, until stdin closes."""
    answers = os.fdopen(os.dup(1), "w")
    _warm_up()
    for line in sys.stdin:
        job = json.loads(line)
        code = _wait(_fork(job), job.get("timeout"))
        answers.write(json.dumps({"exit_code": code}) + "\n")
        answers.flush()


def main() -> None:
    if sys.argv[1:] == ["--serve"]:
        serve()
        return
    jobs = json.loads(Path(sys.argv[1]).read_text())
    codes = _run_forked(jobs) if hasattr(os, "fork") else _run_subprocesses(jobs)
    print(json.dumps({"exit_codes": codes}))


if __name__ == "__main__":
    main()
