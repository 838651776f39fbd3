"""One row of the reports' tidy results frame, as ``reports.load_results`` gives it.

For tests that build a frame by hand: the columns every row has, filled with one
machine, commit and date, and the benchmark's parameters as columns too.
"""

from __future__ import annotations

import re

import pandas as pd

from reports import catalog
from reports.catalog import RatioTarget

#: A slowdown allowance judged from a size up, with its per-call overhead shown: the
#: tolists-over-ndarray.tolist() target the catalog had (no target now: it never
#: decided), kept for the tests of those mechanics.
TOLISTS_VS_NDARRAY = RatioTarget(
    key="tolists_vs_ndarray",
    title="LogprobsTensors.tolists() within 1.2x of ndarray.tolist() on the same data, "
    "from 64 tokens up",
    family=catalog.TOLISTS,
    baseline=re.compile(r"ndarray|numpy|np_|baseline", re.I),
    subject=re.compile(r"time_tolists$", re.I),
    limit=1.2,
    higher_is_better=False,
    ratio_label="tolists() time / ndarray.tolist() time (x)",
    direct=re.compile(r"tolists_vs_(?:ndarray|numpy)", re.I),
    from_size=("num_tokens", 64),
    overhead=re.compile(r"tolists_overhead.*_us$", re.I),
)


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
