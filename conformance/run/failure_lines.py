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

#: An async output class its producer cannot build: each check of it raises the same
#: TypeError, which the behaviour of the abstract method it lacks explains (Python 3.12
#: words it "without an implementation for abstract method 'm'").
_ABSTRACT = re.compile(
    r"raised TypeError\b.*Can't instantiate abstract class (\w+) with"
    r"(?:out an implementation for)? abstract methods? '?(\w+)"
)

#: A check that could not build the runner's step: the backend's ``ModelRunnerOutput``
#: refused the revision's fields, which its own surface failure explains.
_STEP_UNBUILT = re.compile(r"ModelRunnerOutput\(<the runner's step>\): raised ")
_STEP_CAUSES = ("ModelRunnerOutput.surface", "ModelRunnerOutput.dataclass")
_STEP_WHY = (
    "the runner's step cannot be built with the backend's ModelRunnerOutput: its fields "
    "are not the revision's"
)

#: A sampled id of the wrong type (``expected int 101000, found float 101000.0``): the
#: rows' own behaviour says so once, for every check of the producer that reads them.
_ROW_TYPE = re.compile(r"\.sampled_token_ids\[\d+\](?:\[\d+\])?: expected (\S+) .*, found (\S+) ")
_ROWS_CAUSES = ("producer.async_output:rows-as-lists", "producer.async_output:rows-as-arrays")
_ROWS_WHY = "the sampled ids are not of the type the rows hold"

#: The width of a line's message, after ``FAIL [behaviour] N check(s): ``.
_WIDTH = 140
_CAUSE_WIDTH = 300


def failures_by_behaviour(
    records: Any, where: Callable[[str], str | None] | None = None
) -> list[str]:
    """One line per behaviour that failed: how many checks, and the first message, short;
    the causes first, each with one line counting what follows from it: a class lacking
    an abstract method (every check that could not build it), a ``ModelRunnerOutput``
    the runner's step cannot be built with (its surface), then a race
    (:data:`CAUSES`: the same producer's wrong values).
    ``where(behaviour)`` names the backend's line the behaviour is about, where known
    (:func:`conformance.run.definitions.where_defined`)."""
    found: dict[str, list[Any]] = {}
    for record in records:
        if record.outcome in ("failed", "error") and record.behaviour:
            found.setdefault(record.behaviour, []).append(record)
    unbuilt = _unbuildable(found)
    # A race check whose step raised (the class cannot be built) found no race.
    races = [
        c
        for c in CAUSES
        if c in found
        and any(NOT_A_RACE not in r.message and ": raised " not in r.message for r in found[c])
    ]
    step = _step_cause(found)
    rows = next(
        (c for c in _ROWS_CAUSES if any(_wrong_row_type(r.message) for r in found.get(c, []))),
        None,
    )
    causes = [*unbuilt, *([step] if step else []), *([rows] if rows else []), *races]
    followers: dict[str, list[Any]] = {c: [] for c in causes}
    for behaviour, failed in found.items():
        for record in failed:
            cause = next(
                (c for c in unbuilt if c != behaviour and _lacking(record.message) == unbuilt[c]),
                None,
            )
            if (
                cause is None
                and step
                and behaviour != step
                and _STEP_UNBUILT.search(record.message)
            ):
                cause = step
            if (
                cause is None
                and rows
                and behaviour != rows
                and behaviour.split(":", 1)[0] == rows.split(":", 1)[0]
                and _wrong_row_type(record.message)
            ):
                cause = rows
            if cause is None and behaviour not in causes:
                cause = next((c for c in races if _follows_from(record, c, found[c])), None)
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
            lacking = unbuilt.get(behaviour)
            why = (
                f"{lacking[0]} cannot be built: it lacks {lacking[1]}"
                if lacking is not None
                else _STEP_WHY
                if behaviour == step
                else _ROWS_WHY
                if behaviour == rows
                else "values read before they arrived"
            )
            lines.append(_followers_line(behaviour, followers[behaviour], why))
    return lines


def _unbuildable(found: dict[str, list[Any]]) -> dict[str, tuple[str, str]]:
    """``{AsyncModelRunnerOutput.<method>: (class, method)}`` for each class whose checks
    raise that it lacks the abstract method, where that behaviour failed too."""
    causes: dict[str, tuple[str, str]] = {}
    for failed in found.values():
        for record in failed:
            lacking = _lacking(record.message)
            behaviour = f"AsyncModelRunnerOutput.{lacking[1]}" if lacking else ""
            if lacking is not None and behaviour in found and behaviour not in causes:
                causes[behaviour] = lacking
    return causes


def _wrong_row_type(message: str) -> bool:
    """Whether a check found a sampled id of another type than the one expected."""
    match = _ROW_TYPE.search(message)
    return match is not None and match[1] != match[2]


def _step_cause(found: dict[str, list[Any]]) -> str | None:
    """The failing surface behaviour of ``ModelRunnerOutput`` that explains the checks
    whose runner's step could not be built, where any could not."""
    if not any(_STEP_UNBUILT.search(r.message) for rs in found.values() for r in rs):
        return None
    return next((c for c in _STEP_CAUSES if c in found), None)


def _lacking(message: str) -> tuple[str, str] | None:
    """The class a check could not build and the abstract method it lacks, if that is
    what it raised."""
    match = _ABSTRACT.search(message)
    return (match[1], match[2]) if match is not None else None


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


def _followers_line(cause: str, followers: list[Any], why: str) -> str:
    counts: dict[str, int] = {}
    for record in followers:
        counts[record.behaviour] = counts.get(record.behaviour, 0) + 1
    producer = cause.split(":", 1)[0]
    named = ", ".join(
        f"{behaviour.removeprefix(producer + ':')} {n}" for behaviour, n in sorted(counts.items())
    )
    of = " of the same producer" if cause in CAUSES else ""
    return f"     and {len(followers)} more check(s){of} that follow from {cause} ({why}): {named}"


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
