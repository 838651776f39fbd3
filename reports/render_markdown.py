"""A :class:`~reports.document.Report` as Markdown: ``summary.md`` and ``compare.md``."""

from __future__ import annotations

from reports.document import (
    NO_DATA,
    Block,
    Bullets,
    Grid,
    Heading,
    Paragraph,
    Plot,
    Report,
    Section,
    Table,
    Verdicts,
)


def render(report: Report) -> str:
    parts = [f"# {report.title}\n"] if report.title else []
    parts += [render_section(s) for s in report.sections]
    return "\n".join(p.rstrip("\n") + "\n" for p in parts if p)


def render_section(section: Section) -> str:
    lines = [f"## {section.title}\n"] if section.title else []
    lines += [_block(b) for b in section.blocks]
    return "\n".join(lines)


def _block(block: Block) -> str:
    if isinstance(block, Paragraph):
        return block.text + "\n"
    if isinstance(block, Heading):
        return f"### {block.text}\n"
    if isinstance(block, Bullets):
        return "".join(f"- {item}\n" for item in block.items)
    if isinstance(block, Verdicts):
        return "".join(
            f"- {v.subject}: {v.status} ({v.detail})\n"
            if v.status
            else f"- {v.subject}: {v.detail}\n"
            for v in block.items
        )
    if isinstance(block, Table):
        return table(block)
    if isinstance(block, Grid):
        return grid(block)
    if isinstance(block, Plot):
        if block.path is None:
            return f"- `{block.file}`: {NO_DATA} ({block.description})\n"
        return f"**{block.description}** (`{block.file}`)\n\n![{block.description}]({block.file})\n"
    raise TypeError(f"no Markdown for {type(block).__name__}")


def table(block: Table) -> str:
    head = [str(c) for c in block.frame.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += [
        "| " + " | ".join(_cell(c) for c in row) + " |"
        for row in block.frame.itertuples(index=False)
    ]
    return "\n".join(lines) + "\n"


def grid(block: Grid) -> str:
    """The matrix as one table; each cell with details gets a number, and its details
    one line under the table (a pull request comment stays readable)."""
    head = [*block.row_head, *(" · ".join(c) for c in block.columns)]
    lines = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    notes: list[str] = []
    for names, cells in block.rows:
        shown = []
        for column, cell in zip(block.columns, cells, strict=True):
            if cell is None:
                shown.append("-")
                continue
            text = f"**FAIL** {cell.text}" if cell.failing else cell.text
            if cell.details:
                notes.append(
                    f"- [{len(notes) + 1}] {' '.join(names)} at {' · '.join(column)}: "
                    + "; ".join(cell.details)
                )
                text += f" [{len(notes)}]"
            shown.append(text)
        lines.append("| " + " | ".join(_cell(c) for c in [*names, *shown]) + " |")
    return "\n".join(lines) + "\n" + ("\n" + "\n".join(notes) + "\n" if notes else "")


def _cell(value: object) -> str:
    # A pipe inside a cell (an assertion message) would end the cell.
    return str(value).replace("|", "\\|")
