"""Declared deviations as the report names them: one per xfails entry that caught a
failure, its reason, the behaviours it covers, and whether anyone explained it.

An xfailed record's message is its entry's reason followed by the entry's label in
brackets (:func:`xfail_message`); the summary of a run and its terminal lines are read
back from the records, so a run under xdist, or one the supervisor finishes, says the
same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from conformance.report.schema import XFAIL_LABELS, XFAIL_PLACEHOLDER


def xfail_message(reason: str, label: str) -> str:
    """The message of a check an xfails entry caught: ``reason [label]``."""
    return f"{reason} [{label}]"


def split_xfail_message(message: str) -> tuple[str, str]:
    """``reason [label]`` -> ``(reason, label)``; a message of another form (a known
    defect of vLLM's own release the suite declares itself) -> ``(message, "")``."""
    reason, sep, label = message.rpartition(" [")
    label = label.removesuffix("]")
    if not sep or not message.endswith("]") or not label.startswith(XFAIL_LABELS):
        return message, ""
    return reason, label


def unexplained(reason: str) -> bool:
    """Whether ``reason`` is still the placeholder ``--write-xfails`` wrote."""
    return reason.startswith(XFAIL_PLACEHOLDER) or reason.strip() == XFAIL_PLACEHOLDER.strip()


def deviations(records: Iterable[Any]) -> list[dict[str, Any]]:
    """One entry per declared deviation that caught a failure, in the order of their
    labels: ``entry`` (``behaviour=...``, a node id, or None for a known defect of
    vLLM the suite declares), ``reason``, ``behaviours``, ``xfailed`` (how many checks)
    and ``unexplained``."""
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.outcome != "xfailed":
            continue
        reason, label = split_xfail_message(record.message)
        # A deviation the suite declares itself (a known defect of a vLLM release) has
        # no entry: one per behaviour, its first message as the reason.
        key = record.message if label else f"suite:{record.behaviour}"
        deviation = found.setdefault(
            key,
            {
                "entry": label or None,
                "reason": reason.splitlines()[0] if reason else "",
                "behaviours": [],
                "xfailed": 0,
                "unexplained": unexplained(reason),
            },
        )
        deviation["xfailed"] += 1
        if record.behaviour and record.behaviour not in deviation["behaviours"]:
            deviation["behaviours"].append(record.behaviour)
    for deviation in found.values():
        deviation["behaviours"].sort()
    return sorted(found.values(), key=lambda d: (d["entry"] or "", d["reason"]))


def summary_keys(records: Iterable[Any]) -> dict[str, Any]:
    """What ``summary`` says of the deviations beside its counts (schema.json)."""
    found = deviations(records)
    return {
        "known_deviations": len(found),
        "unexplained_deviations": sum(d["unexplained"] for d in found),
        "deviations": found,
    }


def headline(found: list[dict[str, Any]]) -> str:
    """``with 13 known deviations (2 unexplained)``, or "" without any."""
    if not found:
        return ""
    text = f"with {len(found)} known deviation{'' if len(found) == 1 else 's'}"
    unexplained_count = sum(d["unexplained"] for d in found)
    return text + (f" ({unexplained_count} unexplained)" if unexplained_count else "")


def terminal_lines(found: list[dict[str, Any]], write_option: str) -> list[str]:
    """The run's closing lines for its deviations: a headline, then one line each,
    the unexplained first (``write_option``: how the user spells ``--write-xfails``)."""
    if not found:
        return []
    lines = [f"{headline(found).removeprefix('with ')}: their checks are xfailed, not failed"]
    for deviation in sorted(found, key=lambda d: not d["unexplained"]):
        entry = deviation["entry"]
        named = entry.removeprefix("behaviour=") if entry else ", ".join(deviation["behaviours"])
        behaviours = [b for b in deviation["behaviours"] if b != named]
        covering = f" ({', '.join(behaviours)})" if behaviours else ""
        flag = (
            f" UNEXPLAINED: its reason is still the placeholder {write_option} wrote"
            if deviation["unexplained"]
            else ""
        )
        reason = str(deviation["reason"])
        if len(reason) > 140:
            reason = reason[:139] + "…"
        lines.append(f"XFAIL [{named}]{covering} {deviation['xfailed']} check(s){flag}: {reason}")
    return lines
