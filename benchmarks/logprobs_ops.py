"""``LogprobsTensors.filter`` (0.14.0 on) and ``LogprobsTensors.cat`` (0.27.0 on).

Both run on the sampler's device before the copy to the host, once per step:

* ``filter(mask)`` keeps the rows of the requests that still want logprobs; the
  mask keeps about half the rows (seeded, the same in every run);
* ``cat(chunks, cu)`` joins the logprobs of a step computed in chunks
  (``CHUNKS`` of them, fewer when there are fewer requests) and sets the
  per-request boundaries, one row per request.

A revision without the operation skips (``NotImplementedError`` in ``setup``).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any, ClassVar

import numpy as np
import torch

from .common import DeviceBenchmark, logprobs_tensors, rng, sizes

NUM_REQS = sizes([1, 64, 1024], 64)
NUM_LOGPROBS = sizes([0, 5, 20], 5)
CHUNKS = 4


def keep_about_half(num_rows: int) -> np.ndarray:
    """A seeded boolean mask keeping about half of ``num_rows`` rows (at least one)."""
    mask = rng().random(num_rows) < 0.5
    mask[0] = True
    return mask


def chunk_bounds(num_rows: int, chunks: int) -> list[int]:
    """Row offsets splitting ``num_rows`` into ``min(chunks, num_rows)`` nearly equal parts."""
    parts = min(chunks, num_rows)
    return [num_rows * i // parts for i in range(parts + 1)]


class Filter(DeviceBenchmark):
    """``filter(mask)`` on the device, waited for."""

    params: ClassVar[list[list[Any]]] = [*DeviceBenchmark.params, NUM_REQS, NUM_LOGPROBS]
    param_names: ClassVar[list[str]] = [*DeviceBenchmark.param_names, "num_reqs", "num_logprobs"]

    def setup(self, backend: str, device: str, num_reqs: int, num_logprobs: int) -> None:
        self.use(backend, device, "LogprobsTensors.filter")
        self.tensors = logprobs_tensors(backend, num_reqs, num_logprobs, device)
        self.mask = torch.from_numpy(keep_about_half(num_reqs)).to(device)
        self.sync()

    def time_filter(self, backend: str, device: str, num_reqs: int, num_logprobs: int) -> None:
        self.tensors.filter(self.mask)
        self.sync()


class Cat(DeviceBenchmark):
    """``cat(chunks, cu)`` on the device, waited for."""

    params: ClassVar[list[list[Any]]] = Filter.params
    param_names: ClassVar[list[str]] = Filter.param_names

    def setup(self, backend: str, device: str, num_reqs: int, num_logprobs: int) -> None:
        subject = self.use(backend, device, "LogprobsTensors.cat")
        whole = logprobs_tensors(backend, num_reqs, num_logprobs, device)
        bounds = chunk_bounds(num_reqs, CHUNKS)
        cls = subject.type("LogprobsTensors")
        self.cat = cls.cat
        self.chunks = [cls(*(t[start:end] for t in whole[:3])) for start, end in pairwise(bounds)]
        self.cu = list(range(num_reqs + 1))
        self.sync()

    def time_cat(self, backend: str, device: str, num_reqs: int, num_logprobs: int) -> None:
        self.cat(self.chunks, self.cu)
        self.sync()
