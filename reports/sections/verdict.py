"""The verdict list that opens the report: each target, conformance, changes, failures."""

from __future__ import annotations

from typing import Any

import pandas as pd

from reports import catalog, deviations, releases, row_kinds, targets
from reports.document import (
    FAIL,
    NO_DATA,
    PASS,
    UNDECIDED,
    Section,
    Verdict,
    Verdicts,
)
from reports.sections.formatting import fmt_interval, fmt_ratio, fmt_us
from reports.sections.inputs import ReportInput


def target_verdicts(current: pd.DataFrame) -> list[tuple[catalog.RatioTarget, pd.DataFrame]]:
    return [(t, targets.verdicts(targets.measurements(current, t), t)) for t in catalog.TARGETS]


def verdict_section(data: ReportInput) -> Section:
    if data.frame.empty and data.conformance is not None:
        # Conformance runs alone: no benchmark verdict, not even "no data".
        return Section("verdict", "Verdict", [Verdicts(tuple(_conformance_items(data)))])
    items = []
    for target, verdict in target_verdicts(data.current):
        if verdict.empty:
            items.append(Verdict(target.title, NO_DATA, _why_no_data(data.current, target)))
            continue
        named = verdict["backend"].nunique() > 1
        where = "; ".join(
            f"{_where_measured(r, named)}: {r.failing}/{r.shapes} shapes "
            f"{'over the limit' if r.status == targets.UNDECIDED else 'miss it'}, worst "
            f"{fmt_ratio(r.worst_ratio)}{_interval_note(r)} at {r.worst_shape}"
            f"{_shape_notes(r, target)}"
            if r.failing
            else f"{_where_measured(r, named)}: all {r.shapes} shapes, worst "
            f"{fmt_ratio(r.worst_ratio)}{_interval_note(r)}{_shape_notes(r, target)}"
            for r in verdict.itertuples()
        )
        where += _overhead_note(data.current, target)
        items.append(Verdict(target.title, _status_word(verdict["status"]), where))
    gbps = row_kinds.gbps(data.current)
    links = gbps[gbps["device"] != "cpu"]
    if links.empty:
        limit, name = catalog.link_limit(data.current)
        items.append(
            Verdict(
                f"Device-to-host GB/s against the {name} limit ({limit:.0f} GB/s)",
                NO_DATA,
                "no accelerator measured",
            )
        )
    else:
        best = links.loc[links["value"].idxmax()]
        limit, name = catalog.link_limit(data.current, best["machine"])
        items.append(
            Verdict(
                "Best device-to-host transfer",
                "",
                f"{best['value']:.1f} GB/s on {best['device']}@{best['machine']} "
                f"= {best['value'] / limit:.0%} of the {name} limit ({limit:.0f} GB/s) "
                f"(pinned copies reach {catalog.PINNED_D2H_GBPS[0]:.0f}-"
                f"{catalog.PINNED_D2H_GBPS[1]:.0f} GB/s on H100-class machines)",
            )
        )
    if data.comparison is not None:
        n = len(data.comparison.regressions)
        threshold = f"{data.comparison.threshold:.0%}"
        items.append(
            Verdict(
                f"Changes `{data.comparison.rev_a}` -> `{data.comparison.rev_b}`",
                FAIL if n else PASS,
                f"{n} regression(s) beyond {threshold}"
                if n
                else f"no regression beyond {threshold}",
            )
        )
    if releases.several_backends(data.current):
        measured = releases.release_rows(data.current)
        items.append(
            Verdict(
                "Release over release",
                "",
                f"{measured['benchmark'].nunique()} benchmark(s) timed on "
                f"{measured['backend'].nunique()} backends in one run; fastest release and "
                "largest regression per operation under 'Release over release'",
            )
        )
    failed = row_kinds.failed(data.current)
    if not failed.empty:
        items.append(
            Verdict(
                "Benchmarks",
                FAIL,
                f"{len(failed)} result(s) of {failed['benchmark'].nunique()} benchmark(s) "
                "failed (listed under 'Skipped and failed')",
            )
        )
    edited = int(data.current["version_mismatch"].sum())
    if edited:
        items.append(
            Verdict(
                "Warning",
                "",
                f"{edited} row(s) come from benchmarks edited since they ran "
                "(`version_mismatch` in results.csv); re-run them before trusting the numbers.",
            )
        )
    # The first screen: conformance (the session's gate), then what failed, what is too
    # close to call, what passed; what has no data last.
    items.sort(key=lambda item: _SHOWN_FIRST.get(item.status, len(_SHOWN_FIRST)))
    return Section("verdict", "Verdict", [Verdicts((*_conformance_items(data), *items))])


