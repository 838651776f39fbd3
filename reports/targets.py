"""Evaluate the benchmark issue's ratio targets on side-by-side timings.

Ratios, not absolute times: on a CPU machine only ratios measured in one run
mean anything (DESIGN section 5), and they are what the targets are stated in.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from reports.asv_loader import BASE_COLUMNS, STATUS_OK
from reports.catalog import RatioTarget
from reports.releases import release_of

PAIR_COLUMNS = (
    "machine",
    "commit",
    "device",
    "shape",
    "subject",
    "baseline",
    "subject_value",
    "baseline_value",
    "ratio",
    "passed",
    "ci_low",
    "ci_high",
)


def param_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c not in BASE_COLUMNS]


def pairs(frame: pd.DataFrame, target: RatioTarget) -> pd.DataFrame:
    """One row per (machine, commit, device, shape) where both sides were timed.

    A row is on the baseline side when its benchmark name, or one of its
    string parameters (e.g. ``impl='vllm'``), matches the target's baseline
    pattern.  The two sides pair up on every other parameter value.
    """
    rows = target.family.rows(frame)
    rows = rows[(rows["type"] == "time") & (rows["status"] == STATUS_OK)]
    if rows.empty:
        return pd.DataFrame(columns=list(PAIR_COLUMNS))
    params = param_columns(rows)
    sides: dict[str, dict[tuple[Any, ...], list[tuple[str, float]]]] = {
        "subject": {},
        "baseline": {},
    }
    shapes: dict[tuple[Any, ...], str] = {}
    for record in rows.to_dict("records"):
        # "backend" names the backend under test (it may well be "vllm"), never
        # the baseline way, so it cannot put a row on the baseline side.
        role_params = {
            p
            for p in params
            if p not in _NOT_ROLE_PARAMS
            and isinstance(record[p], str)
            and target.baseline.search(record[p])
        }
        is_baseline = bool(target.baseline.search(record["benchmark"]) or role_params)
        # Parameters that only say which implementation ran are not part of the shape.
        shape_items = tuple(
            (p, record[p])
            for p in params
            if p not in role_params and not _is_impl_label(p) and not pd.isna(record[p])
        )
        key = (record["machine"], record["commit"], record["device"], shape_items)
        shapes[key] = ", ".join(f"{p}={v}" for p, v in shape_items) or "(no parameters)"
        if not is_baseline and not target.subject.search(record["benchmark"]):
            continue  # a third way in the family (e.g. torch's own tolist) is neither side
        side = "baseline" if is_baseline else "subject"
        sides[side].setdefault(key, []).append((record["benchmark"], float(record["value"])))
    out = []
    for key, subjects in sides["subject"].items():
        for baseline_name, baseline_value in sides["baseline"].get(key, []):
            for subject_name, subject_value in subjects:
                if target.higher_is_better:
                    ratio = baseline_value / subject_value
                    passed = ratio >= target.limit
                else:
                    ratio = subject_value / baseline_value
                    passed = ratio <= target.limit
                machine, commit, device, shape_items = key
                values = (
                    *(machine, commit, device, shapes[key], subject_name, baseline_name),
                    *(subject_value, baseline_value, ratio, bool(passed)),
                    *(math.nan, math.nan),  # two separate timings: no interval of the ratio
                )
                # The shape's parameters as columns too, for plotting against them.
                out.append({**dict(zip(PAIR_COLUMNS, values, strict=True)), **dict(shape_items)})
    return _frame(out)


#: Parameter names whose values name an implementation rather than a shape.
_IMPL_PARAMS = {"impl", "implementation", "method", "way", "variant", "kind"}
_NOT_ROLE_PARAMS = {"backend", "device"}


def _is_impl_label(name: str) -> bool:
    return name.lower() in _IMPL_PARAMS


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """PAIR_COLUMNS first, then the shape parameters."""
    if not rows:
        return pd.DataFrame(columns=list(PAIR_COLUMNS))
    extra = list(dict.fromkeys(k for row in rows for k in row if k not in PAIR_COLUMNS))
    return pd.DataFrame(rows, columns=[*PAIR_COLUMNS, *extra])


def measurements(frame: pd.DataFrame, target: RatioTarget) -> pd.DataFrame:
    """The target's ratios: from its direct ``track_`` benchmark when that has
    results, else from pairing separate timings (:func:`pairs`); only the devices
    (``devices``) and shapes (``from_size``, ``only_where``) the target applies to."""
    direct = direct_rows(frame, target)
    found = direct if not direct.empty else pairs(frame, target)
    if target.devices is not None and not found.empty:
        found = found[found["device"].isin(target.devices)]
    found = _with_floor_ratio(found, frame, target)
    found = _where_it_holds(found, frame, target)
    if target.from_size is None or found.empty:
        return found
    param, smallest = target.from_size
    if param not in found.columns:
        return found
    sizes = pd.to_numeric(found[param], errors="coerce")
    return found[sizes.isna() | (sizes >= smallest)]


def _where_it_holds(found: pd.DataFrame, frame: pd.DataFrame, target: RatioTarget) -> pd.DataFrame:
    """``found`` less the shapes where the target's ``only_where`` track reads below its
    least value; a shape that track did not measure is kept (nothing says it is exempt)."""
    if found.empty or target.only_where is None:
        return found
    track, least = target.only_where
    condition = direct_rows(frame, target, track=track)
    if condition.empty:
        return found
    condition = condition.assign(backend=_backend_of(condition))[[*_SHAPE_KEY, "ratio"]]
    condition = condition.drop_duplicates(_SHAPE_KEY, keep="last")
    keyed = found.assign(backend=_backend_of(found))
    merged = keyed.merge(
        condition.rename(columns={"ratio": "_condition"}), on=_SHAPE_KEY, how="left"
    )
    merged.index = found.index
    value = pd.to_numeric(merged["_condition"], errors="coerce")
    return found[value.isna() | (value >= least)]


def overhead_us(frame: pd.DataFrame, target: RatioTarget) -> pd.DataFrame:
    """Per machine, device and backend: the smallest and largest per-call overhead (µs)
    the target's ``overhead`` track measured, over every shape."""
    columns = ["machine", "device", "backend", "low_us", "high_us"]
    if target.overhead is None:
        return pd.DataFrame(columns=columns)
    rows = frame[
        frame["benchmark"].str.contains(target.overhead, na=False)
        & (frame["type"] == "track")
        & (frame["status"] == STATUS_OK)
    ]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    rows = rows.assign(backend=_backend_of(rows))
    grouped = rows.groupby(["machine", "device", "backend"], sort=True)["value"]
    return grouped.agg(low_us="min", high_us="max").reset_index()[columns]


