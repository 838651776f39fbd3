"""PNG plots of the tidy frames, labelled with units; one function per plot.

Each function returns the path it wrote, or None when the frame has no data
for it (the summary then says "no data"); none of them raises on a missing
benchmark family.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

# Agg: no display on CI machines and no GUI toolkit to import.
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogFormatter, NullFormatter

from reports import catalog, machines, releases, row_kinds, targets
from reports import conformance_matrix as conformance_keys
from reports.asv_loader import BASE_COLUMNS

DPI = 110


COLOURS = matplotlib.color_sequences["tab10"]
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P")


def _short_name(benchmark: str) -> str:
    # "transfer.Transfer.time_d2h" -> "time_d2h": the panel title names the class.
    return benchmark.rsplit(".", 1)[-1]


def _class_of(benchmark: str) -> str:
    """``module.Class.time_x`` -> ``Class``: what one latency panel shows."""
    parts = benchmark.split(".")
    return parts[-2] if len(parts) > 2 else parts[0]


def _varying(rows: pd.DataFrame, exclude: set[str]) -> list[str]:
    """Parameters that take more than one value in ``rows``, besides ``exclude``."""
    return [c for c in _params(rows) if c not in exclude and rows[c].nunique(dropna=True) > 1]


def _params(rows: pd.DataFrame) -> list[str]:
    """Parameter columns of a results frame or of a target's measurements frame."""
    fixed = {*BASE_COLUMNS, *targets.PAIR_COLUMNS, "payload_bytes"}
    return [c for c in rows.columns if c not in fixed and not str(c).startswith("_")]


def _size_axis(rows: pd.DataFrame) -> str | None:
    """The x axis of a group: a known size parameter if it varies, else the first
    numeric parameter that takes more than one value."""
    numeric = [
        c
        for c in _varying(rows, {"backend", "device"})
        if pd.to_numeric(rows[c], errors="coerce").nunique(dropna=True) > 1
    ]
    for name in catalog.SIZE_PARAMS:
        if name in numeric:
            return name
    return numeric[0] if numeric else None


def _draw_lines(
    ax: Axes,
    rows: pd.DataFrame,
    x: str,
    *,
    y: str = "value",
    by: str = "benchmark",
    exclude: frozenset[str] = frozenset(),
    scale: float = 1.0,
    label: Callable[[str], str] = _short_name,
) -> int:
    """One line per ``by`` value (a colour) and per combination of the other
    varying parameters (a line style), against ``x``; returns how many were drawn."""
    split = _varying(rows, {"backend", "device", x, by, *exclude})
    combos = sorted(
        {tuple(r) for r in rows[split].itertuples(index=False)} if split else {()},
        key=lambda combo: tuple(_natural(v) for v in combo),
    )
    style = {combo: i for i, combo in enumerate(combos)}
    drawn = 0
    for colour_index, (name, group) in enumerate(rows.groupby(by, sort=True)):
        sub_groups = group.groupby(split, dropna=False, sort=True) if split else [((), group)]
        for values, line in sub_groups:
            values = values if isinstance(values, tuple) else (values,)
            line = line.assign(_x=pd.to_numeric(line[x], errors="coerce")).dropna(subset=["_x", y])
            if line.empty:
                continue
            line = line.sort_values("_x")
            i = style.get(tuple(values), 0)
            extra = ", ".join(
                f"{k}={v}" for k, v in zip(split, values, strict=True) if not pd.isna(v)
            )
            ax.plot(
                line["_x"],
                line[y] * scale,
                color=COLOURS[colour_index % len(COLOURS)],
                linestyle=LINESTYLES[i % len(LINESTYLES)],
                marker=MARKERS[i % len(MARKERS)],
                markersize=3.5,
                linewidth=1.4,
                label=_join_label(label(str(name)), extra) or _short_name(str(name)),
            )
            drawn += 1
    return drawn


def _natural(value: Any) -> tuple[int, Any]:
    """Numbers in numeric order (5 before 20), then everything else as text."""
    if isinstance(value, numbers.Real) and not pd.isna(value):
        return (0, value)
    return (1, str(value))


def _join_label(name: str, extra: str) -> str:
    if name and extra:
        return f"{name} ({extra})"
    return name or extra


