"""Device selection, skipping, synchronisation and backend selection of the suite."""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any

import pytest

import reference
from benchmarks import (
    backends,
    common,
    empty_cpu,
    lists_slice,
    logprobs_ops,
    padding,
    pickling,
    tolists,
    transfer,
)

DEVICE_CLASSES = [
    transfer.Transfer,
    transfer.TransferWithCuTensor,
    transfer.TransferIntoPinned,
    transfer.TransferBandwidth,
    padding.Pad,
    padding.Unpad,
    logprobs_ops.Filter,
    logprobs_ops.Cat,
]
HOST_CLASSES = [
    tolists.ToLists,
    tolists.ToListsWithCu,
    tolists.ToListsAgainstBaselines,
    tolists.ToListsWithCuTensor,
    lists_slice.Slice,
    lists_slice.SliceWithCu,
    empty_cpu.EmptyCpu,
    pickling.PickleModelRunnerOutput,
]
ALL_CLASSES = [*DEVICE_CLASSES, *HOST_CLASSES]
ABSENT = [d for d in common.DEVICES if not common.device_available(d)]


def smallest_params(cls: type, backend: str = "reference@0.33.0") -> list[Any]:
    """The first value of every parameter, with device cpu where there is one.

    The backend is the newest reference by default: its revision has every operation.
    """
    values = [param[0] for param in cls.params]
    values[0] = backend
    if "device" in cls.param_names:
        values[cls.param_names.index("device")] = "cpu"
    return values


def benchmark_methods(cls: type) -> list[str]:
    prefixes = ("time_", "track_", "peakmem_", "mem_")
    return [name for name, _ in inspect.getmembers(cls) if name.startswith(prefixes)]


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_every_benchmark_records_the_backend_it_measured(cls: type) -> None:
    assert cls.param_names[0] == "backend"
    assert cls.params[0] == backends.selected_specs()
    assert len(cls.params) == len(cls.param_names)


@pytest.mark.parametrize("cls", DEVICE_CLASSES, ids=lambda c: c.__name__)
def test_device_is_a_parameter_over_the_device_layers_devices_in_its_order(cls: type) -> None:
    from conformance.backends.devices import candidate_devices

    assert cls.param_names[1] == "device"
    assert cls.params[1] == list(candidate_devices()) == ["cpu", "cuda", "xpu", "mps"]


@pytest.mark.skipif(not ABSENT, reason="every device type is present here")
@pytest.mark.parametrize("cls", DEVICE_CLASSES, ids=lambda c: c.__name__)
def test_an_absent_device_skips_in_setup(cls: type) -> None:
    for device in ABSENT:
        params = smallest_params(cls)
        params[1] = device
        with pytest.raises(NotImplementedError, match=f"no {device} device"):
            cls().setup(*params)


def test_a_device_left_out_by_the_environment_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(common.DEVICES_ENV_VAR, "cuda")
    with pytest.raises(NotImplementedError, match="left out"):
        padding.Unpad().setup(*smallest_params(padding.Unpad))
    monkeypatch.setenv(common.DEVICES_ENV_VAR, " cpu , cuda")
    assert common.enabled_devices() == ("cpu", "cuda")
    padding.Unpad().setup(*smallest_params(padding.Unpad))


@pytest.mark.parametrize("cls", [transfer.TransferIntoPinned, transfer.TransferBandwidth])
def test_link_benchmarks_skip_on_cpu(cls: type) -> None:
    with pytest.raises(NotImplementedError, match="no device-to-host link"):
        cls().setup(*smallest_params(cls))


@pytest.mark.parametrize("cls", DEVICE_CLASSES, ids=lambda c: c.__name__)
def test_every_timed_call_waits_for_its_device_before_returning(
    cls: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = smallest_params(cls)
    bench = cls()
    try:
        bench.setup(*params)
    except NotImplementedError:
        pytest.skip("not runnable on cpu")
    calls: list[str] = []
    monkeypatch.setattr(common, "synchronize", calls.append)
    for name in benchmark_methods(cls):
        calls.clear()
        getattr(bench, name)(*params)
        assert calls and calls[-1] == "cpu", f"{cls.__name__}.{name} did not synchronise last"


@pytest.mark.parametrize("cls", [padding.Pad, padding.Unpad], ids=lambda c: c.__name__)
def test_a_backend_without_the_producer_skips_its_benchmarks(
    cls: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    types_only = replace(backends.resolve("reference"), spec="types-only", producers={})
    monkeypatch.setattr(common, "backend", lambda spec: types_only)
    with pytest.raises(NotImplementedError, match="provides no"):
        cls().setup(*smallest_params(cls))


def test_a_device_the_backend_does_not_support_skips() -> None:
    gpu_only = replace(backends.resolve("reference"), spec="gpu-only", devices=("cuda",))
    with pytest.raises(NotImplementedError, match="does not support cpu"):
        common.require_device("cpu", gpu_only)


def test_a_bare_module_backend_has_types_but_no_producers() -> None:
    chosen = backends.resolve("reference.outputs")
    assert chosen.module.__name__ == "reference.outputs"
    assert chosen.type("LogprobsTensors") is reference.LogprobsTensors
    assert chosen.revision_name == "2025.10"
    with pytest.raises(NotImplementedError, match="provides no"):
        chosen.producer("unpad_sampled_token_ids")


def test_steps_are_built_on_a_present_devices_own_runtime_else_a_simulated_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # On a GPU day the decode step and its floor of copies and wait are the device's
    # real ones; a simulated runtime's copy threads would inflate the floor.
    import contextlib

    from benchmarks import async_output
    from conformance.backends import devices
    from conformance.producers import runtime

    asked: list[str] = []

    @contextlib.contextmanager
    def recorded(value: str):  # type: ignore[no-untyped-def]
        asked.append(value)
        yield value

    monkeypatch.setattr(runtime, "step_device", recorded)
    monkeypatch.setattr(devices, "is_present", lambda device: device == "npu")
    async_output.step_runtime.cache_clear()
    assert async_output.step_runtime("npu") == "npu"
    assert async_output.step_runtime("cuda") == "cuda-simulated"
    assert async_output.step_runtime("npu") == "npu"  # one per process
    assert asked == ["npu", "cuda-simulated"]
