"""``LogprobsTensors.tolists()``: turning host tensors into Python lists (or arrays).

Held side by side against two baselines on the same data with the same dtypes,
each building the same ``LogprobsLists`` so that only the conversion differs:

* torch's own ``Tensor.tolist()`` of the three tensors: the floor the spec's way
  (``LogprobsLists(*(t.tolist() for t in tensors))``) allows, fixed per-call
  costs included;
* ``ndarray.tolist()`` of numpy views of them: the fastest conversion known;

and against not converting at all (keeping numpy arrays).  The tensors are CPU
tensors, as after ``to_cpu_nonblocking()`` and its wait: this benchmark is about
the conversion, ``transfer.py`` about the copy.  Each backend converts its
revision's way: lists up to 2025.10, numpy arrays from 0.11.1 on; with the
boundaries as an argument (2025.10 on) or as ``cu_num_generated_tokens_tensor``
on the tensors (0.29.0 on, the newer hot path).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from .common import (
    TARGET_SECONDS,
    HostBenchmark,
    baseline,
    generated_token_boundaries,
    logprobs_tensors,
    sizes,
)
from .interleaved import THREAD_CPU, best_seconds_of, difference_samples, ratio_samples
from .revision_calls import with_cu_tensor

#: The tolists() target's timing.  Both sides build the same Python objects, so their
#: ratio sits near 1.0, but a block's ratio moves by 20 % either way at 1024 tokens and
#: more (the allocator's pages come and go between calls): with 10 blocks asv's 99 %
#: interval of the median reached 1.26 on runs whose median was 1.04, and the verdict
#: read TOO CLOSE.  30 blocks over a second narrow it to the middle third of them.
TOLISTS_TARGET_SECONDS = 1.0
TOLISTS_TARGET_BLOCKS = 30

NUM_TOKENS = sizes([1, 64, 1024, 8192], 1024)
NUM_LOGPROBS = sizes([0, 5, 20], 5)
# The same shapes for the targets' numbers, kept whole in the main job.
TARGET_NUM_TOKENS = sizes([1, 64, 1024, 8192], 1024, target=True)
TARGET_NUM_LOGPROBS = sizes([0, 5, 20], 5, target=True)
# Speculative decoding: each request owns this many rows when cu is passed.
TOKENS_PER_REQUEST = 4


class ToListsInputs(HostBenchmark):
    """The data and baselines the tolists benchmarks share (no benchmark of its own)."""

    params: ClassVar[list[list[Any]]] = [*HostBenchmark.params, NUM_TOKENS, NUM_LOGPROBS]
    param_names: ClassVar[list[str]] = [*HostBenchmark.param_names, "num_tokens", "num_logprobs"]

    #: Behaviours the benchmark needs of the backend's revision (skipped without them).
    needs: tuple[str, ...] = ()

    def setup(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        subject = self.use_backend(backend, *self.needs)
        self.tensors = logprobs_tensors(backend, num_tokens, num_logprobs)
        self.lists_type = subject.type("LogprobsLists")
        # The same buffers viewed as numpy arrays: same values, same dtypes.
        self.arrays = [tensor.numpy() for tensor in self.tensors[:3]]
        self.num_elements = sum(tensor.numel() for tensor in self.tensors[:3])

    def _ndarray_tolist(self) -> object:
        # The same result object as tolists() builds, so only the conversion differs.
        ids, values, ranks = self.arrays
        return self.lists_type(ids.tolist(), values.tolist(), ranks.tolist())

    def _torch_tolist(self) -> object:
        ids, values, ranks = self.tensors[:3]
        return self.lists_type(ids.tolist(), values.tolist(), ranks.tolist())


class ToLists(ToListsInputs):
    """Latency and memory of ``tolists()`` and of its baselines on the same data."""

    def time_tolists(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self.tensors.tolists()

    @baseline
    def time_ndarray_tolist(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self._ndarray_tolist()

    @baseline
    def time_torch_tolist(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self._torch_tolist()

    @baseline
    def time_keep_numpy(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        # The alternative to converting: hand numpy views of the host tensors on.
        for tensor in self.tensors[:3]:
            tensor.numpy()

    def peakmem_tolists(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self.tensors.tolists()

    def track_tolists_ns_per_element(
        self, backend: str, num_tokens: int, num_logprobs: int
    ) -> float:
        (seconds,) = best_seconds_of(self.tensors.tolists, min_time=0.25)
        return seconds / self.num_elements * 1e9

    track_tolists_ns_per_element.unit = "ns/element"  # type: ignore[attr-defined]


class ToListsWithCu(HostBenchmark):
    """``tolists(cu)``: per-request boundaries passed in (2025.10 on)."""

    params: ClassVar[list[list[Any]]] = ToLists.params
    param_names: ClassVar[list[str]] = ToLists.param_names

    def setup(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self.use_backend(backend, "LogprobsTensors.tolists:cu-argument")
        self.tensors = logprobs_tensors(backend, num_tokens, num_logprobs)
        self.cu = generated_token_boundaries(num_tokens, TOKENS_PER_REQUEST)

    def time_tolists_with_cu(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self.tensors.tolists(self.cu)


class ToListsAgainstBaselines(ToListsInputs):
    """The targets as numbers, timed interleaved in one process (fairer than two timings).

    Only for revisions whose ``tolists()`` returns Python lists: converting to
    numpy arrays is other work than the baselines do.
    """

    params: ClassVar[list[list[Any]]] = [
        *HostBenchmark.params,
        TARGET_NUM_TOKENS,
        TARGET_NUM_LOGPROBS,
    ]

    needs = ("LogprobsTensors.tolists:python-lists",)

    def track_tolists_vs_ndarray_tolist(
        self, backend: str, num_tokens: int, num_logprobs: int
    ) -> dict[str, Any]:
        # The target (<= 1.2 from 64 tokens up) as a number: timed interleaved.
        return ratio_samples(
            self.tensors.tolists, self._ndarray_tolist, TARGET_SECONDS, clock=THREAD_CPU
        )

    track_tolists_vs_ndarray_tolist.unit = "ratio"  # type: ignore[attr-defined]

    def track_tolists_vs_torch_tolist(
        self, backend: str, num_tokens: int, num_logprobs: int
    ) -> dict[str, Any]:
        # The floor of the spec's own way (<= 1.2 at every shape): timed interleaved.
        return ratio_samples(
            self.tensors.tolists,
            self._torch_tolist,
            TOLISTS_TARGET_SECONDS,
            clock=THREAD_CPU,
            blocks=TOLISTS_TARGET_BLOCKS,
        )

    track_tolists_vs_torch_tolist.unit = "ratio"  # type: ignore[attr-defined]


class ToListsWithCuTensor(HostBenchmark):
    """``tolists()`` of tensors that carry their boundaries as a tensor (0.29.0 on)."""

    params: ClassVar[list[list[Any]]] = ToLists.params
    param_names: ClassVar[list[str]] = ToLists.param_names

    def setup(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        subject = self.use_backend(backend)
        cu = torch.tensor(generated_token_boundaries(num_tokens, TOKENS_PER_REQUEST))
        tensors = logprobs_tensors(backend, num_tokens, num_logprobs)
        self.tensors = with_cu_tensor(subject, tensors, cu)

    def time_tolists_with_cu_tensor(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self.tensors.tolists()


class ToListsOverhead(ToListsInputs):
    """What a ratio hides at one token: the fixed cost per call over ``ndarray.tolist()``.

    Shown beside the targets' ratios; not a target, so the main job measures it at the
    representative shape only.
    """

    needs = ("LogprobsTensors.tolists:python-lists",)

    def track_tolists_overhead_over_ndarray_us(
        self, backend: str, num_tokens: int, num_logprobs: int
    ) -> dict[str, Any]:
        return difference_samples(
            self.tensors.tolists, self._ndarray_tolist, TARGET_SECONDS, scale=1e6, clock=THREAD_CPU
        )

    track_tolists_overhead_over_ndarray_us.unit = "us/call"  # type: ignore[attr-defined]
