"""Known deviations of a conformance report, read back from its xfailed rows.

An xfailed check's message is its xfails entry's reason followed by the entry's label
in brackets (``we rebase cu [behaviour=LogprobsLists.slice:cu-not-rebased]``); a
known defect of vLLM's own release the suite declares itself has no label.  One
deviation per entry (per behaviour for the suite's own); a reason still starting with
the placeholder ``--write-xfails`` writes is unexplained.  The same reading as the
suite's (``conformance/report/deviations.py``), from the names of the schema file both
sides read.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reports.conformance_schema import XFAIL_LABELS, XFAIL_PLACEHOLDER


@dataclass(frozen=True)
class Deviation:
    #: ``behaviour=...`` or a node id; "" for a known defect the suite declares itself.
    entry: str
    reason: str
    behaviours: tuple[str, ...]
    checks: int
    unexplained: bool

    @property
    def named(self) -> str:
        """What it deviates in: its behaviour(s), or the node id it names."""
        if self.entry.startswith("behaviour="):
            return self.entry.removeprefix("behaviour=")
        return self.entry or ", ".join(self.behaviours)


def _split(message: str) -> tuple[str, str]:
    reason, sep, label = message.rpartition(" [")
    label = label.removesuffix("]")
    if not sep or not message.endswith("]") or not label.startswith(XFAIL_LABELS):
        return message, ""
    return reason, label


def deviations(rows: pd.DataFrame) -> list[Deviation]:
    """The deviations the xfailed rows of ``rows`` (one report) declare, by entry."""
    xfailed = rows[rows["outcome"] == "xfailed"]
    found: dict[str, tuple[str, str, list[str], int]] = {}
    for message, behaviour in zip(
        xfailed["message"].fillna("").astype(str), xfailed["behaviour"], strict=True
    ):
        reason, label = _split(message)
        key = message if label else f"suite:{behaviour}"
        entry, first, behaviours, count = found.get(
            key, (label, reason.splitlines()[0] if reason else "", [], 0)
        )
        if isinstance(behaviour, str) and behaviour not in behaviours:
            behaviours.append(behaviour)
        found[key] = (entry, first, behaviours, count + 1)
    return sorted(
        (
            Deviation(entry, reason, tuple(sorted(behaviours)), count, _unexplained(reason))
            for entry, reason, behaviours, count in found.values()
        ),
        key=lambda d: (not d.unexplained, d.entry, d.reason),
    )


def _unexplained(reason: str) -> bool:
    return reason.startswith(XFAIL_PLACEHOLDER) or reason.strip() == XFAIL_PLACEHOLDER.strip()


def headline(found: list[Deviation]) -> str:
    """``with 13 known deviations (2 unexplained)``, or "" without any."""
    if not found:
        return ""
    text = f"with {len(found)} known deviation{'' if len(found) == 1 else 's'}"
    unexplained = sum(d.unexplained for d in found)
    return text + (f" ({unexplained} unexplained)" if unexplained else "")
