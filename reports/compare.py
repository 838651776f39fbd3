"""Changes between two revisions (commits or machines), regressions flagged.

A result is a regression when it got worse by more than ``threshold``
(0.10 = 10 %) in the direction its unit says is worse (slower for times and
ns per element, lower for GB/s and speed-ups) and asv's 99 % confidence
intervals of the two sides, where both exist, do not overlap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from reports.asv_loader import STATUS_OK
from reports.errors import ReportInputError
from reports.selection import resolve_revision
from reports.units import higher_is_better

REGRESSED = "regressed"
IMPROVED = "improved"
UNCHANGED = "unchanged"
#: Beyond the threshold, but the two 99 % confidence intervals overlap: asv's
#: own rule (``asv continuous``) for a difference it cannot call real.
NOISE = "within noise"
NOT_COMPARABLE = "not comparable"


@dataclass(frozen=True)
class Comparison:
    rev_a: str
    rev_b: str
    threshold: float
    table: pd.DataFrame

    @property
    def regressions(self) -> pd.DataFrame:
        return self.table[self.table["change"] == REGRESSED]


def compare(
    frame: pd.DataFrame,
    rev_a: str,
    rev_b: str,
    *,
    threshold: float = 0.10,
    source: str = "the results folder",
) -> Comparison:
    """Pair the results of ``rev_a`` and ``rev_b`` and classify each change.

    Revisions are MACHINE, COMMIT (prefix) or MACHINE@COMMIT.  Comparing two
    commits pairs rows machine by machine; comparing two machines pairs rows
    across them (each side must then be one machine).
    """
    if not threshold > 0:
        raise ReportInputError(
            f"threshold must be positive, got {threshold}", fix="pass e.g. --threshold 0.1"
        )
    a = resolve_revision(frame, rev_a, source=source)
    b = resolve_revision(frame, rev_b, source=source)
    keys = ["benchmark", "params", "unit"]
    common = set(a["machine"]) & set(b["machine"])
    if common:
        # Same machine(s) on both sides: compare machine by machine, on those
        # both sides ran (a commit benchmarked on one more machine still compares).
        keys.insert(0, "machine")
        a = a[a["machine"].isin(common)]
        b = b[b["machine"].isin(common)]
    else:
        for rev, side in ((rev_a, a), (rev_b, b)):
            if side["machine"].nunique() > 1:
                raise ReportInputError(
                    f"revision {rev!r} has results on several machines "
                    f"({', '.join(sorted(side['machine'].unique()))}), none shared with the other side",
                    path=source,
                    fix="name the machine too: MACHINE@COMMIT",
                )
    side_a = _side(a, keys)
    side_b = _side(b, keys)
    table = side_a.merge(side_b, on=keys, how="outer", suffixes=("_a", "_b"))
    if not (table["value_a"].notna() & table["value_b"].notna()).any():
        raise ReportInputError(
            f"{rev_a!r} and {rev_b!r} have no benchmark result in common",
            path=source,
            fix="compare revisions that ran the same benchmarks (see results.csv for what each has)",
        )
    table["ratio"] = table["value_b"] / table["value_a"]
    table["change"] = [_classify(row, threshold) for row in table.to_dict("records")]
    order = {REGRESSED: 0, IMPROVED: 1, NOISE: 2, UNCHANGED: 3, NOT_COMPARABLE: 4}
    table = table.sort_values(
        by=["change", "benchmark", "params"],
        key=lambda s: s.map(order) if s.name == "change" else s,
    ).reset_index(drop=True)
    return Comparison(rev_a, rev_b, threshold, table)


def _side(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    ok = rows[rows["status"] == STATUS_OK]
    columns = [*keys, "value", "ci_99_a", "ci_99_b", "commit", "version_mismatch"]
    side = ok[columns].drop_duplicates(keys, keep="last")
    return side.rename(columns={"version_mismatch": "edited"})


def _classify(row: dict[str, Any], threshold: float) -> str:
    ratio = row["ratio"]
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return NOT_COMPARABLE
    worse = 1 / ratio if higher_is_better(row["unit"]) else ratio
    if 1 / (1 + threshold) <= worse <= 1 + threshold:
        return UNCHANGED
    if _intervals_overlap(row):
        return NOISE
    return REGRESSED if worse > 1 else IMPROVED


def _intervals_overlap(row: dict[str, Any]) -> bool:
    """Whether both sides have a 99 % confidence interval and they overlap.

    Without intervals (one sample, or a ``track_`` value) only the threshold
    decides, as in asv.
    """
    bounds: list[float] = []
    for key in ("ci_99_a_a", "ci_99_b_a", "ci_99_a_b", "ci_99_b_b"):
        value = row.get(key)
        if value is None or not math.isfinite(value):
            return False
        bounds.append(float(value))
    low_a, high_a, low_b, high_b = bounds
    return bool(high_a >= low_b and low_a <= high_b)
