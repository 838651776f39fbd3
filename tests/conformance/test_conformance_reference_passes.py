"""The whole suite passes the reference, and its JSON report is the same with and without xdist."""

from __future__ import annotations

import suite_runner

from conformance.backend import SPEC_NAMES


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
    assert report == parallel.report

    assert report["schema"] == "conformance-report/1"
    assert report["spec_revision"] == "2025.10"
    assert report["spec_revision_source"] == "default"
    assert report["backend"]["name"] == "reference"
    assert report["backend"]["module"] == "reference"
    assert set(report["platform"]) == {"python", "torch", "devices_available"}
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
    assert (
        "spec type" in parallel.output and "AsyncModelRunnerOutput" in parallel.output
    )  # the table
