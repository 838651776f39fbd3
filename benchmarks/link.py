"""The device-to-host link itself: what any transfer of logprobs can reach at best.

The transfer benchmarks (:mod:`benchmarks.transfer`) time the ways a runner moves a
``LogprobsTensors``; these time a plain copy of a payload of given size, so each of
those can be read as a fraction of the link:

* ``LinkBandwidth.track_gbps``: achieved GB/s of one copy of ``payload_bytes`` into
  pinned or pageable host memory, timed with device events, and
  ``track_fraction_of_link`` the same over the link's rated bandwidth
  (:data:`LINK_GBPS`, PCIe Gen5 x16 by default: ``$OUTPUTS_LINK_GBPS`` sets another);
  4 KB to 64 MB, among them the 11 MB the transfer benchmarks move at their largest
  (:data:`LOGPROBS_PAYLOAD`);
* ``SmallCopy.time_small_copy``: the latency floor, one 4-byte blocking copy, Python
  and driver overhead included (every decode step pays it at least once).

CPU has no link: these skip there.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import torch

from .common import DeviceBenchmark, baseline, median_device_seconds, require_accelerator

#: The rated one-direction bandwidth of an H200's host link (PCIe Gen5 x16), GB/s.
DEFAULT_LINK_GBPS = 63.0
LINK_ENV_VAR = "OUTPUTS_LINK_GBPS"
KB, MB = 1024, 1024 * 1024
#: The largest ``LogprobsTensors`` of :mod:`benchmarks.transfer`: 65536 tokens x 21
#: columns (the sampled token and 20 logprobs) of an int32 id and a float32 logprob,
#: and an int64 rank per token.
LOGPROBS_PAYLOAD = 65536 * ((20 + 1) * (4 + 4) + 8)
PAYLOADS = [4 * KB, 64 * KB, 1 * MB, LOGPROBS_PAYLOAD, 64 * MB]
HOST_MEMORY = ["pinned", "pageable"]


def link_gbps() -> float:
    """The link's rated GB/s: ``$OUTPUTS_LINK_GBPS``, else :data:`DEFAULT_LINK_GBPS`."""
    text = os.environ.get(LINK_ENV_VAR, "").strip()
    return float(text) if text else DEFAULT_LINK_GBPS


class LinkBandwidth(DeviceBenchmark):
    """One device-to-host copy of a payload, pinned or pageable, timed with device events.

    The median of :attr:`copies` copies after a warm-up one (the allocator, the first
    touch of the host pages); events bracket the copy on the current stream, so Python's
    overhead is out of the figure.
    """

    params: ClassVar[list[list[Any]]] = [*DeviceBenchmark.params, PAYLOADS, HOST_MEMORY]
    param_names: ClassVar[list[str]] = [*DeviceBenchmark.param_names, "payload_bytes", "memory"]
    unit = "GB/s"
    copies = 20

    def setup(self, backend: str, device: str, payload_bytes: int, memory: str) -> None:
        self.use(backend, device)
        require_accelerator(device)
        self.source = torch.empty(payload_bytes, dtype=torch.uint8, device=device).fill_(1)
        host = torch.empty(payload_bytes, dtype=torch.uint8)
        self.host = host.pin_memory() if memory == "pinned" else host
        self.sync()

    def _seconds(self) -> float:
        return median_device_seconds(
            self.device, lambda: self.host.copy_(self.source, non_blocking=True), self.copies
        )

    @baseline
    def track_gbps(self, backend: str, device: str, payload_bytes: int, memory: str) -> float:
        return payload_bytes / self._seconds() / 1e9

    track_gbps.unit = "GB/s"  # type: ignore[attr-defined]

    @baseline
    def track_fraction_of_link(
        self, backend: str, device: str, payload_bytes: int, memory: str
    ) -> float:
        return payload_bytes / self._seconds() / 1e9 / link_gbps()

    track_fraction_of_link.unit = "fraction"  # type: ignore[attr-defined]


class LinkRating(DeviceBenchmark):
    """The link's rated GB/s this run measured against (:func:`link_gbps`), recorded
    for the report: a rating, not a measurement (its unit says so)."""

    def setup(self, backend: str, device: str) -> None:
        self.use(backend, device)
        require_accelerator(device)

    def track_rated_gbps(self, backend: str, device: str) -> float:
        return link_gbps()

    track_rated_gbps.unit = "GB/s rated"  # type: ignore[attr-defined]


class SmallCopy(DeviceBenchmark):
    """The latency floor of the link: one 4-byte blocking device-to-host copy."""

    def setup(self, backend: str, device: str) -> None:
        self.use(backend, device)
        require_accelerator(device)
        self.source = torch.ones(1, dtype=torch.int32, device=device)
        self.sync()

    @baseline
    def time_small_copy(self, backend: str, device: str) -> None:
        self.source.cpu()
