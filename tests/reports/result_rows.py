"""One row of the reports' tidy results frame, as ``reports.load_results`` gives it.

For tests that build a frame by hand: the columns every row has, filled with one
machine, commit and date, and the benchmark's parameters as columns too.
"""

from __future__ import annotations

import pandas as pd


def result_row(
    benchmark: str,
    value: float,
    *,
    backend: str = "reference",
    kind: str = "time",
    unit: str = "seconds",
    **params: object,
) -> dict[str, object]:
    """A successful result of ``benchmark`` (a ``kind`` benchmark) at ``params``."""
    return {
        "benchmark": benchmark,
        "device": "cpu",
        "value": value,
        "unit": unit,
        "status": "ok",
        "type": kind,
        "params": ", ".join(f"{k}={v}" for k, v in {"backend": backend, **params}.items()),
        "commit": "c" * 40,
        "date": pd.Timestamp("2026-01-01", tz="UTC"),
        "machine": "box",
        "env": "existing",
        "version_mismatch": False,
        "backend": backend,
        **params,
    }
