"""Cutting one request's rows out of a batch's ``LogprobsLists``.

A consumer that hands every request its own logprobs cuts the batch once per
request, so the benchmark cuts request by request over the whole batch, the way
the backend's revision spells it: ``slice(i, i + 1)`` up to 0.11.x,
``slice_request(i, num_positions)`` from 0.12.0 on (:mod:`benchmarks.revision_calls`).
Without ``cu_num_generated_tokens`` a request owns one row (plain decoding); with
it, each owns ``TOKENS_PER_REQUEST`` rows (speculative decoding).  The lists are
what the revision's own ``tolists()`` returns (Python lists, or numpy arrays
from 0.11.1 on).
"""

from __future__ import annotations

from typing import Any, ClassVar

from .common import HostBenchmark, generated_token_boundaries, logprobs_tensors, sizes
from .revision_calls import lists_with_cu, request_slicer

NUM_REQS = sizes([1, 64, 1024], 64)
NUM_LOGPROBS = 5
TOKENS_PER_REQUEST = 4


class Slice(HostBenchmark):
    """Cut a ``LogprobsLists`` of ``num_reqs`` one-row requests into one per request."""

    params: ClassVar[list[list[Any]]] = [*HostBenchmark.params, NUM_REQS]
    param_names: ClassVar[list[str]] = [*HostBenchmark.param_names, "num_reqs"]

    def setup(self, backend: str, num_reqs: int) -> None:
        subject = self.use_backend(backend)
        self.num_reqs = num_reqs
        self.lists = logprobs_tensors(backend, num_reqs, NUM_LOGPROBS).tolists()
        self.cut = request_slicer(subject, self.lists)

    def time_slice_per_request(self, backend: str, num_reqs: int) -> None:
        cut = self.cut
        for i in range(self.num_reqs):
            cut(i)


class SliceWithCu(HostBenchmark):
    """The same with ``TOKENS_PER_REQUEST`` rows per request, boundaries in the lists' cu."""

    params: ClassVar[list[list[Any]]] = Slice.params
    param_names: ClassVar[list[str]] = Slice.param_names

    def setup(self, backend: str, num_reqs: int) -> None:
        subject = self.use_backend(backend)
        self.num_reqs = num_reqs
        cu = generated_token_boundaries(num_reqs * TOKENS_PER_REQUEST, TOKENS_PER_REQUEST)
        tensors = logprobs_tensors(backend, cu[-1], NUM_LOGPROBS)
        self.lists = lists_with_cu(subject, tensors, cu)
        self.cut = request_slicer(subject, self.lists)

    def time_slice_per_request_with_cu(self, backend: str, num_reqs: int) -> None:
        cut = self.cut
        for i in range(self.num_reqs):
            cut(i)