def _label(ax: Axes, *, title: str, ylabel: str, xlabel: str | None = None) -> None:
    """Title, axis labels, grid and readable log ticks: the last touch of every panel."""
    ax.set_title(title)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    _finish_log_axes(ax)


def _finish_log_axes(ax: Axes) -> None:
    """Plain tick labels on every log axis of ``ax``, once its data and limits are set."""
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log":
            _plain_log_ticks(axis)


def _plain_log_ticks(axis: Any) -> None:
    # "20" and "300" read faster than matplotlib's 2x10^1 on a log axis.  Minor
    # ticks are labelled (a readable subset) only when the axis spans few
    # decades, where the major ticks alone would leave one label or none.
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def _grid(
    n: int, width: float = 6.4, height: float = 4.4, cols: int = 2
) -> tuple[Figure, list[Axes]]:
    cols = min(n, cols)
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(width * cols, height * nrows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _where(machine: str, device: str, many_machines: bool) -> str:
    return f"{device} @ {machine}" if many_machines else device


def _panels(rows: pd.DataFrame, *keys: Any) -> list[tuple[tuple[Any, ...], pd.DataFrame]]:
    return [
        (k if isinstance(k, tuple) else (k,), g) for k, g in rows.groupby(list(keys), sort=True)
    ]


def latency(frame: pd.DataFrame, out: Path) -> Path | None:
    """Median latency against problem size: one log-log panel per benchmark class,
    device and machine; a colour per method, a line style per other parameter."""
    timed = row_kinds.measured(row_kinds.timings(frame))
    if timed.empty:
        return None
    timed = timed.assign(_class=timed["benchmark"].map(_class_of))
    many = timed["machine"].nunique() > 1
    panels = []
    # The same class and device of each machine side by side.
    for (klass, device, machine), group in _panels(timed, "_class", "device", "machine"):
        x = _size_axis(group)
        if x is not None:
            panels.append((klass, machine, device, x, group[group[x].notna()]))
    if not panels:
        return None
    fig, axes = _grid(len(panels))
    for ax, (klass, machine, device, x, group) in zip(axes, panels, strict=True):
        _draw_lines(ax, group, x, scale=1e6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _label(
            ax,
            title=f"{klass} on {_where(machine, device, many)}",
            xlabel=f"{x} (log scale)",
            ylabel="median latency (µs, log scale)",
        )
        ax.legend(fontsize=6, loc="upper left")
    return _save(fig, out / "latency.png")


def bandwidth(frame: pd.DataFrame, out: Path) -> Path | None:
    """Achieved GB/s against payload bytes, with the link's limit drawn."""
    measured = row_kinds.gbps(catalog.with_payload_bytes(frame))
    x = catalog.pick_param(measured, catalog.BYTES_PARAMS) or catalog.pick_param(
        measured, catalog.SIZE_PARAMS
    )
    if x is None:
        return None
    measured = measured[measured[x].notna()]
    is_bytes = x in catalog.BYTES_PARAMS
    # The payload is made of these; a line per value of them would be one point each.
    exclude = frozenset({"num_tokens", "num_logprobs"}) if x == "payload_bytes" else frozenset()
    many = measured["machine"].nunique() > 1
    panels = _panels(measured, "device", "machine")
    if not panels:
        return None
    fig, axes = _grid(len(panels), width=7.0, cols=1 if len(panels) == 1 else 2)
    low, high = catalog.PINNED_D2H_GBPS
    for ax, ((device, machine), group) in zip(axes, panels, strict=True):
        # A colour per transfer method when the benchmark has that parameter.
        by = (
            "method" if "method" in group.columns and group["method"].notna().any() else "benchmark"
        )
        if by == "method":
            # The link's plain copies have no method: a line of their own, not dropped.
            group = group.assign(method=group["method"].fillna("plain copy"))
        _draw_lines(ax, group, x, by=by, exclude=exclude, label=_method_label)
        if device != "cpu":  # a host-to-host copy crosses no link
            limit, name = catalog.link_limit(frame, machine)
            ax.axhline(limit, color="red", linestyle="--", label=f"{name} limit ({limit:.0f} GB/s)")
            ax.axhspan(
                low,
                high,
                color="green",
                alpha=0.12,
                label=f"pinned D2H, H100-class ({low:.0f}-{high:.0f} GB/s)",
            )
        if is_bytes:
            ax.axvline(
                catalog.LATENCY_BOUND_BYTES,
                color="grey",
                linestyle=":",
                label="1 MiB: latency-bound below",
            )
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        _label(
            ax,
            title=f"Device-to-host bandwidth on {_where(machine, device, many)}",
            xlabel="payload (log scale)" if is_bytes else f"{x} (log scale)",
            ylabel="achieved GB/s",
        )
        if is_bytes:
            ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: _si_bytes(value)))
        ax.legend(fontsize=7, loc="upper left")
    return _save(fig, out / "bandwidth.png")


