"""How numbers, shapes and names read in the report's tables and sentences."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from reports import targets

#: Parameters that are the same on every row of a run and only clutter tables.
CONTEXT_PARAMS = {"backend", "device"}


def fmt_us(value: float) -> str:
    """Microseconds to three significant digits, never in exponent form (a negative
    overhead is a call cheaper than the baseline's, and is said so)."""
    if not math.isfinite(value):
        return "n/a"
    magnitude = abs(value)
    decimals = max(0, 2 - math.floor(math.log10(magnitude))) if magnitude else 0
    number = f"{value:.{decimals}f}"
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    text = f"{number} µs"
    return f"{text} (cheaper than the baseline)" if value < 0 else text


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}x" if math.isfinite(value) else "n/a"


def fmt_interval(interval: tuple[float, float]) -> str:
    low, high = interval
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"{low:.2f}-{high:.2f}"


def shape_text(row: pd.Series | dict[str, Any]) -> str:
    """The parameters of a row that describe the problem, not the run (no backend, device)."""
    parts = [p.strip() for p in str(row["params"] or "").split(", ") if p]
    keep = [p for p in parts if p.split("=", 1)[0] not in CONTEXT_PARAMS]
    return ", ".join(keep) or "-"


def at_axis(row: pd.Series, axis: Sequence[str]) -> str:
    """Where on ``axis`` a min or max is: ``num_tokens=64``."""
    return ", ".join(f"{p}={row[p]}" for p in axis) or "every shape"


def axis_of(group: pd.DataFrame, x: str | None) -> list[str]:
    """The parameters a min or max over ``group`` is taken over: those that vary
    in it, the size axis ``x`` first.  A parameter with one value in the group
    says nothing about where the extreme is."""
    varying = [
        c
        for c in targets.param_columns(group)
        if c not in CONTEXT_PARAMS and group[c].nunique(dropna=True) > 1
    ]
    return sorted(varying, key=lambda c: c != x)


def short_name(benchmark: str) -> str:
    return benchmark.split(".", 1)[1] if benchmark.count(".") >= 2 else benchmark


def present_or_dash(value: Any) -> str:
    """A cell's text, or "" for a value the report did not have (None, NaN)."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def one_line(text: str, limit: int | None = 120) -> str:
    """The first line of ``text``, cut to ``limit`` characters (None: whole)."""
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return first if limit is None or len(first) <= limit else first[: limit - 1] + "…"


def sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return (0, value)
    return (1, str(value))
