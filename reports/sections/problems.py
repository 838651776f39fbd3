"""Benchmarks that failed or were skipped, and the notes on method."""

from __future__ import annotations

import pandas as pd

from reports import catalog, row_kinds
from reports.document import (
    Bullets,
    Paragraph,
    Section,
)
from reports.units import format_bytes


def problems_section(current: pd.DataFrame) -> Section:
    failed = row_kinds.failed(current)
    skipped = row_kinds.skipped(current)
    section = Section("problems", "Skipped and failed")
    if not skipped.empty:
        by_device = skipped.groupby(["machine", "device"]).size()
        section.blocks.append(
            Paragraph(
                "Skipped (the benchmark raised NotImplementedError in setup: device absent, "
                "left out, or not supported by the backend): "
                + ", ".join(f"{n} on {d}@{m}" for (m, d), n in by_device.items())
                + "."
            )
        )
    else:
        section.blocks.append(Paragraph("Nothing skipped."))
    if failed.empty:
        section.blocks.append(Paragraph("Nothing failed."))
        return section
    section.blocks.append(
        Paragraph(
            f"{len(failed)} result(s) FAILED (asv stored no value; its output of that run "
            "says why, e.g. `asv run --show-stderr`):"
        )
    )
    section.blocks.append(
        Bullets(
            tuple(
                f"`{benchmark}` on {machine}: {len(group)} parameter combination(s), "
                f"device(s) {', '.join(sorted(group['device'].unique()))}"
                for (machine, benchmark), group in failed.groupby(
                    ["machine", "benchmark"], sort=True
                )
            )
        )
    )
    return section


def notes_section() -> Section:
    return Section(
        "notes",
        "How these numbers were measured",
        [
            Paragraph(
                "Values are asv's medians (`value` in `results.csv`, with asv's 99% confidence "
                "interval, quartiles and repeat count beside it). Absolute times mean something "
                "only on the machine that measured them; on a CPU-only machine trust the ratios, "
                "which compare two ways measured side by side in one run. GB/s is payload bytes "
                "over the device-to-host time; the link's limit is the rating each run "
                f"recorded (`$OUTPUTS_LINK_GBPS`; by default the {catalog.LINK_NAME}'s "
                f"{catalog.LINK_LIMIT_GBPS:.0f} GB/s per direction) and payloads under "
                f"~{format_bytes(catalog.LATENCY_BOUND_BYTES)} are latency-bound."
            )
        ],
    )
