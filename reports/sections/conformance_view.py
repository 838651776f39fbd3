"""Conformance: the matrix of every report, then each report's grid, failing checks and skip causes."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from reports import conformance_matrix, deviations, row_kinds
from reports.conformance_loader import BAD_OUTCOMES, OUTCOMES, SKIP_CAUSES
from reports.conformance_matrix import CELL_KEYS, COLUMN_KEYS, REPORT_KEYS, ROW_KEYS, Duplicate
from reports.document import (
    FAIL,
    Block,
    Grid,
    GridCell,
    Heading,
    Paragraph,
    Section,
    Table,
)
from reports.sections.formatting import one_line, present_or_dash

#: The skip cause of a device the backend does not declare (the schema's name).
DEVICE_NOT_DECLARED = "device-not-declared"
#: Failing conformance checks listed per backend; the rest are in the JSON report.
FAILING_CHECKS_SHOWN = 20


def conformance_section(
    conformance: pd.DataFrame | None, duplicates: Sequence[Duplicate] = ()
) -> Section:
    section = Section("conformance", "Conformance")
    if conformance is None:
        section.blocks.append(Paragraph("No conformance report given (`--conformance FILE`)."))
        return section
    keyed = conformance_matrix.keyed(conformance)
    section.blocks += matrix_blocks(keyed, duplicates)
    reports = keyed.drop_duplicates("report").sort_values([*REPORT_KEYS, "report"])
    for path in reports["report"]:
        section.blocks += _conformance_of_report(keyed[keyed["report"] == path])
    section.blocks.append(Paragraph("Per report, spec type and device: `conformance_matrix.png`."))
    return section


def matrix_blocks(keyed: pd.DataFrame, duplicates: Sequence[Duplicate] = ()) -> list[Block]:
    """The matrix of every report (rows backend x version, columns revision x device x
    machine), and the reports set aside as repeats of a newer one."""
    table = conformance_matrix.cells(keyed)
    machines = keyed["machine"].nunique()
    blocks: list[Block] = [
        Paragraph(
            f"{keyed['report'].nunique()} report(s) from {machines} machine(s): a row per "
            "backend and version, a column per spec revision, device and machine (reports "
            "that differ in any of those are never merged); a cell counts the outcomes of "
            "its checks, and a failing one names what fails (click it in `report.html`; "
            "numbered under the table in `summary.md`)."
        )
    ]
    for duplicate in duplicates:
        blocks.append(
            Paragraph(
                f"Same key ({' · '.join(duplicate.key)}) in {len(duplicate.dropped) + 1} "
                f"reports: kept the newest, `{duplicate.kept}`; set aside "
                + ", ".join(f"`{d}`" for d in duplicate.dropped)
                + "."
            )
        )
    columns = conformance_matrix.column_order(table)
    undeclared = _undeclared_columns(keyed)
    if undeclared:
        columns = [c for c in columns if c not in undeclared]
        devices = sorted({device for _, device, _ in undeclared})
        blocks.append(
            Paragraph(
                f"Not shown: {', '.join(devices)} where no backend declares the device "
                "(every check there skipped, `device-not-declared`; they are in "
                "`conformance-matrix.csv`)."
            )
        )
    by_cell = {
        tuple(str(r[k]) for k in (*ROW_KEYS, *COLUMN_KEYS)): r for r in table.to_dict("records")
    }
    failing_of = {
        key: conformance_matrix.failing_behaviours(group)
        for key, group in keyed.groupby(list(CELL_KEYS), sort=True, observed=True)
    }
    rows = []
    for row in conformance_matrix.row_order(table):
        cells: list[GridCell | None] = []
        for column in columns:
            cell = by_cell.get((*row, *column))
            if cell is None:
                cells.append(None)
                continue
            failing = failing_of.get((*row, *column), [])
            cells.append(
                GridCell(
                    conformance_matrix.cell_text(cell),
                    failing=bool(cell["bad"]),
                    details=tuple(f"`{name}` ({counts})" for name, counts in failing),
                )
            )
        rows.append(((f"`{row[0]}`", row[1]), tuple(cells)))
    blocks.append(
        Grid(
            row_head=("backend", "version"),
            levels=("spec revision", "device", "machine"),
            columns=tuple(columns),
            rows=tuple(rows),
        )
    )
    return blocks


def _undeclared_columns(keyed: pd.DataFrame) -> set[tuple[str, str, str]]:
    """Columns whose every check was skipped because no backend declares the device."""
    undeclared = (keyed["outcome"] == "skipped") & (keyed["skip_cause"] == DEVICE_NOT_DECLARED)
    marked = keyed.assign(_undeclared=undeclared)
    found = set()
    for (revision, device, machine), group in marked.groupby(list(COLUMN_KEYS), sort=True):
        if bool(group["_undeclared"].all()):
            found.add((str(revision), str(device), str(machine)))
    return found


def _conformance_of_report(group: pd.DataFrame) -> list[Block]:
    first = group.iloc[0]
    backend = str(first["backend"])
    tally = row_kinds.conformance_tally(group)
    source = present_or_dash(first.get("spec_revision_source"))
    declared = present_or_dash(first.get("devices_declared"))
    blocks: list[Block] = [
        Heading(
            f"`{backend}` {first['backend_version']}, spec {first['spec_revision']}, "
            f"on {first['machine']}"
        ),
        Paragraph(
            f"Backend `{backend}` (module `{first['backend_module']}`, "
            f"version {first['backend_version']}), "
            f"spec {first['spec_revision']}"
            + (f" (chosen by {source})" if source else "")
            + f", suite {first['suite_version']}; "
            + (f"devices declared: {declared}; " if declared else "")
            + f"devices available: {first['devices_available'] or 'not recorded'}. Outcomes: "
            + ", ".join(f"{tally[o]} {o}" for o in OUTCOMES)
            + f". Report `{first['report']}`."
        ),
    ]
    where = _where_it_ran(first)
    if where:
        blocks.append(Paragraph(where))
    unsupported = present_or_dash(first.get("steps_not_declared"))
    if unsupported:
        blocks.append(
            Paragraph(
                f"Not applicable (declared): the backend's runner builds no steps of "
                f"{unsupported}; their checks are skipped (`step-not-declared`), never passed."
            )
        )
    blocks.append(_conformance_grid(group))
    blocks += _deviation_blocks(group, f"`{backend}` at {first['spec_revision']}")
    bad = group[group["outcome"].isin(BAD_OUTCOMES)]
    if not bad.empty:
        if bad["behaviour"].notna().any():  # an older report names no behaviour
            blocks += _failing_behaviour_blocks(bad, f"`{backend}` at {first['spec_revision']}")
        shown = conformance_matrix.cause_first(bad).head(FAILING_CHECKS_SHOWN)
        with_behaviour = shown["behaviour"].notna().any()
        blocks.append(Heading(f"Failing checks of `{backend}` at {first['spec_revision']}"))
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
        blocks.append(
            Heading(f"Skipped checks of `{backend}` at {first['spec_revision']}, by cause")
        )
        blocks.append(_skip_causes(skipped))
    return blocks


def _deviation_blocks(group: pd.DataFrame, of: str) -> list[Block]:
    """The known deviations of one report: what, how many checks, and why; one whose
    reason is still the placeholder ``--write-xfails`` wrote is flagged unexplained."""
    found = deviations.deviations(group)
    if not found:
        return []
    return [
        Heading(f"Known deviations of {of}"),
        Table.of(
            ("deviation", "xfails entry", "checks xfailed", "reason"),
            [
                (
                    f"`{d.named}`" if d.named else "-",
                    f"`{d.entry}`" if d.entry else "known defect of vLLM (declared by the suite)",
                    d.checks,
                    (
                        "**unexplained** (still the placeholder `--write-xfails` wrote): "
                        if d.unexplained
                        else ""
                    )
                    + one_line(d.reason),
                )
                for d in found
            ],
            flagged=[d.unexplained for d in found],
        ),
    ]


def _failing_behaviour_blocks(bad: pd.DataFrame, of: str) -> list[Block]:
    """One row per failing behaviour, the cause first, as the run's terminal lists them."""
    rows = []
    for name, counts, cause in conformance_matrix.failing_behaviours_cause_first(bad):
        follows = f" (may follow from `{cause}`, above)" if cause else ""
        first = bad[conformance_matrix.behaviour_names(bad) == name]["message"].iloc[0]
        # Whole: its end names the backend's file and line, and the fix.
        rows.append((f"`{name}`{follows}", counts, one_line(str(first), limit=None)))
    return [
        Heading(f"Failing behaviours of {of}, the cause first"),
        Table.of(("behaviour", "checks", "first message"), rows, flagged=[True] * len(rows)),
    ]


def _where_it_ran(first: pd.Series) -> str:
    """Where the report says it ran (a report of an older suite does not say)."""
    parts = []
    if present_or_dash(first.get("machine_os")):
        parts.append(f"OS {first['machine_os']}")
    for column, label in (("python", "Python"), ("torch", "torch")):
        if present_or_dash(first.get(column)):
            parts.append(f"{label} {first[column]}")
    if present_or_dash(first.get("device_names")):
        parts.append(f"devices: {first['device_names']}")
    if present_or_dash(first.get("vllm")):
        parts.append(f"vLLM judged: {first['vllm']}")
    if present_or_dash(first.get("run_id")):
        parts.append(f"run `{first['run_id']}` started {present_or_dash(first.get('run_started'))}")
    return f"Ran on {first['machine']}: " + "; ".join(parts) + "." if parts else ""


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
