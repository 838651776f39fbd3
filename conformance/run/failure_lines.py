"""The lines that close a failing run: one per behaviour, the cause first."""

from __future__ import annotations

from typing import Any

#: Behaviours whose failure explains others: an async output that reads its copies
#: before they arrive spoils every value it returns.  Listed first, and the failures of
#: the same producer after them say they may follow from it.
CAUSES = ("producer.async_output:waits-for-device", "producer.pooling_output:waits-for-device")


def failures_by_behaviour(records: Any) -> list[str]:
    """One line per behaviour that failed: how many checks, and the first message, short;
    a cause (:data:`CAUSES`) first, its possible symptoms saying so."""
    found: dict[str, list[str]] = {}
    for record in records:
        if record.outcome in ("failed", "error") and record.behaviour:
            found.setdefault(record.behaviour, []).append(record.message)
    causes = [c for c in CAUSES if c in found]
    lines = []
    for behaviour in [*causes, *sorted(b for b in found if b not in causes)]:
        messages = found[behaviour]
        first = messages[0].removeprefix(f"[{behaviour}] ").splitlines()[0]
        if len(first) > 140:
            first = first[:139] + "…"
        cause = next((c for c in causes if behaviour != c and _same_producer(behaviour, c)), None)
        after = f" (may follow from {cause}, above)" if cause else ""
        lines.append(f"FAIL [{behaviour}] {len(messages)} check(s){after}: {first}")
    return lines


def _same_producer(behaviour: str, cause: str) -> bool:
    return behaviour.split(":", 1)[0] == cause.split(":", 1)[0]
