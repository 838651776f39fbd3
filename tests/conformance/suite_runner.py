"""Run the conformance suite from a self-test: in this process (fast) or in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
) -> Run:
    """``python -m <module> ...`` in ``tmp_path`` (no project ini), as a backend author runs it."""
    path = tmp_path / "report.json"
    extra = (
        (["--conformance-report", str(path)] if module == "pytest" else ["--report", str(path)])
        if report
        else []
    )
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(HERE), environment.get("PYTHONPATH")])
    )
    environment.pop("PYTEST_XDIST_WORKER", None)
    environment.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", module, *args, "-p", "no:cacheprovider", *extra],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    data = json.loads(path.read_text()) if report and path.exists() else None
    return Run(done.returncode, data, done.stdout + done.stderr)


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
