"""The spec type x device table a run prints at its end."""

from __future__ import annotations

from collections import Counter

from conformance.report.records import Results
from conformance.report.schema import OUTCOMES


def row_of(spec_type: str, behaviour: str | None) -> str:
    """The table's row of a check: its spec type, for a producer's check the producer
    (``producer gather_logprobs``), so a producer's failures are counted under it, and
    for a type a spec type's field holds, that type under its holder
    (``ECConnectorOutput (of ModelRunnerOutput)``), so the holder's count is its own."""
    if behaviour and behaviour.startswith("producer."):
        return "producer " + behaviour.removeprefix("producer.").split(":", 1)[0]
    owner = (behaviour or "").split(".", 1)[0].split(":", 1)[0]
    if owner and owner != spec_type and owner[0].isupper() and "." in (behaviour or ""):
        return f"{owner} (of {spec_type})"
    return spec_type


def table(results: Results) -> list[str]:
    """Lines of the spec type (or producer) x device table (``-`` for device-independent
    checks).

    The last column says why checks were skipped, so "the backend does not declare
    this device" and "declared, but not on this machine" stay apart on screen too: the
    skip cause of each (``schema.json`` says what each means), else the skip's own words.
    """
    cells: dict[tuple[str, str], Counter[str]] = {}
    causes: dict[tuple[str, str], set[str]] = {}
    for record in results.records.values():
        key = (row_of(record.spec_type, record.behaviour), record.device or "-")
        cells.setdefault(key, Counter())[record.outcome] += 1
        if record.outcome == "skipped":
            causes.setdefault(key, set()).add(record.skip_cause or _unclassified(record.message))
    if not cells:
        return []
    shown = [
        o
        for o in OUTCOMES
        if o in ("passed", "failed", "skipped") or any(c[o] for c in cells.values())
    ]
    label = "spec type or producer"
    width = max(len(label), *(len(k[0]) for k in cells))
    device_width = max(len("device"), *(len(k[1]) for k in cells))
    head = f"{label:<{width}}  {'device':<{device_width}}" + "".join(f" {o:>8}" for o in shown)
    head += "  skipped because"
    lines = [head, "-" * len(head)]
    for key in sorted(cells):
        counts = cells[key]
        row = f"{key[0]:<{width}}  {key[1]:<{device_width}}" + "".join(
            f" {counts[o]:>8}" for o in shown
        )
        because = ", ".join(sorted(causes.get(key, ())))
        lines.append(f"{row}  {because}".rstrip())
    return lines


def _unclassified(message: str) -> str:
    """A skip no cause was given for (a backend's own fixture skipping, say): its own
    words, short, rather than a cause that says nothing."""
    first = (message.splitlines() or ["no reason given"])[0]
    return f'"{first[:60]}…"' if len(first) > 60 else f'"{first}"'
