"""Many conformance reports as one matrix: rows backend x version, columns revision x
device x machine, each cell its checks' outcome counts and failing behaviours.

A report is keyed by backend, backend version, spec revision and machine
(:data:`REPORT_KEYS`): nothing that differs in any of them is ever merged.  Two
reports with the same key are one run repeated: :func:`newest_per_key` keeps the newer
(by its run's start, else the file's time) and names both.  :func:`cells` is the
matrix as data (``conformance-matrix.csv``); the report's section and
:mod:`reports.conformance_diff` are built from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

from reports.conformance_loader import BAD_OUTCOMES, GOOD_OUTCOMES, OUTCOMES
from reports.conformance_schema import CAUSE_BEHAVIOURS

#: What a row of the matrix is.
ROW_KEYS = ("backend", "backend_version")
#: What a column of the matrix is (``device`` is each check's, ``any`` for none).
COLUMN_KEYS = ("spec_revision", "device", "machine")
#: What one cell is: a row and a column.
CELL_KEYS = (*ROW_KEYS, *COLUMN_KEYS)
#: What one report is: never merged with a report that differs in any of these.
REPORT_KEYS = ("backend", "backend_version", "spec_revision", "machine")

#: The words of a key a report does not record (an older report has no machine).
NOT_RECORDED = {
    "backend": "(no name)",
    "backend_version": "(no version)",
    "spec_revision": "(no revision)",
    "machine": "(not recorded)",
    "device": "any",
}


@dataclass(frozen=True)
class Duplicate:
    """Reports of one key: the one kept (the newest) and those set aside."""

    key: tuple[str, ...]
    kept: str
    dropped: tuple[str, ...]


def keyed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every key column a string (what a report does not record, said so)."""
    out = frame.copy()
    for column in CELL_KEYS:
        out[column] = out[column].map(
            lambda v, c=column: NOT_RECORDED[c] if v is None or pd.isna(v) else str(v)
        )
    return out


def newest_per_key(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[Duplicate]]:
    """The rows of the newest report of each :data:`REPORT_KEYS` key, and the keys that
    had several reports (``frame`` as :func:`keyed` gives it)."""
    if frame.empty:
        return frame, []
    reports = frame.drop_duplicates("report")[[*REPORT_KEYS, "report", "run_started"]]
    keep: list[str] = []
    duplicates = []
    for key, group in reports.groupby(list(REPORT_KEYS), sort=True):
        ordered = sorted(group.to_dict("records"), key=_when)
        keep.append(ordered[-1]["report"])
        if len(ordered) > 1:
            duplicates.append(
                Duplicate(
                    tuple(str(k) for k in key),
                    ordered[-1]["report"],
                    tuple(r["report"] for r in ordered[:-1]),
                )
            )
    return frame[frame["report"].isin(keep)].reset_index(drop=True), duplicates


