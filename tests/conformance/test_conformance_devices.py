"""Any torch device type: declared types beyond the built-in ones, present or not."""

from __future__ import annotations

import types

import pytest
import suite_runner
import torch

from conformance.backends import devices
from conformance.backends.backend import Backend, BackendResolutionError


def test_a_backend_declaring_npu_runs_and_its_npu_checks_skip_as_not_present(tmp_path) -> None:
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_logprobs_tensors.py"),
        suite_runner.check_path("test_producer_async_output.py"),
        "--conformance-backend",
        "broken_backends.reference_with_npu:BACKEND",
    )
    assert run.exit_code == 0
    assert run.report["backend"]["devices_declared"] == ["cpu", "npu"]
    by_device: dict[str, set[str | None]] = {}
    for record in run.report["tests"]:
        if record["device"] is not None and record["outcome"] == "skipped":
            by_device.setdefault(record["device"], set()).add(record["skip_cause"])
    assert by_device["npu"] == {"device-not-present"}
    assert by_device["cuda"] == {"device-not-declared"}
    # The async output runs on its declared devices; the absent npu on a simulated runtime.
    race = [r for r in run.report["tests"] if "waits_for_the_device" in r["nodeid"]]
    assert race and {(r["device"], r["outcome"]) for r in race} == {("npu-simulated", "passed")}
    # On cpu, listed for the types, no runner builds its step: not applicable, saying why.
    on_cpu = [
        r for r in run.report["tests"]
        if r["spec_type"] == "AsyncModelRunnerOutput" and r["device"] == "cpu"
    ]  # fmt: skip
    assert on_cpu and {r["skip_cause"] for r in on_cpu} == {"step-not-built-on-device"}
    assert all("not applicable on cpu" in r["message"] for r in on_cpu)
    assert any(
        r["device"] == "npu-simulated" and r["outcome"] == "passed" for r in run.report["tests"]
    )


def test_declared_types_join_the_built_in_ones_in_order() -> None:
    assert devices.candidate_devices(("cpu", "npu", "cuda")) == ("cpu", "cuda", "xpu", "mps", "npu")


@pytest.mark.parametrize("bad", ["NPU", "", "cuda:0", "np u"])
def test_a_device_that_is_no_torch_type_name_is_refused(bad: str) -> None:
    with pytest.raises(BackendResolutionError, match="not torch device type names"):
        Backend(name="b", module=types.ModuleType("m"), devices=("cpu", bad))


class StandIn:
    """A device runtime as an out-of-tree plugin registers it (torch.<name>)."""

    def __init__(self, available: bool) -> None:
        self.available = available
        self.synchronized = 0

    def is_available(self) -> bool:
        return self.available

    def synchronize(self) -> None:
        self.synchronized += 1

    class Event:
        def record(self) -> None:
            pass


def test_a_registered_device_runtime_is_used_for_presence_sync_and_events(monkeypatch) -> None:
    runtime = StandIn(available=True)
    monkeypatch.setattr(torch, "npu", runtime, raising=False)
    assert devices.is_present("npu")
    assert "npu" in devices.present_devices(("cpu", "npu"))
    devices.synchronize("npu")
    assert runtime.synchronized == 1
    assert isinstance(devices.new_event("npu"), StandIn.Event)
    backend = Backend(name="b", module=types.ModuleType("m"), devices=("cpu", "npu"))
    assert devices.skip_for(backend, "npu") is None


def test_a_runtime_that_reports_unavailable_or_raises_counts_as_absent(monkeypatch) -> None:
    monkeypatch.setattr(torch, "npu", StandIn(available=False), raising=False)
    assert not devices.is_present("npu")
    broken = types.SimpleNamespace(is_available=lambda: 1 / 0)
    monkeypatch.setattr(torch, "hpu", broken, raising=False)
    assert not devices.is_present("hpu")
    backend = Backend(name="b", module=types.ModuleType("m"), devices=("cpu", "hpu"))
    skip = devices.skip_for(backend, "hpu")
    assert skip is not None and skip.cause == "device-not-present"


def test_a_runtime_without_synchronize_says_so(monkeypatch) -> None:
    monkeypatch.setattr(
        torch, "npu", types.SimpleNamespace(is_available=lambda: True), raising=False
    )
    with pytest.raises(RuntimeError, match=r"torch\.npu offers no synchronize"):
        devices.synchronize("npu")
    assert devices.new_event("npu") is None
