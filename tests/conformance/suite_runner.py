"""Run the conformance suite from a self-test: in this process (fast) or in a subprocess."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
CHECKS = Path(__import__("conformance.checks").checks.__file__).resolve().parent
QUIET = ["-p", "no:cacheprovider", "-q", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
# In-process runs skip pytest's unraisable-exception plugin: its cleanup runs a full
# garbage collection five times per run, which with torch loaded is most of the run.
# pytest-benchmark (when installed) warns about the outer run's xdist in every inner run.
IN_PROCESS = [*QUIET, "-p", "no:unraisableexception", "-p", "no:benchmark"]


@dataclass
class Run:
    exit_code: int
    report: dict[str, Any] | None
    output: str = ""

    def records(self, nodeid_prefix: str) -> list[dict[str, Any]]:
        assert self.report is not None, "the run wrote no report"
        return [t for t in self.report["tests"] if t["nodeid"].startswith(nodeid_prefix)]


def check_path(nodeid: str) -> str:
    """``test_x.py::test_y[...]`` -> the installed check's path with that selector."""
    return str(CHECKS / nodeid)


def in_process(tmp_path: Path, *args: str) -> Run:
    """pytest.main in this process: the plugin, the checks and torch are already imported."""
    report = tmp_path / "report.json"
    code = pytest.main([*args, *IN_PROCESS, "--conformance-report", str(report)])
    data = json.loads(report.read_text()) if report.exists() else None
    return Run(int(code), data)


def subprocess_run(
    tmp_path: Path,
    *args: str,
    report: bool = True,
    env: dict[str, str] | None = None,
    module: str = "pytest",
    fresh: bool = False,
) -> Run:
    """``python -m <module> ...`` in ``tmp_path`` (no project ini), as a backend author runs it.

    The run is a process of its own, forked from this worker's warm parent
    (:mod:`warm_runs`) unless ``fresh`` asks for a new interpreter, or its environment
    differs from the parent's in what the parent's imports read (:func:`_warm_fits`).
    """
    path = tmp_path / "report.json"
    extra = (
        (["--conformance-report", str(path)] if module == "pytest" else ["--report", str(path)])
        if report
        else []
    )
    environment = _child_environment(env)
    argv = [*args, "-p", "no:cacheprovider", *extra]
    if fresh or not _warm_fits(environment):
        done = subprocess.run(
            [sys.executable, "-m", module, *argv],
            cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=TIMEOUT,
        )  # fmt: skip
        code, output = done.returncode, done.stdout + done.stderr
    else:
        code, output = _warm_server().run(tmp_path, module, argv, environment)
    data = json.loads(path.read_text()) if report and path.exists() else None
    return Run(code, data, output)


#: Seconds a run may take before the test fails.
TIMEOUT = 300
#: Variables a warm parent's imports (torch, numpy) never read: a run may set them
#: differently from the parent and still be forked from it.
_UNREAD_BY_THE_WARM_IMPORTS = ("OUTPUTS_", "PYTEST_CURRENT_TEST", "PYTHONPATH", "XDG_", "PIP_")


def _child_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with ``env`` over it, the helpers' folder on
    PYTHONPATH and the outer run's pytest variables gone.  A PYTHONPATH of ``env`` comes
    before this process's, not instead of it: the run judges the suite this process
    imports (a worktree's, not the one an editable install points at)."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(
            None,
            [
                str(HERE),
                (env or {}).get("PYTHONPATH"),
                os.environ.get("PYTHONPATH") if env and "PYTHONPATH" in env else None,
            ],
        )
    )
    if not (env and "PYTHONPATH" in env):
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(HERE), os.environ.get("PYTHONPATH")])
        )
    for variable in ("PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS"):
        environment.pop(variable, None)
    return environment


def _warm_fits(environment: dict[str, str]) -> bool:
    """Whether a run in ``environment`` can fork from the warm parent: it differs from the
    parent's only in variables its imports never read (torch's and numpy's threads, say)."""
    if not hasattr(os, "fork"):
        return False
    started = _WarmServer.ENVIRONMENT
    keys = set(started) | set(environment)
    return all(
        started.get(key) == environment.get(key)
        for key in keys
        if not key.startswith(_UNREAD_BY_THE_WARM_IMPORTS)
    )


class _WarmServer:
    """``python -m warm_runs --serve``: one per test process, started at its first run."""

    _running: _WarmServer | None = None
    #: Its environment: this process's when it imported this module, before any test
    #: changed it.
    ENVIRONMENT = _child_environment()

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "warm_runs", "--serve"],
            cwd=HERE, env=self.ENVIRONMENT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.logs = Path(tempfile.mkdtemp(prefix="warm-runs-"))
        atexit.register(self.close)

    def close(self) -> None:
        """Stop the server (it ends when its stdin closes) and remove its logs' folder."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()
        shutil.rmtree(self.logs, ignore_errors=True)

    def run(
        self, cwd: Path, module: str, argv: list[str], environment: dict[str, str]
    ) -> tuple[int, str]:
        out, err = self.logs / "stdout.txt", self.logs / "stderr.txt"
        job = {
            "module": module, "argv": argv, "cwd": str(cwd), "env": environment,
            "log": str(out), "err": str(err), "timeout": TIMEOUT,
        }  # fmt: skip
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer, "the warm parent (warm_runs --serve) died"
        code = json.loads(answer)["exit_code"]
        if code is None:
            raise subprocess.TimeoutExpired([module, *argv], TIMEOUT)
        return code, out.read_text() + err.read_text()


def _warm_server() -> _WarmServer:
    if _WarmServer._running is None or _WarmServer._running.process.poll() is not None:
        _WarmServer._running = _WarmServer()
    return _WarmServer._running


def warm_runs(folder: Path, argvs: dict[str, list[str]]) -> dict[str, Run]:
    """``python -m conformance ARGV`` for each ``{label: ARGV}``, each run in a process of
    its own forked from one warm parent (:mod:`warm_runs`), as many at a time as there
    are CPUs; ``{label: Run}``.  Each run gets its own folder (its cwd) and report."""
    jobs = []
    for label, argv in argvs.items():
        cwd = folder / label
        cwd.mkdir(parents=True)
        report = cwd / "report.json"
        jobs.append(
            {
                "argv": [*argv, "-p", "no:cacheprovider", "--report", str(report)],
                "cwd": str(cwd),
                "log": str(cwd / "output.txt"),
            }
        )
    (folder / "jobs.json").write_text(json.dumps(jobs))
    environment = {**os.environ}
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(HERE), environment.get("PYTHONPATH")])
    )
    for variable in ("PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS"):
        environment.pop(variable, None)
    done = subprocess.run(
        [sys.executable, "-m", "warm_runs", str(folder / "jobs.json")],
        cwd=folder, env=environment, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    assert done.returncode == 0, f"warm_runs failed:\n{done.stdout}\n{done.stderr}"
    codes = json.loads(done.stdout.strip().splitlines()[-1])["exit_codes"]
    runs = {}
    for label, job, code in zip(argvs, jobs, codes, strict=True):
        cwd = Path(job["cwd"])
        report = cwd / "report.json"
        data = json.loads(report.read_text()) if report.exists() else None
        runs[label] = Run(code, data, (cwd / "output.txt").read_text())
    return runs
