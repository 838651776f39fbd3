"""Several benchmark machines side by side: each one's numbers beside the others', no verdict.

Per device and benchmark, each machine's geometric mean over the shapes every machine
of that row measured, and how many times faster (or slower) than the row's first
machine: the ratio of those means (the geometric mean of the per-shape ratios, so the
two columns agree), turned so that above 1 is faster whatever the unit (a time's ratio
inverted, a GB/s ratio as it is).  Which machine is
better is not the code's doing, so nothing here is a regression: ``--compare`` only
ever compares a machine with itself.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reports import row_kinds
from reports.units import higher_is_better

COLUMNS = ("device", "benchmark", "unit", "shapes", "machine", "commit", "value", "speed", "first")


def several(current: pd.DataFrame) -> bool:
    return row_kinds.measured(current)["machine"].nunique() > 1


def side_by_side(current: pd.DataFrame) -> pd.DataFrame:
    """One row per device, benchmark and machine that shares shapes with another machine
    (:data:`COLUMNS`): ``value`` its geometric mean over the shared shapes, ``speed`` how many
    times faster than ``first`` (the row's first machine by name; 1.0 for that one)."""
    measured = row_kinds.measured(current)
    found: list[dict[str, object]] = []
    if measured["machine"].nunique() < 2:
        return pd.DataFrame(columns=list(COLUMNS))
    for (device, benchmark, unit), group in measured.groupby(
        ["device", "benchmark", "unit"], sort=True
    ):
        per_shape = group.pivot_table(
            index="params", columns="machine", values="value", aggfunc="median"
        )
        present = sorted(per_shape.columns)
        if len(present) < 2:
            continue
        shared = per_shape[present].dropna()
        shared = shared[(shared > 0).all(axis=1)]  # a geometric mean needs positive values
        if shared.empty:
            continue
        first = present[0]
        commits = group.groupby("machine")["commit"].first()
        means = {m: float(np.exp(np.log(shared[m]).mean())) for m in present}
        for machine in present:
            ratio = means[machine] / means[first]
            speed = ratio if higher_is_better(str(unit)) else 1 / ratio
            found.append(
                {
                    "device": device,
                    "benchmark": benchmark,
                    "unit": unit,
                    "shapes": len(shared),
                    "machine": machine,
                    "commit": str(commits[machine])[:8],
                    "value": means[machine],
                    "speed": speed,
                    "first": first,
                }
            )
    return pd.DataFrame(found, columns=list(COLUMNS))
