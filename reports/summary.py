"""The one-minute Markdown summary: verdicts first, details after.

Order follows what a reader asks: did the targets pass, does the backend
conform, how close are transfers to the link, what does each benchmark cost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from reports import catalog, targets
from reports.asv_loader import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED
from reports.compare import Comparison
from reports.conformance_loader import BAD_OUTCOMES, OUTCOMES
from reports.units import TIME_UNITS, format_bytes, format_seconds

PASS = "**PASS**"
FAIL = "**FAIL**"
NO_DATA = "no data"

#: Parameters that are the same on every row of a run and only clutter tables.
_CONTEXT_PARAMS = {"backend", "device"}


@dataclass
class SummaryInput:
    frame: pd.DataFrame  # every loaded row
    current: pd.DataFrame  # the rows the summary describes (one commit per machine)
    results_dir: str
    conformance: pd.DataFrame | None = None
    plots: Sequence[tuple[str, str, Path | None]] = ()
    comparison: Comparison | None = None
    machines: dict[str, dict[str, Any]] = field(default_factory=dict)


def render(data: SummaryInput) -> str:
    parts = [
        _header(data),
        _verdict(data),
        _targets_section(data.current),
        _bandwidth_section(data.current),
        _ns_per_element_section(data.current),
        _conformance_section(data.conformance),
        data.comparison.to_markdown() if data.comparison is not None else "",
        _plots_section(data.plots),
        _latency_section(data.current),
        _memory_section(data.current),
        _problems_section(data.current),
        _notes(),
    ]
    return "\n".join(p.rstrip("\n") + "\n" for p in parts if p)


def _table(head: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _header(data: SummaryInput) -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    frame, current = data.frame, data.current
    lines = [
        "# Benchmark report: vLLM model-runner output types",
        "",
        f"Generated {now} from `{data.results_dir}`: {len(frame)} result rows, "
        f"{frame['machine'].nunique()} machine(s), {frame['commit'].nunique()} commit(s). "
        "This summary describes each machine's most recent commit"
        + (" (older ones are in `results.csv`)." if frame["commit"].nunique() > 1 else "."),
        "",
    ]
    rows = []
    for (machine, commit), group in current.groupby(["machine", "commit"], sort=True):
        info = data.machines.get(machine, {})
        host = ", ".join(str(info[k]) for k in ("cpu", "num_cpu", "os") if info.get(k)) or "-"
        counts = group["status"].value_counts()
        date = group["date"].iloc[0]
        rows.append(
            (
                machine,
                f"`{commit[:10]}`",
                f"`{group['env'].iloc[0]}`",
                date.strftime("%Y-%m-%d") if not pd.isna(date) else "-",
                ", ".join(sorted(group.loc[group["status"] == STATUS_OK, "device"].unique()))
                or "-",
                host,
                f"{counts.get(STATUS_OK, 0)} / {counts.get(STATUS_SKIPPED, 0)} / {counts.get(STATUS_FAILED, 0)}",
            )
        )
    lines.append(
        _table(
            (
                "machine",
                "commit",
                "environment",
                "commit date",
                "devices measured",
                "host",
                "ok / skipped / failed",
            ),
            rows,
        )
    )
    return "\n".join(lines)


def _target_verdicts(current: pd.DataFrame) -> list[tuple[catalog.RatioTarget, pd.DataFrame]]:
    return [(t, targets.verdicts(targets.measurements(current, t), t)) for t in catalog.TARGETS]


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
    return "Shapes missing it, worst first: " + "; ".join(items) + more + ".\n"


def _verdict(data: SummaryInput) -> str:
    lines = ["## Verdict", ""]
    for target, verdict in _target_verdicts(data.current):
        if verdict.empty:
            lines.append(f"- {target.title}: {NO_DATA} ({_why_no_data(data.current, target)})")
            continue
        ok = bool(verdict["passed"].all())
        where = "; ".join(
            f"{r.device}@{r.machine}: {r.failing}/{r.shapes} shapes miss it, worst "
            f"{_fmt_ratio(r.worst_ratio)} at {r.worst_shape}"
            if r.failing
            else f"{r.device}@{r.machine}: all {r.shapes} shapes, worst {_fmt_ratio(r.worst_ratio)}"
            for r in verdict.itertuples()
        )
        lines.append(f"- {target.title}: {PASS if ok else FAIL} ({where})")
    gbps = _bandwidth_rows(data.current)
    links = gbps[gbps["device"] != "cpu"] if not gbps.empty else gbps
    if links.empty:
        lines.append(
            f"- Device-to-host GB/s against the {catalog.LINK_NAME} limit "
            f"({catalog.LINK_LIMIT_GBPS:.0f} GB/s): {NO_DATA} (no accelerator measured)"
        )
    else:
        best = links.loc[links["value"].idxmax()]
        lines.append(
            f"- Best device-to-host transfer: {best['value']:.1f} GB/s on {best['device']}@{best['machine']} "
            f"= {best['value'] / catalog.LINK_LIMIT_GBPS:.0%} of the {catalog.LINK_NAME} limit "
            f"(pinned copies reach {catalog.PINNED_D2H_GBPS[0]:.0f}-{catalog.PINNED_D2H_GBPS[1]:.0f} GB/s on H100-class machines)"
        )
    if data.conformance is not None:
        for backend, rows in data.conformance.groupby("backend", sort=True, dropna=False):
            bad = rows["outcome"].isin(BAD_OUTCOMES).sum()
            lines.append(
                f"- Conformance of backend `{backend}`: {FAIL if bad else PASS} "
                f"({(rows['outcome'] == 'passed').sum()} passed, {bad} failed or errored, "
                f"{(rows['outcome'] == 'skipped').sum()} skipped)"
            )
    if data.comparison is not None:
        n = len(data.comparison.regressions)
        lines.append(
            f"- Changes `{data.comparison.rev_a}` -> `{data.comparison.rev_b}`: "
            + (
                f"{FAIL}, {n} regression(s) beyond {data.comparison.threshold:.0%}"
                if n
                else f"{PASS}, no regression beyond {data.comparison.threshold:.0%}"
            )
        )
    failed = data.current[data.current["status"] == STATUS_FAILED]
    if not failed.empty:
        lines.append(
            f"- Benchmarks: {FAIL}, {len(failed)} result(s) of {failed['benchmark'].nunique()} "
            "benchmark(s) failed (listed under 'Skipped and failed')"
        )
    edited = int(data.current["version_mismatch"].sum())
    if edited:
        lines.append(
            f"- Warning: {edited} row(s) come from benchmarks edited since they ran "
            "(`version_mismatch` in results.csv); re-run them before trusting the numbers."
        )
    return "\n".join(lines) + "\n"


def _why_no_data(current: pd.DataFrame, target: catalog.RatioTarget) -> str:
    rows = target.family.rows(current)
    if rows.empty:
        return f"no benchmark matching `{target.family.pattern.pattern}` has results"
    if not (rows["status"] == STATUS_OK).any():
        if (rows["status"] == STATUS_FAILED).any():
            return "its benchmarks failed"
        return (
            "its benchmarks were skipped everywhere, e.g. the backend provides no such "
            "operation or the device is absent"
        )
    return "no paired timings found"


def _fmt_ratio(value: float) -> str:
    return f"{value:.2f}x" if math.isfinite(value) else "n/a"


def _targets_section(current: pd.DataFrame) -> str:
    lines = ["## Targets", ""]
    for target, verdict in _target_verdicts(current):
        lines.append(
            f"**{target.title}.** Ratio: {target.ratio_label}; needed "
            f"{'>=' if target.higher_is_better else '<='} {target.limit:g}."
        )
        lines.append("")
        if verdict.empty:
            lines.append(
                f"{NO_DATA}: no benchmark matching `{target.family.pattern.pattern}` with a "
                f"baseline matching `{target.baseline.pattern}` was timed on a shared shape.\n"
            )
            continue
        lines.append(
            _table(
                (
                    "machine",
                    "device",
                    "shapes",
                    "missing the target",
                    "worst ratio",
                    "at shape",
                    "result",
                    "measured by",
                ),
                (
                    (
                        r.machine,
                        r.device,
                        r.shapes,
                        r.failing,
                        _fmt_ratio(r.worst_ratio),
                        r.worst_shape,
                        PASS if r.passed else FAIL,
                        f"`{r.measured_by}`",
                    )
                    for r in verdict.itertuples()
                ),
            )
        )
        missing = _missing_shapes(current, target)
        if missing:
            lines.append(missing)
    return "\n".join(lines)


def _bandwidth_rows(current: pd.DataFrame) -> pd.DataFrame:
    units = current["unit"].fillna("")
    return current[(current["status"] == STATUS_OK) & units.str.match(catalog.GBPS_UNIT)]


def _bandwidth_section(current: pd.DataFrame) -> str:
    rows = _bandwidth_rows(catalog.with_payload_bytes(current))
    head = f"## Transfer: achieved GB/s against the {catalog.LINK_NAME} limit ({catalog.LINK_LIMIT_GBPS:.0f} GB/s per direction)\n"
    if rows.empty:
        units = current["unit"].fillna("")
        if units.str.match(catalog.GBPS_UNIT).any():
            devices = ", ".join(
                sorted(current.loc[units.str.match(catalog.GBPS_UNIT), "device"].unique())
            )
            return head + (
                f"\n{NO_DATA}: the GB/s benchmarks were skipped on every device here "
                f"({devices}); they need an accelerator, the host has no device-to-host link.\n"
            )
        return head + f"\n{NO_DATA}: no benchmark reports GB/s.\n"
    x = catalog.pick_param(rows, catalog.BYTES_PARAMS)
    out = []
    group_by = ["machine", "device", "benchmark"]
    split = [
        c
        for c in targets.param_columns(rows)
        if c not in _CONTEXT_PARAMS
        and c != x
        and not (x == "payload_bytes" and c in {"num_tokens", "num_logprobs"})
        and rows[c].nunique() > 1
    ]
    for keys, group in rows.groupby(group_by + split, sort=True, dropna=False):
        best = group.loc[group["value"].idxmax()]
        machine, device, benchmark = keys[:3]
        variant = ", ".join(f"{k}={v}" for k, v in zip(split, keys[3:], strict=True))
        at = format_bytes(float(best[x])) if x else _shape(best)
        share = (
            "no link (host copy)"
            if device == "cpu"
            else f"{best['value'] / catalog.LINK_LIMIT_GBPS:.0%}"
        )
        out.append(
            (
                machine,
                device,
                f"`{_short(benchmark)}`" + (f" {variant}" if variant else ""),
                f"{best['value']:.2f}",
                at,
                share,
            )
        )
    return (
        head
        + "\n"
        + _table(
            ("machine", "device", "benchmark", "peak GB/s", "at payload", "of link limit"), out
        )
    )


def _ns_per_element_section(current: pd.DataFrame) -> str:
    units = current["unit"].fillna("")
    rows = current[
        (current["status"] == STATUS_OK) & units.str.contains(catalog.NS_PER_ELEMENT_UNIT)
    ]
    head = "## Cost per element (ns), e.g. tolists\n"
    if rows.empty:
        return head + f"\n{NO_DATA}: no benchmark reports ns per element.\n"
    x = catalog.pick_param(rows, catalog.BATCH_PARAMS)
    out = []
    for (machine, device, benchmark), group in rows.groupby(
        ["machine", "device", "benchmark"], sort=True
    ):
        lo = group.loc[group["value"].idxmin()]
        hi = group.loc[group["value"].idxmax()]
        axis = _axis(group, x)
        out.append(
            (
                machine,
                device,
                f"`{_short(benchmark)}`",
                f"{group['value'].median():.1f}",
                f"{lo['value']:.1f} ({_at(lo, axis)})",
                f"{hi['value']:.1f} ({_at(hi, axis)})",
            )
        )
    return (
        head
        + "\n"
        + _table(("machine", "device", "benchmark", "median ns/elem", "min (at)", "max (at)"), out)
    )


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


def _latency_section(current: pd.DataFrame) -> str:
    rows = current[current["unit"].isin(TIME_UNITS)]
    head = "## Median latency per benchmark and device\n\nasv's median over its samples; interquartile range in brackets when asv kept one.\n"
    if rows.empty:
        return head + f"\n{NO_DATA}: no timing benchmark has results.\n"
    blocks = [head]
    for benchmark, group in rows.groupby("benchmark", sort=True):
        params = [
            c
            for c in targets.param_columns(group)
            if c not in _CONTEXT_PARAMS and group[c].notna().any()
        ]
        # A device every combination skipped (absent here) is listed under
        # "Skipped and failed", not as a column of "skipped".
        measured = group[group["status"] != STATUS_SKIPPED]
        if measured.empty:
            continue
        columns = sorted(set(zip(measured["machine"], measured["device"], strict=True)))
        cells: dict[tuple[Any, ...], dict[tuple[str, str], str]] = {}
        for record in group.to_dict("records"):
            key = tuple(record[p] for p in params)
            cells.setdefault(key, {})[(record["machine"], record["device"])] = _latency_cell(record)
        many_machines = group["machine"].nunique() > 1
        head_cells = [*params, *(f"{d}@{m}" if many_machines else d for m, d in columns)]
        body = [
            (*key, *(cells[key].get(c, "-") for c in columns))
            for key in sorted(cells, key=lambda k: tuple(_sort_key(v) for v in k))
        ]
        blocks.append(f"### `{benchmark}`\n\n" + _table(head_cells or ["value"], body))
    return "\n".join(blocks)


def _memory_section(current: pd.DataFrame) -> str:
    """asv's peakmem_ benchmarks: peak resident memory of the process, in bytes."""
    rows = current[(current["type"] == "peakmemory") & (current["status"] == STATUS_OK)]
    if rows.empty:
        return ""
    body = [
        (
            r["machine"],
            r["device"],
            f"`{_short(r['benchmark'])}`",
            _shape(r),
            format_bytes(r["value"]),
        )
        for r in rows.to_dict("records")
    ]
    return (
        "## Peak memory\n\nPeak resident memory of the benchmark process (asv `peakmem_`), which includes the interpreter and torch.\n\n"
        + _table(("machine", "device", "benchmark", "shape", "peak memory"), body)
    )


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


