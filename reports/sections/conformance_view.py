"""Conformance per backend: the grid of outcomes, the failing checks, skip causes."""

from __future__ import annotations

import pandas as pd

from reports import row_kinds
from reports.conformance_loader import BAD_OUTCOMES, OUTCOMES, SKIP_CAUSES
from reports.document import (
    FAIL,
    Block,
    Heading,
    Paragraph,
    Section,
    Table,
)
from reports.sections.formatting import one_line, present_or_dash

#: Failing conformance checks listed per backend; the rest are in the JSON report.
FAILING_CHECKS_SHOWN = 20


def conformance_section(conformance: pd.DataFrame | None) -> Section:
    section = Section("conformance", "Conformance")
    if conformance is None:
        section.blocks.append(Paragraph("No conformance report given (`--conformance FILE`)."))
        return section
    for backend, group in conformance.groupby("backend", sort=True, dropna=False):
        section.blocks += _conformance_of_backend(str(backend), group)
    section.blocks.append(Paragraph("Per spec type and device: `conformance_matrix.png`."))
    return section


def _conformance_of_backend(backend: str, group: pd.DataFrame) -> list[Block]:
    first = group.iloc[0]
    tally = row_kinds.conformance_tally(group)
    source = present_or_dash(first.get("spec_revision_source"))
    declared = present_or_dash(first.get("devices_declared"))
    blocks: list[Block] = [
        Paragraph(
            f"Backend `{backend}` (module `{first['backend_module']}`, "
            f"version {first['backend_version'] or 'unknown'}), "
            f"spec {first['spec_revision']}"
            + (f" (chosen by {source})" if source else "")
            + f", suite {first['suite_version']}; "
            + (f"devices declared: {declared}; " if declared else "")
            + f"devices available: {first['devices_available'] or 'not recorded'}. Outcomes: "
            + ", ".join(f"{tally[o]} {o}" for o in OUTCOMES)
            + "."
        ),
        _conformance_grid(group),
    ]
    bad = group[group["outcome"].isin(BAD_OUTCOMES)]
    if not bad.empty:
        shown = bad.head(FAILING_CHECKS_SHOWN)
        with_behaviour = shown["behaviour"].notna().any()
        blocks.append(Heading(f"Failing checks of `{backend}`"))
        blocks.append(
            Table.of(
                (
                    "outcome",
                    "spec type",
                    "device",
                    "check",
                    *(["behaviour"] if with_behaviour else []),
                    "message",
                ),
                [
                    (
                        r.outcome,
                        r.spec_type,
                        r.device,
                        f"`{r.check}`",
                        *([present_or_dash(r.behaviour) or "-"] if with_behaviour else []),
                        one_line(r.message),
                    )
                    for r in shown.itertuples()
                ],
                flagged=[True] * len(shown),
            )
        )
        if len(bad) > len(shown):
            blocks.append(
                Paragraph(f"... and {len(bad) - len(shown)} more in the conformance report.")
            )
    skipped = group[group["outcome"] == "skipped"]
    if not skipped.empty:
        blocks.append(Heading(f"Skipped checks of `{backend}`, by cause"))
        blocks.append(_skip_causes(skipped))
    return blocks


def _conformance_grid(group: pd.DataFrame) -> Table:
    """Spec type x device, the same cells the matrix plot colours."""
    devices = sorted(group["device"].unique())
    body, flagged = [], []
    for spec_type in sorted(group["spec_type"].unique()):
        cells = [row_kinds.conformance_cell(group, spec_type, d) for d in devices]
        failing = any(state == row_kinds.CELL_FAIL for state, _ in cells)
        body.append(
            (
                spec_type,
                *(
                    f"{FAIL} {text}" if state == row_kinds.CELL_FAIL else text
                    for state, text in cells
                ),
            )
        )
        flagged.append(failing)
    return Table.of(("spec type", *devices), body, flagged=flagged)


def _skip_causes(skipped: pd.DataFrame) -> Table:
    causes = skipped.assign(cause=skipped["skip_cause"].fillna(""))
    body = []
    for cause, group in causes.groupby("cause", sort=True):
        meaning = SKIP_CAUSES.get(cause, "") if cause else "not recorded (an older report)"
        body.append(
            (
                f"`{cause}`" if cause else "-",
                meaning or "(a cause this report does not know)",
                ", ".join(sorted(group["device"].unique())),
                ", ".join(sorted(group["spec_type"].unique())),
                len(group),
            )
        )
    return Table.of(("skip cause", "meaning", "devices", "spec types", "checks"), body)
