"""Release over release: which release made each operation faster or slower."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from reports import releases
from reports.document import (
    Bullets,
    Heading,
    Paragraph,
    Section,
    Table,
)
from reports.sections.formatting import short_name
from reports.units import format_seconds


def release_section(current: pd.DataFrame) -> Section | None:
    """Every backend of one run side by side, in release order (None for one backend)."""
    if not releases.several_backends(current):
        return None
    rows = releases.release_rows(current)
    side = releases.side_by_side(current)
    many = rows["machine"].nunique() > 1 or rows["device"].nunique() > 1
    section = Section(
        "releases",
        "Release over release",
        [
            Paragraph(
                "Each operation timed on every backend of the run, each called its own "
                "revision's way. Per benchmark: the median at a few representative shapes "
                "and, in brackets, its ratio to the 2025.10 reference (`reference`; above "
                "1 is slower). Medians are timed one backend after another, so on a shared "
                "machine they also measure when each ran. The last column and the "
                "sentences come from timing each backend interleaved with the same partner "
                "backend in one process (`SideBySide.track_ratio_to_partner`): each "
                "release's time over the previous release's, side by side, where the run "
                "has them; otherwise the sentences compare medians at the middle shape. "
                "Even side by side, two releases with identical code for an operation can "
                "differ by the machine's noise (on a shared 2-core VM steps of 0.83x to "
                "1.24x were measured between identical texts): where the run timed the "
                "reference against itself, a sentence names a fastest release or a step "
                "only beyond how far apart that put the same code. "
                "Plots: `release_latency.png` (medians), `release_side_by_side.png` "
                "(side by side)."
            ),
            Bullets(tuple(_headline_sentence(h, many) for h in releases.headlines(rows, side))),
        ],
    )
    for (machine, device, benchmark), group in rows.groupby(
        ["machine", "device", "benchmark"], sort=True
    ):
        shapes = list(dict.fromkeys(group["shape"]))
        cells = {(r.backend, r.shape): r for r in group.itertuples()}
        ratios = releases.operation_ratios(side, machine, device, str(benchmark))
        steps = releases.release_steps(ratios) if not ratios.empty else {}
        step_header = (
            (f"step from the previous release, side by side ({ratios['shape'].iloc[0]})",)
            if steps
            else ()
        )
        body = [
            (
                backend,
                *(
                    _release_cell(cells[(backend, shape)]) if (backend, shape) in cells else "-"
                    for shape in shapes
                ),
                *((f"{steps[backend]:.2f}x" if backend in steps else "-",) if steps else ()),
            )
            for backend in releases.in_release_order(group["backend"])
        ]
        where = f" on {device}@{machine}" if many else ""
        section.blocks.append(Heading(f"`{short_name(str(benchmark))}`{where}"))
        section.blocks.append(Table.of(("backend", *shapes, *step_header), body))
    return section


def _headline_sentence(headline: releases.Headline, many: bool) -> str:
    where = f" on {headline.device}@{headline.machine}" if many else ""
    how = ", side by side" if headline.side_by_side else ", medians"
    text = (
        f"`{short_name(headline.benchmark)}` ({headline.shape}{where}{how}): fastest release "
        f"{releases.release_of(headline.fastest)}"
    )
    if headline.fastest_value is not None:
        text += f" ({format_seconds(headline.fastest_value)})"
    noise = (
        f" (the reference against itself read {headline.noise:.2f}x apart)"
        if headline.noise is not None
        else ""
    )
    if headline.slowest is not None and headline.slowest[1] > 1.0:
        slowest, times = headline.slowest
        if not headline.beyond_noise(times):
            return text + f"; every release within the run's noise{noise}."
        text += f", {times:.2f}x faster than the slowest, {releases.release_of(slowest)}"
    if headline.worst_step is None:
        return text + "; only one release measured."
    before, after, ratio = headline.worst_step
    if ratio <= 1.0:
        return text + f"; no release slower than the one before it ({headline.releases} releases)."
    if not headline.beyond_noise(ratio):
        return text + f"; no step between consecutive releases beyond the run's noise{noise}."
    return (
        text + f"; largest regression between consecutive releases "
        f"{releases.release_of(before)} -> {releases.release_of(after)}, {ratio:.2f}x slower."
    )


def _release_cell(row: Any) -> str:
    ratio = row.ratio_to_reference
    return format_seconds(row.value) + (f" ({ratio:.2f}x)" if math.isfinite(ratio) else "")
