"""``LogprobsLists.slice``: cutting one request's rows out of a batch's logprobs.

A consumer that hands every request its own logprobs slices the batch once per
request, so the benchmark slices request by request over the whole batch.
Without ``cu_num_generated_tokens`` a request owns one row (plain decoding); with
it, each owns ``TOKENS_PER_REQUEST`` rows (speculative decoding).
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any, ClassVar

from .common import HostBenchmark, logprobs_tensors

NUM_REQS = [1, 64, 1024]
NUM_LOGPROBS = 5
TOKENS_PER_REQUEST = 4


class Slice(HostBenchmark):
    """Slice a ``LogprobsLists`` of ``num_reqs`` requests into one per request."""

    params: ClassVar[list[list[Any]]] = [*HostBenchmark.params, NUM_REQS]
    param_names: ClassVar[list[str]] = [*HostBenchmark.param_names, "num_reqs"]

    def setup(self, backend: str, num_reqs: int) -> None:
        self.num_reqs = num_reqs
        self.lists = logprobs_tensors(num_reqs, NUM_LOGPROBS).tolists()
        cu = [0, *accumulate([TOKENS_PER_REQUEST] * num_reqs)]
        self.lists_cu = logprobs_tensors(cu[-1], NUM_LOGPROBS).tolists(cu)

    def time_slice_per_request(self, backend: str, num_reqs: int) -> None:
        lists = self.lists
        for i in range(self.num_reqs):
            lists.slice(i, i + 1)

    def time_slice_per_request_with_cu(self, backend: str, num_reqs: int) -> None:
        lists = self.lists_cu
        for i in range(self.num_reqs):
            lists.slice(i, i + 1)