def _conformance_section(conformance: pd.DataFrame | None) -> str:
    if conformance is None:
        return "## Conformance\n\nNo conformance report given (`--conformance FILE`).\n"
    lines = ["## Conformance", ""]
    for backend, rows in conformance.groupby("backend", sort=True, dropna=False):
        first = rows.iloc[0]
        counts = rows["outcome"].value_counts()
        lines.append(
            f"Backend `{backend}` (module `{first['backend_module']}`, "
            f"version {first['backend_version'] or 'unknown'}), "
            f"spec {first['spec_revision']}, suite {first['suite_version']}; "
            f"devices available: {first['devices_available'] or 'not recorded'}. Outcomes: "
            + ", ".join(f"{int(counts.get(o, 0))} {o}" for o in OUTCOMES)
            + "."
        )
        lines.append("")
        bad = rows[rows["outcome"].isin(BAD_OUTCOMES)]
        if not bad.empty:
            shown = bad.head(20)
            lines.append(
                _table(
                    ("outcome", "spec type", "device", "check", "message"),
                    (
                        (r.outcome, r.spec_type, r.device, f"`{r.check}`", _one_line(r.message))
                        for r in shown.itertuples()
                    ),
                )
            )
            if len(bad) > len(shown):
                lines.append(f"... and {len(bad) - len(shown)} more in the conformance report.\n")
    lines.append("Per spec type and device: `conformance_matrix.png`.\n")
    return "\n".join(lines)


