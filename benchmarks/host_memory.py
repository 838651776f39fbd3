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

A call's count moves both ways by a few hundred bytes from call to call (the simulated
runtime's bookkeeping, containers that grow and shrink): the median over 25 calls is the
figure, and sides compared are measured interleaved (:func:`peak_host_bytes_side_by_side`).
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .interleaved import dry_run

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


def peak_host_bytes(call: Callable[[], object], calls: int | None = None) -> PeakBytes:
    """The median, over ``calls`` calls of ``call`` (default :data:`CALLS`), of its peak
    host memory."""
    return peak_host_bytes_side_by_side(call, rounds=calls)[0]


def peak_host_bytes_side_by_side(
    *sides: Callable[[], object], rounds: int | None = None
) -> tuple[PeakBytes, ...]:
    """Per side, the median over ``rounds`` calls (default :data:`CALLS`) of its peak host
    memory, the sides' calls interleaved (one of each per round).

    Side by side, because what a call's count drifts with (the state of the heap and of
    the long-lived containers it touches) drifts alike for every side: measured apart, the
    same step's median moved by 5 % from one process to the next at one request; measured
    interleaved, two sides' medians stay within 0.5 % of each other from run to run."""
    from torch.profiler import ProfilerActivity, profile, record_function

    rounds = (1 if dry_run() else CALLS) if rounds is None else rounds
    heap_peaks: list[list[int]] = [[] for _ in sides]
    # What exists now moves to the permanent generation: each call's full collection
    # below then scans only what the calls made (0.2 s a collection with torch's objects
    # in it, times 50 a figure, was most of the decode step's run).
    gc.collect()
    gc.freeze()
    tracemalloc.start()
    try:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            for _ in range(rounds):
                for side, call in enumerate(sides):
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
                        heap_peaks[side].append(tracemalloc.get_traced_memory()[1] - before)
                        del output
    finally:
        tracemalloc.stop()
        gc.unfreeze()
    torch_peaks = _torch_peaks_per_range(prof)
    expected = rounds * len(sides)
    if len(torch_peaks) != expected:
        raise RuntimeError(
            f"torch's profiler recorded {len(torch_peaks)} of {expected} measured calls: "
            "another profiler is running in this process; measure without it"
        )
    medians = []
    for side, heap in enumerate(heap_peaks):
        # The ranges come in call order: side i's are every len(sides)-th from i.
        torch_side = torch_peaks[side :: len(sides)]
        totals = sorted(
            (PeakBytes(h, t) for h, t in zip(heap, torch_side, strict=True)),
            key=lambda peak: peak.total,
        )
        medians.append(totals[len(totals) // 2])
    return tuple(medians)


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
