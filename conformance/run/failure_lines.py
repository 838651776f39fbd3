"""The lines that close a failing run: one per behaviour, the cause first."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

#: Behaviours whose failure explains others: an async output that reads its copies
#: before they arrive spoils every value it returns.  Listed first; the failures of the
#: same producer on the same device that follow from it (wrong values, not an exception
#: of their own) are counted under it in one line, not listed again.
CAUSES = ("producer.async_output:waits-for-device", "producer.pooling_output:waits-for-device")
#: How a race check says that what it found is a wrong value, the same with the device
#: idle: no cause of other failures.
NOT_A_RACE = "a wrong value, not a race (the same with the device idle)"

#: Why a read before the wait is one, said after the copies read early and what each
#: should have waited for: the behaviour's line leaves it to the report, for room.
COPY_RULE = (
    "a copy is complete only once the host waited for an event recorded after it (or for "
    "its stream, or the device); record the event after every copy and wait for it before "
    "reading any"
)

#: How a check says that an async output's row goes on past its request's kept tokens:
#: an unpadding by the wrong rule, which every check of rows of that step meets.
KEPT_PAST = "a row goes on past its kept tokens"
#: How that message says the row keeps none of them (a discarded request's, not emptied).
KEPT_NONE = "where it keeps none"
#: The behaviours that name that rule, the first failing one the cause.
_UNPADDING_CAUSES = (
    "producer.async_output:unpads-multi-token-rows",
    "producer.async_output:step-discarded-rows",
)

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

#: A type the revision's fields hold that the backend's module lacks: every check of it
#: fails with the same line, which its surface behaviour explains.
_TYPE_ABSENT = re.compile(r"\.(\w+): no such name, and revision \S+'s types hold one")

#: A check stopped by its time limit inside the backend's code: every check stopped at
#: the same line follows from the first behaviour stopped there (a call that never
#: returns is no missing wait).
_STUCK = re.compile(r"timed out after [^:]*: stuck in .*?, at (\S+:\d+) in (\S+)")

#: An exception the backend's own line raised (``raised AttributeError at w.py:51``):
#: every check it stopped follows from the first behaviour it stopped.
_RAISED_AT = re.compile(r": raised (\w+) at (\S+:\d+) ")

#: A sampled id of the wrong type (``expected int 101000, found float 101000.0``): the
#: rows' own behaviour says so once, for every check of the producer that reads them.
_ROW_TYPE = re.compile(r"\.sampled_token_ids\[\d+\](?:\[\d+\])?: expected (\S+) .*, found (\S+) ")
_ROWS_CAUSES = ("producer.async_output:rows-as-lists", "producer.async_output:rows-as-arrays")
_ROWS_WHY = "the sampled ids are not of the type the rows hold"

#: One copy an async output handed back without waiting for it, as the race check
#: lists each after the first read early.
_RETURNED_EARLY = re.compile(
    r"; [\w.\[\]]+(?: \([^()]*\))?: get_output\(\) returned before its copy arrived "
    r"\(no wait covered it\)"
)

#: The width of a line's message, after ``FAIL [behaviour] N check(s): ``.
_WIDTH = 180
_CAUSE_WIDTH = 300


def failures_by_behaviour(
    records: Any, where: Callable[[str], str | None] | None = None
) -> list[str]:
    """One line per behaviour that failed: how many checks, and the first message, short;
    the causes first (:data:`_CAUSE_KINDS`, in that order), each with one line counting
    the failures that follow from it.
    ``where(behaviour)`` names the backend's line the behaviour is about, where known
    (:func:`conformance.run.definitions.where_defined`)."""
    found: dict[str, list[Any]] = {}
    for record in records:
        if record.outcome in ("failed", "error") and record.behaviour:
            found.setdefault(record.behaviour, []).append(record)
    causes: list[_Cause] = []
    for kind in _CAUSE_KINDS:
        for found_cause in kind(found):
            # One cause a behaviour: a second of the same line would pool its followers
            # under the first's explanation.
            if all(c.behaviour != found_cause.behaviour for c in causes):
                causes.append(found_cause)
    followers = _followers(found, causes)
    # A cause each of whose own failures follows from another cause has no line to count
    # its followers under: it is no cause, and they are counted anew without it.
    while hollow := {
        c.behaviour
        for c in causes
        if {id(r) for r in found[c.behaviour]}
        <= {id(r) for b, f in followers.items() if b != c.behaviour for r in f}
    }:
        causes = [c for c in causes if c.behaviour not in hollow]
        followers = _followers(found, causes)
    counted = {id(r) for rs in followers.values() for r in rs}
    why = {c.behaviour: c.why for c in causes}
    lines = []
    for behaviour in [*why, *sorted(b for b in found if b not in why)]:
        own = [r for r in found[behaviour] if id(r) not in counted]
        if not own:
            continue
        at = where(behaviour) if where is not None else None
        located = f" (the backend's, at {at})" if at else ""
        lines.append(
            f"FAIL [{behaviour}] {len(own)} check(s){located}: "
            f"{_first_line(behaviour, own, cause=behaviour in why)}"
        )
        if followers.get(behaviour):
            lines.append(_followers_line(behaviour, followers[behaviour], why[behaviour]))
    return lines


def _followers(found: dict[str, list[Any]], causes: list[_Cause]) -> dict[str, list[Any]]:
    """Each cause's followers: every failure is counted under the first cause that
    explains it, in the causes' order, where that is not its own behaviour's."""
    followers: dict[str, list[Any]] = {c.behaviour: [] for c in causes}
    for behaviour, failed in found.items():
        for record in failed:
            cause = next((c for c in causes if c.explains(record, followers)), None)
            if cause is not None and cause.behaviour != behaviour:
                followers[cause.behaviour].append(record)
    return followers


@dataclass(frozen=True)
class _Cause:
    """A failing behaviour that explains failures of others: ``explains(record,
    causes)`` (``causes``: every cause found, by behaviour) says whether ``record`` fails
    only through it, ``why`` says how, in the line that counts them."""

    behaviour: str
    why: str
    explains: Callable[[Any, dict[str, list[Any]]], bool]


#: What a cause's pattern reads from a message to tell its failures apart.
_Key = Callable[[re.Match[str]], tuple[str, ...]]


def _abstract_methods_lacking(found: dict[str, list[Any]]) -> list[_Cause]:
    """A class its producer cannot build, where the behaviour of the abstract method it
    lacks failed too: every check that raised the same TypeError follows from it."""
    causes: dict[str, _Cause] = {}
    for failed in found.values():
        for record in failed:
            lacking = _lacking(record.message)
            behaviour = f"AsyncModelRunnerOutput.{lacking[1]}" if lacking else ""
            if lacking is not None and behaviour in found and behaviour not in causes:
                causes[behaviour] = _Cause(
                    behaviour,
                    f"{lacking[0]} cannot be built: it lacks {lacking[1]}",
                    partial(_raised_lacking, lacking),
                )
    return list(causes.values())


def _step_unbuildable(found: dict[str, list[Any]]) -> list[_Cause]:
    """The failing surface behaviour of ``ModelRunnerOutput`` that explains the checks
    whose runner's step could not be built, where any could not."""
    if not any(_STEP_UNBUILT.search(r.message) for rs in found.values() for r in rs):
        return []
    behaviour = next((c for c in _STEP_CAUSES if c in found), None)
    if behaviour is None:
        return []
    return [_Cause(behaviour, _STEP_WHY, lambda r, _: bool(_STEP_UNBUILT.search(r.message)))]


