"""Changes between two revisions of the code, each machine compared only with itself.

Numbers of two machines differ by the machine, not only by the code, so the gate
never pairs them: a revision pair with no machine in common is refused, and a machine
only one side ran is named as not compared.  A result is a regression when it got worse by more than ``threshold``
(0.10 = 10 %) in the direction its unit says is worse (slower for times and
ns per element, lower for GB/s and speed-ups) and asv's 99 % confidence
intervals of the two sides, where both exist, do not overlap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
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
    #: Each machine compared, with itself: ``{machine: (commit of A, commit of B)}``.
    machines: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Machines only one side ran, not compared: ``{"A": [...], "B": [...]}``.
    not_compared: dict[str, list[str]] = field(default_factory=dict)

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

    Revisions are MACHINE, COMMIT (prefix) or MACHINE@COMMIT.  Rows are paired machine
    by machine, on the machines both sides ran: a machine is only ever compared with
    itself.  Two sides with no machine in common are refused.
    """
    if not threshold > 0:
        raise ReportInputError(
            f"threshold must be positive, got {threshold}", fix="pass e.g. --threshold 0.1"
        )
    a = resolve_revision(frame, rev_a, source=source)
    b = resolve_revision(frame, rev_b, source=source)
    keys = ["machine", "benchmark", "params", "unit"]
    common = set(a["machine"]) & set(b["machine"])
    if not common:
        raise ReportInputError(
            f"{rev_a!r} ran on {_names(a)} and {rev_b!r} on {_names(b)}: the compare gate "
            "only compares a machine with itself (two machines' numbers differ by the "
            "machine, not only by the code)",
            path=source,
            fix="compare two commits of one machine (MACHINE@COMMIT MACHINE@COMMIT); the "
            "report puts the machines side by side without a verdict",
        )
    not_compared = {
        side: sorted(set(rows["machine"]) - common)
        for side, rows in (("A", a), ("B", b))
        if set(rows["machine"]) - common
    }
    a = a[a["machine"].isin(common)]
    b = b[b["machine"].isin(common)]
    machines = {m: (_commit_of(a, m), _commit_of(b, m)) for m in sorted(common)}
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
    return Comparison(rev_a, rev_b, threshold, table, machines, not_compared)


def _names(rows: pd.DataFrame) -> str:
    return ", ".join(sorted(rows["machine"].unique())) or "no machine"


def _commit_of(rows: pd.DataFrame, machine: str) -> str:
    """The commit(s) of ``machine`` on one side, short."""
    return ", ".join(sorted({c[:8] for c in rows.loc[rows["machine"] == machine, "commit"]}))


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
