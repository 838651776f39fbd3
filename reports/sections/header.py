"""The report's header: what was measured, where and when."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd

from reports import row_kinds
from reports.document import (
    Block,
    Paragraph,
    Section,
    Table,
)
from reports.sections.inputs import ReportInput

#: The longest environment name shown whole; a longer one keeps its start and its end.
ENVIRONMENT_SHOWN = 36


def short_environment(name: str) -> str:
    """asv's environment name, short enough for the first screen: an interpreter's path
    spelled into it (``existing-py_tmp_..._.nox_suite_bin_python``) keeps its two ends."""
    if len(name) <= ENVIRONMENT_SHOWN:
        return name
    return f"{name[:12]}\u2026{name[-(ENVIRONMENT_SHOWN - 13) :]}"


def header_section(data: ReportInput) -> Section:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    frame, current = data.frame, data.current
    intro = (
        f"Generated {now} from `{data.results_dir}`: {len(frame)} result rows, "
        f"{frame['machine'].nunique()} machine(s), {frame['commit'].nunique()} commit(s). "
        "This summary describes each machine's most recent commit"
        + (" (older ones are in `results.csv`)." if frame["commit"].nunique() > 1 else ".")
    )
    body = []
    for (machine, commit), group in current.groupby(["machine", "commit"], sort=True):
        info = data.machines.get(machine, {})
        host = ", ".join(str(info[k]) for k in ("cpu", "num_cpu", "os") if info.get(k)) or "-"
        date = group["date"].iloc[0]
        body.append(
            (
                machine,
                f"`{commit[:10]}`",
                f"`{short_environment(str(group['env'].iloc[0]))}`",
                date.strftime("%Y-%m-%d") if not pd.isna(date) else "-",
                ", ".join(sorted(row_kinds.measured(group)["device"].unique())) or "-",
                host,
                f"{len(row_kinds.measured(group))} / {len(row_kinds.skipped(group))} / {len(row_kinds.failed(group))}",
            )
        )
    table = Table.of(
        (
            "machine",
            "commit",
            "environment",
            "commit date",
            "devices measured",
            "host",
            "ok / skipped / failed",
        ),
        body,
    )
    blocks: list[Block] = [Paragraph(intro), table]
    commits = sorted(set(current["commit"])) if "commit" in current else []
    noted = [(c, data.reference_paths[c]) for c in commits if c in data.reference_paths]
    if noted:
        blocks.append(
            Paragraph(
                "The reference's numbers measured its hot loops on CPU as: "
                + "; ".join(f"`{commit[:10]}`: {path}" for commit, path in noted)
                + "."
            )
        )
    return Section("header", "", blocks)


def conformance_header_section(data: ReportInput) -> Section:
    """The header of a report of conformance runs alone: what it was made from."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    conformance = data.conformance
    count = conformance["report"].nunique() if conformance is not None else 0
    return Section(
        "header",
        "",
        [
            Paragraph(
                f"Generated {now} from {count} conformance report(s); no benchmark results "
                "(run `nox -s suite` for those)."
            )
        ],
    )
