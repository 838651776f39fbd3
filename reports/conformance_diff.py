"""What changed between two runs of the conformance suite, behaviour by behaviour.

Each side is any number of reports (``python -m reports --conformance-diff BASE NEW``).
They are paired by matrix cell (backend, version, spec revision, device, machine:
:data:`reports.conformance_matrix.CELL_KEYS`), never across cells, and within a cell by
behaviour.  A behaviour's state in a cell is the worst of its checks: ``error``, else
``failed`` (a failure or an xpass), else ``passed`` (a pass or a declared deviation
that failed as declared), else ``skipped``.  What changed is one of :data:`CHANGES`;
the run is newly failing (exit 1) when a behaviour fails or errors in NEW that did
not in BASE, one only NEW has included.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reports import conformance_matrix
from reports.conformance_matrix import CELL_KEYS

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
#: A state in words for the side that does not have the behaviour.
ABSENT = "absent"

NEWLY_FAILING = "newly failing"
NEWLY_ERRORED = "newly errored"
NEWLY_PASSING = "newly passing"
NEWLY_SKIPPED = "newly skipped"
ONLY_IN_BASE = "only in BASE"
ONLY_IN_NEW = "only in NEW"
UNCHANGED = "unchanged"
#: Every change, in the order they are listed (what needs attention first).
CHANGES = (
    NEWLY_FAILING,
    NEWLY_ERRORED,
    NEWLY_PASSING,
    NEWLY_SKIPPED,
    ONLY_IN_NEW,
    ONLY_IN_BASE,
    UNCHANGED,
)
_INTO = {FAILED: NEWLY_FAILING, ERROR: NEWLY_ERRORED, PASSED: NEWLY_PASSING, SKIPPED: NEWLY_SKIPPED}
BAD_STATES = frozenset({FAILED, ERROR})

COLUMNS = (*CELL_KEYS, "behaviour", "base", "new", "change", "checks", "message")


@dataclass(frozen=True)
class ConformanceDiff:
    base: str
    new: str
    #: One row per cell and behaviour of either side (:data:`COLUMNS`).
    table: pd.DataFrame

    @property
    def newly_failing(self) -> pd.DataFrame:
        """Behaviours that fail or error in NEW and did not in BASE (or were not there)."""
        table = self.table
        fresh = table["change"].isin([NEWLY_FAILING, NEWLY_ERRORED])
        new_and_bad = (table["change"] == ONLY_IN_NEW) & table["new"].isin(BAD_STATES)
        return table[fresh | new_and_bad]

    def changed(self, change: str) -> pd.DataFrame:
        return self.table[self.table["change"] == change]


def behaviour_states(keyed: pd.DataFrame) -> pd.DataFrame:
    """One row per cell and behaviour: its state, how many checks, the first bad message
    (``keyed`` as :func:`reports.conformance_matrix.keyed` gives it)."""
    columns = [*CELL_KEYS, "behaviour", "state", "checks", "message"]
    if keyed.empty:
        return pd.DataFrame(columns=columns)
    rows = keyed.assign(behaviour=conformance_matrix.behaviour_names(keyed))
    found = []
    for key, group in rows.groupby([*CELL_KEYS, "behaviour"], sort=True, observed=True):
        outcomes = set(group["outcome"].astype(str))
        state = _state(outcomes)
        bad = group[group["outcome"].astype(str).isin(_outcomes_of(state))]
        message = str(bad["message"].iloc[0]) if state in BAD_STATES and not bad.empty else ""
        found.append((*key, state, len(group), message))
    return pd.DataFrame(found, columns=columns)


def _state(outcomes: set[str]) -> str:
    if "error" in outcomes:
        return ERROR
    if outcomes & {"failed", "xpassed"}:
        return FAILED
    if outcomes & {"passed", "xfailed"}:
        return PASSED
    return SKIPPED


def _outcomes_of(state: str) -> set[str]:
    return {ERROR: {"error"}, FAILED: {"failed", "xpassed"}}.get(state, set())


def diff(
    base: pd.DataFrame, new: pd.DataFrame, *, base_name: str, new_name: str
) -> ConformanceDiff:
    """What changed from ``base`` to ``new`` (both keyed), per cell and behaviour."""
    keys = [*CELL_KEYS, "behaviour"]
    before = behaviour_states(base).rename(columns={"state": "base", "checks": "checks_base"})
    after = behaviour_states(new).rename(columns={"state": "new"})
    table = before.drop(columns="message").merge(after, on=keys, how="outer")
    table["base"] = table["base"].fillna(ABSENT)
    table["new"] = table["new"].fillna(ABSENT)
    table["checks"] = table["checks"].fillna(table["checks_base"]).astype(int)
    table["message"] = table["message"].fillna("")
    table["change"] = [_change(b, n) for b, n in zip(table["base"], table["new"], strict=True)]
    order = {change: i for i, change in enumerate(CHANGES)}
    table = table.sort_values(
        ["change", *keys], key=lambda s: s.map(order) if s.name == "change" else s
    ).reset_index(drop=True)
    return ConformanceDiff(base_name, new_name, table[list(COLUMNS)])


def _change(before: str, after: str) -> str:
    if before == ABSENT:
        return ONLY_IN_NEW
    if after == ABSENT:
        return ONLY_IN_BASE
    if before == after:
        return UNCHANGED
    return _INTO[after]


def cell_label(row: dict[str, object]) -> str:
    """``reference 0.1.0 · 0.12.0 · cpu · box-a``: a cell as the matrix names it."""
    return " · ".join(str(row[k]) for k in CELL_KEYS)
