"""The plots, and every benchmark's latency and memory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from reports import row_kinds, targets
from reports.asv_loader import STATUS_FAILED, STATUS_SKIPPED
from reports.document import (
    NO_DATA,
    Heading,
    Paragraph,
    Plot,
    Section,
    Table,
)
from reports.sections.formatting import CONTEXT_PARAMS, shape_text, short_name, sort_key
from reports.units import format_bytes, format_seconds


def plots_section(plots: Sequence[tuple[str, str, Path | None]]) -> Section | None:
    if not plots:
        return None
    return Section("plots", "Plots", [Plot(name, text, path) for name, text, path in plots])


def latency_section(current: pd.DataFrame) -> Section:
    section = Section(
        "latency",
        "Median latency per benchmark and device",
        [
            Paragraph(
                "asv's median over its samples; interquartile range in brackets when asv kept one."
            )
        ],
    )
    timed = row_kinds.timings(current)
    if timed.empty:
        section.blocks.append(Paragraph(f"{NO_DATA}: no timing benchmark has results."))
        return section
    for benchmark, group in timed.groupby("benchmark", sort=True):
        params = [
            c
            for c in targets.param_columns(group)
            if c not in CONTEXT_PARAMS and group[c].notna().any()
        ]
        # A device every combination skipped (absent here) is listed under
        # "Skipped and failed", not as a column of "skipped".
        ran = group[group["status"] != STATUS_SKIPPED]
        if ran.empty:
            continue
        columns = sorted(set(zip(ran["machine"], ran["device"], strict=True)))
        cells: dict[tuple[Any, ...], dict[tuple[str, str], str]] = {}
        failing: dict[tuple[Any, ...], bool] = {}
        for record in group.to_dict("records"):
            key = tuple(record[p] for p in params)
            cells.setdefault(key, {})[(record["machine"], record["device"])] = _latency_cell(record)
            failing[key] = failing.get(key, False) or record["status"] == STATUS_FAILED
        many_machines = group["machine"].nunique() > 1
        head = [*params, *(f"{d}@{m}" if many_machines else d for m, d in columns)]
        keys = sorted(cells, key=lambda k: tuple(sort_key(v) for v in k))
        section.blocks.append(Heading(f"`{benchmark}`"))
        section.blocks.append(
            Table.of(
                head or ["value"],
                [(*key, *(cells[key].get(c, "-") for c in columns)) for key in keys],
                flagged=[failing[key] for key in keys],
            )
        )
    return section


def _latency_cell(record: dict[str, Any]) -> str:
    if record["status"] == STATUS_SKIPPED:
        return "skipped"
    if record["status"] == STATUS_FAILED:
        return "FAILED"
    text = format_seconds(record["value"])
    q25, q75 = record.get("q_25"), record.get("q_75")
    if q25 is not None and q75 is not None and not pd.isna(q25) and not pd.isna(q75) and q75 > q25:
        text += f" [{format_seconds(q25)} to {format_seconds(q75)}]"
    if record["version_mismatch"]:
        text += " (edited)"
    return text


def memory_section(current: pd.DataFrame) -> Section | None:
    """asv's peakmem_ benchmarks: peak resident memory of the process, in bytes."""
    measured = row_kinds.peak_memory(current)
    if measured.empty:
        return None
    body = [
        (
            r["machine"],
            r["device"],
            f"`{short_name(r['benchmark'])}`",
            shape_text(r),
            format_bytes(r["value"]),
        )
        for r in measured.to_dict("records")
    ]
    return Section(
        "memory",
        "Peak memory",
        [
            Paragraph(
                "Peak resident memory of the benchmark process (asv `peakmem_`), which "
                "includes the interpreter and torch."
            ),
            Table.of(("machine", "device", "benchmark", "shape", "peak memory"), body),
        ],
    )