def _types_absent(found: dict[str, list[Any]]) -> list[_Cause]:
    """A held type the backend's module lacks: its surface behaviour (else the first
    behaviour that says so) explains every check that failed for the same name."""
    causes = []
    for (name,), behaviours in sorted(_said(found, _TYPE_ABSENT, _name_of).items()):
        surface = f"{name}.surface"
        causes.append(
            _Cause(
                surface if surface in found else min(behaviours),
                f"the backend's module has no {name}",
                partial(_says, _TYPE_ABSENT, _name_of, (name,)),
            )
        )
    return causes


def _said(
    found: dict[str, list[Any]], pattern: re.Pattern[str], key: _Key
) -> dict[tuple[str, ...], set[str]]:
    """What ``pattern`` finds in the failures' messages (by ``key``), with the
    behaviours whose failures say it."""
    places: dict[tuple[str, ...], set[str]] = {}
    for behaviour, failed in found.items():
        for record in failed:
            match = pattern.search(record.message)
            if match is not None:
                places.setdefault(key(match), set()).add(behaviour)
    return places


def _says(
    pattern: re.Pattern[str], key: _Key, wanted: tuple[str, ...], record: Any, _: Any
) -> bool:
    """Whether ``record``'s message says what ``wanted`` is, as :func:`_said` reads it."""
    match = pattern.search(record.message)
    return match is not None and key(match) == wanted