def _one_line(text: str, limit: int = 120) -> str:
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    first = first.replace("|", "\\|")
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _problems_section(current: pd.DataFrame) -> str:
    failed = current[current["status"] == STATUS_FAILED]
    skipped = current[current["status"] == STATUS_SKIPPED]
    lines = ["## Skipped and failed", ""]
    if not skipped.empty:
        by_device = skipped.groupby(["machine", "device"]).size()
        lines.append(
            "Skipped (the benchmark raised NotImplementedError in setup: device absent, "
            "left out, or not supported by the backend): "
            + ", ".join(f"{n} on {d}@{m}" for (m, d), n in by_device.items())
            + "."
        )
    else:
        lines.append("Nothing skipped.")
    lines.append("")
    if failed.empty:
        lines.append("Nothing failed.")
    else:
        lines.append(
            f"{len(failed)} result(s) FAILED (asv stored no value; its output of that run "
            "says why, e.g. `asv run --show-stderr`):"
        )
        lines.append("")
        for (machine, benchmark), group in failed.groupby(["machine", "benchmark"], sort=True):
            devices = ", ".join(sorted(group["device"].unique()))
            lines.append(
                f"- `{benchmark}` on {machine}: {len(group)} parameter combination(s), "
                f"device(s) {devices}"
            )
    return "\n".join(lines) + "\n"


def _plots_section(plots: Sequence[tuple[str, str, Path | None]]) -> str:
    if not plots:
        return ""
    lines = ["## Plots", ""]
    for name, description, path in plots:
        if path is not None:
            lines += [f"**{description}** (`{name}`)", "", f"![{description}]({name})", ""]
            continue
        lines += [f"- `{name}`: {NO_DATA} ({description})", ""]
    return "\n".join(lines) + "\n"


def _notes() -> str:
    return (
        "## How these numbers were measured\n\n"
        "Values are asv's medians (`value` in `results.csv`, with asv's 99% confidence interval, "
        "quartiles and repeat count beside it). Absolute times mean something only on the "
        "machine that measured them; on a CPU-only machine trust the ratios, which compare two "
        "ways measured side by side in one run. GB/s is payload bytes over the device-to-host "
        f"time; the {catalog.LINK_NAME} limit is {catalog.LINK_LIMIT_GBPS:.0f} GB/s per direction and "
        f"payloads under ~{format_bytes(catalog.LATENCY_BOUND_BYTES)} are latency-bound.\n"
    )
