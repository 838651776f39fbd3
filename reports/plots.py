"""PNG plots of the tidy frames, labelled with units; one function per plot.

Each function returns the path it wrote, or None when the frame has no data
for it (the summary then says "no data"); none of them raises on a missing
benchmark family.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib

# Agg: no display on CI machines and no GUI toolkit to import.
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from reports import catalog, targets
from reports.asv_loader import STATUS_OK
from reports.conformance_loader import BAD_OUTCOMES, OUTCOMES
from reports.units import TIME_UNITS

DPI = 110


def _short_name(benchmark: str) -> str:
    # "transfer.Transfer.time_d2h" -> "time_d2h": the panel title names the class.
    return benchmark.rsplit(".", 1)[-1]


def _label_columns(rows: pd.DataFrame, exclude: set[str]) -> list[str]:
    """Parameters that vary within ``rows`` besides ``exclude``: they split the lines."""
    return [
        c
        for c in targets.param_columns(rows)
        if c not in exclude and rows[c].notna().any() and rows[c].nunique(dropna=True) > 1
    ]


def _lines(rows: pd.DataFrame, x: str, exclude: set[str]) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows sorted by x) for each benchmark and combination of the other parameters."""
    out = []
    for benchmark, bench_rows in rows.groupby("benchmark", sort=True):
        split = _label_columns(bench_rows, exclude | {x})
        groups = bench_rows.groupby(split, dropna=False, sort=True) if split else [((), bench_rows)]
        for values, group in groups:
            values = values if isinstance(values, tuple) else (values,)
            extra = ", ".join(f"{k}={v}" for k, v in zip(split, values, strict=True))
            label = _short_name(str(benchmark)) + (f" [{extra}]" if extra else "")
            group = group.assign(_x=pd.to_numeric(group[x], errors="coerce")).dropna(subset=["_x"])
            if not group.empty:
                out.append((label, group.sort_values("_x")))
    return out


def _grid(n: int, width: float = 6.0, height: float = 4.2) -> tuple[Figure, list]:
    cols = min(n, 2)
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