def _name_of(match: re.Match[str]) -> tuple[str, ...]:
    return (match[1],)


def _place_of(match: re.Match[str]) -> tuple[str, ...]:
    return (match[1], match[2])


def _rows_kept_past(found: dict[str, list[Any]]) -> list[_Cause]:
    """An async output unpadding by another rule than the release's: the behaviour that
    names the rule explains every check of the same producer that found a row going on
    past its kept tokens the same way (after them; or where it keeps none, a discarded
    row not emptied, which is its own fix)."""
    causes = []
    # Rows read before they arrived hold whatever was there: the race is the cause.
    raced = _raced_producers(found)

    def kept_past(record: Any, keeps_none: bool) -> bool:
        return _kept_past_kind(record.message) is keeps_none and _on_device(record) not in raced

    for keeps_none, order in ((False, _UNPADDING_CAUSES), (True, _UNPADDING_CAUSES[::-1])):
        behaviour = next(
            (c for c in order if any(kept_past(r, keeps_none) for r in found.get(c, []))),
            None,
        )
        if behaviour is None:
            continue
        producers = {
            getattr(r, "producer", None) for r in found[behaviour] if kept_past(r, keeps_none)
        }
        causes.append(
            _Cause(
                behaviour,
                "rows holding more than their requests' kept tokens",
                partial(_kept_past_alike, behaviour.split(":", 1)[0], producers, keeps_none),
            )
        )
    return causes


def _kept_past_kind(message: str) -> bool | None:
    """Whether a row kept past its tokens keeps none (a discarded row not emptied);
    None where the message says no row went on past its tokens."""
    if KEPT_PAST not in message:
        return None
    return KEPT_NONE in message


def _kept_past_alike(
    family: str, producers: set[Any], keeps_none: bool, record: Any, _: dict[str, list[Any]]
) -> bool:
    return (
        record.behaviour.split(":", 1)[0] == family
        and getattr(record, "producer", None) in producers
        and _kept_past_kind(record.message) is keeps_none
    )


def _rows_of_wrong_type(found: dict[str, list[Any]]) -> list[_Cause]:
    """The rows' own behaviour, where it found a sampled id of the wrong type: every
    check of the same producer that found one follows from it."""
    behaviour = next(
        (c for c in _ROWS_CAUSES if any(_wrong_row_type(r.message) for r in found.get(c, []))),
        None,
    )
    if behaviour is None:
        return []
    producer = behaviour.split(":", 1)[0]
    return [
        _Cause(
            behaviour,
            _ROWS_WHY,
            lambda r, _: r.behaviour.split(":", 1)[0] == producer and _wrong_row_type(r.message),
        )
    ]


