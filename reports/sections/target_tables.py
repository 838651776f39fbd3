"""The targets, one table each: shapes, worst ratio and its interval, result."""

from __future__ import annotations

import pandas as pd

from reports import catalog, targets
from reports.document import (
    FAIL,
    NO_DATA,
    PASS,
    UNDECIDED,
    Block,
    Paragraph,
    Section,
    Table,
)
from reports.sections.formatting import fmt_interval, fmt_ratio, fmt_us
from reports.sections.verdict import target_verdicts

STATUS_WORDS = {targets.PASSED: PASS, targets.FAILED: FAIL, targets.UNDECIDED: UNDECIDED}


def targets_section(current: pd.DataFrame) -> Section:
    blocks: list[Block] = []
    for target, verdict in target_verdicts(current):
        blocks.append(
            Paragraph(
                f"**{target.title}.** Ratio: {target.ratio_label}; needed "
                f"{'>=' if target.higher_is_better else '<='} {target.limit:g}."
            )
        )
        if verdict.empty and target.devices is not None:
            blocks.append(
                Paragraph(
                    f"{NO_DATA}: judged on {', '.join(target.devices)} only "
                    f"({target.devices_why}), which this run did not measure."
                )
            )
            continue
        if verdict.empty:
            blocks.append(
                Paragraph(
                    f"{NO_DATA}: no benchmark matching `{target.family.pattern.pattern}` with a "
                    f"baseline matching `{target.baseline.pattern}` was timed on a shared shape."
                )
            )
            continue
        named = verdict["backend"].nunique() > 1
        overheads = {
            (o.machine, o.device, o.backend): f"{fmt_us(o.low_us)} to {fmt_us(o.high_us)}"
            for o in targets.overhead_us(current, target).itertuples()
        }
        blocks.append(
            Table.of(
                (
                    "machine",
                    "device",
                    *(["backend"] if named else []),
                    "shapes",
                    "missing the target",
                    "worst ratio",
                    "its 99% CI",
                    "at shape",
                    *(["decided at the memory floor"] if target.floor else []),
                    *(["per-call overhead (µs)"] if overheads else []),
                    "result",
                    "measured by",
                ),
                [
                    (
                        r.machine,
                        r.device,
                        *([r.backend] if named else []),
                        r.shapes,
                        r.failing,
                        fmt_ratio(r.worst_ratio),
                        "none: timed apart" if r.timed_apart else fmt_interval(r.worst_ci) or "-",
                        r.worst_shape,
                        *([len(r.at_floor_shapes)] if target.floor else []),
                        *(
                            [overheads.get((r.machine, r.device, r.backend), "-")]
                            if overheads
                            else []
                        ),
                        STATUS_WORDS[r.status],
                        f"`{r.measured_by}`",
                    )
                    for r in verdict.itertuples()
                ],
                flagged=[r.status != targets.PASSED for r in verdict.itertuples()],
            )
        )
        if target.devices is not None:
            blocks.append(
                Paragraph(f"Judged on {', '.join(target.devices)} only: {target.devices_why}.")
            )
        if target.from_size is not None:
            param, smallest = target.from_size
            blocks.append(
                Paragraph(
                    f"Judged from {param} = {smallest} up: below it a fixed cost per call "
                    "dominates, which the per-call overhead column shows."
                )
            )
        if target.only_where is not None:
            track, least = target.only_where
            blocks.append(
                Paragraph(
                    f"Judged only where {target.only_where_meaning} "
                    f"(`track_{track.pattern.rstrip('$')}`) is at least {least:g}x: below "
                    "that, the limit lies under what every way must do."
                )
            )
        if target.floor is not None:
            blocks.append(
                Paragraph(
                    "A shape too close to call "
                    f"{'' if target.tie_at_floor_meets_limit else 'whose ratio meets the limit '}"
                    "is decided at the memory floor when ours "
                    f"runs within {targets.PROCESS_SPREAD:.0%} of {target.floor_meaning} "
                    f"(`track_{target.floor.pattern.rstrip('$')}`)."
                )
            )
        missing = _missing_shapes(current, target)
        if missing:
            blocks.append(Paragraph(missing))
    return Section("targets", "Targets", blocks)


def _missing_shapes(current: pd.DataFrame, target: catalog.RatioTarget, limit: int = 12) -> str:
    """Every shape that misses the target, worst first: what to work on."""
    measured = targets.measurements(current, target)
    missing = measured[~measured["passed"].astype(bool)]
    if missing.empty:
        return ""
    missing = missing.sort_values("ratio", ascending=target.higher_is_better)
    items = [
        f"{r['shape']} on {r['device']}@{r['machine']}: {fmt_ratio(r['ratio'])}"
        for r in missing.head(limit).to_dict("records")
    ]
    more = f"; and {len(missing) - limit} more" if len(missing) > limit else ""
    return "Shapes missing it, worst first: " + "; ".join(items) + more + "."
