"""Fixtures for the reports tests: real asv results from a tiny asv project.

The project is made in a temporary git repository and benchmarked with the
installed asv (``asv run --python=same --set-commit-hash``), so the loader is
tested on files asv itself wrote: two machines, two commits, a benchmark
edited between the commits (version mismatch), a device that skips.  Those
results are recorded in ``fixtures/tiny-asv`` (a full build takes tens of
seconds on two busy cores); ``live_asv_project`` re-runs a small part with the
installed asv so a change of asv's format is caught.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

# Track benchmarks return fixed numbers so tests can assert exact values; the
# time benchmarks do real (tiny) work so asv's timing path is exercised.
BENCH_V1 = textwrap.dedent(
    """
    import os


    class Unpad:
        params = (["reference"], ["cpu", "cuda"], [16, 256])
        param_names = ["backend", "device", "num_reqs"]
        rounds = 1
        repeat = (1, 3, 0.02)
        sample_time = 0.001
        warmup_time = 0.0

        def setup(self, backend, device, num_reqs):
            if device != "cpu":
                raise NotImplementedError("no " + device + " here")
            self.rows = [[12345] * 4 for _ in range(num_reqs)]

        def time_unpad_sampled_token_ids(self, backend, device, num_reqs):
            [r[:] for r in self.rows]

        def time_unpad_vllm_mask_per_row(self, backend, device, num_reqs):
            [[x for x in r if x != -1] for r in self.rows]

        def track_unpad_speedup_over_vllm(self, backend, device, num_reqs):
            return 3.0 if num_reqs == 16 else 1.5

        track_unpad_speedup_over_vllm.unit = "speedup"

        def track_bandwidth(self, backend, device, num_reqs):
            return float(num_reqs) / 16

        track_bandwidth.unit = "GB/s"


    class ToLists:
        params = (["reference"], [64, 1024], [0, 5])
        param_names = ["backend", "num_tokens", "num_logprobs"]

        def track_tolists_ns_per_element(self, backend, num_tokens, num_logprobs):
            return 20.0 + num_logprobs

        track_tolists_ns_per_element.unit = "ns/element"


    def time_plain():
        pass
    """
)
# Commit 2 edits time_plain: its commit-1 results must then be flagged.
BENCH_V2 = BENCH_V1.replace("def time_plain():\n    pass", "def time_plain():\n    return None")

ASV_CONF = {
    "version": 1,
    "project": "tiny",
    "repo": ".",
    "branches": ["main"],
    "environment_type": "existing",
    "benchmark_dir": "benchmarks",
    # Not ".asv/...": the project's .gitignore would hide the recorded copy.
    "results_dir": "results",
    "html_dir": "html",
    "env_dir": "env",
}


@dataclass(frozen=True)
class AsvProject:
    root: Path
    results: Path
    commit_1: str
    commit_2: str


def _git(root: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def _asv(root: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "asv", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _commit(root: Path, source: str, message: str) -> str:
    (root / "benchmarks" / "bench_tiny.py").write_text(source, encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", message)
    return _git(root, "rev-parse", "HEAD")


def _run(root: Path, machine: str, commit: str, *, quick: bool) -> None:
    _asv(root, "machine", "--yes", "--machine", machine)
    _asv(
        root,
        "run",
        "--python=same",
        f"--set-commit-hash={commit}",
        "--machine",
        machine,
        *(["--quick"] if quick else []),
    )


#: Results of the tiny project recorded by ``build_project(full=True)`` and checked
#: in, so most tests need no asv run.  Re-record after changing the tiny project
#: or upgrading asv: ``REPORTS_RECORD_FIXTURES=1 pytest tests/reports -k record``.
RECORDED = FIXTURES / "tiny-asv"


@pytest.fixture(scope="session")
def asv_project() -> AsvProject:
    """Recorded real asv results: m1 at commits 1 and 2, m2 at commit 2, a
    benchmark edited in between, a device that skips.  Read-only; tests that
    damage or extend results use ``results_copy``."""
    commit_1, commit_2 = json.loads((RECORDED / "commits.json").read_text(encoding="utf-8"))
    return AsvProject(RECORDED, RECORDED / "results", commit_1, commit_2)


@pytest.fixture(scope="session")
def live_asv_project(tmp_path_factory: pytest.TempPathFactory) -> AsvProject:
    """The tiny project benchmarked now by the installed asv (one machine, one commit, --quick).

    Under pytest-xdist the workers share one build (whoever takes the lock first).
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # shared by the workers of this run only
    root = base / "tiny-asv-live"
    done = base / "tiny-asv-live.json"
    with (base / "tiny-asv-live.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            shutil.rmtree(root, ignore_errors=True)
            done.write_text(json.dumps(build_project(root, full=False)), encoding="utf-8")
        commits = json.loads(done.read_text(encoding="utf-8"))
    return AsvProject(root, root / "results", commits[0], commits[-1])


def build_project(root: Path, *, full: bool) -> list[str]:
    """Make the tiny asv project in ``root`` and benchmark it; returns its commits.

    ``full``: m1 at commit 1 (a normal run, with statistics), then time_plain is
    edited, then m1 and m2 at commit 2 (``--quick``).  Otherwise: m1 at commit 1, quick.
    """
    root.mkdir(parents=True)
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "__init__.py").write_text("", encoding="utf-8")
    (root / "asv.conf.json").write_text(json.dumps(ASV_CONF), encoding="utf-8")
    (root / ".gitignore").write_text("results/\nhtml/\nenv/\n", encoding="utf-8")
    _git(root, "init", "-q", "-b", "main")
    commit_1 = _commit(root, BENCH_V1, "v1")
    _run(root, "m1", commit_1, quick=not full)
    if not full:
        return [commit_1]
    commit_2 = _commit(root, BENCH_V2, "v2: edit time_plain")
    _run(root, "m1", commit_2, quick=True)
    _run(root, "m2", commit_2, quick=True)
    return [commit_1, commit_2]


@pytest.fixture
def results_copy(asv_project: AsvProject, tmp_path: Path) -> Path:
    """A private copy of the results folder, for tests that damage or extend it."""
    target = tmp_path / "results"
    shutil.copytree(asv_project.results, target)
    return target


@pytest.fixture
def conformance_report() -> Path:
    return FIXTURES / "conformance-report.json"
