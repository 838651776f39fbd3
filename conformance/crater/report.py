"""The crater's report: ``crater-report/1`` JSON, and the matrix for the terminal.

The JSON (``--report PATH``) is DESIGN's contract: ``schema``, ``target`` (the vLLM
judged, as the conformance header names it) and ``records``, one per plugin release
and vLLM judged (``plugin``, ``version``, ``vllm``, ``role`` pin or target,
``verdict`` holds, breaks or unknown, ``findings`` [{kind, file, line, member,
vllm_change}], ``not_judged``: why, where something could not be; ``executed``: the
plugin's modules run, where its producers were; ``source``: the wheel, sdist or folder
given, where the code was not the index's).  ``python -m reports --crater`` renders and
merges them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from conformance.crater.records import (
    BREAKS,
    HOLDS,
    MISSING_MODULES,
    NONE_JUDGED,
    NOTHING_USED,
    PIN,
    PLACEHOLDERS,
    TARGET,
    UNPARSED,
    PluginVerdict,
    Record,
    breaks_of,
)
from conformance.crater.schema import SCHEMA
from conformance.crater.verdicts import Finding
from conformance.crater.vllm_side import vllm_named
from conformance.files import write_whole


def report_data(target: str, verdicts: Sequence[PluginVerdict]) -> dict[str, object]:
    return {
        "schema": SCHEMA,
        "target": target,
        "records": [r.to_json() for v in verdicts for r in v.records],
    }


def write_report(path: Path, data: dict[str, object]) -> None:
    write_whole(path, json.dumps(data, indent=1) + "\n")


def progress_line(verdict: PluginVerdict) -> str:
    """One line per plugin as it is judged."""
    at = {r.role: r for r in verdict.records}
    parts: list[str] = []
    for role in (PIN, TARGET):
        record = at.get(role)
        if record is None:
            continue
        found = len(breaks_of(record.findings))
        count = f" ({found} break{'s' if found != 1 else ''})" if found else ""
        said = f"{record.verdict} at {record.vllm}{count}"
        if role == TARGET and parts and said == parts[0]:
            said = "the same at the target"  # the pin is the target
        parts.append(said)
    return f"crater: {verdict.plugin} {verdict.version}: {', '.join(parts)}"


def _releases(verdicts: Sequence[PluginVerdict]) -> dict[int, str]:
    """Each verdict's release as the lines name it: its version, and where its code was
    read from where another of the same name and version was read elsewhere (an edited
    checkout beside the published release)."""
    counts: dict[tuple[str, str], int] = {}
    for verdict in verdicts:
        key = (verdict.plugin, verdict.version)
        counts[key] = counts.get(key, 0) + 1
    return {
        id(v): f"{v.version} ({v.source or 'package index'})"
        if counts[(v.plugin, v.version)] > 1
        else v.version
        for v in verdicts
    }


def terminal_lines(target: str, verdicts: Sequence[PluginVerdict]) -> list[str]:
    """The matrix (plugins by vLLM: the pin, the target), each red cell's first cause,
    then every break, plugin by plugin, and the verdict line."""
    release = _releases(verdicts)
    rows = [("plugin", "release", "at its pin", f"at {target}")]
    for verdict in verdicts:
        at = {r.role: r for r in verdict.records}
        pin = at.get(PIN)
        pin_cell = f"{pin.vllm}: {pin.verdict}" if pin is not None else "-"
        record = at.get(TARGET)
        target_cell = "-"
        if record is not None:
            target_cell = record.verdict
            if record.verdict == BREAKS:
                target_cell += f": {record.first_cause()}"
            elif NOTHING_USED in record.not_judged:
                target_cell += ": imports nothing of vLLM"
            elif NONE_JUDGED in record.not_judged:
                target_cell += ": uses none of the output types"
                unparsed = [n for n in record.not_judged if UNPARSED in n]
                if unparsed:
                    target_cell += f" in the files it parses ({unparsed[0].split(':')[0]})"
            placeholders = [n for n in record.not_judged if PLACEHOLDERS in n]
            if placeholders:
                target_cell += f" ({placeholders[0].split(' this ')[0]} read as placeholders)"
            if record.verdict == HOLDS and _missing_modules(record):
                # Of the output types only: a module of vLLM it imports is gone all the same.
                target_cell += f"; {_missing_modules(record)[0].split(';')[0]}"
        rows.append((verdict.plugin, release[id(verdict)], pin_cell, target_cell))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3]
        for row in rows
    ]
    # Why each pin is the vLLM it is: a pin is often found, not declared.
    lines += ["", "pins:"] + [
        f"  {v.plugin} {release[id(v)]}: {v.pin.label} ({v.pin.why})" for v in verdicts if v.pin
    ]
    for verdict in verdicts:
        for record in verdict.records:
            if record.verdict == HOLDS and not _missing_modules(record):
                continue
            lines.append("")
            head = (
                f"{verdict.plugin} {release[id(verdict)]} at {vllm_named(record.vllm)} "
                f"({record.role}):"
            )
            lines.append(f"{head} {record.verdict}")
            lines += _finding_lines(record.findings)
            # Beside breaks, what else fails to import at this vLLM still matters first.
            lines += [
                f"  not judged: {why}"
                for why in record.not_judged
                if (not record.findings and record.verdict != HOLDS)
                or why.startswith(MISSING_MODULES)
            ]
    for verdict in verdicts:
        for record in verdict.records:
            if record.executed or any(
                "not run" in why or ": run at " in why for why in record.not_judged
            ):
                lines.append("")
                lines.append(
                    f"{verdict.plugin} {release[id(verdict)]}'s producers at "
                    f"{vllm_named(record.vllm)}:"
                )
                lines += [f"  executed: {line}" for line in record.executed]
                lines += [
                    f"  {why}"
                    for why in record.not_judged
                    if "not run" in why or ": run at " in why
                ]

    # A plugin judged in several releases is named with each.
    repeated = {v.plugin for v in verdicts if sum(w.plugin == v.plugin for w in verdicts) > 1}
    regressed = [
        f"{v.plugin} {release[id(v)]}" if v.plugin in repeated else v.plugin
        for v in verdicts
        if v.regressed
    ]
    breaking = [
        v.plugin
        for v in verdicts
        if any(r.role == TARGET and r.verdict == BREAKS for r in v.records)
    ]
    lines.append("")
    lines.append(
        f"crater: {len(verdicts)} plugin{'s' if len(verdicts) != 1 else ''} against {target}: "
        f"{len(breaking)} breaking"
        + (
            f", {len(regressed)} of them with a break their pin does not have "
            f"({', '.join(regressed)})"
            if regressed
            else ""
        )
    )
    return lines


def _finding_lines(findings: Sequence[Finding]) -> list[str]:
    """One line a finding, and one for a call's several (``AsyncOutput(...)`` missing six
    parameters): what each says after their common ``X of vLLM V: `` joined."""
    lines = []
    for group in breaks_of(findings):
        first = group[0]
        where, kind = first.where, first.kind
        if len(group) == 1:
            lines.append(f"  {where}: {kind} {first.member} ({first.vllm_change})")
            continue
        said = [f.vllm_change for f in group]
        causes = {text.partition(" raised ")[2] for text in said}
        if len(causes) == 1 and "" not in causes:
            # A producer's run raising the same at every check: the first, then the count.
            lines.append(
                f"  {where}: {kind} {first.member} ({said[0]}; and {len(group) - 1} "
                "more behaviours raising the same)"
            )
            continue
        heads = {text.partition(": ")[0] for text in said}
        shared = heads.pop() + ": " if len(heads) == 1 and ": " in said[0] else ""
        joined = "; ".join(text.removeprefix(shared) for text in said)
        owner = first.member.rpartition(".")[0]
        lines.append(f"  {where}: {kind} {owner} ({shared}{joined})")
    return lines


def _missing_modules(record: Record) -> list[str]:
    """The note naming the other modules of vLLM the plugin imports that it lacks."""
    return [why for why in record.not_judged if why.startswith(MISSING_MODULES)]
