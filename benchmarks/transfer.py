"""Device-to-host transfer of ``LogprobsTensors``: the three ways a runner can do it.

* ``to_cpu_nonblocking()`` plus the wait (what vLLM's async output does);
* blocking ``.cpu()`` of each tensor into fresh pageable memory;
* a copy into host buffers pinned once in ``setup`` (what a runner that reuses
  its output buffers does);

and, from 0.29.0 on, ``to_cpu_nonblocking()`` of tensors that carry their
per-request boundaries as ``cu_num_generated_tokens_tensor`` (copied with them).
A revision without ``to_cpu_nonblocking`` (before 2025.10) skips ``Transfer``.

On CPU the first two are the calls a CPU backend pays (``to_cpu_nonblocking``
returns ``self``); a pinned buffer needs an accelerator, so that one skips.
``TransferBandwidth`` reports achieved GB/s measured with device events, to hold
against the link's limit (PCIe Gen5 x16: ~63 GB/s per direction; pinned copies
reach 52-57 GB/s on H100-class machines, pageable about half; payloads under
~1 MB are latency-bound).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from .common import (
    DeviceBenchmark,
    baseline,
    generated_token_boundaries,
    logprobs_tensors,
    median_device_seconds,
    require_accelerator,
    sizes,
)
from .interleaved import sampled
from .revision_calls import with_cu_tensor

NUM_TOKENS = sizes([1, 256, 4096, 65536], 4096)
NUM_LOGPROBS = sizes([0, 5, 20], 5)
# Speculative decoding rows per request, for the boundaries tensor.
TOKENS_PER_REQUEST = 4
METHODS = ["to_cpu_nonblocking", "cpu", "pinned"]


def payload_bytes(tensors: Any) -> int:
    """Bytes moved by one transfer: the three tensors' sizes."""
    return sum(t.nbytes for t in tensors[:3])


class Transfer(DeviceBenchmark):
    """Wall time of one device-to-host transfer of a ``LogprobsTensors``, waited for."""

    params: ClassVar[list[list[Any]]] = [*DeviceBenchmark.params, NUM_TOKENS, NUM_LOGPROBS]
    param_names: ClassVar[list[str]] = [*DeviceBenchmark.param_names, "num_tokens", "num_logprobs"]

    def setup(self, backend: str, device: str, num_tokens: int, num_logprobs: int) -> None:
        self.use(backend, device, "LogprobsTensors.to_cpu_nonblocking")
        self.tensors = logprobs_tensors(backend, num_tokens, num_logprobs, device)
        self.sync()

    def time_to_cpu_nonblocking_and_wait(
        self, backend: str, device: str, num_tokens: int, num_logprobs: int
    ) -> None:
        self.tensors.to_cpu_nonblocking()
        # The host copies are valid only after this wait; it is part of the cost.
        self.sync()

    @baseline
    def time_cpu_blocking_pageable(
        self, backend: str, device: str, num_tokens: int, num_logprobs: int
    ) -> None:
        for tensor in self.tensors[:3]:
            tensor.cpu()
        self.sync()


class TransferWithCuTensor(DeviceBenchmark):
    """``to_cpu_nonblocking()`` + the wait, boundaries on the device as a tensor (0.29.0 on)."""

    params: ClassVar[list[list[Any]]] = Transfer.params
    param_names: ClassVar[list[str]] = Transfer.param_names

    def setup(self, backend: str, device: str, num_tokens: int, num_logprobs: int) -> None:
        subject = self.use(backend, device, "LogprobsTensors.to_cpu_nonblocking")
        cu = torch.tensor(generated_token_boundaries(num_tokens, TOKENS_PER_REQUEST), device=device)
        tensors = logprobs_tensors(backend, num_tokens, num_logprobs, device)
        self.tensors = with_cu_tensor(subject, tensors, cu)
        self.sync()

    def time_to_cpu_nonblocking_with_cu_tensor_and_wait(
        self, backend: str, device: str, num_tokens: int, num_logprobs: int
    ) -> None:
        self.tensors.to_cpu_nonblocking()
        self.sync()


