"""The peak host memory of a call: Python's heap and torch's CPU allocator, both counted."""

from __future__ import annotations

import numpy as np
import torch

from benchmarks.host_memory import peak_host_bytes, peak_host_bytes_side_by_side

MIB = 1 << 20


def test_a_torch_tensor_made_on_the_cpu_counts_in_torchs_allocator() -> None:
    peak = peak_host_bytes(lambda: torch.empty(MIB, dtype=torch.uint8), calls=3)
    assert MIB <= peak.torch_cpu < 2 * MIB
    assert peak.python_heap < MIB  # the tensor's bytes are not Python's


def test_a_numpy_buffer_counts_in_pythons_heap() -> None:
    peak = peak_host_bytes(lambda: np.empty(MIB, dtype=np.uint8), calls=3)
    assert MIB <= peak.python_heap < 2 * MIB
    assert peak.torch_cpu == 0
    assert peak.total == peak.python_heap


def test_a_temporary_freed_before_the_call_returns_still_counts_at_its_peak() -> None:
    def call() -> int:
        scratch = torch.zeros(2 * MIB, dtype=torch.uint8)
        del scratch
        return len(np.zeros(MIB, dtype=np.uint8))

    peak = peak_host_bytes(call, calls=3)
    assert peak.torch_cpu >= 2 * MIB and peak.python_heap >= MIB
    # Each allocator's own high-water mark: the sum, though the two never overlapped.
    assert peak.total >= 3 * MIB


def test_memory_held_before_the_call_is_not_counted() -> None:
    held = torch.empty(4 * MIB, dtype=torch.uint8)
    peak = peak_host_bytes(lambda: held.view(-1)[:10], calls=3)
    assert peak.torch_cpu == 0


def test_sides_measured_side_by_side_each_get_their_own_count() -> None:
    torch_side, numpy_side, nothing = peak_host_bytes_side_by_side(
        lambda: torch.empty(2 * MIB, dtype=torch.uint8),
        lambda: np.empty(MIB, dtype=np.uint8),
        lambda: None,
        rounds=3,
    )
    assert 2 * MIB <= torch_side.torch_cpu < 3 * MIB and torch_side.python_heap < MIB
    assert MIB <= numpy_side.python_heap < 2 * MIB and numpy_side.torch_cpu == 0
    assert nothing.torch_cpu == 0 and nothing.python_heap < 4096
