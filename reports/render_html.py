"""A :class:`~reports.document.Report` as one self-contained HTML page: ``report.html``.

It must open anywhere, offline included (accelerator machines often are):
no scripts, no fonts or styles from elsewhere; every plot is embedded as a
``data:`` URI, every style is in the page.  Tables come from pandas' Styler,
wrapped so a wide one scrolls instead of breaking the layout; a print
stylesheet drops the scroll boxes and fits images to the page.
"""

from __future__ import annotations

import base64
import html
import re

import pandas as pd

from reports.document import (
    NO_DATA,
    Block,
    Bullets,
    Grid,
    GridCell,
    Heading,
    Paragraph,
    Plot,
    Report,
    Section,
    Table,
    Verdict,
    Verdicts,
)

STYLE = """
:root { --fail: #b3261e; --fail-bg: #fdecea; --pass: #1e7a34; --pass-bg: #e6f4ea;
        --muted: #5f6368; --rule: #d0d7de; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: #1f2328; margin: 0 auto; padding: 1.5rem 2rem 4rem; max-width: 1280px; }
h1 { font-size: 1.6rem; margin: 0 0 .4rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid var(--rule); padding-bottom: .2rem;
     margin-top: 2.2rem; }
h3 { font-size: 1rem; margin: 1.4rem 0 .4rem; }
code { font: .88em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
       background: #f3f4f6; padding: 0 .25em; border-radius: 3px; }
nav { font-size: .9rem; color: var(--muted); margin: .6rem 0 1rem; }
nav a { color: inherit; margin-right: .9rem; }
.table-scroll { overflow-x: auto; margin: .5rem 0 1rem; max-width: 100%; }
table { border-collapse: collapse; font-size: .9rem; }
th, td { border: 1px solid var(--rule); padding: .25rem .55rem; vertical-align: top;
         white-space: nowrap; }
th { background: #f6f8fa; text-align: left; white-space: normal; }
/* A long name wraps inside its cell: the first screen never scrolls sideways. */
td { white-space: normal; max-width: 26rem; overflow-wrap: anywhere; }
td.num { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:nth-child(even) td { background: #fbfbfc; }
td.bad, tr:nth-child(even) td.bad { background: var(--fail-bg); }
.badge { display: inline-block; font-weight: 700; padding: 0 .4em; border-radius: 3px;
         letter-spacing: .03em; }
.badge.fail { background: var(--fail); color: #fff; }
.badge.pass { background: var(--pass); color: #fff; }
.badge.undecided { background: #b26a00; color: #fff; }
.badge.nodata { background: #e8eaed; color: var(--muted); font-weight: 600; }
ul.verdicts { list-style: none; padding: 0; }
ul.verdicts li { padding: .45rem .7rem; margin: .3rem 0; border-left: 5px solid var(--rule);
                 background: #f6f8fa; }
ul.verdicts li.fail { border-left-color: var(--fail); background: var(--fail-bg); }
ul.verdicts li.pass { border-left-color: var(--pass); background: var(--pass-bg); }
ul.verdicts li.undecided { border-left-color: #b26a00; background: #fdf3e1; }
table.grid details summary { cursor: pointer; }
table.grid details ul { margin: .3rem 0 0; padding-left: 1.1rem; white-space: normal; }
figure { margin: 1rem 0 2rem; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--rule); }
figcaption { color: var(--muted); font-size: .9rem; }
.nodata { color: var(--muted); }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  nav { display: none; }
  .table-scroll { overflow: visible; }
  th, td { white-space: normal; overflow-wrap: anywhere; }
  table { font-size: 8pt; }
  figure, tr, ul.verdicts li { break-inside: avoid; }
  figure img { max-width: 100%; max-height: 95vh; }
  h2, h3 { break-after: avoid; }
  .badge, td.bad, ul.verdicts li { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""

_CODE = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\(#([A-Za-z0-9_.-]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
#: Verdict words in table cells and text; coloured wherever they appear.
_BADGES = {
    "PASS": "pass",
    "FAIL": "fail",
    "FAILED": "fail",
    "REGRESSED": "fail",
    "TOO CLOSE": "undecided",
}
_BADGE_WORD = re.compile(r"<strong>(PASS|FAIL|REGRESSED|TOO CLOSE)</strong>|\bFAILED\b")
#: A cell that starts with a number (a value, a ratio, a size): right-aligned.
_NUMBER = re.compile(r"^[-+]?(\d|\.\d)")


def render(report: Report) -> str:
    # Untitled sections (the run's header) sit under the title, before the
    # table of contents; the rest follow as linked sections.
    head = [s for s in report.sections if not s.title]
    rest = [s for s in report.sections if s.title]
    body = [f"<h1>{html.escape(report.title)}</h1>"]
    body += [f'<header id="{html.escape(s.key)}">\n' + _blocks(s) + "\n</header>" for s in head]
    links = "".join(f'<a href="#{html.escape(s.key)}">{inline(s.title)}</a>' for s in rest)
    body.append(f"<nav>{links}</nav>")
    body += [render_section(s) for s in rest]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(report.title)}</title>\n"
        f"<style>{STYLE}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
    )


def render_section(section: Section) -> str:
    heading = f"<h2>{inline(section.title)}</h2>\n" if section.title else ""
    return f'<section id="{html.escape(section.key)}">\n{heading}{_blocks(section)}\n</section>'


def _blocks(section: Section) -> str:
    return "\n".join(_block(b) for b in section.blocks)


def _block(block: Block) -> str:
    if isinstance(block, Paragraph):
        return f"<p>{inline(block.text)}</p>"
    if isinstance(block, Heading):
        return f"<h3>{inline(block.text)}</h3>"
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{inline(i)}</li>" for i in block.items) + "</ul>"
    if isinstance(block, Verdicts):
        return '<ul class="verdicts">' + "".join(_verdict(v) for v in block.items) + "</ul>"
    if isinstance(block, Table):
        return table(block)
    if isinstance(block, Grid):
        return grid(block)
    if isinstance(block, Plot):
        return _plot(block)
    raise TypeError(f"no HTML for {type(block).__name__}")


def _verdict(verdict: Verdict) -> str:
    state = {"**PASS**": "pass", "**FAIL**": "fail", "**TOO CLOSE**": "undecided"}.get(
        verdict.status, ""
    )
    badge = inline(verdict.status) if state else ""
    if verdict.status == NO_DATA:
        badge = f'<span class="badge nodata">{NO_DATA}</span>'
    return (
        f'<li class="{state}">{badge}{" " if badge else ""}'
        f"<strong>{inline(verdict.subject)}</strong>: {inline(verdict.detail)}</li>"
    )


def table(block: Table) -> str:
    frame = block.frame.reset_index(drop=True)
    classes = pd.DataFrame("", index=frame.index, columns=frame.columns)
    for column in frame.columns:
        values = [str(v) for v in frame[column] if str(v) not in ("", "-")]
        if values and all(_NUMBER.match(v) for v in values):
            classes[column] = "num"
    for index, bad in enumerate(block.flagged):
        if bad:
            classes.iloc[index] = classes.iloc[index] + " bad"
    styler = (
        frame.style.hide(axis="index")
        .format(lambda v: inline(str(v)))
        .format_index(escape="html", axis=1)
        .set_td_classes(classes)
    )
    # The Styler's empty <style> block and per-cell ids are noise in a static page.
    markup = styler.to_html(table_attributes='class="report-table"')
    markup = re.sub(r'<style type="text/css">\s*</style>\s*', "", markup)
    return f'<div class="table-scroll">\n{markup}</div>'


def grid(block: Grid) -> str:
    """The matrix: a header row per column level (equal neighbours merged), a failing
    cell red with its details behind one click (``<details>``: no script needed)."""
    depth = len(block.levels)
    names = "".join(f'<th rowspan="{depth}">{html.escape(n)}</th>' for n in block.row_head)
    head = []
    for level in range(depth):
        cells, start = [], 0
        while start < len(block.columns):
            prefix = block.columns[start][: level + 1]
            end = start + 1
            while end < len(block.columns) and block.columns[end][: level + 1] == prefix:
                end += 1
            span = f' colspan="{end - start}"' if end - start > 1 else ""
            label = html.escape(block.columns[start][level])
            cells.append(f'<th{span} title="{html.escape(block.levels[level])}">{label}</th>')
            start = end
        head.append((names if level == 0 else "") + "".join(cells))
    body = []
    for row_names, row in block.rows:
        tds = "".join(f"<td>{inline(n)}</td>" for n in row_names)
        tds += "".join(_grid_cell(cell) for cell in row)
        body.append(f"<tr>{tds}</tr>")
    rows = "".join(f"<tr>{r}</tr>" for r in head)
    return (
        '<div class="table-scroll">\n<table class="report-table grid">'
        f"<thead>{rows}</thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _grid_cell(cell: GridCell | None) -> str:
    if cell is None:
        return "<td>-</td>"
    text = inline(f"**FAIL** {cell.text}" if cell.failing else cell.text)
    if cell.details:
        items = "".join(f"<li>{inline(d)}</li>" for d in cell.details)
        text = f"<details><summary>{text}</summary><ul>{items}</ul></details>"
    return f'<td class="bad">{text}</td>' if cell.failing else f"<td>{text}</td>"


def _plot(plot: Plot) -> str:
    if plot.path is None:
        return (
            f'<p class="nodata"><code>{html.escape(plot.file)}</code>: {NO_DATA} '
            f"({html.escape(plot.description)})</p>"
        )
    data = base64.b64encode(plot.path.read_bytes()).decode("ascii")
    alt = html.escape(plot.description, quote=True)
    return (
        f'<figure id="plot-{html.escape(plot.path.stem)}">'
        f'<img src="data:image/png;base64,{data}" alt="{alt}">'
        f"<figcaption><strong>{alt}</strong> (<code>{html.escape(plot.file)}</code>)"
        "</figcaption></figure>"
    )


def inline(text: str) -> str:
    """The inline marks of :mod:`reports.document` (```code```, ``**bold**``) as
    HTML, everything else escaped; verdict words become coloured badges."""
    out = html.escape(text, quote=False)
    out = _CODE.sub(r"<code>\1</code>", out)
    out = _BOLD.sub(r"<strong>\1</strong>", out)
    out = _LINK.sub(r'<a href="#\2">\1</a>', out)

    return _BADGE_WORD.sub(_badge, out)


def _badge(match: re.Match[str]) -> str:
    word = match.group(1) or match.group(0)
    return f'<strong class="badge {_BADGES[word]}">{word}</strong>'
