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
import sys
from pathlib import Path

import pytest

from .fixtures.tiny_asv_project import AsvProject, build_project

FIXTURES = Path(__file__).parent / "fixtures"
# The tests import ``result_rows`` (hand-made frame rows) by name.
if str(FIXTURES.parent) not in sys.path:
    sys.path.insert(0, str(FIXTURES.parent))

#: Results of the tiny project recorded by ``build_project(full=True)`` and checked
#: in, so most tests need no asv run.  Re-record after changing the tiny project
#: or upgrading asv: ``python tests/reports/fixtures/record_tiny_asv.py``.
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


@pytest.fixture
def results_copy(asv_project: AsvProject, tmp_path: Path) -> Path:
    """A private copy of the results folder, for tests that damage or extend it."""
    target = tmp_path / "results"
    shutil.copytree(asv_project.results, target)
    return target


@pytest.fixture
def conformance_report() -> Path:
    return FIXTURES / "conformance-report.json"
