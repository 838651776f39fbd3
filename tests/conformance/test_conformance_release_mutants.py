"""Issue 8: every behaviour a revision adds after 2025.10 has checks that catch a mutant.

Each mutant (``release_mutants/catalogue.py``) is a real vLLM release text with
one behaviour broken.  The suite judges it, restricted to the check modules of
the broken type and method, and must fail it (exit 1) with at least one failed
check of the broken behaviour and none of any other (precision).  As a control,
each release unmutated passes the same check modules.

The release texts come from the user cache (fetched on first use);
without them these tests are skipped.  The runs are separate processes forked
from one warm parent (``release_mutants/run_many.py``), to stay within a minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from vllm_release_texts import RELEASES, SKIP_REASON

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.skipif(
    not RELEASES.is_dir(),
    reason=SKIP_REASON,
)


def _catalogue():
    from release_mutants.catalogue import MUTANTS

    return MUTANTS


def _mutant_names() -> list[str]:
    if not RELEASES.is_dir():
        return []
    return [m.name for m in _catalogue()]


def _controls() -> list[tuple[str, tuple[str, ...]]]:
    """Each release a mutant breaks, with every check module its mutants use."""
    by_release: dict[str, set[str]] = {}
    for mutant in _catalogue():
        by_release.setdefault(mutant.release, set()).update(mutant.checks)
    return [(release, tuple(sorted(checks))) for release, checks in sorted(by_release.items())]


def _job(
    tmp: Path, label: str, backend: str, checks: tuple[str, ...], *extra: str
) -> dict[str, Any]:
    folder = tmp / label
    folder.mkdir()
    return {
        "args": ["--pyargs", *checks, "--conformance-backend", backend, *extra],
        "report": str(folder / "report.json"),
        "log": str(folder / "output.txt"),
        "cwd": str(folder),
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, dict | None, str]]:
    """Every mutant and every control run once: ``{label: (exit code, report, output)}``.

    Under xdist the workers share one set of runs (the first to need them runs them,
    under a file lock, in the session's shared temporary folder).
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _run_all(tmp_path_factory.mktemp("release-mutants"))
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent
    results = shared / "release-mutants-results.json"
    with FileLock(str(shared / "release-mutants.lock")):
        if not results.exists():
            folder = shared / "release-mutants"
            folder.mkdir()
            results.write_text(json.dumps(_run_all(folder)))
        return {k: tuple(v) for k, v in json.loads(results.read_text()).items()}


def _run_all(tmp: Path) -> dict[str, Any]:
    # The mutants' runs leave out the differential (hypothesis) checks: the checks
    # with fixed inputs must catch each mutant, and hypothesis would spend seconds
    # shrinking every failure.  The controls run them all.
    jobs = {
        m.name: _job(tmp, m.name, m.spec, m.checks, "-k", "not agrees_with_reference")
        for m in _catalogue()
    }
    for release, checks in _controls():
        label = f"release-{release}"
        spec = f"release_mutants.catalogue:release_{release.replace('.', '_')}"
        jobs[label] = _job(tmp, label, spec, checks)
    (tmp / "jobs.json").write_text(json.dumps(list(jobs.values())))
    environment = {**os.environ}
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(HERE), environment.get("PYTHONPATH")])
    )
    for variable in ("PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS", "OUTPUTS_BACKEND"):
        environment.pop(variable, None)
    done = subprocess.run(
        [sys.executable, "-m", "release_mutants.run_many", str(tmp / "jobs.json")],
        cwd=tmp,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"run_many failed:\n{done.stdout}\n{done.stderr}"
    codes = json.loads(done.stdout.strip().splitlines()[-1])["exit_codes"]
    results = {}
    for (label, job), code in zip(jobs.items(), codes, strict=True):
        report = Path(job["report"])
        data = json.loads(report.read_text()) if report.exists() else None
        results[label] = (code, data, Path(job["log"]).read_text())
    return results


def _failed(report: dict) -> list[dict]:
    return [t for t in report["tests"] if t["outcome"] in ("failed", "error")]


@pytest.mark.parametrize("name", _mutant_names())
def test_mutant_fails_its_behaviour_and_only_it(runs, name: str) -> None:
    from release_mutants.catalogue import BY_NAME

    mutant = BY_NAME[name]
    code, report, output = runs[name]
    assert report is not None, f"{name}: the run wrote no report (exit {code}):\n{output[-3000:]}"
    failed = _failed(report)
    behaviours = Counter(t["behaviour"] for t in failed)
    assert code == 1, f"{name} ({mutant.how}): expected exit 1, found {code}:\n{output[-3000:]}"
    assert behaviours[mutant.behaviour] >= 1, (
        f"{name} ({mutant.how}): no failed check of {mutant.behaviour}; failed: {dict(behaviours)}"
    )
    others = {b: n for b, n in behaviours.items() if b != mutant.behaviour}
    assert not others, (
        f"{name} ({mutant.how}) breaks only {mutant.behaviour}, yet checks of other behaviours "
        f"failed: {others}; e.g. "
        + "; ".join(f"{t['nodeid']}: {t['message']}" for t in failed if t["behaviour"] in others)[
            :2000
        ]
    )


@pytest.mark.parametrize("release", [r for r, _ in _controls()] if RELEASES.is_dir() else [])
def test_release_unmutated_passes_the_same_checks(runs, release: str) -> None:
    code, report, output = runs[f"release-{release}"]
    assert report is not None, f"release {release}: the run wrote no report:\n{output[-3000:]}"
    failed = _failed(report)
    assert code == 0 and not failed, (
        f"release {release} unmutated: expected every check to pass, found exit {code}, "
        + "; ".join(f"{t['nodeid']}: {t['message']}" for t in failed)[:3000]
    )


def test_every_behaviour_added_after_2025_10_has_a_mutant() -> None:
    from reference.revisions import rev_2025_10
    from reference.revisions.behaviours import BEHAVIOURS

    wanted = (set(BEHAVIOURS) - rev_2025_10.REVISION.behaviours) | {"LogprobsLists.slice:rows"}
    covered = {m.behaviour for m in _catalogue()}
    assert wanted <= covered, f"behaviours without a mutant: {sorted(wanted - covered)}"
