"""What changed between two conformance runs (``--conformance-diff``): the section of
``summary.md`` and ``report.html``, and the whole of ``conformance-diff.md``, short
enough for a pull request comment."""

from __future__ import annotations

import pandas as pd

from reports.conformance_diff import (
    BAD_STATES,
    CELL_KEYS,
    CHANGES,
    ONLY_IN_BASE,
    ONLY_IN_NEW,
    UNCHANGED,
    ConformanceDiff,
    cell_label,
)
from reports.document import FAIL, PASS, Block, Bullets, Heading, Paragraph, Section
from reports.sections.formatting import one_line

#: Lines listed per kind of change; the rest are in ``conformance-diff.csv``.
SHOWN_PER_CHANGE = 50


def conformance_changes_section(changes: ConformanceDiff) -> Section:
    table = changes.table
    failing = changes.newly_failing
    counts = table["change"].value_counts()
    one_sided = int((failing["change"] == ONLY_IN_NEW).sum())
    verdict = (
        f"{FAIL}: {len(failing)} behaviour(s) newly failing or erroring"
        + (f" ({one_sided} of them where BASE has no such behaviour)" if one_sided else "")
        if not failing.empty
        else f"{PASS}: nothing newly failing"
    )
    blocks: list[Block] = [
        Paragraph(
            f"{verdict}. From `{changes.base}` (BASE) to `{changes.new}` (NEW), behaviour by "
            "behaviour in each matrix cell (backend · version · spec revision · device · "
            "machine; cells are never paired across machines): "
            + ", ".join(f"{counts.get(c, 0)} {c}" for c in CHANGES)
            + "."
        )
    ]
    for change in CHANGES:
        if change == UNCHANGED:
            continue
        rows = changes.changed(change)
        if rows.empty:
            continue
        blocks.append(Heading(f"{change[0].upper()}{change[1:]} ({len(rows)})"))
        if change in (ONLY_IN_BASE, ONLY_IN_NEW):
            blocks += _one_sided(rows, change)
            continue
        shown = rows.head(SHOWN_PER_CHANGE)
        blocks.append(Bullets(tuple(_line(r) for r in shown.to_dict("records"))))
        if len(rows) > len(shown):
            blocks.append(
                Paragraph(f"... and {len(rows) - len(shown)} more in `conformance-diff.csv`.")
            )
    return Section("conformance-changes", "Conformance changes", blocks)


def _line(row: dict[str, object]) -> str:
    text = (
        f"`{row['behaviour']}` in {cell_label(row)}: {row['base']} -> {row['new']} "
        f"({row['checks']} check(s))"
    )
    message = one_line(str(row.get("message") or ""))
    return f"{text}: {message}" if message else text


def _one_sided(rows: pd.DataFrame, change: str) -> list[Block]:
    """Behaviours one side lacks: a cell the other side lacks whole is one line (its
    failing behaviours named); within a shared cell, each behaviour."""
    side = "new" if change == ONLY_IN_NEW else "base"
    lines = []
    for _, cell in rows.groupby(list(CELL_KEYS), sort=True):
        first = cell.iloc[0].to_dict()
        bad = cell[cell[side].isin(BAD_STATES)]
        states = cell[side].value_counts()
        text = (
            f"{cell_label(first)}: {len(cell)} behaviour(s) ("
            + ", ".join(f"{int(n)} {state}" for state, n in states.items())
            + ")"
        )
        if not bad.empty:
            text += "; failing: " + ", ".join(f"`{b}`" for b in bad["behaviour"].head(12))
            if len(bad) > 12:
                text += f" and {len(bad) - 12} more"
        lines.append(text)
    return [Bullets(tuple(lines[:SHOWN_PER_CHANGE]))]