def _stuck(found: dict[str, list[Any]]) -> list[_Cause]:
    """Checks stopped by their time limit at one line of the backend's: the first
    behaviour stopped there (a race check's last, as a hang is no race) explains them."""
    return [
        _Cause(
            min(behaviours, key=lambda b: (b in CAUSES, b)),
            f"stuck in {function} at {line}, past the time limit",
            partial(_says, _STUCK, _place_of, (line, function)),
        )
        for (line, function), behaviours in sorted(_said(found, _STUCK, _place_of).items())
        if len(behaviours) > 1
    ]


def _raised_at_one_line(found: dict[str, list[Any]]) -> list[_Cause]:
    """One exception raised at one line of the backend's, in checks of several
    behaviours: the first of them explains the others."""
    return [
        _Cause(
            min(behaviours),
            f"{error} raised at {line}",
            partial(_says, _RAISED_AT, _place_of, (error, line)),
        )
        for (error, line), behaviours in sorted(_said(found, _RAISED_AT, _place_of).items())
        if len(behaviours) > 1
    ]


def _races(found: dict[str, list[Any]]) -> list[_Cause]:
    """A producer that read its copies before they arrived (:data:`CAUSES`): the same
    producer's wrong values on the same device follow from it, unless they are failures
    of a cause of their own.  A race check whose step raised (the class cannot be built)
    or found a wrong value with the device idle found no race."""
    return [
        _Cause(
            c,
            "values read before they arrived",
            partial(_race_follower, c, found[c]),
        )
        for c in CAUSES
        if any(_found_a_race(r) for r in found.get(c, []))
    ]


def _found_a_race(record: Any) -> bool:
    """Whether a race check's failure is a read before arrival: not a wrong value with
    the device idle, not a step that raised, not a call that never returned."""
    return (
        NOT_A_RACE not in record.message
        and ": raised " not in record.message
        and _STUCK.search(record.message) is None
    )


def _raced_producers(found: dict[str, list[Any]]) -> set[tuple[Any, Any]]:
    """The producers, each with its device, a race check caught reading before arrival."""
    return {_on_device(r) for c in CAUSES for r in found.get(c, []) if _found_a_race(r)}


def _on_device(record: Any) -> tuple[Any, Any]:
    return getattr(record, "producer", None), getattr(record, "device", None)


def _one_wrong_value(found: dict[str, list[Any]]) -> list[_Cause]:
    """One wrong value, said alike (word for word but for its numbers) by checks of
    several behaviours of one producer (``.sampled_token_ids: expected 3 items, found 0``
    on every step that reads the rows, whatever its size): the producer's own behaviour
    where it is one of them, else the one failing most often so, explains the others,
    and the race check's "a wrong value, not a race" of the same producer on the same
    device.  Values read before they arrived are the race's."""
    raced = _raced_producers(found)
    places: dict[str, dict[str, int]] = {}
    for behaviour, failed in found.items():
        for record in failed:
            said = _wrong_value(record)
            if said is not None and _on_device(record) not in raced:
                counts = places.setdefault(said, {})
                counts[behaviour] = counts.get(behaviour, 0) + 1
    causes = []
    for said, counts in sorted(places.items()):
        if len(counts) < 2:
            continue
        cause = min(counts, key=lambda b: (":" in b, -counts[b], b))
        # As its own line says it, numbers and all.
        shown = next(_first_said(r) for r in found[cause] if _wrong_value(r) == said)
        sources = {_on_device(r) for b in counts for r in found[b] if _wrong_value(r) == said}
        causes.append(
            _Cause(
                cause,
                f"one wrong value: {_shown(shown)}",
                partial(_said_or_no_race, said, cause.split(":", 1)[0], sources),
            )
        )
    return causes


def _wrong_value(record: Any) -> str | None:
    """What a check found wrong, without the step it found it on; None for an exception
    raised, a call stopped by its time limit, or a race check's verdict (causes of
    their own kinds)."""
    message = record.message.removeprefix(f"[{record.behaviour}] ").splitlines()
    if not message or ": raised " in message[0] or _STUCK.search(message[0]):
        return None
    if NOT_A_RACE in message[0] or record.behaviour in CAUSES:
        return None
    said = _first_said(record)
    expected, found_, rest = said.partition(", found ")
    # What was expected varies with the step (its size); what was found is the bug's own.
    return re.sub(r"\d+", "N", expected) + found_ + rest


