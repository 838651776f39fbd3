"""Changes between two revisions (``--compare``): regressions first."""

from __future__ import annotations

from reports.compare import IMPROVED, NOISE, NOT_COMPARABLE, REGRESSED, UNCHANGED, Comparison
from reports.document import (
    Paragraph,
    Section,
    Table,
)
from reports.units import format_value


def comparison_section(comparison: Comparison) -> Section:
    table = comparison.table
    counts = table["change"].value_counts()
    section = Section(
        "changes",
        f"Changes from `{comparison.rev_a}` to `{comparison.rev_b}`",
        [
            Paragraph(
                f"A change worse than {comparison.threshold:.0%} is a regression (slower for "
                "times, lower for GB/s and speed-ups) unless the two 99% confidence intervals "
                "overlap (then it is 'within noise', as asv judges it). "
                + ", ".join(
                    f"{counts.get(k, 0)} {k}"
                    for k in (REGRESSED, IMPROVED, NOISE, UNCHANGED, NOT_COMPARABLE)
                )
                + "."
            ),
            Paragraph(
                "Each machine is compared only with itself: "
                + "; ".join(f"{m} (`{a}` -> `{b}`)" for m, (a, b) in comparison.machines.items())
                + "."
                + "".join(
                    f" Not compared, only in {side}: {', '.join(names)}."
                    for side, names in comparison.not_compared.items()
                )
            ),
        ],
    )
    shown = table[table["change"].isin([REGRESSED, IMPROVED])]
    if shown.empty:
        section.blocks.append(Paragraph("No change beyond the threshold."))
        return section
    head = ["change", "machine", "benchmark", "params", "A", "B", "B/A"]
    body = [
        (
            ("**REGRESSED**" if row.change == REGRESSED else row.change),
            row.machine,
            f"`{row.benchmark}`",
            # The backend is the same on both sides of a run's comparison.
            ", ".join(p for p in (row.params or "").split(", ") if not p.startswith("backend=")),
            format_value(row.value_a, row.unit),
            format_value(row.value_b, row.unit),
            f"{row.ratio:.2f}x",
        )
        for row in shown.itertuples(index=False)
    ]
    section.blocks.append(
        Table.of(head, body, flagged=[row.change == REGRESSED for row in shown.itertuples()])
    )
    return section
