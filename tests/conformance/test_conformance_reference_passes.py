"""The whole suite passes the reference, and its JSON report is the same with and without xdist."""

from __future__ import annotations

import pytest
import suite_runner

from conformance.oracle import revisions
from conformance.spec_names import SPEC_NAMES


def test_reference_passes_and_the_report_does_not_depend_on_xdist(tmp_path) -> None:
    serial_dir, parallel_dir = tmp_path / "serial", tmp_path / "parallel"
    serial_dir.mkdir()
    parallel_dir.mkdir()
    # The two documented commands: python -m conformance, and pytest -n under xdist.
    serial = suite_runner.subprocess_run(serial_dir, "--backend", "reference", module="conformance")
    parallel = suite_runner.subprocess_run(
        parallel_dir, "--pyargs", "conformance", "--conformance-backend", "reference", "-n", "2"
    )
    assert serial.exit_code == 0, serial.output
    assert parallel.exit_code == 0, parallel.output
    report = serial.report
    assert report is not None
    # Only the run itself differs (two runs: two ids, two start times); where it ran,
    # what was judged and every record are the same with and without xdist.
    assert report["run"]["id"] != parallel.report["run"]["id"]
    without_run = {k: v for k, v in report.items() if k != "run"}
    assert without_run == {k: v for k, v in parallel.report.items() if k != "run"}

    assert report["schema"] == "conformance-report/1"
    assert report["spec_revision"] == "2025.10"
    assert report["spec_revision_source"] == "default"
    assert report["backend"]["name"] == "reference"
    assert report["backend"]["module"] == "reference"
    assert set(report["platform"]) == {"python", "torch", "devices_available", "simulated_devices"}
    assert report["platform"]["simulated_devices"] == (
        [] if "cuda" in report["platform"]["devices_available"] else ["cuda"]
    )
    summary = report["summary"]
    assert summary["failed"] == summary["errors"] == summary["xpassed"] == 0
    assert summary["passed"] > 180
    tests = report["tests"]
    assert [t["nodeid"] for t in tests] == sorted(t["nodeid"] for t in tests)
    assert {t["spec_type"] for t in tests} == {*SPEC_NAMES, "module"}
    assert sum(t["outcome"] == "passed" for t in tests) == summary["passed"]
    assert all(t["behaviour"] for t in tests)
    # The reference declares every device: a skipped device check is one missing here.
    for t in tests:
        if t["outcome"] == "skipped" and t["device"] is not None:
            assert t["skip_cause"] == "device-not-present", t

    assert "conformance: backend reference" in parallel.output  # the header
    assert f"conformance: run {parallel.report['run']['id']}, started" in parallel.output
    assert (
        "spec type" in parallel.output and "AsyncModelRunnerOutput" in parallel.output
    )  # the table


#: The revisions whose reference runs in ``nox -s tests``: the default and the newest.  The
#: others (the whole release matrix) are marked ``long``: ``nox -s tests-long``, in CI too.
QUICK_REVISIONS = {revisions.DEFAULT_REVISION, revisions.known_revisions()[-1]}


@pytest.mark.parametrize(
    "revision",
    [
        pytest.param(r, marks=() if r in QUICK_REVISIONS else (pytest.mark.long,))
        for r in revisions.known_revisions()
    ],
)
def test_the_reference_of_every_revision_passes_it(tmp_path, revision: str) -> None:
    run = suite_runner.in_process(
        tmp_path, "--pyargs", "conformance", "--conformance-backend", "reference",
        "--conformance-revision", revision,
    )  # fmt: skip
    assert run.exit_code == 0, {
        t["nodeid"]: t["message"]
        for t in run.report["tests"]
        if t["outcome"] != "passed" and t["outcome"] != "skipped"
    }
    assert run.report["spec_revision"] == revision
    assert run.report["spec_revision_source"] == "given"
    summary = run.report["summary"]
    assert summary["passed"] >= 100 and summary["failed"] == summary["errors"] == 0
    ran = {t["behaviour"] for t in run.report["tests"] if t["outcome"] == "passed"}
    expected = revisions.revision(revision).all_behaviours
    # The reference declares every producer: their checks run too (but the race: no GPU).
    assert sorted(expected - ran) == []


def test_a_release_name_judges_its_revision(tmp_path) -> None:
    run = suite_runner.in_process(
        tmp_path, suite_runner.check_path("test_module.py"), "--conformance-revision", "0.15.1"
    )
    assert run.exit_code == 0
    assert run.report["spec_revision"] == "0.14.0"
    assert run.report["spec_revision_releases"] == ["0.14.0", "0.14.1", "0.15.0", "0.15.1"]
