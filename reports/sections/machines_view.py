"""Benchmark machines side by side (results of two or more asv machines)."""

from __future__ import annotations

import pandas as pd

from reports import machines
from reports.document import Paragraph, Section, Table
from reports.sections.formatting import short_name
from reports.units import format_value


def machines_section(current: pd.DataFrame) -> Section | None:
    if not machines.several(current):
        return None
    table = machines.side_by_side(current)
    section = Section("machines", "Machines side by side")
    latest = current.groupby("machine")["commit"].first()
    section.blocks.append(
        Paragraph(
            "Each machine's latest commit: "
            + ", ".join(f"{m} at `{str(c)[:8]}`" for m, c in latest.items())
            + ". Per device and benchmark, each machine's geometric mean over the shapes all "
            "of that row's machines measured, and how many times faster or slower than the "
            "row's first machine (the ratio of those means). Machines differ by "
            "more than the code, so this is no verdict: `--compare` only ever compares a "
            "machine with itself. Plot: `machines.png`."
        )
    )
    if table.empty:
        section.blocks.append(
            Paragraph("no data: no benchmark was measured at a shared shape on two machines.")
        )
        return section
    names = sorted(table["machine"].unique())
    body = []
    for (device, benchmark), group in table.groupby(["device", "benchmark"], sort=True):
        by_machine = group.set_index("machine")
        cells = []
        for machine in names:
            if machine not in by_machine.index:
                cells.append("-")
                continue
            row = by_machine.loc[machine]
            text = format_value(float(row["value"]), str(row["unit"]))
            if machine != row["first"]:
                text += f" ({_speed(float(row['speed']))})"
            cells.append(text)
        body.append((device, f"`{short_name(str(benchmark))}`", group["shapes"].iloc[0], *cells))
    section.blocks.append(Table.of(("device", "benchmark", "shapes", *names), body))
    return section


def _speed(speed: float) -> str:
    if abs(speed - 1) < 0.005:
        return "as fast"
    if speed > 1:
        return f"{speed:.2f}x faster"
    return f"{1 / speed:.2f}x slower"
