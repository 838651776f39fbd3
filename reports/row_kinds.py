"""Which kind each row is: the one selection the report's text and its plots share.

A benchmark row is measured (``ok``), skipped or failed by its ``status``;
it is a GB/s, ns-per-element or latency row by its unit.  A conformance row
is good, bad or skipped by its outcome.  The summary and the plots both ask
here, so a table can never count a row the matching plot leaves out.
"""

from __future__ import annotations

import pandas as pd

from reports import catalog
from reports.asv_loader import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED
from reports.conformance_loader import BAD_OUTCOMES, GOOD_OUTCOMES, OUTCOMES
from reports.units import TIME_UNITS


def measured(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows with a value: asv ran them and they did not fail."""
    return frame[frame["status"] == STATUS_OK]


def skipped(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows asv skipped (NotImplementedError in setup: device absent, not supported)."""
    return frame[frame["status"] == STATUS_SKIPPED]


def failed(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows whose benchmark raised: asv stored no value."""
    return frame[frame["status"] == STATUS_FAILED]


def is_gbps(frame: pd.DataFrame) -> pd.Series:
    """Throughputs measured in GB/s (a rating the benchmarks record, such as the memory
    bandwidth a gathering's floor assumes, has a unit of its own: it moves nothing)."""
    return frame["unit"].fillna("").str.match(catalog.GBPS_UNIT)


def gbps(frame: pd.DataFrame) -> pd.DataFrame:
    """Measured throughputs in GB/s (the bandwidth table and plot)."""
    return measured(frame[is_gbps(frame)])


def ns_per_element(frame: pd.DataFrame) -> pd.DataFrame:
    """Measured costs in ns per element (the ns table and the tolists plot)."""
    units = frame["unit"].fillna("")
    return measured(frame[units.str.contains(catalog.NS_PER_ELEMENT_UNIT)])


def timings(frame: pd.DataFrame) -> pd.DataFrame:
    """Every row whose unit is a time, whatever its status (the latency table
    says skipped or FAILED in the cell; the plot draws only measured ones)."""
    return frame[frame["unit"].isin(TIME_UNITS)]


def peak_memory(frame: pd.DataFrame) -> pd.DataFrame:
    return measured(frame[frame["type"] == "peakmemory"])


# --- conformance ----------------------------------------------------------------


def conformance_tally(rows: pd.DataFrame) -> dict[str, int]:
    """Counts of the rows that conform (``good``), do not (``bad``), were
    ``skipped``, and every outcome by name."""
    counts = rows["outcome"].value_counts()
    tally = {outcome: int(counts.get(outcome, 0)) for outcome in OUTCOMES}
    tally["good"] = sum(tally[o] for o in GOOD_OUTCOMES)
    tally["bad"] = sum(tally[o] for o in BAD_OUTCOMES)
    tally["total"] = sum(tally[o] for o in OUTCOMES)
    return tally


#: A conformance cell's state, for colour and words.
CELL_PASS, CELL_FAIL, CELL_SKIP, CELL_NONE = "pass", "fail", "skip", "none"


def conformance_cell(rows: pd.DataFrame, spec_type: str, device: str) -> tuple[str, str]:
    """The state and text of one spec type x device cell: any bad outcome fails
    it; nothing good and nothing bad (all skipped) is a skip."""
    cell = rows[(rows["spec_type"] == spec_type) & (rows["device"] == device)]
    if cell.empty:
        return CELL_NONE, "-"
    tally = conformance_tally(cell)
    if tally["bad"]:
        return CELL_FAIL, f"{tally['good']}/{tally['total']}, {tally['bad']} bad"
    if tally["good"] == 0:
        return CELL_SKIP, f"skipped {tally['total']}"
    return CELL_PASS, f"{tally['good']}/{tally['total']}"
