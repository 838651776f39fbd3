"""The device memory's rated bandwidth: the floor of any kernel that reads its input once.

A gathering reads every logit of the batch at least once; at the device's memory
bandwidth that read takes ``bytes / bandwidth``, which with one kernel launch is the
least a gathering can cost (``gather.GatherLogprobs.track_gather_ratio_to_bandwidth_floor``).
The bandwidth is stated, not measured: ``$OUTPUTS_MEMORY_GBPS``, else the vendor's rating
for the device's name (:data:`RATED_GBPS`), else computed from the memory clock and bus
width the driver reports where torch exposes them.  None where none of these is known:
the floor's track is then skipped, naming the variable that states it.
"""

from __future__ import annotations

import os
import re
import sys

import torch

from .devices import is_present

__all__ = ["MEMORY_ENV_VAR", "RATED_GBPS", "memory_gbps", "memory_limit"]

MEMORY_ENV_VAR = "OUTPUTS_MEMORY_GBPS"

#: Vendors' rated memory bandwidth, GB/s, by a part of the device's name (the longest
#: part that matches wins: "H100 PCIe" before "H100").
RATED_GBPS = {
    "B200": 8000.0,
    "H200": 4800.0,
    "H100 PCIe": 2000.0,
    "H100 NVL": 3900.0,
    "H100": 3350.0,
    "H20": 4000.0,
    "GH200": 4000.0,
    "A100-SXM4-80GB": 2039.0,
    "A100 80GB PCIe": 1935.0,
    "A100": 1555.0,
    "L40S": 864.0,
    "L40": 864.0,
    "L4": 300.0,
    "MI300X": 5300.0,
    "MI325X": 6000.0,
}


def memory_limit(device: str) -> tuple[float | None, str]:
    """``(GB/s, where it comes from)`` of ``device``'s memory, or ``(None, why not)``."""
    if not is_present(device):
        return None, f"no {device} device on this machine"
    stated = os.environ.get(MEMORY_ENV_VAR, "").strip()
    if stated:
        try:
            return float(stated), f"${MEMORY_ENV_VAR}"
        except ValueError:
            return None, f"${MEMORY_ENV_VAR} is not a number of GB/s: {stated!r}"
    if device != "cuda" or not torch.cuda.is_available():
        return None, f"no rated memory bandwidth for {device} (set ${MEMORY_ENV_VAR})"
    properties = torch.cuda.get_device_properties(torch.cuda.current_device())
    name = properties.name
    part = rated_part(name)
    if part is not None:
        return RATED_GBPS[part], f"the rating of the {part} ({name})"
    clock_khz = getattr(properties, "memory_clock_rate", 0)
    bus_bits = getattr(properties, "memory_bus_width", 0)
    if clock_khz and bus_bits:
        # Double data rate: two transfers a clock, bus_bits / 8 bytes each.
        return 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9, f"{name}'s memory clock and bus width"
    return None, f"no rated memory bandwidth known for {name} (set ${MEMORY_ENV_VAR})"


def rated_part(name: str) -> str | None:
    """The key of :data:`RATED_GBPS` naming the device ``name``: the longest that stands
    in it as a word of its own (an L40 is no L4, a GH200 no H200)."""
    matches = [
        part
        for part in RATED_GBPS
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(part)}(?![A-Za-z0-9])", name, re.I)
    ]
    return max(matches, key=len) if matches else None


def memory_gbps(device: str) -> float:
    """``device``'s memory bandwidth in GB/s, or ``NotImplementedError`` (asv: skipped)
    saying how to state it."""
    gbps, source = memory_limit(device)
    if gbps is None:
        raise NotImplementedError(source)
    return gbps


def main() -> int:
    """Print each benchmarked device's memory and link limits (the device check's env)."""
    from benchmarks.link import link_gbps

    for device in os.environ.get("OUTPUTS_BENCH_DEVICES", "cuda").split(","):
        gbps, source = memory_limit(device)
        memory = f"{gbps:g} GB/s ({source})" if gbps is not None else source
        print(f"limits of {device}: memory {memory}; link {link_gbps():g} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
