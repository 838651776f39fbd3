"""The lines that close a failing run: one per behaviour, the cause first."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

#: Behaviours whose failure explains others: an async output that reads its copies
#: before they arrive spoils every value it returns.  Listed first; the failures of the
#: same producer on the same device that follow from it (wrong values, not an exception
#: of their own) are counted under it in one line, not listed again.
CAUSES = ("producer.async_output:waits-for-device", "producer.pooling_output:waits-for-device")
#: How a race check says that what it found is a wrong value, the same with the device
#: idle: no cause of other failures.
NOT_A_RACE = "a wrong value, not a race (the same with the device idle)"

#: The width of a line's message, after ``FAIL [behaviour] N check(s): ``.
_WIDTH = 140
_CAUSE_WIDTH = 300


def failures_by_behaviour(
    records: Any, where: Callable[[str], str | None] | None = None
) -> list[str]:
    """One line per behaviour that failed: how many checks, and the first message, short;
    a cause (:data:`CAUSES`) first, with one line counting what follows from it.
    ``where(behaviour)`` names the backend's line the behaviour is about, where known
    (:func:`conformance.run.definitions.where_defined`)."""
    found: dict[str, list[Any]] = {}
    for record in records:
        if record.outcome in ("failed", "error") and record.behaviour:
            found.setdefault(record.behaviour, []).append(record)
    causes = [
        c for c in CAUSES if c in found and any(NOT_A_RACE not in r.message for r in found[c])
    ]
    followers: dict[str, list[Any]] = {c: [] for c in causes}
    for behaviour, failed in found.items():
        if behaviour in causes:
            continue
        for record in failed:
            cause = next((c for c in causes if _follows_from(record, c, found[c])), None)
            if cause is not None:
                followers[cause].append(record)
    counted = {id(r) for rs in followers.values() for r in rs}
    lines = []
    for behaviour in [*causes, *sorted(b for b in found if b not in causes)]:
        own = [r for r in found[behaviour] if id(r) not in counted]
        if not own:
            continue
        at = where(behaviour) if where is not None else None
        located = f" (the backend's, at {at})" if at else ""
        lines.append(
            f"FAIL [{behaviour}] {len(own)} check(s){located}: {_first_line(behaviour, own)}"
        )

        if followers.get(behaviour):
            lines.append(_followers_line(behaviour, followers[behaviour]))
    return lines


def _follows_from(record: Any, cause: str, cause_records: list[Any]) -> bool:
    """Whether ``record`` fails as a read of values before they arrived makes it fail: the
    same producer on a device where the cause failed, wrong values (an exception raised
    is a failure of its own)."""
    if record.behaviour.split(":", 1)[0] != cause.split(":", 1)[0]:
        return False
    if ": raised " in record.message:
        return False
    devices = {getattr(r, "device", None) for r in cause_records}
    producers = {getattr(r, "producer", None) for r in cause_records}
    return getattr(record, "device", None) in devices and (
        getattr(record, "producer", None) in producers
    )


def _followers_line(cause: str, followers: list[Any]) -> str:
    counts: dict[str, int] = {}
    for record in followers:
        counts[record.behaviour] = counts.get(record.behaviour, 0) + 1
    producer = cause.split(":", 1)[0]
    named = ", ".join(
        f"{behaviour.removeprefix(producer + ':')} {n}" for behaviour, n in sorted(counts.items())
    )
    return (
        f"     and {len(followers)} more check(s) of the same producer that follow from "
        f"{cause} (values read before they arrived): {named}"
    )


def representative(records: list[Any]) -> Any:
    """The failure of a behaviour that says the most: the first, except that a type's
    fields (one added, removed or renamed) explain its other surface failures."""
    return min(records, key=lambda r: not str(getattr(r, "nodeid", "")).endswith("[fields]"))


def _first_line(behaviour: str, records: list[Any]) -> str:
    first = representative(records).message.removeprefix(f"[{behaviour}] ").splitlines()[0]
    first = _compact(first)
    # Where the backend raised is never cut: the exception's own words may be.  A cause
    # says what was read early, where, and what to wait for: it gets the room.
    located = first.find("`): ") + 3 if ": raised " in first else 0
    width = max(_CAUSE_WIDTH if behaviour in CAUSES else _WIDTH, located + 40)
    if len(first) > width:
        first = first[: width - 1] + "…"
    return first


def _compact(line: str) -> str:
    """``line`` without what the behaviour line does not need: a step described at length
    (its name stays) and a device said twice."""
    line = re.sub(r"<step (\S+?)(?: (?:of|on) [^>]*)?>", r"<step \1>", line)
    line = re.sub(r"\) on (?:an? )?(?:busy )?simulated \w+ runtime: ", "): ", line)
    if len(line) > _WIDTH:
        # An exception: keep where the backend raised it, the call shortened.
        call, sep, rest = line.partition(": raised ")
        if sep and len(call) > 100:
            line = call[:99] + "…" + sep + rest
    return line
