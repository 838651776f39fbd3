"""Release over release: one run's timings of every backend, in release order.

A run with several backends (``$OUTPUTS_BENCH_BACKENDS``: the 2025.10 reference,
``reference@R``, ``vllm-release:X``) times the same operation on each, so the
``backend`` column orders like releases.  Per benchmark this module picks a few
representative shapes (the size axis at its smallest, middle and largest value,
other parameters at their middle value), tabulates each backend's median and its
ratio to the 2025.10 reference, and finds the fastest release and the largest
regression between consecutive releases.

Medians taken one backend after another also measure when each ran: on a shared
machine the same code drifts by up to 2x for seconds at a time.  Where the run
has ``SideBySide.track_ratio_to_partner`` (``benchmarks/side_by_side.py``: each
backend's call interleaved with the first backend that has the operation, at one
shape), the fastest release and the steps between consecutive releases come from
those ratios instead, and the tables show each step.  Reads frames only; never
imports the benchmarks or the reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from reports import catalog, row_kinds
from reports.asv_loader import BASE_COLUMNS

#: The ``backend`` value of the 2025.10 reference (what ratios are taken against).
REFERENCE = "reference"
RELEASE_PREFIX = "vllm-release:"
REFERENCE_AT = "reference@"
#: 2025.10 is vLLM's main branch between the releases 0.11.0 and 0.11.1.
POSITION_2025_10 = (0, 11, 0, 0, 1)
_VERSION = re.compile(r"^\d+(\.\d+)*$")
#: Parameters that say where or on what a row ran, not its shape.
_CONTEXT = ("backend", "device")

RELEASE_COLUMNS = (
    "machine",
    "device",
    "benchmark",
    "backend",
    "shape",
    "value",
    "ratio_to_reference",
)


#: The benchmark that times each backend interleaved with a partner backend.
SIDE_BY_SIDE = re.compile(r"\.SideBySide\.track_ratio_to_partner$")
#: Its ``operation`` value: ``Class.method(shape)``.
_OPERATION = re.compile(r"^(?P<name>[\w.]+)\((?P<shape>.*)\)$")

SIDE_BY_SIDE_COLUMNS = ("machine", "device", "operation", "shape", "backend", "ratio")


def side_by_side(current: pd.DataFrame) -> pd.DataFrame:
    """The side-by-side ratios of one run: ``operation`` is ``Class.method``."""
    if "operation" not in current.columns or "backend" not in current.columns:
        return pd.DataFrame(columns=list(SIDE_BY_SIDE_COLUMNS))
    rows = row_kinds.measured(current[current["benchmark"].str.contains(SIDE_BY_SIDE, na=False)])
    out = []
    for record in rows.to_dict("records"):
        match = _OPERATION.match(str(record["operation"]))
        if match is None:
            continue
        out.append(
            {
                "machine": record["machine"],
                "device": record["device"],
                "operation": match["name"],
                "shape": match["shape"],
                "backend": record["backend"],
                "ratio": float(record["value"]),
            }
        )
    return pd.DataFrame(out, columns=list(SIDE_BY_SIDE_COLUMNS))


def short_name(benchmark: str) -> str:
    """``ToLists.time_tolists`` for ``tolists.ToLists.time_tolists``."""
    return ".".join(str(benchmark).split(".")[-2:])


def release_of(backend: str) -> str | None:
    """``0.12.0`` for ``vllm-release:0.12.0``; None for any other backend."""
    return backend.removeprefix(RELEASE_PREFIX) if backend.startswith(RELEASE_PREFIX) else None


def order_key(backend: str) -> tuple[Any, ...]:
    """Release order: releases by version, references at their revision's place
    (2025.10 between 0.11.0 and 0.11.1), any other backend after them by name."""
    name = release_of(backend) or backend.removeprefix(REFERENCE_AT)
    if backend == REFERENCE or name == "2025.10":
        return (0, POSITION_2025_10, 0, backend)
    if _VERSION.match(name):
        version = tuple(int(p) for p in name.split("."))
        return (0, version, 0 if release_of(backend) else 1, backend)
    return (1, (), 0, backend)


def in_release_order(backends: Any) -> list[str]:
    return sorted({str(b) for b in backends}, key=order_key)


def several_backends(frame: pd.DataFrame) -> bool:
    """Whether the frame holds timings of more than one backend (a release view applies)."""
    if "backend" not in frame.columns:
        return False
    return row_kinds.measured(row_kinds.timings(frame))["backend"].nunique() > 1


def _shape_params(rows: pd.DataFrame) -> list[str]:
    fixed = {*BASE_COLUMNS, *_CONTEXT}
    return [c for c in rows.columns if c not in fixed and rows[c].notna().any()]


def _middle(values: list[Any]) -> Any:
    return values[(len(values) - 1) // 2]


def _sorted_values(rows: pd.DataFrame, column: str) -> list[Any]:
    values = rows[column].dropna().unique().tolist()
    numeric = pd.to_numeric(pd.Series(values), errors="coerce")
    if numeric.notna().all():
        return [v for _, v in sorted(zip(numeric, values, strict=True))]
    return sorted(values, key=str)


def representative_shapes(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """At most three shapes of one benchmark: the size axis at its smallest, middle
    and largest value, every other parameter at its middle value."""
    params = _shape_params(rows)
    if not params:
        return [{}]
    values = {p: _sorted_values(rows, p) for p in params}
    base = {p: _middle(v) for p, v in values.items()}
    size = next((p for p in catalog.SIZE_PARAMS if p in params and len(values[p]) > 1), None)
    if size is None:
        return [base]
    picks = [values[size][0], _middle(values[size]), values[size][-1]]
    return [{**base, size: v} for v in dict.fromkeys(picks)]


def shape_label(shape: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items()) or "(no parameters)"


def release_rows(current: pd.DataFrame) -> pd.DataFrame:
    """One row per machine, device, timing benchmark, backend and representative shape."""
    timed = row_kinds.measured(row_kinds.timings(current))
    if timed.empty or "backend" not in timed.columns:
        return pd.DataFrame(columns=list(RELEASE_COLUMNS))
    out = []
    for (machine, device, benchmark), rows in timed.groupby(
        ["machine", "device", "benchmark"], sort=True
    ):
        if rows["backend"].nunique() < 2:
            # Measured under one backend (a baseline, which does the same work
            # whatever the backend, or a producer only the reference has): nothing
            # to compare release over release.
            continue
        for shape in representative_shapes(rows):
            at_shape = rows
            for param, value in shape.items():
                at_shape = at_shape[at_shape[param] == value]
            values = dict(zip(at_shape["backend"], at_shape["value"].astype(float), strict=True))
            reference = values.get(REFERENCE)
            for backend in in_release_order(values):
                value = values[backend]
                out.append(
                    {
                        "machine": machine,
                        "device": device,
                        "benchmark": benchmark,
                        "backend": backend,
                        "shape": shape_label(shape),
                        "value": value,
                        "ratio_to_reference": value / reference if reference else float("nan"),
                    }
                )
    return pd.DataFrame(out, columns=list(RELEASE_COLUMNS))


@dataclass(frozen=True)
class Headline:
    """What one benchmark says across releases at its headline shape."""

    machine: str
    device: str
    benchmark: str
    shape: str
    fastest: str
    #: The fastest release's median in seconds; None when ranked side by side.
    fastest_value: float | None
    #: (earlier release, later release, later / earlier) or None with fewer than two releases.
    worst_step: tuple[str, str, float] | None
    releases: int
    #: Whether the ranking comes from side-by-side ratios (else from medians).
    side_by_side: bool = False
    #: The slowest release and its time over the fastest's (side by side only).
    slowest: tuple[str, float] | None = None
    #: The run's noise for this operation: the reference timed side by side against
    #: itself, as a factor from 1 (1.3 for a self-ratio of 0.77 or 1.3); None unknown.
    noise: float | None = None

    def beyond_noise(self, factor: float) -> bool:
        """Whether a ratio of two releases (``factor`` >= 1) says more than the noise."""
        return self.noise is None or factor > self.noise


def _ordered_releases(values: dict[str, float]) -> pd.Series:
    releases = [b for b in in_release_order(values) if release_of(b) is not None]
    return pd.Series([values[b] for b in releases], index=releases, dtype=float)


def _worst_step(values: pd.Series) -> tuple[str, str, float] | None:
    steps = [
        (str(a), str(b), values[b] / values[a])
        for a, b in zip(values.index, values.index[1:], strict=False)
    ]
    return max(steps, key=lambda step: step[2]) if steps else None


def _release_ratios(ratios: pd.DataFrame) -> pd.Series:
    return _ordered_releases(dict(zip(ratios["backend"], ratios["ratio"], strict=True)))


def release_steps(ratios: pd.DataFrame) -> dict[str, float]:
    """Per release: its time over the previous release's, from side-by-side ratios
    of one operation (every ratio shares the partner, so their quotient is the step)."""
    values = _release_ratios(ratios)
    return {
        str(b): values[b] / values[a] for a, b in zip(values.index, values.index[1:], strict=False)
    }


def headlines(rows: pd.DataFrame, side: pd.DataFrame | None = None) -> list[Headline]:
    """Per machine, device and benchmark: the fastest release and the largest
    slowdown between consecutive releases measured, side by side where ``side``
    (:func:`side_by_side`) has the operation, else at the middle shape's medians."""
    releases = rows[rows["backend"].map(lambda b: release_of(str(b)) is not None)]
    out = []
    for (machine, device, benchmark), group in releases.groupby(
        ["machine", "device", "benchmark"], sort=True
    ):
        ratios = _side_ratios(side, machine, device, str(benchmark))
        if ratios is not None:
            values = _release_ratios(ratios)
            fastest, slowest = str(values.idxmin()), str(values.idxmax())
            out.append(
                Headline(
                    str(machine),
                    str(device),
                    str(benchmark),
                    str(ratios["shape"].iloc[0]),
                    fastest,
                    None,
                    _worst_step(values),
                    len(values),
                    side_by_side=True,
                    slowest=(slowest, float(values[slowest] / values[fastest])),
                    noise=_noise(ratios),
                )
            )
            continue
        shapes = list(dict.fromkeys(group["shape"]))
        shape = _middle(shapes)
        at_shape = group[group["shape"] == shape]
        values = at_shape.set_index("backend").loc[in_release_order(at_shape["backend"])]
        medians = values["value"].astype(float)
        fastest = str(medians.idxmin())
        out.append(
            Headline(
                str(machine),
                str(device),
                str(benchmark),
                shape,
                fastest,
                float(medians[fastest]),
                _worst_step(medians),
                len(medians),
            )
        )
    return out


def _noise(ratios: pd.DataFrame) -> float | None:
    """The reference's ratio against itself (it is the partner of every operation it
    has), as a factor from 1: how far apart the run put the same code."""
    own = ratios.loc[ratios["backend"] == REFERENCE, "ratio"]
    if own.empty or not own.iloc[0] > 0:
        return None
    ratio = float(own.iloc[0])
    return max(ratio, 1 / ratio)


def operation_ratios(side: pd.DataFrame, machine: Any, device: Any, benchmark: str) -> pd.DataFrame:
    """The side-by-side ratios (:func:`side_by_side`) of ``benchmark``'s operation."""
    return side[
        (side["machine"] == machine)
        & (side["device"] == device)
        & (side["operation"] == short_name(benchmark))
    ]


def _side_ratios(
    side: pd.DataFrame | None, machine: Any, device: Any, benchmark: str
) -> pd.DataFrame | None:
    """The side-by-side ratios of ``benchmark``'s operation, when two releases have one."""
    if side is None or side.empty:
        return None
    ratios = operation_ratios(side, machine, device, benchmark)
    releases = ratios[ratios["backend"].map(lambda b: release_of(str(b)) is not None)]
    return ratios if len(releases) >= 2 else None
