"""The report's header says which path the reference's hot loops took when measured."""

from __future__ import annotations

import shutil
from pathlib import Path

from reports import content, render_markdown
from reports.asv_loader import REFERENCE_PATHS_FILE, load_results
from reports.sections.header import header_section
from reports.sections.inputs import ReportInput

FIXTURE = Path(__file__).parent / "fixtures" / "project-asv" / "results"


def test_the_header_names_the_path_noted_for_the_commit(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    commit = load_results(results, None)["commit"].iloc[0]
    (results / REFERENCE_PATHS_FILE).write_text(
        f"0000000000\tpure Python\n{commit}\tC extension (built at install)\n", encoding="utf-8"
    )
    frame = load_results(results, None)
    assert frame.attrs["reference_paths"][commit] == "C extension (built at install)"
    current = frame[frame["commit"] == commit]
    data = ReportInput(
        frame=frame,
        current=current,
        results_dir="r",
        reference_paths=frame.attrs["reference_paths"],
    )
    text = render_markdown.render(content.Report("t", [header_section(data)]))
    assert f"on CPU as: `{commit[:10]}`: C extension (built at install)." in text
    assert "pure Python" not in text  # another commit's note


def test_without_a_note_the_header_says_nothing_of_it() -> None:
    frame = load_results(FIXTURE, None)
    assert frame.attrs["reference_paths"] == {}
    data = ReportInput(frame=frame, current=frame, results_dir="r")
    text = render_markdown.render(content.Report("t", [header_section(data)]))
    assert "hot loops" not in text
