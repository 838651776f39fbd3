"""Picking rows by machine and commit, with errors a user can act on.

A *revision* on the command line names what to look at:
``MACHINE`` (its most recent commit), ``COMMIT`` (a hash prefix, on every
machine that has it) or ``MACHINE@COMMIT``.
"""

from __future__ import annotations

import pandas as pd

from reports.errors import ReportInputError


def latest_per_machine(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of each machine's most recent commit (by commit date).

    The summary and plots describe one state of the code per machine; older
    commits are what ``--compare`` is for.
    """
    if frame.empty:
        return frame
    keep = []
    for _, rows in frame.groupby("machine", sort=True):
        order = rows.sort_values(["date", "commit"], kind="stable")
        keep.append(one_environment(rows[rows["commit"] == order["commit"].iloc[-1]]))
    return pd.concat(keep, ignore_index=True)


def one_environment(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of one environment per machine and commit.

    A commit benchmarked both in the current interpreter and in an asv
    virtualenv (``asv continuous``) has two result sets; tables keyed by
    machine and device can show one, so take the one with most results.
    """
    keep = []
    for _, group in rows.groupby(["machine", "commit"], sort=True):
        if group["env"].nunique() > 1:
            ok = group[group["status"] == "ok"].groupby("env").size()
            group = group[group["env"] == ok.sort_index().idxmax()] if not ok.empty else group
        keep.append(group)
    return pd.concat(keep, ignore_index=True) if keep else rows


def select(
    frame: pd.DataFrame,
    *,
    machine: str | None = None,
    commit: str | None = None,
    source: str = "the results folder",
) -> pd.DataFrame:
    """Rows of ``machine`` and/or commits starting with ``commit``.

    Raises :class:`ReportInputError` for a machine or commit with no rows,
    listing what is there.
    """
    rows = frame
    if machine is not None:
        rows = rows[rows["machine"] == machine]
        if rows.empty:
            known = ", ".join(sorted(frame["machine"].unique())) or "none"
            raise ReportInputError(
                f"unknown machine {machine!r} (machines with results: {known})",
                path=source,
                fix="pass one of those names, or run the benchmarks on that machine",
            )
    if commit is not None:
        matched = rows[rows["commit"].str.startswith(commit.lower())]
        if matched.empty:
            known = ", ".join(sorted({c[:8] for c in rows["commit"].unique()})) or "none"
            where = f" on machine {machine!r}" if machine else ""
            raise ReportInputError(
                f"no benchmark results for commit {commit!r}{where} (commits with results: {known})",
                path=source,
                fix=(
                    "run the benchmarks at that commit (`git checkout REV && nox -s bench`) "
                    "or choose a listed commit"
                ),
            )
        hashes = matched["commit"].unique()
        if len(hashes) > 1:
            raise ReportInputError(
                f"commit prefix {commit!r} is ambiguous ({', '.join(h[:12] for h in hashes)})",
                path=source,
                fix="give more characters of the hash",
            )
        rows = matched
    return rows


def resolve_revision(
    frame: pd.DataFrame, revision: str, *, source: str = "the results folder"
) -> pd.DataFrame:
    """Rows a ``--compare`` revision names: MACHINE, COMMIT or MACHINE@COMMIT."""
    if "@" in revision:
        machine, commit = revision.split("@", 1)
        return select(frame, machine=machine, commit=commit, source=source)
    if revision in set(frame["machine"]):
        return latest_per_machine(select(frame, machine=revision, source=source))
    if not all(c in "0123456789abcdefABCDEF" for c in revision):
        # Not hex, so it can only have meant a machine.
        return select(frame, machine=revision, source=source)
    return select(frame, commit=revision, source=source)