def _first_said(record: Any) -> str:
    """A check's first line, without the step it was found on."""
    line = record.message.removeprefix(f"[{record.behaviour}] ").splitlines()[0]
    return re.sub(r"<step [^>]*>", "<step>", line)


def _shown(said: str) -> str:
    """A wrong value as the counting line names it: what was read and what was found."""
    return shortened(said.split(".get_output()", 1)[-1].lstrip("."), 100)


def _said_or_no_race(
    said: str, family: str, sources: set[tuple[Any, Any]], record: Any, _: Any
) -> bool:
    if record.behaviour.split(":", 1)[0] != family or _on_device(record) not in sources:
        return False
    return _wrong_value(record) == said or (
        record.behaviour in CAUSES and NOT_A_RACE in record.message
    )


#: The kinds of cause, in the order their lines come: a class lacking an abstract method
#: (every check that could not build it), a ``ModelRunnerOutput`` the runner's step cannot
#: be built with (its surface), a held type the module lacks, rows unpadded by another
#: rule, sampled ids of the wrong type, a call that never returned, one exception at one
#: line, a race, then one wrong value found by several behaviours.
_CAUSE_KINDS: tuple[Callable[[dict[str, list[Any]]], list[_Cause]], ...] = (
    _abstract_methods_lacking,
    _step_unbuildable,
    _types_absent,
    _rows_kept_past,
    _rows_of_wrong_type,
    _stuck,
    _raised_at_one_line,
    _races,
    _one_wrong_value,
)


def _raised_lacking(lacking: tuple[str, str], record: Any, _: dict[str, list[Any]]) -> bool:
    return _lacking(record.message) == lacking


def _race_follower(
    cause: str, cause_records: list[Any], record: Any, causes: dict[str, list[Any]]
) -> bool:
    return record.behaviour not in causes and _follows_from(record, cause, cause_records)


def _wrong_row_type(message: str) -> bool:
    """Whether a check found a sampled id of another type than the one expected."""
    match = _ROW_TYPE.search(message)
    return match is not None and match[1] != match[2]


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


def _first_line(behaviour: str, records: list[Any], cause: bool = False) -> str:
    first = representative(records).message.removeprefix(f"[{behaviour}] ").splitlines()[0]
    first = _compact(first)
    # Where the backend raised is never cut: the exception's own words may be.  A cause
    # says what went wrong, where, and what to do instead: it gets the room.
    located = first.find("`): ") + 3 if ": raised " in first else 0
    width = max(_CAUSE_WIDTH if cause or behaviour in CAUSES else _WIDTH, located + 40)
    return shortened(first, width, keep=located)