def _si_bytes(value: float) -> str:
    """Tick label for a payload: 1 kB, 10 MB (decimal, as GB/s is)."""
    for scale, suffix in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if value >= scale:
            return f"{value / scale:g} {suffix}"
    return f"{value:g} B"


def _method_label(name: str) -> str:
    # Bandwidth lines differ by their method parameter; the benchmark name is noise.
    if name.endswith("track_bandwidth"):
        return ""
    return f"method={name}" if "." not in name else _short_name(name)


def tolists_ns(frame: pd.DataFrame, out: Path) -> Path | None:
    """tolists cost in ns per element against batch size (tokens)."""
    measured = row_kinds.ns_per_element(catalog.TOLISTS.rows(frame))
    x = catalog.pick_param(measured, catalog.BATCH_PARAMS)
    if x is None:
        return None
    measured = measured[measured[x].notna()]
    many = measured["machine"].nunique() > 1
    panels = _panels(measured, "device", "machine")
    fig, axes = _grid(len(panels), width=7.0, cols=1 if len(panels) == 1 else 2)
    for ax, ((device, machine), group) in zip(axes, panels, strict=True):
        _draw_lines(ax, group, x)
        ax.axhspan(15, 25, color="grey", alpha=0.12, label="typical list conversion (15-25 ns)")
        ax.set_xscale("log")
        # Log: one-token batches cost hundreds of ns per element (fixed
        # overhead), large ones tens; both must stay readable.
        ax.set_yscale("log")
        _label(
            ax,
            title=f"tolists() cost per element on {_where(machine, device, many)}",
            xlabel=f"batch size: {x} (log scale)",
            ylabel="ns per element (log scale)",
        )
        ax.legend(fontsize=7, loc="upper right")
    return _save(fig, out / "tolists_ns_per_element.png")


def unpad_speedup(frame: pd.DataFrame, out: Path) -> Path | None:
    """Speed-up of unpad over vLLM's mask-per-row way against batch size, with the 2x target."""
    target = next(t for t in catalog.TARGETS if t.key == "unpad_speedup")
    measured = targets.measurements(frame, target)
    if measured.empty:
        return None
    x = _size_axis(measured)
    many = measured["machine"].nunique() > 1
    panels = _panels(measured, "device", "machine")
    fig, axes = _grid(len(panels), width=7.0, cols=1 if len(panels) == 1 else 2)
    for ax, ((device, machine), group) in zip(axes, panels, strict=True):
        if x is not None:
            _draw_lines(ax, group, x, y="ratio", by="subject")
            ax.set_xscale("log")
            ax.set_xlabel(f"{x} (log scale)")
        else:
            ax.bar(range(len(group)), group["ratio"])
            ax.set_xticks(range(len(group)), group["shape"], rotation=45, ha="right", fontsize=7)
            ax.set_xlabel("benchmarked shape")
        ax.axhline(target.limit, color="red", linestyle="--", label=f"target: {target.limit:g}x")
        ax.axhline(1.0, color="grey", linewidth=0.8, label="as fast as vLLM's way")
        failing = group[~group["passed"].astype(bool)]
        if x is not None and not failing.empty:
            ax.scatter(
                pd.to_numeric(failing[x]), failing["ratio"], s=70, facecolors="none",
                edgecolors="red", label="below target",
            )  # fmt: skip
        ax.set_ylim(bottom=0)
        _label(
            ax,
            title=f"unpad speed-up over vLLM's mask-per-row on {_where(machine, device, many)}",
            ylabel="speed-up (x, higher is better)",
        )
        ax.legend(fontsize=7, loc="best")
    return _save(fig, out / "unpad_speedup.png")


