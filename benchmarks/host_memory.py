"""The peak host memory one call takes: Python's heap and torch's CPU allocator together.

A step's host memory lives in two allocators that no one tool sees both of:
``tracemalloc`` sees Python objects and numpy's buffers, not the tensors torch makes
on the CPU (a host copy's buffer, ``index_select``, boolean indexing); torch's
profiler (``profile_memory=True``) sees those, and nothing else.  Counting only the
first would favour whichever side does its temporaries in torch, so each call is
measured in both and its peak is the sum: each allocator's own high-water mark over
the call, above what it held before.  The two marks may fall at different moments,
so the sum can exceed the joint peak, never fall below it, and it is measured the
same way for every side compared.

The simulated runtime's copy thread allocates into the same heap and frees from it at
moments that differ from call to call, so a call's count moves both ways by a few
hundred bytes: the median over a few calls is the figure, steady from run to run.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Calls measured per figure (the median counts).
CALLS = 25
_STEP_RANGE = "host-memory-call"


@dataclass(frozen=True)
class PeakBytes:
    """One call's high-water marks above its start, in bytes."""

    python_heap: int
    torch_cpu: int

    @property
    def total(self) -> int:
        return self.python_heap + self.torch_cpu


def peak_host_bytes(call: Callable[[], object], calls: int = CALLS) -> PeakBytes:
    """The median, over ``calls`` calls of ``call``, of its peak host memory."""
    from torch.profiler import ProfilerActivity, profile, record_function

    heap_peaks = []
    tracemalloc.start()
    try:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            for _ in range(calls):
                # A full collection empties CPython's free lists (lists, dicts, floats):
                # otherwise a call's objects come partly from memory an earlier call
                # freed into them, which tracemalloc does not count, and the count would
                # depend on what ran before.
                gc.collect()
                with record_function(_STEP_RANGE):
                    # Reset inside the range: the profiler's own objects are no part of it.
                    tracemalloc.reset_peak()
                    before = tracemalloc.get_traced_memory()[0]
                    output = call()
                    heap_peaks.append(tracemalloc.get_traced_memory()[1] - before)
                    del output
    finally:
        tracemalloc.stop()
    torch_peaks = _torch_peaks_per_range(prof)
    if len(torch_peaks) != calls:
        raise RuntimeError(
            f"torch's profiler recorded {len(torch_peaks)} of {calls} measured calls: "
            "another profiler is running in this process; measure without it"
        )
    totals = sorted(
        (PeakBytes(h, t) for h, t in zip(heap_peaks, torch_peaks, strict=True)),
        key=lambda peak: peak.total,
    )
    return totals[len(totals) // 2]


def _torch_peaks_per_range(prof: Any) -> list[int]:
    """Per measured call, the high-water mark of torch's CPU allocations above its start.

    The profiler records the allocations of the thread that measures (a simulated
    runtime's copy thread stands in for a copy engine, which takes no host memory)."""
    from torch._C._autograd import DeviceType

    events = prof.profiler.kineto_results.events()
    ranges = sorted((e.start_ns(), e.end_ns()) for e in events if e.name() == _STEP_RANGE)
    memory = sorted(
        (e.start_ns(), e.nbytes())
        for e in events
        if e.name() == "[memory]" and e.device_type() == DeviceType.CPU
    )
    peaks = []
    cursor = 0
    for start, end in ranges:
        while cursor < len(memory) and memory[cursor][0] < start:
            cursor += 1
        held = peak = 0
        while cursor < len(memory) and memory[cursor][0] <= end:
            held += memory[cursor][1]
            peak = max(peak, held)
            cursor += 1
        peaks.append(peak)
    return peaks
