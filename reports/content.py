"""What the report says: verdicts first, details after, built once as data.

Order follows what a reader asks: did the targets pass, does the backend
conform, how close are transfers to the link, what does each benchmark cost.  A
report of conformance runs alone (no benchmark results) is about conformance only:
its verdict first, and no benchmark section.
:func:`build` decides every section, row and verdict; ``summary.md`` and
``report.html`` are two renderings of its result (:mod:`reports.render_markdown`,
:mod:`reports.render_html`), so they cannot disagree.
"""

from __future__ import annotations

from reports.document import Report
from reports.sections.changes import comparison_section
from reports.sections.conformance_changes import conformance_changes_section
from reports.sections.conformance_view import conformance_section
from reports.sections.header import conformance_header_section, header_section
from reports.sections.inputs import ReportInput
from reports.sections.machines_view import machines_section
from reports.sections.measurements import latency_section, memory_section, plots_section
from reports.sections.problems import notes_section, problems_section
from reports.sections.release_view import release_section
from reports.sections.target_tables import targets_section
from reports.sections.throughput import bandwidth_section, ns_per_element_section
from reports.sections.verdict import verdict_section
from reports.sections.vllm_changes_view import vllm_changes_section

__all__ = ["TITLE", "Report", "ReportInput", "build"]

TITLE = "Benchmark report: vLLM model-runner output types"
#: The title of a report of conformance runs alone (a backend's CI runs no benchmarks).
CONFORMANCE_TITLE = "Conformance report: vLLM model-runner output types"


def build(data: ReportInput) -> Report:
    if data.frame.empty and data.conformance is not None:
        return _conformance_only(data)
    sections = [
        header_section(data),
        verdict_section(data),
        targets_section(data.current),
        release_section(data.current),
        bandwidth_section(data.current),
        ns_per_element_section(data.current),
        machines_section(data.current),
        conformance_section(data.conformance, data.conformance_duplicates),
        conformance_changes_section(data.conformance_changes)
        if data.conformance_changes is not None
        else None,
        vllm_changes_section(data.vllm_changes),
        comparison_section(data.comparison) if data.comparison is not None else None,
        plots_section(data.plots),
        latency_section(data.current),
        memory_section(data.current),
        problems_section(data.current),
        notes_section(),
    ]
    return Report(TITLE, [s for s in sections if s is not None])


def _conformance_only(data: ReportInput) -> Report:
    """No benchmark results: the conformance verdict leads, and nothing of the
    benchmarks is shown (no machine table, no verdict without data)."""
    conformance_plots = [p for p in data.plots if p[0].startswith("conformance")]
    sections = [
        conformance_header_section(data),
        verdict_section(data),
        conformance_section(data.conformance, data.conformance_duplicates),
        conformance_changes_section(data.conformance_changes)
        if data.conformance_changes is not None
        else None,
        vllm_changes_section(data.vllm_changes),
        plots_section(conformance_plots),
    ]
    return Report(CONFORMANCE_TITLE, [s for s in sections if s is not None])
