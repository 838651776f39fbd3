"""The race check: its real-device workload on CPU, and where it is generated."""

from __future__ import annotations

import suite_runner
import torch

from conformance.checks import test_producer_async_output as race


def test_long_work_produces_exactly_the_given_values(monkeypatch) -> None:
    # Small sizes: on CPU the work runs eagerly; what matters is the values and dtype.
    monkeypatch.setattr(race, "_BUSY_SIZE", 16)
    monkeypatch.setattr(race, "_BUSY_ITERATIONS", 3)
    ids = torch.tensor([[70001, 70002], [70003, -1]], dtype=torch.int32)
    produced = race._produced_after_long_work("cpu", ids)
    assert produced.dtype == ids.dtype
    assert torch.equal(produced, ids)
    assert produced.data_ptr() != ids.data_ptr()  # written by the workload, not aliased


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
