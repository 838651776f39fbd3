"""What the report says: verdicts first, details after, built once as data.

Order follows what a reader asks: did the targets pass, does the backend
conform, how close are transfers to the link, what does each benchmark cost.
:func:`build` decides every section, row and verdict; ``summary.md`` and
``report.html`` are two renderings of its result (:mod:`reports.render_markdown`,
:mod:`reports.render_html`), so they cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from reports import catalog, releases, row_kinds, targets
from reports.asv_loader import STATUS_FAILED, STATUS_SKIPPED
from reports.compare import IMPROVED, NOISE, NOT_COMPARABLE, REGRESSED, UNCHANGED, Comparison
from reports.conformance_loader import BAD_OUTCOMES, OUTCOMES, SKIP_CAUSES
from reports.document import (
    FAIL,
    NO_DATA,
    PASS,
    Block,
    Bullets,
    Heading,
    Paragraph,
    Plot,
    Report,
    Section,
    Table,
    Verdict,
    Verdicts,
)
from reports.units import format_bytes, format_seconds, format_value

TITLE = "Benchmark report: vLLM model-runner output types"

#: Parameters that are the same on every row of a run and only clutter tables.
_CONTEXT_PARAMS = {"backend", "device"}
#: Failing conformance checks listed per backend; the rest are in the JSON report.
FAILING_CHECKS_SHOWN = 20


@dataclass
class ReportInput:
    frame: pd.DataFrame  # every loaded row
    current: pd.DataFrame  # the rows the report describes (one commit per machine)
    results_dir: str
    conformance: pd.DataFrame | None = None
    plots: Sequence[tuple[str, str, Path | None]] = ()
    comparison: Comparison | None = None
    machines: dict[str, dict[str, Any]] = field(default_factory=dict)


def build(data: ReportInput) -> Report:
    sections = [
        _header(data),
        _verdict(data),
        _targets_section(data.current),
        release_section(data.current),
        _bandwidth_section(data.current),
        _ns_per_element_section(data.current),
        _conformance_section(data.conformance),
        comparison_section(data.comparison) if data.comparison is not None else None,
        _plots_section(data.plots),
        _latency_section(data.current),
        _memory_section(data.current),
        _problems_section(data.current),
        _notes(),
    ]
    return Report(TITLE, [s for s in sections if s is not None])


# --- header and verdict -------------------------------------------------------------


def _header(data: ReportInput) -> Section:
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
                f"`{group['env'].iloc[0]}`",
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
    return Section("header", "", [Paragraph(intro), table])


def _target_verdicts(current: pd.DataFrame) -> list[tuple[catalog.RatioTarget, pd.DataFrame]]:
    return [(t, targets.verdicts(targets.measurements(current, t), t)) for t in catalog.TARGETS]


def _verdict(data: ReportInput) -> Section:
    items = []
    for target, verdict in _target_verdicts(data.current):
        if verdict.empty:
            items.append(Verdict(target.title, NO_DATA, _why_no_data(data.current, target)))
            continue
        named = verdict["backend"].nunique() > 1
        where = "; ".join(
            f"{_where_measured(r, named)}: {r.failing}/{r.shapes} shapes miss it, worst "
            f"{_fmt_ratio(r.worst_ratio)}{_interval_note(r.worst_ci)} at {r.worst_shape}"
            f"{_too_close_note(r.too_close)}"
            if r.failing
            else f"{_where_measured(r, named)}: all {r.shapes} shapes, worst "
            f"{_fmt_ratio(r.worst_ratio)}{_interval_note(r.worst_ci)}"
            f"{_too_close_note(r.too_close)}"
            for r in verdict.itertuples()
        )
        where += _overhead_note(data.current, target)
        items.append(Verdict(target.title, PASS if verdict["passed"].all() else FAIL, where))
    gbps = row_kinds.gbps(data.current)
    links = gbps[gbps["device"] != "cpu"]
    if links.empty:
        items.append(
            Verdict(
                f"Device-to-host GB/s against the {catalog.LINK_NAME} limit "
                f"({catalog.LINK_LIMIT_GBPS:.0f} GB/s)",
                NO_DATA,
                "no accelerator measured",
            )
        )
    else:
        best = links.loc[links["value"].idxmax()]
        items.append(
            Verdict(
                "Best device-to-host transfer",
                "",
                f"{best['value']:.1f} GB/s on {best['device']}@{best['machine']} "
                f"= {best['value'] / catalog.LINK_LIMIT_GBPS:.0%} of the {catalog.LINK_NAME} limit "
                f"(pinned copies reach {catalog.PINNED_D2H_GBPS[0]:.0f}-"
                f"{catalog.PINNED_D2H_GBPS[1]:.0f} GB/s on H100-class machines)",
            )
        )
    if data.conformance is not None:
        for backend, group in data.conformance.groupby("backend", sort=True, dropna=False):
            tally = row_kinds.conformance_tally(group)
            items.append(
                Verdict(
                    f"Conformance of backend `{backend}`",
                    FAIL if tally["bad"] else PASS,
                    f"{tally['passed']} passed, {tally['bad']} failed or errored, "
                    f"{tally['skipped']} skipped",
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
    return Section("verdict", "Verdict", [Verdicts(tuple(items))])


def _where_measured(row: Any, with_backend: bool) -> str:
    return f"{row.device}@{row.machine}" + (f" ({row.backend})" if with_backend else "")


def _interval_note(interval: tuple[float, float]) -> str:
    """' (99% CI 0.98-1.02)' where the ratio was measured with its spread."""
    text = _fmt_interval(interval)
    return f" (99% CI {text})" if text else ""


def _fmt_interval(interval: tuple[float, float]) -> str:
    low, high = interval
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"{low:.2f}-{high:.2f}"


def _too_close_note(count: int) -> str:
    if not count:
        return ""
    return (
        f"; {count} shape(s) too close to call (the ratio's 99% CI holds the limit: "
        "rerun on a quiet machine)"
    )


def _overhead_note(current: pd.DataFrame, target: catalog.RatioTarget) -> str:
    """'; per-call overhead 0.5 to 2.1 µs' beside a ratio, where the target measures it."""
    ranges = targets.overhead_us(current, target)
    if ranges.empty:
        return ""
    low, high = ranges["low_us"].min(), ranges["high_us"].max()
    span = _fmt_us(low) if low == high else f"{_fmt_us(low)} to {_fmt_us(high)}"
    return f"; per-call overhead over the baseline {span}"


def _fmt_us(value: float) -> str:
    """Microseconds to three significant digits, never in exponent form (a negative
    overhead is a call cheaper than the baseline's, and is said so)."""
    if not math.isfinite(value):
        return "n/a"
    magnitude = abs(value)
    decimals = max(0, 2 - math.floor(math.log10(magnitude))) if magnitude else 0
    number = f"{value:.{decimals}f}"
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    text = f"{number} µs"
    return f"{text} (cheaper than the baseline)" if value < 0 else text


def _why_no_data(current: pd.DataFrame, target: catalog.RatioTarget) -> str:
    family = target.family.rows(current)
    if family.empty:
        return f"no benchmark matching `{target.family.pattern.pattern}` has results"
    if row_kinds.measured(family).empty:
        if not row_kinds.failed(family).empty:
            return "its benchmarks failed"
        return (
            "its benchmarks were skipped everywhere, e.g. the backend provides no such "
            "operation or the device is absent"
        )
    return "no paired timings found"


def _fmt_ratio(value: float) -> str:
    return f"{value:.2f}x" if math.isfinite(value) else "n/a"


# --- targets, GB/s, ns per element ----------------------------------------------------


def _targets_section(current: pd.DataFrame) -> Section:
    blocks: list[Block] = []
    for target, verdict in _target_verdicts(current):
        blocks.append(
            Paragraph(
                f"**{target.title}.** Ratio: {target.ratio_label}; needed "
                f"{'>=' if target.higher_is_better else '<='} {target.limit:g}."
            )
        )
        if verdict.empty:
            blocks.append(
                Paragraph(
                    f"{NO_DATA}: no benchmark matching `{target.family.pattern.pattern}` with a "
                    f"baseline matching `{target.baseline.pattern}` was timed on a shared shape."
                )
            )
            continue
        named = verdict["backend"].nunique() > 1
        overheads = {
            (o.machine, o.device, o.backend): f"{_fmt_us(o.low_us)} to {_fmt_us(o.high_us)}"
            for o in targets.overhead_us(current, target).itertuples()
        }
        blocks.append(
            Table.of(
                (
                    "machine",
                    "device",
                    *(["backend"] if named else []),
                    "shapes",
                    "missing the target",
                    "worst ratio",
                    "its 99% CI",
                    "at shape",
                    *(["per-call overhead (µs)"] if overheads else []),
                    "result",
                    "measured by",
                ),
                [
                    (
                        r.machine,
                        r.device,
                        *([r.backend] if named else []),
                        r.shapes,
                        r.failing,
                        _fmt_ratio(r.worst_ratio),
                        _fmt_interval(r.worst_ci) or "-",
                        r.worst_shape,
                        *(
                            [overheads.get((r.machine, r.device, r.backend), "-")]
                            if overheads
                            else []
                        ),
                        PASS if r.passed else FAIL,
                        f"`{r.measured_by}`",
                    )
                    for r in verdict.itertuples()
                ],
                flagged=[not r.passed for r in verdict.itertuples()],
            )
        )
        if target.from_size is not None:
            param, smallest = target.from_size
            blocks.append(
                Paragraph(
                    f"Judged from {param} = {smallest} up: below it a fixed cost per call "
                    "dominates, which the per-call overhead column shows."
                )
            )
        missing = _missing_shapes(current, target)
        if missing:
            blocks.append(Paragraph(missing))
    return Section("targets", "Targets", blocks)


def _missing_shapes(current: pd.DataFrame, target: catalog.RatioTarget, limit: int = 12) -> str:
    """Every shape that misses the target, worst first: what to work on."""
    measured = targets.measurements(current, target)
    missing = measured[~measured["passed"].astype(bool)]
    if missing.empty:
        return ""
    missing = missing.sort_values("ratio", ascending=target.higher_is_better)
    items = [
        f"{r['shape']} on {r['device']}@{r['machine']}: {_fmt_ratio(r['ratio'])}"
        for r in missing.head(limit).to_dict("records")
    ]
    more = f"; and {len(missing) - limit} more" if len(missing) > limit else ""
    return "Shapes missing it, worst first: " + "; ".join(items) + more + "."


def release_section(current: pd.DataFrame) -> Section | None:
    """Every backend of one run side by side, in release order (None for one backend)."""
    if not releases.several_backends(current):
        return None
    rows = releases.release_rows(current)
    side = releases.side_by_side(current)
    many = rows["machine"].nunique() > 1 or rows["device"].nunique() > 1
    section = Section(
        "releases",
        "Release over release",
        [
            Paragraph(
                "Each operation timed on every backend of the run, each called its own "
                "revision's way. Per benchmark: the median at a few representative shapes "
                "and, in brackets, its ratio to the 2025.10 reference (`reference`; above "
                "1 is slower). Medians are timed one backend after another, so on a shared "
                "machine they also measure when each ran. The last column and the "
                "sentences come from timing each backend interleaved with the same partner "
                "backend in one process (`SideBySide.track_ratio_to_partner`): each "
                "release's time over the previous release's, side by side, where the run "
                "has them; otherwise the sentences compare medians at the middle shape. "
                "Even side by side, two releases with identical code for an operation can "
                "differ by the machine's noise (on a shared 2-core VM steps of 0.83x to "
                "1.24x were measured between identical texts), so read a step as a finding "
                "only well beyond that. "
                "Plots: `release_latency.png` (medians), `release_side_by_side.png` "
                "(side by side)."
            ),
            Bullets(tuple(_headline_sentence(h, many) for h in releases.headlines(rows, side))),
        ],
    )
    for (machine, device, benchmark), group in rows.groupby(
        ["machine", "device", "benchmark"], sort=True
    ):
        shapes = list(dict.fromkeys(group["shape"]))
        cells = {(r.backend, r.shape): r for r in group.itertuples()}
        ratios = releases.operation_ratios(side, machine, device, str(benchmark))
        steps = releases.release_steps(ratios) if not ratios.empty else {}
        step_header = (
            (f"step from the previous release, side by side ({ratios['shape'].iloc[0]})",)
            if steps
            else ()
        )
        body = [
            (
                backend,
                *(
                    _release_cell(cells[(backend, shape)]) if (backend, shape) in cells else "-"
                    for shape in shapes
                ),
                *((f"{steps[backend]:.2f}x" if backend in steps else "-",) if steps else ()),
            )
            for backend in releases.in_release_order(group["backend"])
        ]
        where = f" on {device}@{machine}" if many else ""
        section.blocks.append(Heading(f"`{_short(str(benchmark))}`{where}"))
        section.blocks.append(Table.of(("backend", *shapes, *step_header), body))
    return section


def _headline_sentence(headline: releases.Headline, many: bool) -> str:
    where = f" on {headline.device}@{headline.machine}" if many else ""
    how = ", side by side" if headline.side_by_side else ", medians"
    text = (
        f"`{_short(headline.benchmark)}` ({headline.shape}{where}{how}): fastest release "
        f"{releases.release_of(headline.fastest)}"
    )
    if headline.fastest_value is not None:
        text += f" ({format_seconds(headline.fastest_value)})"
    if headline.slowest is not None and headline.slowest[1] > 1.0:
        slowest, times = headline.slowest
        text += f", {times:.2f}x faster than the slowest, {releases.release_of(slowest)}"
    if headline.worst_step is None:
        return text + "; only one release measured."
    before, after, ratio = headline.worst_step
    if ratio <= 1.0:
        return text + f"; no release slower than the one before it ({headline.releases} releases)."
    return (
        text + f"; largest regression between consecutive releases "
        f"{releases.release_of(before)} -> {releases.release_of(after)}, {ratio:.2f}x slower."
    )


def _release_cell(row: Any) -> str:
    ratio = row.ratio_to_reference
    return format_seconds(row.value) + (f" ({ratio:.2f}x)" if math.isfinite(ratio) else "")


def _bandwidth_section(current: pd.DataFrame) -> Section:
    section = Section(
        "bandwidth",
        f"Transfer: achieved GB/s against the {catalog.LINK_NAME} limit "
        f"({catalog.LINK_LIMIT_GBPS:.0f} GB/s per direction)",
    )
    measured = row_kinds.gbps(catalog.with_payload_bytes(current))
    if measured.empty:
        in_gbps = current[row_kinds.is_gbps(current)]
        if not in_gbps.empty:
            devices = ", ".join(sorted(in_gbps["device"].unique()))
            text = (
                f"{NO_DATA}: the GB/s benchmarks were skipped on every device here "
                f"({devices}); they need an accelerator, the host has no device-to-host link."
            )
        else:
            text = f"{NO_DATA}: no benchmark reports GB/s."
        section.blocks.append(Paragraph(text))
        return section
    x = catalog.pick_param(measured, catalog.BYTES_PARAMS)
    body = []
    split = [
        c
        for c in targets.param_columns(measured)
        if c not in _CONTEXT_PARAMS
        and c != x
        and not (x == "payload_bytes" and c in {"num_tokens", "num_logprobs"})
        and measured[c].nunique() > 1
    ]
    for keys, group in measured.groupby(["machine", "device", "benchmark", *split], sort=True):
        best = group.loc[group["value"].idxmax()]
        machine, device, benchmark = keys[:3]
        variant = ", ".join(f"{k}={v}" for k, v in zip(split, keys[3:], strict=True))
        share = (
            "no link (host copy)"
            if device == "cpu"
            else f"{best['value'] / catalog.LINK_LIMIT_GBPS:.0%}"
        )
        body.append(
            (
                machine,
                device,
                f"`{_short(benchmark)}`" + (f" {variant}" if variant else ""),
                f"{best['value']:.2f}",
                format_bytes(float(best[x])) if x else _shape(best),
                share,
            )
        )
    section.blocks.append(
        Table.of(
            ("machine", "device", "benchmark", "peak GB/s", "at payload", "of link limit"), body
        )
    )
    return section


def _ns_per_element_section(current: pd.DataFrame) -> Section:
    section = Section("ns-per-element", "Cost per element (ns), e.g. tolists")
    measured = row_kinds.ns_per_element(current)
    if measured.empty:
        section.blocks.append(Paragraph(f"{NO_DATA}: no benchmark reports ns per element."))
        return section
    x = catalog.pick_param(measured, catalog.BATCH_PARAMS)
    body = []
    for (machine, device, benchmark), group in measured.groupby(
        ["machine", "device", "benchmark"], sort=True
    ):
        lo = group.loc[group["value"].idxmin()]
        hi = group.loc[group["value"].idxmax()]
        axis = _axis(group, x)
        body.append(
            (
                machine,
                device,
                f"`{_short(benchmark)}`",
                f"{group['value'].median():.1f}",
                f"{lo['value']:.1f} ({_at(lo, axis)})",
                f"{hi['value']:.1f} ({_at(hi, axis)})",
            )
        )
    section.blocks.append(
        Table.of(("machine", "device", "benchmark", "median ns/elem", "min (at)", "max (at)"), body)
    )
    return section


def _axis(group: pd.DataFrame, x: str | None) -> list[str]:
    """The parameters a min or max over ``group`` is taken over: those that vary
    in it, the size axis ``x`` first.  A parameter with one value in the group
    says nothing about where the extreme is."""
    varying = [
        c
        for c in targets.param_columns(group)
        if c not in _CONTEXT_PARAMS and group[c].nunique(dropna=True) > 1
    ]
    return sorted(varying, key=lambda c: c != x)


def _at(row: pd.Series, axis: Sequence[str]) -> str:
    """Where on ``axis`` a min or max is: ``num_tokens=64``."""
    return ", ".join(f"{p}={row[p]}" for p in axis) or "every shape"


def _shape(row: pd.Series | dict[str, Any]) -> str:
    """The parameters of a row that describe the problem, not the run (no backend, device)."""
    parts = [p.strip() for p in str(row["params"] or "").split(", ") if p]
    keep = [p for p in parts if p.split("=", 1)[0] not in _CONTEXT_PARAMS]
    return ", ".join(keep) or "-"


def _short(benchmark: str) -> str:
    return benchmark.split(".", 1)[1] if benchmark.count(".") >= 2 else benchmark


# --- conformance ---------------------------------------------------------------------


def _conformance_section(conformance: pd.DataFrame | None) -> Section:
    section = Section("conformance", "Conformance")
    if conformance is None:
        section.blocks.append(Paragraph("No conformance report given (`--conformance FILE`)."))
        return section
    for backend, group in conformance.groupby("backend", sort=True, dropna=False):
        section.blocks += _conformance_of_backend(str(backend), group)
    section.blocks.append(Paragraph("Per spec type and device: `conformance_matrix.png`."))
    return section


def _conformance_of_backend(backend: str, group: pd.DataFrame) -> list[Block]:
    first = group.iloc[0]
    tally = row_kinds.conformance_tally(group)
    source = _present(first.get("spec_revision_source"))
    declared = _present(first.get("devices_declared"))
    blocks: list[Block] = [
        Paragraph(
            f"Backend `{backend}` (module `{first['backend_module']}`, "
            f"version {first['backend_version'] or 'unknown'}), "
            f"spec {first['spec_revision']}"
            + (f" (chosen by {source})" if source else "")
            + f", suite {first['suite_version']}; "
            + (f"devices declared: {declared}; " if declared else "")
            + f"devices available: {first['devices_available'] or 'not recorded'}. Outcomes: "
            + ", ".join(f"{tally[o]} {o}" for o in OUTCOMES)
            + "."
        ),
        _conformance_grid(group),
    ]
    bad = group[group["outcome"].isin(BAD_OUTCOMES)]
    if not bad.empty:
        shown = bad.head(FAILING_CHECKS_SHOWN)
        with_behaviour = shown["behaviour"].notna().any()
        blocks.append(Heading(f"Failing checks of `{backend}`"))
        blocks.append(
            Table.of(
                (
                    "outcome",
                    "spec type",
                    "device",
                    "check",
                    *(["behaviour"] if with_behaviour else []),
                    "message",
                ),
                [
                    (
                        r.outcome,
                        r.spec_type,
                        r.device,
                        f"`{r.check}`",
                        *([_present(r.behaviour) or "-"] if with_behaviour else []),
                        _one_line(r.message),
                    )
                    for r in shown.itertuples()
                ],
                flagged=[True] * len(shown),
            )
        )
        if len(bad) > len(shown):
            blocks.append(
                Paragraph(f"... and {len(bad) - len(shown)} more in the conformance report.")
            )
    skipped = group[group["outcome"] == "skipped"]
    if not skipped.empty:
        blocks.append(Heading(f"Skipped checks of `{backend}`, by cause"))
        blocks.append(_skip_causes(skipped))
    return blocks


def _conformance_grid(group: pd.DataFrame) -> Table:
    """Spec type x device, the same cells the matrix plot colours."""
    devices = sorted(group["device"].unique())
    body, flagged = [], []
    for spec_type in sorted(group["spec_type"].unique()):
        cells = [row_kinds.conformance_cell(group, spec_type, d) for d in devices]
        failing = any(state == row_kinds.CELL_FAIL for state, _ in cells)
        body.append(
            (
                spec_type,
                *(
                    f"{FAIL} {text}" if state == row_kinds.CELL_FAIL else text
                    for state, text in cells
                ),
            )
        )
        flagged.append(failing)
    return Table.of(("spec type", *devices), body, flagged=flagged)


def _skip_causes(skipped: pd.DataFrame) -> Table:
    causes = skipped.assign(cause=skipped["skip_cause"].fillna(""))
    body = []
    for cause, group in causes.groupby("cause", sort=True):
        meaning = SKIP_CAUSES.get(cause, "") if cause else "not recorded (an older report)"
        body.append(
            (
                f"`{cause}`" if cause else "-",
                meaning or "(a cause this report does not know)",
                ", ".join(sorted(group["device"].unique())),
                ", ".join(sorted(group["spec_type"].unique())),
                len(group),
            )
        )
    return Table.of(("skip cause", "meaning", "devices", "spec types", "checks"), body)


def _present(value: Any) -> str:
    """A cell's text, or "" for a value the report did not have (None, NaN)."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _one_line(text: str, limit: int = 120) -> str:
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


# --- changes between revisions ------------------------------------------------------


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
            )
        ],
    )
    shown = table[table["change"].isin([REGRESSED, IMPROVED])]
    if shown.empty:
        section.blocks.append(Paragraph("No change beyond the threshold."))
        return section
    has_machine = "machine" in table.columns
    head = ["change", *(["machine"] if has_machine else []), "benchmark", "params", "A", "B", "B/A"]
    body = [
        (
            ("**REGRESSED**" if row.change == REGRESSED else row.change),
            *([row.machine] if has_machine else []),
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


# --- plots, latency, memory, problems, notes ------------------------------------------


def _plots_section(plots: Sequence[tuple[str, str, Path | None]]) -> Section | None:
    if not plots:
        return None
    return Section("plots", "Plots", [Plot(name, text, path) for name, text, path in plots])


def _latency_section(current: pd.DataFrame) -> Section:
    section = Section(
        "latency",
        "Median latency per benchmark and device",
        [
            Paragraph(
                "asv's median over its samples; interquartile range in brackets when asv kept one."
            )
        ],
    )
    timed = row_kinds.timings(current)
    if timed.empty:
        section.blocks.append(Paragraph(f"{NO_DATA}: no timing benchmark has results."))
        return section
    for benchmark, group in timed.groupby("benchmark", sort=True):
        params = [
            c
            for c in targets.param_columns(group)
            if c not in _CONTEXT_PARAMS and group[c].notna().any()
        ]
        # A device every combination skipped (absent here) is listed under
        # "Skipped and failed", not as a column of "skipped".
        ran = group[group["status"] != STATUS_SKIPPED]
        if ran.empty:
            continue
        columns = sorted(set(zip(ran["machine"], ran["device"], strict=True)))
        cells: dict[tuple[Any, ...], dict[tuple[str, str], str]] = {}
        failing: dict[tuple[Any, ...], bool] = {}
        for record in group.to_dict("records"):
            key = tuple(record[p] for p in params)
            cells.setdefault(key, {})[(record["machine"], record["device"])] = _latency_cell(record)
            failing[key] = failing.get(key, False) or record["status"] == STATUS_FAILED
        many_machines = group["machine"].nunique() > 1
        head = [*params, *(f"{d}@{m}" if many_machines else d for m, d in columns)]
        keys = sorted(cells, key=lambda k: tuple(_sort_key(v) for v in k))
        section.blocks.append(Heading(f"`{benchmark}`"))
        section.blocks.append(
            Table.of(
                head or ["value"],
                [(*key, *(cells[key].get(c, "-") for c in columns)) for key in keys],
                flagged=[failing[key] for key in keys],
            )
        )
    return section


def _latency_cell(record: dict[str, Any]) -> str:
    if record["status"] == STATUS_SKIPPED:
        return "skipped"
    if record["status"] == STATUS_FAILED:
        return "FAILED"
    text = format_seconds(record["value"])
    q25, q75 = record.get("q_25"), record.get("q_75")
    if q25 is not None and q75 is not None and not pd.isna(q25) and not pd.isna(q75) and q75 > q25:
        text += f" [{format_seconds(q25)} to {format_seconds(q75)}]"
    if record["version_mismatch"]:
        text += " (edited)"
    return text


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return (0, value)
    return (1, str(value))


def _memory_section(current: pd.DataFrame) -> Section | None:
    """asv's peakmem_ benchmarks: peak resident memory of the process, in bytes."""
    measured = row_kinds.peak_memory(current)
    if measured.empty:
        return None
    body = [
        (
            r["machine"],
            r["device"],
            f"`{_short(r['benchmark'])}`",
            _shape(r),
            format_bytes(r["value"]),
        )
        for r in measured.to_dict("records")
    ]
    return Section(
        "memory",
        "Peak memory",
        [
            Paragraph(
                "Peak resident memory of the benchmark process (asv `peakmem_`), which "
                "includes the interpreter and torch."
            ),
            Table.of(("machine", "device", "benchmark", "shape", "peak memory"), body),
        ],
    )


def _problems_section(current: pd.DataFrame) -> Section:
    failed = row_kinds.failed(current)
    skipped = row_kinds.skipped(current)
    section = Section("problems", "Skipped and failed")
    if not skipped.empty:
        by_device = skipped.groupby(["machine", "device"]).size()
        section.blocks.append(
            Paragraph(
                "Skipped (the benchmark raised NotImplementedError in setup: device absent, "
                "left out, or not supported by the backend): "
                + ", ".join(f"{n} on {d}@{m}" for (m, d), n in by_device.items())
                + "."
            )
        )
    else:
        section.blocks.append(Paragraph("Nothing skipped."))
    if failed.empty:
        section.blocks.append(Paragraph("Nothing failed."))
        return section
    section.blocks.append(
        Paragraph(
            f"{len(failed)} result(s) FAILED (asv stored no value; its output of that run "
            "says why, e.g. `asv run --show-stderr`):"
        )
    )
    section.blocks.append(
        Bullets(
            tuple(
                f"`{benchmark}` on {machine}: {len(group)} parameter combination(s), "
                f"device(s) {', '.join(sorted(group['device'].unique()))}"
                for (machine, benchmark), group in failed.groupby(
                    ["machine", "benchmark"], sort=True
                )
            )
        )
    )
    return section


def _notes() -> Section:
    return Section(
        "notes",
        "How these numbers were measured",
        [
            Paragraph(
                "Values are asv's medians (`value` in `results.csv`, with asv's 99% confidence "
                "interval, quartiles and repeat count beside it). Absolute times mean something "
                "only on the machine that measured them; on a CPU-only machine trust the ratios, "
                "which compare two ways measured side by side in one run. GB/s is payload bytes "
                f"over the device-to-host time; the {catalog.LINK_NAME} limit is "
                f"{catalog.LINK_LIMIT_GBPS:.0f} GB/s per direction and payloads under "
                f"~{format_bytes(catalog.LATENCY_BOUND_BYTES)} are latency-bound."
            )
        ],
    )
