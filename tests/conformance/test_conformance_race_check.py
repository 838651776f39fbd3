"""The race check's device workload, exercised on CPU (the check itself needs an accelerator)."""

from __future__ import annotations

import suite_runner
import torch

from conformance.backend import BUILTIN_DEVICES
from conformance.checks import test_producer_async_output as race

ACCELERATORS = BUILTIN_DEVICES[1:]


def test_long_work_produces_exactly_the_given_values(monkeypatch) -> None:
    # Small sizes: on CPU the work runs eagerly; what matters is the values and dtypes.
    monkeypatch.setattr(race, "_BUSY_SIZE", 16)
    monkeypatch.setattr(race, "_BUSY_ITERATIONS", 3)
    ids = torch.tensor([[70001, 70002], [70003, -1]], dtype=torch.int32)
    logprobs = torch.tensor([[-0.5, float("-inf")]], dtype=torch.float32)
    ranks = torch.tensor([3], dtype=torch.int64)
    produced = race._produced_after_long_work("cpu", ids, logprobs, ranks)
    for given, found in zip((ids, logprobs, ranks), produced, strict=True):
        assert found.dtype == given.dtype
        assert torch.equal(found, given)
        assert found.data_ptr() != given.data_ptr()  # written by the workload, not aliased


def test_race_check_is_generated_for_accelerators_only(tmp_path) -> None:
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path(
            "test_producer_async_output.py::test_get_output_waits_for_the_device"
        ),
    )
    records = run.report["tests"]
    assert sorted(r["device"] for r in records) == sorted(ACCELERATORS)
    present = set(run.report["platform"]["devices_available"])
    for record in records:
        assert record["outcome"] != "failed"
        if record["device"] not in present:
            assert record["skip_cause"] == "device-not-present"