def _per_device_lines(
    rows: pd.DataFrame,
    x: str,
    path: Path,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    scale: float = 1.0,
    decorate: Callable[[object, str], None] | None = None,
    logy: bool = True,
    exclude: frozenset[str] = frozenset(),
) -> Path | None:
    devices = sorted(rows["device"].unique())
    if not devices:
        return None
    fig, axes = _grid(len(devices))
    drawn = False
    for ax, device in zip(axes, devices, strict=True):
        device_rows = rows[rows["device"] == device]
        lines = _lines(device_rows, x, {"device", *exclude})
        for label, line in lines:
            ax.plot(line["_x"], line["value"] * scale, marker="o", markersize=3, label=label)
            drawn = True
        ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_title(f"{title} — {device}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        if decorate is not None:
            decorate(ax, device)
        if lines:
            ax.legend(fontsize=7, loc="best")
    if not drawn:
        plt.close(fig)
        return None
    return _save(fig, path)


def _class_of(benchmark: str) -> str:
    """``module.Class.time_x`` -> ``Class``: the unit a latency panel shows."""
    parts = benchmark.split(".")
    return parts[-2] if len(parts) > 2 else parts[0]


def _size_axis(rows: pd.DataFrame) -> str | None:
    """The size parameter of a group: a preferred name if it varies, else the
    first numeric parameter that takes more than one value."""
    varying = [
        c
        for c in targets.param_columns(rows)
        if c not in {"backend", "device"}
        and pd.to_numeric(rows[c], errors="coerce").nunique(dropna=True) > 1
    ]
    for name in catalog.SIZE_PARAMS:
        if name in varying:
            return name
    return varying[0] if varying else None


def latency(frame: pd.DataFrame, out: Path) -> Path | None:
    """Median latency against problem size: one log-log panel per benchmark class
    and device, a line per method and per value of the other parameters."""
    rows = frame[(frame["status"] == STATUS_OK) & frame["unit"].isin(TIME_UNITS)]
    panels = []
    for (klass, device), group in rows.groupby(
        [rows["benchmark"].map(_class_of), "device"], sort=True
    ):
        x = _size_axis(group)
        if x is not None:
            panels.append((klass, device, x, group[group[x].notna()]))
    if not panels:
        return None
    fig, axes = _grid(len(panels))
    for ax, (klass, device, x, group) in zip(axes, panels, strict=True):
        for label, line in _lines(group, x, {"device"}):
            ax.plot(line["_x"], line["value"] * 1e6, marker="o", markersize=3, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{klass} on {device}: median latency")
        ax.set_xlabel(f"{x} (log)")
        ax.set_ylabel("median latency (µs, log)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="upper left")
    return _save(fig, out / "latency.png")


def bandwidth(frame: pd.DataFrame, out: Path) -> Path | None:
    """Achieved GB/s against payload bytes, with the link's limit drawn."""
    frame = catalog.with_payload_bytes(frame)
    rows = frame[
        (frame["status"] == STATUS_OK) & frame["unit"].fillna("").str.match(catalog.GBPS_UNIT)
    ]
    x = catalog.pick_param(rows, catalog.BYTES_PARAMS) or catalog.pick_param(
        rows, catalog.SIZE_PARAMS
    )
    if x is None:
        return None
    rows = rows[rows[x].notna()]
    is_bytes = x in catalog.BYTES_PARAMS

    def limits(ax: object, device: str) -> None:
        if device == "cpu":
            return  # a host-to-host copy crosses no link
        ax.axhline(
            catalog.LINK_LIMIT_GBPS,
            color="red",
            linestyle="--",
            label=f"{catalog.LINK_NAME} limit ({catalog.LINK_LIMIT_GBPS:.0f} GB/s)",
        )  # type: ignore[attr-defined]
        low, high = catalog.PINNED_D2H_GBPS
        ax.axhspan(
            low,
            high,
            color="green",
            alpha=0.12,
            label=f"pinned D2H on H100-class ({low:.0f}-{high:.0f} GB/s)",
        )  # type: ignore[attr-defined]
        if is_bytes:
            ax.axvline(
                catalog.LATENCY_BOUND_BYTES,
                color="grey",
                linestyle=":",
                label="~1 MiB: latency-bound below",
            )  # type: ignore[attr-defined]

    return _per_device_lines(
        rows,
        x,
        out / "bandwidth.png",
        title="Achieved bandwidth",
        xlabel=f"payload {'bytes' if is_bytes else x} (log)",
        ylabel="achieved GB/s",
        decorate=limits,
        logy=False,
        # The payload is made of these; a line per value of them would be one point each.
        exclude=frozenset({"num_tokens", "num_logprobs"}) if x == "payload_bytes" else frozenset(),
    )


def tolists_ns(frame: pd.DataFrame, out: Path) -> Path | None:
    """tolists cost in ns per element against batch size."""
    rows = catalog.TOLISTS.rows(frame)
    rows = rows[
        (rows["status"] == STATUS_OK)
        & rows["unit"].fillna("").str.contains(catalog.NS_PER_ELEMENT_UNIT)
    ]
    x = catalog.pick_param(rows, catalog.BATCH_PARAMS)
    if x is None:
        return None
    rows = rows[rows[x].notna()]
    return _per_device_lines(
        rows,
        x,
        out / "tolists_ns_per_element.png",
        title="tolists cost per element",
        xlabel=f"{x} (log)",
        ylabel="ns per element",
        logy=False,
    )


def unpad_speedup(frame: pd.DataFrame, out: Path) -> Path | None:
    """Speed-up of unpad over vLLM's mask-per-row way, per shape, with the 2x target."""
    target = next(t for t in catalog.TARGETS if t.key == "unpad_speedup")
    pair_rows = targets.measurements(frame, target)
    if pair_rows.empty:
        return None
    groups = list(pair_rows.groupby(["machine", "device"], sort=True))
    fig, axes = _grid(len(groups), width=max(6.0, 0.45 * pair_rows["shape"].nunique() + 3))
    for ax, ((machine, device), rows) in zip(axes, groups, strict=True):
        rows = rows.reset_index(drop=True)
        colors = ["tab:green" if p else "tab:red" for p in rows["passed"]]
        ax.bar(range(len(rows)), rows["ratio"], color=colors)
        ax.axhline(target.limit, color="black", linestyle="--", label=f"target {target.limit:g}x")
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(rows["shape"], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("speed-up over vLLM's way (x, higher is better)")
        ax.set_xlabel("benchmarked shape")
        ax.set_title(f"unpad speed-up — {device} on {machine}")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, out / "unpad_speedup.png")


def conformance_matrix(conformance: pd.DataFrame | None, out: Path) -> Path | None:
    """Spec type x device cells per backend: green all passed, red any failure, grey skipped."""
    if conformance is None or conformance.empty:
        return None
    backends = sorted(conformance["backend"].fillna("?").unique())
    fig, axes = _grid(
        len(backends), width=7.0, height=0.45 * conformance["spec_type"].nunique() + 2.2
    )
    for ax, backend in zip(axes, backends, strict=True):
        rows = conformance[conformance["backend"].fillna("?") == backend]
        spec_types = sorted(rows["spec_type"].unique())
        devices = sorted(rows["device"].unique())
        grid = [[_cell(rows, s, d) for d in devices] for s in spec_types]
        colours = {"pass": 2, "fail": 0, "skip": 1, "none": 1}
        ax.imshow(
            [[colours[c[0]] for c in line] for line in grid],
            cmap=matplotlib.colors.ListedColormap(["#e06666", "#d9d9d9", "#93c47d"]),
            vmin=0,
            vmax=2,
            aspect="auto",
        )
        for i, line in enumerate(grid):
            for j, (_, text) in enumerate(line):
                ax.text(j, i, text, ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(devices)))
        ax.set_xticklabels(devices)
        ax.set_yticks(range(len(spec_types)))
        ax.set_yticklabels(spec_types)
        ax.set_xlabel("device")
        ax.set_ylabel("spec type")
        ax.set_title(f"Conformance — backend {backend} (cells: passed/total)")
    return _save(fig, out / "conformance_matrix.png")


def _cell(rows: pd.DataFrame, spec_type: str, device: str) -> tuple[str, str]:
    cell = rows[(rows["spec_type"] == spec_type) & (rows["device"] == device)]
    if cell.empty:
        return "none", "-"
    counts = cell["outcome"].value_counts()
    bad = int(sum(counts.get(o, 0) for o in BAD_OUTCOMES))
    passed = int(counts.get("passed", 0) + counts.get("xfailed", 0))
    total = int(sum(counts.get(o, 0) for o in OUTCOMES))
    if bad:
        return "fail", f"{passed}/{total}\n{bad} bad"
    if passed == 0:
        return "skip", f"skipped {total}"
    return "pass", f"{passed}/{total}"


#: Every plot, its file name, and what it shows (for the summary's list).
PLOTS: tuple[tuple[str, str, Callable[..., Path | None]], ...] = (
    ("latency.png", "median latency against size per device (log axes)", latency),
    ("bandwidth.png", "achieved GB/s against payload bytes, with the link's limit", bandwidth),
    ("tolists_ns_per_element.png", "tolists ns per element against batch size", tolists_ns),
    ("unpad_speedup.png", "unpad speed-up over vLLM's mask-per-row way, per shape", unpad_speedup),
)
