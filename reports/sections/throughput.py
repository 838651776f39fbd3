"""Device-to-host GB/s against the link, and ns per element of the conversions."""

from __future__ import annotations

import pandas as pd

from reports import catalog, row_kinds, targets
from reports.document import (
    NO_DATA,
    Paragraph,
    Section,
    Table,
)
from reports.sections.formatting import CONTEXT_PARAMS, at_axis, axis_of, shape_text, short_name
from reports.units import format_bytes


def bandwidth_section(current: pd.DataFrame) -> Section:
    limit, name = catalog.link_limit(current)
    section = Section(
        "bandwidth",
        f"Transfer: achieved GB/s against the {name} limit ({limit:.0f} GB/s per direction)",
    )
    measured = row_kinds.gbps(catalog.with_payload_bytes(current))
    if measured.empty:
        in_gbps = current[row_kinds.is_gbps(current)]
        if not in_gbps.empty:
            devices = ", ".join(sorted(in_gbps["device"].unique()))
            text = (
                f"{NO_DATA}: the GB/s benchmarks were skipped on every device here "
                f"({devices}); they need an accelerator, the host has no device-to-host link."
            )
        else:
            text = f"{NO_DATA}: no benchmark reports GB/s."
        section.blocks.append(Paragraph(text))
        return section
    x = catalog.pick_param(measured, catalog.BYTES_PARAMS)
    body = []
    split = [
        c
        for c in targets.param_columns(measured)
        if c not in CONTEXT_PARAMS
        and c != x
        and not (x == "payload_bytes" and c in {"num_tokens", "num_logprobs"})
        and measured[c].nunique() > 1
    ]
    # dropna=False: each benchmark has its own parameters (the link's ``memory``, the
    # transfer's ``method``), so every row lacks one of the split columns; dropping the
    # missing keys emptied the table on the first GPU run.
    grouped = measured.groupby(["machine", "device", "benchmark", *split], sort=True, dropna=False)
    for keys, group in grouped:
        best = group.loc[group["value"].idxmax()]
        machine, device, benchmark = keys[:3]
        variant = ", ".join(
            f"{k}={v}" for k, v in zip(split, keys[3:], strict=True) if not pd.isna(v)
        )
        share = (
            "no link (host copy)"
            if device == "cpu"
            else f"{best['value'] / catalog.link_limit(current, machine)[0]:.0%}"
        )
        body.append(
            (
                machine,
                device,
                f"`{short_name(benchmark)}`" + (f" {variant}" if variant else ""),
                f"{best['value']:.2f}",
                format_bytes(float(best[x])) if x and not pd.isna(best[x]) else shape_text(best),
                share,
            )
        )
    section.blocks.append(
        Table.of(
            ("machine", "device", "benchmark", "peak GB/s", "at payload", "of link limit"), body
        )
    )
    return section


def ns_per_element_section(current: pd.DataFrame) -> Section:
    section = Section("ns-per-element", "Cost per element (ns), e.g. tolists")
    measured = row_kinds.ns_per_element(current)
    if measured.empty:
        section.blocks.append(Paragraph(f"{NO_DATA}: no benchmark reports ns per element."))
        return section
    x = catalog.pick_param(measured, catalog.BATCH_PARAMS)
    body = []
    for (machine, device, benchmark), group in measured.groupby(
        ["machine", "device", "benchmark"], sort=True
    ):
        lo = group.loc[group["value"].idxmin()]
        hi = group.loc[group["value"].idxmax()]
        axis = axis_of(group, x)
        body.append(
            (
                machine,
                device,
                f"`{short_name(benchmark)}`",
                f"{group['value'].median():.1f}",
                f"{lo['value']:.1f} ({at_axis(lo, axis)})",
                f"{hi['value']:.1f} ({at_axis(hi, axis)})",
            )
        )
    section.blocks.append(
        Table.of(("machine", "device", "benchmark", "median ns/elem", "min (at)", "max (at)"), body)
    )
    return section