def _backend_of(rows: pd.DataFrame) -> pd.Series:
    if "backend" in rows.columns:
        return rows["backend"].fillna("").astype(str)
    return pd.Series("", index=rows.index)


def direct_rows(
    frame: pd.DataFrame, target: RatioTarget, track: re.Pattern[str] | None = None
) -> pd.DataFrame:
    """Rows of a ``track_`` benchmark whose value already is the target's ratio
    (``track``: another ratio track of the same shapes, read for its ratio only)."""
    track = target.direct if track is None else track
    if track is None:
        return pd.DataFrame(columns=list(PAIR_COLUMNS))
    rows = frame[
        frame["benchmark"].str.contains(track, na=False)
        & (frame["type"] == "track")
        & (frame["status"] == STATUS_OK)
    ]
    out = []
    for record in rows.to_dict("records"):
        params = [p for p in param_columns(rows) if p not in _NOT_ROLE_PARAMS]
        shape = ", ".join(f"{p}={record[p]}" for p in params if not pd.isna(record[p]))
        ratio = float(record["value"])
        passed = ratio >= target.limit if target.higher_is_better else ratio <= target.limit
        values = (
            *(record["machine"], record["commit"], record["device"], shape or "(no parameters)"),
            *(record["benchmark"], "(interleaved, same benchmark)", math.nan, math.nan),
            *(ratio, bool(passed)),
            # asv's 99% interval of the median when the track reported its samples.
            *(record.get("ci_99_a", math.nan), record.get("ci_99_b", math.nan)),
        )
        shape_params = {p: record[p] for p in params if not pd.isna(record[p])}
        if "backend" in record and not pd.isna(record["backend"]):
            shape_params["backend"] = record["backend"]
        out.append({**dict(zip(PAIR_COLUMNS, values, strict=True)), **shape_params})
    return _frame(out)


#: Measured rows are matched to their floor track on these columns.
_SHAPE_KEY = ["machine", "commit", "device", "shape", "backend"]


def _with_floor_ratio(
    found: pd.DataFrame, frame: pd.DataFrame, target: RatioTarget
) -> pd.DataFrame:
    """``found`` with a ``floor_ratio`` column: our time over one plain read of the
    same input at that shape (NaN where the target has no floor track or it has no
    result there)."""
    if found.empty or target.floor is None:
        return found.assign(floor_ratio=math.nan)
    floor = direct_rows(frame, target, track=target.floor)
    if floor.empty:
        return found.assign(floor_ratio=math.nan)
    floor = floor.assign(backend=_backend_of(floor))[[*_SHAPE_KEY, "ratio"]]
    floor = floor.drop_duplicates(_SHAPE_KEY, keep="last")
    keyed = found.assign(backend=_backend_of(found))
    merged = keyed.merge(floor.rename(columns={"ratio": "floor_ratio"}), on=_SHAPE_KEY, how="left")
    merged.index = found.index
    return found.assign(floor_ratio=merged["floor_ratio"])


