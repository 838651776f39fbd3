"""The gathering against the device memory's limit: the rated bandwidth, stated or known
by the device's name, and the floor's ratio (a GPU's; proved on CPU with a stated one)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchmarks import device_memory, gather

SHAPE = ("reference", "cpu", 64, 32000, 5)


def test_a_cpu_has_no_rated_bandwidth_unless_one_is_stated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(device_memory.MEMORY_ENV_VAR, raising=False)
    with pytest.raises(NotImplementedError, match="OUTPUTS_MEMORY_GBPS"):
        gather.GatherAtTheMemoryLimit().setup(*SHAPE)
    monkeypatch.setenv(device_memory.MEMORY_ENV_VAR, "fast")
    with pytest.raises(NotImplementedError, match="not a number of GB/s: 'fast'"):
        device_memory.memory_gbps("cpu")
    monkeypatch.setenv(device_memory.MEMORY_ENV_VAR, "4800")
    assert device_memory.memory_limit("cpu") == (4800.0, "$OUTPUTS_MEMORY_GBPS")


@pytest.mark.parametrize(
    ("name", "gbps", "part"),
    [
        ("NVIDIA H200", 4800.0, "H200"),
        ("NVIDIA H100 PCIe", 2000.0, "H100 PCIe"),
        ("NVIDIA H100 80GB HBM3", 3350.0, "H100"),
        ("NVIDIA GH200 480GB", 4000.0, "GH200"),
        # A name is matched as a word of its own: an L40 is no L4, an H20 no H200.
        ("NVIDIA L40", 864.0, "L40"),
        ("NVIDIA L4", 300.0, "L4"),
        ("NVIDIA H20", 4000.0, "H20"),
    ],
)
def test_a_gpu_is_known_by_the_longest_part_of_its_name(
    monkeypatch: pytest.MonkeyPatch, name: str, gbps: float, part: str
) -> None:
    monkeypatch.delenv(device_memory.MEMORY_ENV_VAR, raising=False)
    _a_gpu(monkeypatch, SimpleNamespace(name=name))
    assert device_memory.memory_limit("cuda") == (gbps, f"the rating of the {part} ({name})")


def test_an_unknown_gpu_is_computed_from_its_memory_clock_and_bus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(device_memory.MEMORY_ENV_VAR, raising=False)
    # H100 SXM's: 2619 MHz, 5120 bits, double data rate: 3352 GB/s.
    props = SimpleNamespace(name="Some GPU", memory_clock_rate=2_619_000, memory_bus_width=5120)
    _a_gpu(monkeypatch, props)
    gbps, source = device_memory.memory_limit("cuda")
    assert gbps == pytest.approx(3352.32) and "memory clock and bus width" in source
    _a_gpu(monkeypatch, SimpleNamespace(name="Some GPU"))
    with pytest.raises(NotImplementedError, match=r"Some GPU \(set \$OUTPUTS_MEMORY_GBPS\)"):
        device_memory.memory_gbps("cuda")


def _a_gpu(monkeypatch: pytest.MonkeyPatch, properties: SimpleNamespace) -> None:
    monkeypatch.setattr(device_memory.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(device_memory.torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(device_memory.torch.cuda, "get_device_properties", lambda _: properties)


def test_the_floor_ratio_grows_with_the_bandwidth_stated(monkeypatch: pytest.MonkeyPatch) -> None:
    # At 1 MB/s the 8 MB read takes 8 s: far above any gathering here, even on a busy
    # machine where one sample of it took 11 ms.
    monkeypatch.setenv(device_memory.MEMORY_ENV_VAR, "0.001")
    bench = gather.GatherAtTheMemoryLimit()
    bench.setup(*SHAPE)
    slow_memory = bench.track_gather_ratio_to_bandwidth_floor(*SHAPE)["samples"]
    bench.gbps = 1e6
    fast_memory = bench.track_gather_ratio_to_bandwidth_floor(*SHAPE)["samples"]
    assert max(slow_memory) < 1.0 < min(fast_memory)
    assert bench.track_memory_gbps(*SHAPE) == 1e6


def test_a_device_not_on_this_machine_is_named_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    # Not "state its bandwidth": no bandwidth would make an absent npu measurable.
    monkeypatch.setenv(device_memory.MEMORY_ENV_VAR, "4800")
    assert device_memory.memory_limit("npu") == (None, "no npu device on this machine")


def test_the_link_rating_a_run_measures_against_is_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmarks.link import LINK_ENV_VAR, LinkRating

    monkeypatch.setenv(LINK_ENV_VAR, "128")
    assert LinkRating().track_rated_gbps("reference", "cuda") == 128.0
    assert LinkRating.track_rated_gbps.unit == "GB/s rated"  # a rating: no transfer row
    monkeypatch.delenv(LINK_ENV_VAR)
    assert LinkRating().track_rated_gbps("reference", "cuda") == 63.0
