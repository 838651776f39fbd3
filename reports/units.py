"""Units: which way is better, and how to print a value a person can read."""

from __future__ import annotations

import math
import re

#: Throughputs, speed-ups and a share of a limit reached (``fraction``: of the link,
#: of a pinned copy) grow when things get better; times, sizes, costs per element and
#: ratios of times shrink.  asv itself treats every number as lower-is-better.
_HIGHER_IS_BETTER = re.compile(
    r"(/s(ec(ond)?)?\b|per[ _]?s(ec(ond)?)?\b|speed-?up|^x$|times|^fraction$)", re.I
)

TIME_UNITS = {"seconds", "second", "s"}


def higher_is_better(unit: str | None) -> bool:
    return bool(unit) and bool(_HIGHER_IS_BETTER.search(str(unit)))


def format_seconds(value: float) -> str:
    """1.23e-6 -> '1.23 µs': latencies span ns to s, so pick the scale per value."""
    if value is None or not math.isfinite(value):
        return "n/a"
    for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {suffix}"
    return f"{value / 1e-9:.3g} ns"


def format_value(value: float, unit: str | None) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    if unit in TIME_UNITS:
        return format_seconds(value)
    return f"{value:.3g} {unit}" if unit else f"{value:.3g}"


def format_bytes(value: float) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    for scale, suffix in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if value >= scale:
            return f"{value / scale:.3g} {suffix}"
    return f"{value:.0f} B"