def shortened(line: str, width: int, keep: int = 0) -> str:
    """``line`` within ``width``: its middle left out, at a clause's end where there is
    one, so that what failed (its start, at least ``keep`` characters) and the fix (its
    end) both stay.  Long lists lose their middle items first, and no cut falls inside
    a list: one across two lists would splice what was found onto what was expected."""
    if len(line) <= width:
        return line
    original = line
    for kept in (3, 1):
        rest = _LONG_LIST.sub(functools.partial(_list_shortened, kept=kept), original[keep:])
        line = original[:keep] + rest
        if len(line) <= width:
            return line
    outside = _outside_lists(line)
    head_room = max(width * 2 // 3, keep)
    # The head to the end of a clause ("; "), else of a word, outside any list.
    low = max(keep, head_room // 2)
    cut = _last_at(line, ("; ",), low, head_room, outside)
    if cut is None:
        cut = _last_at(line, (" ",), low, head_room, outside) or line.rfind(" ", low, head_room)
    head = line[:cut] if cut > 0 else line[:head_room]
    room = width - len(head) - 3
    if room < 20:
        return head + " …"  # no room for an end worth reading
    start = len(line) - room
    # The tail from the start of a clause (after "; ", ": " or ", "), else of a word,
    # outside any list, where one is near.
    found = _first_at(line, ("; ", ": ", ", "), start, start + room // 2, outside)
    if found is None:
        found = _first_at(line, (" ",), start, len(line), outside)
    tail = line[found:].lstrip(";:, ") if found is not None else line[start:]
    # A tail of expected values says so: one starting past the word would read as found.
    expected = line.rfind("expected ", len(head), len(line) - len(tail))
    if expected >= 0 and "expected " not in tail:
        room = width - (len(line) - expected) - 3
        cut = _last_at(line, ("; ", ", ", " "), max(keep, room // 2), room, outside)
        if cut is not None and cut >= 40:
            head, tail = line[:cut], line[expected:]
    return f"{head} … {tail}"


def _outside_lists(line: str) -> list[bool]:
    """Per character of ``line``, whether it stands outside every bracketed list."""
    depth, outside = 0, []
    for char in line:
        depth += char in "[("
        outside.append(depth == 0)
        depth -= char in ")]" and depth > 0
    return outside


def _last_at(
    line: str, marks: tuple[str, ...], low: int, high: int, outside: list[bool]
) -> int | None:
    for i in range(high - 1, low - 1, -1):
        if outside[i] and line.startswith(marks, i):
            return i
    return None


def _first_at(
    line: str, marks: tuple[str, ...], low: int, high: int, outside: list[bool]
) -> int | None:
    for i in range(low, min(high, len(line))):
        if outside[i] and line.startswith(marks, i):
            return i
    return None


#: A bracketed list of more than five plain items (numbers, names, quoted words), or a
#: parenthesised one of names (``fields (req_ids, sampled_token_ids, ...)``).
_LONG_LIST = re.compile(r"\[((?:[^\[\](),]+, ){5,}[^\[\](),]+)\]|\(((?:[\w.'-]+, ){5,}[\w.'-]+)\)")


def _list_shortened(match: re.Match[str], kept: int) -> str:
    bracketed = match.group(1) is not None
    items = (match.group(1) if bracketed else match.group(2)).split(", ")
    opening, closing = ("[", "]") if bracketed else ("(", ")")
    return f"{opening}{', '.join(items[:kept])}, …, {items[-1]}{closing}"


def _compact(line: str) -> str:
    """``line`` without what the behaviour line does not need: a step described at length
    (its name stays) and a device said twice."""
    line = re.sub(r"<step (\S+?)(?: (?:of|on) [^>]*)?>", r"<step \1>", line)
    line = re.sub(r"<pooling step ((?:of \d+ requests)|\S+) on [^>]*>", r"<pooling step \1>", line)
    line = re.sub(r"\) on (?:an? )?(?:busy )?simulated \w+ runtime: ", "): ", line)
    line = line.replace(f": {COPY_RULE}", "")
    # Where the copy started is the report's: the line keeps what was read, where, and
    # what to wait for.
    line = re.sub(r" \(its copy started at [^()]*\)", " (...)", line)
    # Copies handed back unwaited, after the first read early and its fix: counted, so
    # that the fix stays on the line.
    unwaited = list(_RETURNED_EARLY.finditer(line))
    if len(unwaited) > 1 or (unwaited and "wait first for" in line):
        first = unwaited[0].start()
        rest = "".join(line[m.end() : n.start()] for m, n in itertools.pairwise(unwaited))
        line = (
            line[:first]
            + f"; {len(unwaited)} more returned unwaited"
            + rest
            + line[unwaited[-1].end() :]
        )
    line = re.sub(r"^conformance/checks/\S+: (?=timed out after )", "", line)  # the check's id
    if len(line) > _WIDTH:
        # An exception: keep where the backend raised it, the call shortened.
        call, sep, rest = line.partition(": raised ")
        if sep and len(call) > 100:
            line = call[:99] + "…" + sep + rest
    return line