def conformance_matrix(conformance: pd.DataFrame | None, out: Path) -> Path | None:
    """Spec type x device cells per report (backend, version, revision, machine: never
    merged): green all passed, red any failure, grey skipped."""
    if conformance is None or conformance.empty:
        return None
    keyed = conformance_keys.keyed(conformance)
    panels = list(keyed.groupby(list(conformance_keys.REPORT_KEYS), sort=True))
    fig, axes = _grid(len(panels), width=7.0, height=0.45 * keyed["spec_type"].nunique() + 2.2)
    for ax, (key, of_report) in zip(axes, panels, strict=True):
        backend, version, revision, machine = key
        spec_types = sorted(of_report["spec_type"].unique())
        devices = conformance_keys.device_order(sorted(of_report["device"].unique()))
        grid = [[row_kinds.conformance_cell(of_report, s, d) for d in devices] for s in spec_types]
        colours = {
            row_kinds.CELL_PASS: 2,
            row_kinds.CELL_FAIL: 0,
            row_kinds.CELL_SKIP: 1,
            row_kinds.CELL_NONE: 1,
        }
        ax.imshow(
            [[colours[state] for state, _ in line] for line in grid],
            cmap=matplotlib.colors.ListedColormap(["#e06666", "#d9d9d9", "#93c47d"]),
            vmin=0,
            vmax=2,
            aspect="auto",
        )
        for i, line in enumerate(grid):
            for j, (_, text) in enumerate(line):
                ax.text(j, i, text.replace(", ", "\n"), ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(devices)))
        ax.set_xticklabels(devices)
        ax.set_yticks(range(len(spec_types)))
        ax.set_yticklabels(spec_types)
        ax.set_xlabel(
            "device ('any': checks that use no device)\n"
            "green: all passed   red: failed or errored   grey: skipped or not run"
        )
        ax.set_ylabel("spec type")
        ax.set_title(
            f"Conformance — {backend} {version}, spec {revision}, on {machine}\n"
            "(cells: passed/total)",
            fontsize=10,
        )
    return _save(fig, out / "conformance_matrix.png")


def _release_grid(
    rows: pd.DataFrame, what: str
) -> tuple[Figure, list[tuple[Axes, tuple[Any, ...], pd.DataFrame]], bool] | None:
    """A figure with a panel per ``what``, machine and device that has more than one
    backend: ``(figure, [(axes, key, rows)], several machines)``; None without any."""
    if rows.empty:
        return None
    panels = [
        (key, group)
        for key, group in _panels(rows, what, "machine", "device")
        if group["backend"].nunique() > 1
    ]
    if not panels:
        return None
    fig, axes = _grid(len(panels), width=6.0, height=3.8, cols=3)
    placed = [(ax, key, group) for ax, (key, group) in zip(axes, panels, strict=True)]
    return fig, placed, rows["machine"].nunique() > 1


def _release_axis(ax: Any, group: pd.DataFrame, log: bool = True) -> list[str]:
    """Releases on the x axis in release order, a log (or linear) y axis; the
    backends in that order."""
    order = releases.in_release_order(group["backend"])
    labels = [releases.release_of(b) or b for b in order]
    ax.set_xticks(range(len(order)), labels, rotation=60, ha="right", fontsize=6)
    ax.set_yscale("log" if log else "linear")
    return order


def release_latency(frame: pd.DataFrame, out: Path) -> Path | None:
    """Median latency against release (release order), a panel per benchmark, a line
    per representative shape; None unless the run measured several backends."""
    if not releases.several_backends(frame):
        return None
    grid = _release_grid(releases.release_rows(frame), "benchmark")
    if grid is None:
        return None
    fig, panels, many = grid
    for ax, (benchmark, machine, device), group in panels:
        order = _release_axis(ax, group)
        position = {backend: i for i, backend in enumerate(order)}
        for i, (shape, line) in enumerate(group.groupby("shape", sort=False)):
            line = line.assign(_x=line["backend"].map(position)).sort_values("_x")
            ax.plot(
                line["_x"],
                line["value"] * 1e6,
                color=COLOURS[i % len(COLOURS)],
                marker=MARKERS[i % len(MARKERS)],
                markersize=3.5,
                linewidth=1.4,
                label=str(shape),
            )
        _label(
            ax,
            title=f"{_short_name(str(benchmark))} on {_where(machine, device, many)}",
            ylabel="median latency (µs, log scale)",
        )
        ax.legend(fontsize=6, loc="best")
    return _save(fig, out / "release_latency.png")


