"""A :class:`~reports.document.Report` as Markdown: ``summary.md`` and ``compare.md``."""

from __future__ import annotations

from reports.document import (
    NO_DATA,
    Block,
    Bullets,
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


def _cell(value: object) -> str:
    # A pipe inside a cell (an assertion message) would end the cell.
    return str(value).replace("|", "\\|")