class TransferIntoPinned(DeviceBenchmark):
    """Wall time of copying a ``LogprobsTensors`` into host buffers pinned in advance."""

    params: ClassVar[list[list[Any]]] = Transfer.params
    param_names: ClassVar[list[str]] = Transfer.param_names

    def setup(self, backend: str, device: str, num_tokens: int, num_logprobs: int) -> None:
        self.use(backend, device)
        require_accelerator(device)
        self.tensors = logprobs_tensors(backend, num_tokens, num_logprobs, device)
        self.buffers = [torch.empty_like(t, device="cpu").pin_memory() for t in self.tensors[:3]]
        self.sync()

    @baseline
    def time_copy_into_pinned(
        self, backend: str, device: str, num_tokens: int, num_logprobs: int
    ) -> None:
        for buffer, tensor in zip(self.buffers, self.tensors[:3], strict=True):
            buffer.copy_(tensor, non_blocking=True)
        self.sync()


class _TimedOnTheDevice(DeviceBenchmark):
    """A ``LogprobsTensors`` on the device and host buffers pinned for it: the transfers
    the two classes below time with device events (no benchmark of its own)."""

    transfers = 10

    def prepare(
        self, backend: str, device: str, num_tokens: int, num_logprobs: int, method: str
    ) -> None:
        needs = ("LogprobsTensors.to_cpu_nonblocking",) if method == "to_cpu_nonblocking" else ()
        self.use(backend, device, *needs)
        require_accelerator(device)
        self.tensors = logprobs_tensors(backend, num_tokens, num_logprobs, device)
        self.buffers = [torch.empty_like(t, device="cpu").pin_memory() for t in self.tensors[:3]]
        self.sync()

    def _transfer(self, method: str) -> None:
        if method == "to_cpu_nonblocking":
            self.tensors.to_cpu_nonblocking()
        elif method == "cpu":
            for tensor in self.tensors[:3]:
                tensor.cpu()
        else:
            for buffer, tensor in zip(self.buffers, self.tensors[:3], strict=True):
                buffer.copy_(tensor, non_blocking=True)

    def seconds(self, method: str) -> float:
        return median_device_seconds(self.device, lambda: self._transfer(method), self.transfers)


class TransferBandwidth(_TimedOnTheDevice):
    """Achieved device-to-host GB/s of each transfer method, timed with device events.

    Events bracket the copies on the device's current stream, so the figure is the
    copy's own duration without Python overhead.  Median of several transfers after
    a warm-up.  CPU has no link: skipped there rather than reporting nonsense.
    """

    params: ClassVar[list[list[Any]]] = [*Transfer.params, METHODS]
    param_names: ClassVar[list[str]] = [*Transfer.param_names, "method"]
    unit = "GB/s"

    def setup(
        self, backend: str, device: str, num_tokens: int, num_logprobs: int, method: str
    ) -> None:
        self.prepare(backend, device, num_tokens, num_logprobs, method)

    def track_bandwidth(
        self, backend: str, device: str, num_tokens: int, num_logprobs: int, method: str
    ) -> float:
        return payload_bytes(self.tensors) / self.seconds(method) / 1e9


class TransferBesidePinnedCopy(_TimedOnTheDevice):
    """``to_cpu_nonblocking()`` against the plainest copy of the same tensors into host
    buffers pinned in advance: the fraction of that copy's rate it reaches (target: at
    least 95%, every shape).  Both timed with device events, in turns, so a change of the
    link's state between the two cannot pass for a difference."""

    params: ClassVar[list[list[Any]]] = Transfer.params
    param_names: ClassVar[list[str]] = Transfer.param_names
    unit = "fraction"
    #: The turns each side takes in one call (asv's own ``rounds`` start processes).
    turns = 5

    def setup(self, backend: str, device: str, num_tokens: int, num_logprobs: int) -> None:
        self.prepare(backend, device, num_tokens, num_logprobs, "to_cpu_nonblocking")

    def track_fraction_of_pinned_copy(
        self, backend: str, device: str, num_tokens: int, num_logprobs: int
    ) -> dict[str, Any]:
        fractions = []
        for _ in range(self.turns):
            ours = self.seconds("to_cpu_nonblocking")
            fractions.append(self.seconds("pinned") / ours)
        return sampled(fractions)
