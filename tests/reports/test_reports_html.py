"""report.html: one self-contained page with what summary.md says.

Parsed with the standard library's ``html.parser``, the way a strict reader
would: nothing may be fetched from elsewhere, every section and plot must be
there, and the page must show the same rows and verdicts as the Markdown.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from reports import content, load_results, render_html
from reports.cli import EXIT_OK, main
from reports.document import Paragraph, Plot, Report, Section, Table

FIXTURES = Path(__file__).parent / "fixtures"
RESULTS = FIXTURES / "project-asv" / "results"
CONFORMANCE = FIXTURES / "conformance-report.json"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

#: Sections a reader of any report looks for, in this order.
REQUIRED_SECTIONS = (
    "verdict",
    "targets",
    "bandwidth",
    "ns-per-element",
    "conformance",
    "plots",
    "latency",
    "problems",
    "notes",
)
#: Attributes through which a page loads or links to something.
URL_ATTRIBUTES = {"src", "href", "srcset", "data", "poster", "action"}


@dataclass
class Page:
    """What the parser saw: every start tag, the section ids in order, and each
    table as rows of cell texts (with the classes of each cell)."""

    tags: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    tables: list[list[list[str]]] = field(default_factory=list)
    table_classes: list[str] = field(default_factory=list)
    cell_classes: list[list[list[str]]] = field(default_factory=list)
    tables_outside_scroll: int = 0
    style: str = ""


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._open: list[tuple[str, dict[str, str]]] = []
        self._cell: list[str] | None = None
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.page.tags.append((tag, attributes))
        if tag in {"section", "header"} and "id" in attributes:
            self.page.ids.append(attributes["id"])
        if tag == "table":
            scrolled = any("table-scroll" in a.get("class", "") for _, a in self._open)
            self.page.tables_outside_scroll += not scrolled
            self.page.tables.append([])
            self.page.table_classes.append(attributes.get("class", ""))
            self.page.cell_classes.append([])
        elif tag == "tr":
            self.page.tables[-1].append([])
            self.page.cell_classes[-1].append([])
        elif tag in {"td", "th"}:
            self._cell = []
            self.page.cell_classes[-1][-1].append(attributes.get("class", ""))
        elif tag == "style":
            self._in_style = True
        if tag not in {"img", "meta", "br", "link"}:
            self._open.append((tag, attributes))

    def handle_endtag(self, tag: str) -> None:
        if tag in {"td", "th"} and self._cell is not None:
            self.page.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        if tag == "style":
            self._in_style = False
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._in_style:
            self.page.style += data


def parse(text: str) -> Page:
    parser = _Parser()
    parser.feed(text)
    parser.close()
    return parser.page


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("html") / "out"
    args = ["--quiet", "--results", str(RESULTS), "--conformance", str(CONFORMANCE)]
    assert main([*args, "--out", str(folder)]) == EXIT_OK
    return folder


@pytest.fixture(scope="module")
def page(out: Path) -> Page:
    return parse((out / "report.html").read_text(encoding="utf-8"))


def test_nothing_is_loaded_or_linked_from_elsewhere(page):
    external = [
        (tag, name, value)
        for tag, attributes in page.tags
        for name, value in attributes.items()
        if name in URL_ATTRIBUTES and not (value.startswith("#") or value.startswith("data:"))
    ]
    assert external == []
    assert "script" not in {tag for tag, _ in page.tags}  # no scripts at all
    assert "link" not in {tag for tag, _ in page.tags}  # styles are inline
    assert page.style and not re.search(r"url\(|@import", page.style)


def test_every_plot_is_embedded_as_a_png(page, out):
    images = [attributes for tag, attributes in page.tags if tag == "img"]
    drawn = sorted(p.name for p in out.glob("*.png"))
    assert len(images) == len(drawn) == 4  # bandwidth.png has no data on this CPU run
    for image in images:
        prefix = "data:image/png;base64,"
        assert image["src"].startswith(prefix)
        assert base64.b64decode(image["src"][len(prefix) :]).startswith(PNG_MAGIC)
        assert image["alt"]


def test_every_section_is_there_with_the_verdict_first(page):
    sections = [i for i in page.ids if i != "header"]
    assert [s for s in sections if s in REQUIRED_SECTIONS] == list(REQUIRED_SECTIONS)
    assert sections[0] == "verdict"
    assert page.ids[0] == "header"  # machine, commit, environment above everything


def test_every_table_scrolls_and_numbers_are_right_aligned(page):
    assert page.tables_outside_scroll == 0
    assert "@media print" in page.style and ".table-scroll { overflow: visible; }" in page.style
    header, classes = page.tables[0], page.cell_classes[0]
    assert header[0][:3] == ["machine", "commit", "environment"]
    assert header[1][0] == "vm"
    counts = header[0].index("ok / skipped / failed")
    assert "num" in classes[1][counts].split() and "num" not in classes[1][0].split()


def test_failures_stand_out_in_colour_and_words(out):
    text = (out / "report.html").read_text(encoding="utf-8")
    # Conformance has failures; the targets of these results pass (a too-close one's
    # colour: test_reports_tolists_targets).
    assert text.count('<li class="fail">') == 1
    assert '<strong class="badge fail">FAIL</strong> <strong>Conformance' in text
    assert '<li class="pass"><strong class="badge pass">PASS</strong>' in text
    assert "td.bad" in text and "--fail:" in text


def _markdown_rows(markdown: str) -> list[list[str]]:
    """Every table row of a Markdown text, as cell texts without marks."""
    rows = []
    for line in markdown.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            cells = re.split(r"(?<!\\) \| ", line[2:-2])
            rows.append([_plain(c.replace("\\|", "|")) for c in cells])
    return rows


def _plain(cell: str) -> str:
    return cell.replace("`", "").replace("**", "").strip()


def _without_grids(markdown: str) -> str:
    """The Markdown without the conformance matrix (a :class:`Grid`, whose header is one
    row there and one row per level in HTML: ``test_the_matrix_...`` compares it)."""
    lines = markdown.splitlines()
    kept, in_grid = [], False
    for line in lines:
        if line.startswith("| backend | version |"):
            in_grid = True
        elif not line.startswith("|"):
            in_grid = False
        if not in_grid:
            kept.append(line)
    return "\n".join(kept)


def test_markdown_and_html_show_the_same_rows(out, page):
    markdown = _markdown_rows(_without_grids((out / "summary.md").read_text(encoding="utf-8")))
    html_rows = [
        row
        for table, classes in zip(page.tables, page.table_classes, strict=True)
        if "grid" not in classes.split()
        for row in table
    ]
    assert markdown == html_rows
    # And the rows are the right ones: every failing check of the JSON report, in both.
    data = json.loads(CONFORMANCE.read_text(encoding="utf-8"))
    failing = {t["check"] for t in data["tests"] if t["outcome"] in ("failed", "error")}
    assert len(failing) == 3
    in_html = {row[3] for row in html_rows if row[0] in ("failed", "error")}
    in_markdown = {row[3] for row in markdown if row[0] in ("failed", "error")}
    assert in_html == in_markdown == failing


def test_skip_causes_are_shown_in_both(out, page):
    markdown = (out / "summary.md").read_text(encoding="utf-8")
    causes = next(t for t in page.tables if t[0][0] == "skip cause")
    assert [row[0] for row in causes[1:]] == [
        "device-not-declared",
        "device-not-present",
        "producer-not-declared",
    ]
    assert [row[-1] for row in causes[1:]] == ["43", "86", "1"]
    for row in causes[1:]:
        assert f"| `{row[0]}` | {row[1]} |" in markdown


def test_html_escapes_what_it_shows():
    message = 'assert "<b>" & </table> | x'
    report = Report(
        "t <1>",
        [
            Section("verdict", "Verdict", [Paragraph("`a<b` and **FAIL**")]),
            Section("conformance", "C", [Table.of(("message",), [(message,)])]),
            Section("plots", "Plots", [Plot("latency.png", "latency", None)]),
        ],
    )
    text = render_html.render(report)
    page = parse(text)
    assert page.tables == [[["message"], [message]]]
    assert "<title>t &lt;1&gt;</title>" in text
    assert "<code>a&lt;b</code>" in text and '<strong class="badge fail">FAIL</strong>' in text
    assert "<code>latency.png</code>: no data" in text  # a plot without data says so


def test_a_report_without_conformance_or_plots_still_renders(tmp_path):
    out = tmp_path / "out"
    assert main(["--quiet", "--results", str(RESULTS), "--out", str(out)]) == EXIT_OK
    page = parse((out / "report.html").read_text(encoding="utf-8"))
    assert "conformance" in page.ids
    assert "No conformance report given" in (out / "report.html").read_text(encoding="utf-8")


def test_every_section_of_the_content_is_rendered(out):
    # The renderers must not drop a section the content module adds later.
    frame = load_results(RESULTS, None)
    report = content.build(content.ReportInput(frame=frame, current=frame, results_dir="r"))
    page = parse(render_html.render(report))
    assert [s.key for s in report.sections] == page.ids


def _conformance_markdown(data: dict, tmp_path: Path) -> str:
    from reports import load_conformance, render_markdown

    path = tmp_path / "report.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    frame = load_results(RESULTS, None)
    report = content.build(
        content.ReportInput(
            frame=frame, current=frame, results_dir="r", conformance=load_conformance(path)
        )
    )
    return render_markdown.render_section(report.section("conformance"))


def test_newer_skip_causes_and_behaviours_are_shown(tmp_path):
    data = json.loads(CONFORMANCE.read_text(encoding="utf-8"))
    data["spec_revision_source"] = "--revision"
    for test in data["tests"]:
        if test["outcome"] == "failed":
            test["behaviour"] = "slice-with-cu"
    data["tests"][0].update(
        outcome="skipped", skip_cause="not-run", message="the run stopped before this check"
    )
    text = _conformance_markdown(data, tmp_path)
    assert "spec 2025.10 (chosen by --revision)" in text
    assert "| outcome | spec type | device | check | behaviour | message |" in text
    assert "| slice-with-cu |" in text
    assert (
        "| `not-run` | the run stopped before this check (a crash, a time limit, Ctrl-C) |" in text
    )


def test_an_older_report_without_skip_causes_still_renders(tmp_path):
    data = json.loads(CONFORMANCE.read_text(encoding="utf-8"))
    del data["backend"]["devices_declared"]
    for test in data["tests"]:
        del test["skip_cause"]
    text = _conformance_markdown(data, tmp_path)
    assert "| - | not recorded (an older report) | cpu, cuda, mps, xpu |" in text
    assert "devices declared" not in text and "behaviour" not in text
