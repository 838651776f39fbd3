"""``LogprobsTensors.tolists()``: turning host tensors into Python lists.

Held side by side against ``ndarray.tolist()`` of the same data with the same
dtypes (the fastest known conversion), building the same ``LogprobsLists`` so
that only the conversion differs, and against not converting at all (keeping
numpy arrays).  The tensors are CPU tensors, as after
``to_cpu_nonblocking()`` and its wait: this benchmark is about the conversion,
``transfer.py`` about the copy.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any, ClassVar

from .common import HostBenchmark, best_seconds_of, logprobs_tensors, spec_type

NUM_TOKENS = [1, 64, 1024, 8192]
NUM_LOGPROBS = [0, 5, 20]
# Speculative decoding: each request owns this many rows when cu is passed.
TOKENS_PER_REQUEST = 4


class ToLists(HostBenchmark):
    """Latency and memory of ``tolists()`` and of its baselines on the same data."""

    params: ClassVar[list[list[Any]]] = [*HostBenchmark.params, NUM_TOKENS, NUM_LOGPROBS]
    param_names: ClassVar[list[str]] = [*HostBenchmark.param_names, "num_tokens", "num_logprobs"]

    def setup(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self.tensors = logprobs_tensors(num_tokens, num_logprobs)
        self.lists_type = spec_type("LogprobsLists")
        # The same buffers viewed as numpy arrays: same values, same dtypes.
        self.arrays = [tensor.numpy() for tensor in self.tensors]
        sizes = [TOKENS_PER_REQUEST] * (num_tokens // TOKENS_PER_REQUEST)
        sizes += [num_tokens % TOKENS_PER_REQUEST] if num_tokens % TOKENS_PER_REQUEST else []
        self.cu = [0, *accumulate(sizes)]
        self.num_elements = sum(tensor.numel() for tensor in self.tensors)

    def time_tolists(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self.tensors.tolists()

    def time_tolists_with_cu(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self.tensors.tolists(self.cu)

    def time_ndarray_tolist(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self._ndarray_tolist()

    def time_keep_numpy(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        # The alternative to converting: hand numpy views of the host tensors on.
        for tensor in self.tensors:
            tensor.numpy()

    def peakmem_tolists(self, backend: str, num_tokens: int, num_logprobs: int) -> None:
        self.tensors.tolists()

    def track_tolists_ns_per_element(
        self, backend: str, num_tokens: int, num_logprobs: int
    ) -> float:
        (seconds,) = best_seconds_of(self.tensors.tolists, min_time=0.25)
        return seconds / self.num_elements * 1e9

    track_tolists_ns_per_element.unit = "ns/element"  # type: ignore[attr-defined]

    def track_tolists_vs_ndarray_tolist(
        self, backend: str, num_tokens: int, num_logprobs: int
    ) -> float:
        # The target (<= 1.2) as a number in the results: timed interleaved.
        ours, numpy_way = best_seconds_of(self.tensors.tolists, self._ndarray_tolist, min_time=0.5)
        return ours / numpy_way

    track_tolists_vs_ndarray_tolist.unit = "ratio"  # type: ignore[attr-defined]

    def _ndarray_tolist(self) -> object:
        # The same result object as tolists() builds, so only the conversion differs.
        ids, values, ranks = self.arrays
        return self.lists_type(ids.tolist(), values.tolist(), ranks.tolist(), None)