#: The order of the verdicts after conformance's, by status ("" : a fact, no target).
_SHOWN_FIRST = {FAIL: 0, UNDECIDED: 1, PASS: 2, "": 3, NO_DATA: 4}


def conformance_verdicts(data: ReportInput) -> list[Verdict]:
    """One verdict per backend: PASS or FAIL, its known deviations (how many, how many
    nobody explained yet), then its counts."""
    if data.conformance is None:
        return []
    items = []
    for backend, group in data.conformance.groupby("backend", sort=True, dropna=False):
        tally = row_kinds.conformance_tally(group)
        known = deviations.headline(deviations.deviations(group))
        items.append(
            Verdict(
                f"Conformance of backend `{backend}`",
                FAIL if tally["bad"] else PASS,
                (f"{known}; " if known else "")
                + f"{tally['passed']} passed, "
                + (f"{tally['xfailed']} xfailed, " if tally["xfailed"] else "")
                + f"{tally['bad']} failed or errored, {tally['skipped']} skipped",
            )
        )
    return items


def _conformance_items(data: ReportInput) -> list[Verdict]:
    """The conformance verdicts, and what changed between two runs."""
    items = conformance_verdicts(data)
    if data.conformance_changes is not None:
        changes = data.conformance_changes
        fresh = len(changes.newly_failing)
        items.append(
            Verdict(
                f"Conformance changes `{changes.base}` -> `{changes.new}`",
                FAIL if fresh else PASS,
                f"{fresh} behaviour(s) newly failing (under 'Conformance changes')"
                if fresh
                else "nothing newly failing",
            )
        )
    return items


def _where_measured(row: Any, with_backend: bool) -> str:
    return f"{row.device}@{row.machine}" + (f" ({row.backend})" if with_backend else "")


def _interval_note(verdict: Any) -> str:
    """' (99% CI 0.98-1.02)' where the ratio was measured with its spread; where it is
    two medians timed apart, that it has none."""
    if verdict.timed_apart:
        return f" ({TIMED_APART})"
    text = fmt_interval(verdict.worst_ci)
    return f" (99% CI {text})" if text else ""


#: What a ratio of two medians timed apart is (:func:`reports.targets._timed_apart`).
TIMED_APART = "two medians timed apart, not side by side: no interval"


#: What a shape's note says of it, and why: a verdict one run cannot decide, and
#: one the memory floor decides.
_TOO_CLOSE = (
    "too close to call",
    f"within {targets.PROCESS_SPREAD:.0%} of the limit, or its 99% CI holds it: another "
    "run could turn the verdict",
)
_AT_FLOOR = "decided at the memory floor"


def _shape_notes(verdict: Any, target: catalog.RatioTarget) -> str:
    """The shapes one run cannot decide, and those the memory floor decided."""
    at_floor = (
        f"close to the limit, but ours runs within {targets.PROCESS_SPREAD:.0%} of "
        f"{target.floor_meaning}"
    )
    return _shapes_note(verdict.too_close_shapes, *_TOO_CLOSE) + _shapes_note(
        verdict.at_floor_shapes, _AT_FLOOR, at_floor
    )


def _shapes_note(shapes: list[str], what: str, why: str) -> str:
    """'; 2 shape(s) WHAT, A and B (WHY)', or nothing without shapes."""
    return f"; {len(shapes)} shape(s) {what}, {' and '.join(shapes)} ({why})" if shapes else ""


def _status_word(statuses: pd.Series) -> str:
    """The target's word over every machine and device: any clear FAIL fails it."""
    if (statuses == targets.FAILED).any():
        return FAIL
    return PASS if (statuses == targets.PASSED).all() else UNDECIDED


def _overhead_note(current: pd.DataFrame, target: catalog.RatioTarget) -> str:
    """'; per-call overhead 0.5 to 2.1 µs' beside a ratio, where the target measures it."""
    ranges = targets.overhead_us(current, target)
    if ranges.empty:
        return ""
    low, high = ranges["low_us"].min(), ranges["high_us"].max()
    span = fmt_us(low) if low == high else f"{fmt_us(low)} to {fmt_us(high)}"
    return f"; per-call overhead over the baseline {span}"


def _why_no_data(current: pd.DataFrame, target: catalog.RatioTarget) -> str:
    family = target.family.rows(current)
    if family.empty:
        return f"no benchmark matching `{target.family.pattern.pattern}` has results"
    if row_kinds.measured(family).empty:
        if not row_kinds.failed(family).empty:
            return "its benchmarks failed"
        return (
            "its benchmarks were skipped everywhere: the backend provides no such "
            "operation, the device is absent, or the vLLM texts they measure against are "
            "not here (python -m conformance.cli.fetch_releases --all fetches them)"
        )
    return "no paired timings found"