def verdicts(pair_rows: pd.DataFrame, target: RatioTarget) -> pd.DataFrame:
    """Per machine and device: shapes measured, worst ratio, pass when every shape passes."""
    columns = [
        "machine",
        "device",
        "backend",
        "shapes",
        "failing",
        "worst_ratio",
        "worst_shape",
        "passed",
        "measured_by",
        "worst_ci",
        "status",
        "too_close_shapes",
        "at_floor_shapes",
        "timed_apart",
    ]
    if pair_rows.empty:
        return pd.DataFrame(columns=columns)
    out = []
    pair_rows = pair_rows.assign(backend=_backend_of(pair_rows))
    # A target is the backend's, measured against vLLM: a vLLM release timed beside the
    # others (nox -s bench-releases) is no backend it judges.
    pair_rows = pair_rows[pair_rows["backend"].map(release_of).isna()]
    for (machine, device, backend), rows in pair_rows.groupby(
        ["machine", "device", "backend"], sort=True
    ):
        worst = rows.loc[
            rows["ratio"].idxmin() if target.higher_is_better else rows["ratio"].idxmax()
        ]
        near = _too_close(rows, target)
        at_floor = near & _decided_at_floor(rows, target)
        close = near & ~at_floor
        if target.tie_at_floor_meets_limit:
            # A tie at the floor meets the limit: neither side can hold meaningfully less.
            rows = rows.assign(passed=rows["passed"].astype(bool) | at_floor)
        out.append(
            {
                "machine": machine,
                "device": device,
                "backend": backend,
                "shapes": len(rows),
                "failing": int((~rows["passed"].astype(bool)).sum()),
                "worst_ratio": float(worst["ratio"]),
                "worst_shape": worst["shape"],
                "passed": bool(rows["passed"].all()),
                "measured_by": ", ".join(
                    sorted({_method(n) for n in (*rows["subject"], *rows["baseline"]) if "." in n})
                ),
                "worst_ci": (float(worst["ci_low"]), float(worst["ci_high"])),
                "status": _status(rows["passed"].astype(bool), close),
                "too_close_shapes": list(rows.loc[close, "shape"]),
                "at_floor_shapes": list(rows.loc[at_floor, "shape"]),
                "timed_apart": _timed_apart(rows),
            }
        )
    return pd.DataFrame(out, columns=columns)


#: How far apart separately started processes put the same ratio on one machine, as a
#: fraction: measured here, tolists() over ndarray.tolist() at 64 tokens read 1.10 to
#: 1.15 in six processes and 1.18 to 1.21 in asv's (once 1.33), each tight within
#: its own process.  One run cannot decide a ratio closer to the limit than this.
PROCESS_SPREAD = 0.05
PASSED, FAILED, UNDECIDED = "PASS", "FAIL", "TOO CLOSE"


def _too_close(rows: pd.DataFrame, target: RatioTarget) -> pd.Series:
    """Shapes whose verdict a rerun could turn: the ratio within :data:`PROCESS_SPREAD`
    of the limit, or its 99% interval (within the run) holding the limit."""
    ratio = pd.to_numeric(rows["ratio"], errors="coerce")
    low = pd.to_numeric(rows["ci_low"], errors="coerce")
    high = pd.to_numeric(rows["ci_high"], errors="coerce")
    near = (ratio - target.limit).abs() <= PROCESS_SPREAD * target.limit
    return near | ((low <= target.limit) & (target.limit <= high))


#: How close to one plain read of the input ours must run to be at the memory floor.
AT_FLOOR = 1.0 + PROCESS_SPREAD


def _decided_at_floor(rows: pd.DataFrame, target: RatioTarget) -> pd.Series:
    """Shapes a rerun cannot turn even where their ratio is close to the limit: ours
    runs at the floor (within :data:`PROCESS_SPREAD` of the least work any way must
    do: one plain read of the input, or the least memory any output holds), where the
    peer, which must do the same, cannot do meaningfully less.  The ratio must meet
    the limit too, unless the target counts a tie there as meeting it
    (``tie_at_floor_meets_limit``)."""
    if target.floor is None or "floor_ratio" not in rows.columns:
        return pd.Series(False, index=rows.index)
    floor_ratio = pd.to_numeric(rows["floor_ratio"], errors="coerce")
    at_floor = floor_ratio <= AT_FLOOR
    if target.tie_at_floor_meets_limit:
        return at_floor
    return rows["passed"].astype(bool) & at_floor


def _status(passed: pd.Series, too_close: pd.Series) -> str:
    """PASS when every shape clearly passes, FAIL when one clearly fails, else TOO CLOSE."""
    if (~passed & ~too_close).any():
        return FAILED
    return PASSED if passed.all() and not too_close.any() else UNDECIDED


def _timed_apart(rows: pd.DataFrame) -> bool:
    """Whether every ratio is two medians asv timed apart (``time_`` benchmarks, each in
    processes of its own), not a ``track_`` that timed both sides interleaved: such a
    ratio carries the machine's drift between them, and has no interval."""
    names = [*rows["subject"], *rows["baseline"]]
    return bool(names) and all(_method(n).startswith("time_") for n in names)


def _method(benchmark: str) -> str:
    return benchmark.rsplit(".", 1)[-1]
