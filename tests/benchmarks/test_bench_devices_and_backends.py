"""Device selection, skipping, synchronisation and backend selection of the suite."""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import pytest

import reference
from benchmarks import common, empty_cpu, lists_slice, padding, tolists, transfer

DEVICE_CLASSES = [
    transfer.Transfer,
    transfer.TransferIntoPinned,
    transfer.TransferBandwidth,
    padding.Pad,
    padding.Unpad,
]
ALL_CLASSES = [*DEVICE_CLASSES, tolists.ToLists, lists_slice.Slice, empty_cpu.EmptyCpu]
ABSENT = [d for d in common.DEVICES if not common.device_available(d)]


def smallest_params(cls: type) -> list[Any]:
    """The first value of every parameter, with device cpu where there is one."""
    values = [param[0] for param in cls.params]
    if "device" in cls.param_names:
        values[cls.param_names.index("device")] = "cpu"
    return values


def benchmark_methods(cls: type) -> list[str]:
    prefixes = ("time_", "track_", "peakmem_", "mem_")
    return [name for name, _ in inspect.getmembers(cls) if name.startswith(prefixes)]


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_every_benchmark_records_the_backend_it_measured(cls: type) -> None:
    assert cls.param_names[0] == "backend"
    assert cls.params[0] == [common.selected_backend_spec()]
    assert len(cls.params) == len(cls.param_names)


@pytest.mark.parametrize("cls", DEVICE_CLASSES, ids=lambda c: c.__name__)
def test_device_is_a_parameter_over_cpu_cuda_mps_xpu(cls: type) -> None:
    assert cls.param_names[1] == "device"
    assert cls.params[1] == ["cpu", "cuda", "mps", "xpu"]


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


class _NoProducers:
    name = "types-only"
    module = reference
    devices = common.DEVICES
    pad_sampled_token_ids = None
    unpad_sampled_token_ids = None


@pytest.mark.parametrize("cls", [padding.Pad, padding.Unpad], ids=lambda c: c.__name__)
def test_a_backend_without_the_producer_skips_its_benchmarks(
    cls: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(common, "backend", _NoProducers)
    with pytest.raises(NotImplementedError, match="provides no"):
        cls().setup(*smallest_params(cls))


def test_a_device_the_backend_does_not_support_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        common, "backend", lambda: SimpleNamespace(name="gpu-only", devices=("cuda",))
    )
    with pytest.raises(NotImplementedError, match="does not support cpu"):
        common.require_device("cpu")


def test_the_backend_comes_from_outputs_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(common.BACKEND_ENV_VAR, "reference")
    common.backend.cache_clear()
    try:
        assert common.backend().module is reference
        assert common.spec_type("LogprobsTensors") is reference.LogprobsTensors
    finally:
        common.backend.cache_clear()
    monkeypatch.setenv(common.BACKEND_ENV_VAR, "reference.outputs")
    assert common.selected_backend_spec() == "reference.outputs"
    common.backend.cache_clear()
    try:
        chosen = common.backend()
        assert chosen.module.__name__ == "reference.outputs"
        # A bare module declares no producers: their benchmarks skip.
        with pytest.raises(NotImplementedError):
            common.producer("unpad_sampled_token_ids")
    finally:
        common.backend.cache_clear()