def _times_at_2_and_5(value: float, _: Any) -> str:
    """``2x``, ``0.05x``: minor log ticks labelled at 2 and 5 times a power of ten."""
    if value <= 0:
        return ""
    mantissa = value / 10 ** math.floor(math.log10(value))
    return f"{value:g}x" if round(mantissa, 6) in (2.0, 5.0) else ""


def release_side_by_side(frame: pd.DataFrame, out: Path) -> Path | None:
    """Each backend's time over its partner's, timed interleaved, against release
    (release order), a panel per operation; None unless the run has such ratios."""
    grid = _release_grid(releases.side_by_side(frame), "operation")
    if grid is None:
        return None
    fig, panels, many = grid
    for ax, (operation, machine, device), group in panels:
        # A log axis only where releases differ by orders of magnitude (lists vs
        # numpy); a few percent of noise reads better on a linear one.
        log = group["ratio"].max() / group["ratio"].min() > 4
        order = _release_axis(ax, group, log=log)
        ratios = group.set_index("backend").loc[order, "ratio"]
        ax.plot(range(len(order)), ratios, color=COLOURS[0], marker=MARKERS[0], markersize=3.5)
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        _label(
            ax,
            title=f"{operation}\n{group['shape'].iloc[0]} on {_where(machine, device, many)}",
            ylabel="time / partner's time" + (" (log)" if log else ""),
        )
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
        ax.yaxis.set_minor_formatter(FuncFormatter(_times_at_2_and_5) if log else NullFormatter())
    return _save(fig, out / "release_side_by_side.png")


def machines_side_by_side(frame: pd.DataFrame, out: Path) -> Path | None:
    """How many times faster each machine is than the first, per benchmark (geometric
    means over the shapes they share): a panel per device, a marker per machine (log
    axis, 1 = as fast); None with fewer than two machines sharing a shape."""
    table = machines.side_by_side(frame)
    if table.empty:
        return None
    devices = sorted(table["device"].unique())
    tallest = max(table[table["device"] == d]["benchmark"].nunique() for d in devices)
    fig, axes = _grid(len(devices), width=7.5, height=0.28 * tallest + 1.8)
    for ax, device in zip(axes, devices, strict=True):
        rows = table[table["device"] == device]
        benchmarks = sorted(rows["benchmark"].unique())
        position = {b: i for i, b in enumerate(benchmarks)}
        for i, (machine, line) in enumerate(rows.groupby("machine", sort=True)):
            ax.scatter(
                line["speed"],
                line["benchmark"].map(position),
                color=COLOURS[i % len(COLOURS)],
                marker=MARKERS[i % len(MARKERS)],
                s=22,
                label=str(machine),
                zorder=3,
            )
        ax.axvline(1.0, color="grey", linewidth=0.8)
        ax.set_xscale("log")
        labels = [".".join(b.split(".")[-2:]) for b in benchmarks]  # Class.method
        ax.set_yticks(range(len(benchmarks)), labels, fontsize=6)
        _label(
            ax,
            title=f"Machines side by side on {device}",
            xlabel="times as fast as the row's first machine (log; right: faster)",
            ylabel="",
        )
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.legend(fontsize=7, loc="best")
    return _save(fig, out / "machines.png")


#: Every plot, its file name, and what it shows (for the summary's list).
PLOTS: tuple[tuple[str, str, Callable[..., Path | None]], ...] = (
    ("latency.png", "median latency against size per device (log axes)", latency),
    ("bandwidth.png", "achieved GB/s against payload bytes, with the link's limit", bandwidth),
    ("tolists_ns_per_element.png", "tolists ns per element against batch size", tolists_ns),
    ("unpad_speedup.png", "unpad speed-up over vLLM's mask-per-row way, per shape", unpad_speedup),
    (
        "release_latency.png",
        "median latency per benchmark against release (release order), a line per shape",
        release_latency,
    ),
    (
        "release_side_by_side.png",
        "each backend's time over its partner's, timed interleaved, against release",
        release_side_by_side,
    ),
    (
        "machines.png",
        "with several machines: each one's speed per benchmark against the first machine's",
        machines_side_by_side,
    ),
)
