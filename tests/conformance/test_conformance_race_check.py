"""The race check: where it is generated (its real-device workload:
test_conformance_late_on_device.py)."""

from __future__ import annotations

import suite_runner


def test_race_check_runs_on_the_simulated_accelerator_and_not_on_cpu(tmp_path) -> None:
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path(
            "test_producer_async_output.py::test_get_output_waits_for_the_device"
        ),
    )
    records = run.report["tests"]
    # The reference declares cpu, cuda, xpu, mps: cuda is simulated here (no GPU), the
    # other absent accelerators skip, and CPU has no race to check.
    by_device = {r["device"]: r for r in records}
    assert "cpu" not in by_device
    assert by_device["cuda-simulated"]["outcome"] == "passed"
    for device in ("xpu", "mps"):
        assert by_device[device]["skip_cause"] == "device-not-present"