def _when(record: dict[str, object]) -> str:
    """When a report's run started: its own word, else the file's modification time."""
    started = record.get("run_started")
    if isinstance(started, str) and started:
        return started
    try:
        mtime = os.stat(str(record["report"])).st_mtime
    except OSError:
        return ""
    return datetime.fromtimestamp(mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cells(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: its keys, a count per outcome, ``good``, ``bad``, ``total``,
    ``failing`` (its failing behaviours, ``;``-separated) and the report it came from."""
    columns = [*CELL_KEYS, *OUTCOMES, "good", "bad", "total", "failing", "report", "run_id"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for key, group in frame.groupby(list(CELL_KEYS), sort=True, observed=True):
        counts = group["outcome"].value_counts()
        tally = {o: int(counts.get(o, 0)) for o in OUTCOMES}
        rows.append(
            {
                **dict(zip(CELL_KEYS, key, strict=True)),
                **tally,
                "good": sum(tally[o] for o in GOOD_OUTCOMES),
                "bad": sum(tally[o] for o in BAD_OUTCOMES),
                "total": len(group),
                "failing": "; ".join(
                    f"{name} ({counts})" for name, counts in failing_behaviours(group)
                ),
                "report": "; ".join(sorted(group["report"].unique())),
                "run_id": "; ".join(sorted(str(r) for r in group["run_id"].dropna().unique())),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def failing_behaviours(rows: pd.DataFrame) -> list[tuple[str, str]]:
    """``("LogprobsLists.slice_request", "3 failed")``: each behaviour with a bad outcome
    (or an xpass) and how many of its checks, the cause first (:func:`cause_rank`)."""
    return [(name, counts) for name, counts, _ in failing_behaviours_cause_first(rows)]


def failing_behaviours_cause_first(rows: pd.DataFrame) -> list[tuple[str, str, str | None]]:
    """:func:`failing_behaviours` with, for each, the failing cause of the same producer
    listed above it that it may follow from (None: none), as the run's terminal says."""
    failing = rows[rows["outcome"].isin(BAD_OUTCOMES | {"xpassed"})]
    named = failing.assign(name=behaviour_names(failing))
    found = []
    for name, group in named.groupby("name", sort=True):
        counts = group["outcome"].astype(str).value_counts()
        parts = [f"{int(counts[o])} {o}" for o in OUTCOMES if counts.get(o, 0)]
        found.append((str(name), ", ".join(parts)))
    found.sort(key=lambda item: (cause_rank(item[0]), item[0]))
    causes = [name for name, _ in found if name in CAUSE_BEHAVIOURS]
    return [
        (name, counts, next((c for c in causes if c != name and _same_producer(name, c)), None))
        for name, counts in found
    ]


def cause_rank(behaviour: str) -> int:
    """0, 1, ... for a behaviour whose failure explains others (``waits-for-device``),
    in the schema's order; after them every other behaviour."""
    return (
        CAUSE_BEHAVIOURS.index(behaviour)
        if behaviour in CAUSE_BEHAVIOURS
        else len(CAUSE_BEHAVIOURS)
    )


def cause_first(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` ordered by behaviour, a cause's first, then by node id."""
    names = behaviour_names(rows)
    order = sorted(
        range(len(rows)),
        key=lambda i: (cause_rank(names.iloc[i]), names.iloc[i], str(rows["nodeid"].iloc[i])),
    )
    return rows.iloc[order]


def _same_producer(behaviour: str, cause: str) -> bool:
    return behaviour.split(":", 1)[0] == cause.split(":", 1)[0]


def behaviour_names(rows: pd.DataFrame) -> pd.Series:
    """Each row's behaviour; a record without one (a module that failed to collect) is
    named by its node id."""
    return rows["behaviour"].where(rows["behaviour"].notna(), rows["nodeid"]).astype(str)


def natural_order(values: list[str]) -> list[str]:
    """Versions in numeric order (0.9.0 before 0.11.1); other words after, by name."""

    def key(value: str) -> tuple[int, tuple[int, ...], str]:
        parts = value.split(".")
        if all(p.isdigit() for p in parts):
            return (0, tuple(int(p) for p in parts), value)
        return (1, (), value)

    return sorted(values, key=key)


def device_order(values: list[str]) -> list[str]:
    """``any`` (no device), ``cpu``, then the accelerators by name."""
    first = [v for v in ("any", "cpu") if v in values]
    return first + sorted(v for v in values if v not in first)


def column_order(table: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The matrix's columns: revisions in release order, then devices, then machines."""
    present = {tuple(c) for c in table[list(COLUMN_KEYS)].itertuples(index=False)}
    revisions = natural_order(sorted({c[0] for c in present}))
    devices = device_order(sorted({c[1] for c in present}))
    machines = sorted({c[2] for c in present})
    return [(r, d, m) for r in revisions for d in devices for m in machines if (r, d, m) in present]


def row_order(table: pd.DataFrame) -> list[tuple[str, str]]:
    present = {tuple(r) for r in table[list(ROW_KEYS)].itertuples(index=False)}
    backends = sorted({r[0] for r in present})
    return [
        (b, v)
        for b in backends
        for v in natural_order(sorted(v for name, v in present if name == b))
    ]


def cell_text(cell: dict[str, object]) -> str:
    """The outcome counts of a cell: ``235 passed · 1 xfailed · 176 skipped``."""
    return " · ".join(f"{cell[o]} {o}" for o in OUTCOMES if cell.get(o))
