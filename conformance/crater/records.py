"""A plugin release judged at its pin and at the target: the ``crater-report/1`` records."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from conformance.crater.pins import Pin, pin_of
from conformance.crater.sources import PluginSource
from conformance.crater.uses import Reading, read_plugin
from conformance.crater.verdicts import ASYNC_OUTPUT_BEHAVIOURS, Finding, Judgement, judge
from conformance.crater.vllm_side import VllmView, VllmViewError, release_view

HOLDS, BREAKS, UNKNOWN = "holds", "breaks", "unknown"
PIN, TARGET = "pin", "target"


@dataclass
class Record:
    """One plugin release judged against one vLLM (``role``: its pin or the target)."""

    plugin: str
    version: str
    vllm: str
    role: str
    verdict: str
    findings: list[Finding] = field(default_factory=list)
    not_judged: list[str] = field(default_factory=list)
    #: modules of the plugin executed (running its producers, opt-in)
    executed: list[str] = field(default_factory=list)
    #: the wheel, sdist or folder its code was read from, where the user gave one ("":
    #: the package index's release of that name and version)
    source: str = ""

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "plugin": self.plugin,
            "version": self.version,
            "vllm": self.vllm,
            "role": self.role,
            "verdict": self.verdict,
            # A reader of the report (its rendered cell) takes the first as the cause.
            "findings": [f.to_json() for f in self.every_path_first()],
            "not_judged": list(self.not_judged),
        }
        if self.executed:
            data["executed"] = list(self.executed)
        if self.source:
            data["source"] = self.source
        return data

    def every_path_first(self) -> list[Finding]:
        """The findings, those that break on every path before those under a condition
        of the plugin's own (a setting) that may never hold; else in file order."""
        return sorted(self.findings, key=lambda f: bool(f.condition))

    def first_cause(self) -> str:
        """The first break, as a matrix cell names it."""
        if not self.findings:
            return ""
        first = self.every_path_first()[0]
        count = len(breaks_of(self.findings))
        more = f" (+{count - 1} more)" if count > 1 else ""
        return f"{first.kind} {first.member} at {first.file}:{first.line}{more}"


@dataclass
class PluginVerdict:
    """A plugin release's two records and why its pin is what it is."""

    plugin: str
    version: str
    pin: Pin | None
    records: list[Record]

    @property
    def source(self) -> str:
        """Where its code was read from, where the user gave it (:attr:`Record.source`)."""
        return self.records[0].source if self.records else ""

    @property
    def regressed(self) -> bool:
        """A break at the target its pin does not have (it held there, or broke
        otherwise): what makes the crater exit 1.  Unpinned, nothing is new."""
        at = {r.role: r for r in self.records}
        pin, target = at.get(PIN), at.get(TARGET)
        if pin is None or target is None or target.verdict != BREAKS:
            return False
        if pin.verdict == HOLDS:
            return True
        return pin.verdict == BREAKS and bool(_places(target.findings) - _places(pin.findings))


def _places(findings: list[Finding]) -> set[tuple[str, str, int, str]]:
    """A break as its place: the same break at both vLLMs is no news of the target."""
    return {(f.kind, f.file, f.line, f.member) for f in findings}


def judged_plugin(
    source: PluginSource, target: VllmView, rule: str | None = None, run: bool = False
) -> PluginVerdict:
    """``source`` judged at its pin and at ``target``; ``run``: its async output
    classes run on the simulated runtime at the pin too (:mod:`.producer_run`)."""
    verdict = _judged(source, target, rule, run)
    if source.given:
        # A checkout edited since its release is other code under the same name and
        # version: its records say where they were read from.
        for record in verdict.records:
            record.source = source.origin
    return verdict


def _judged(source: PluginSource, target: VllmView, rule: str | None, run: bool) -> PluginVerdict:
    if not source.files:
        # A placeholder release (a name held on the index) shows no use of vLLM at all:
        # "holds" would claim a judgement that was never made.
        return unknown_plugin(source.name, source.version, target, _nothing_to_judge(source))
    reading = read_plugin(source.files)
    pin = pin_of(source, reading, rule)
    notes = _reading_notes(source, reading)
    records = []
    pin_view: VllmView | None = None
    if pin.release is not None:
        try:
            pin_view = release_view(pin.release)
        except VllmViewError as error:
            records.append(
                Record(
                    source.name,
                    source.version,
                    pin.release,
                    PIN,
                    UNKNOWN,
                    not_judged=[f"the pin's texts: {error}"],
                )
            )
        if pin_view is not None:
            judged = judge(reading, pin_view, None, pin=pin_view)
            record = _record(source, pin_view, PIN, judged, [*notes, f"pin: {pin.why}"])
            _with_producers_run(record, source, reading, pin.release, run)
            records.append(record)
    else:
        records.append(
            Record(
                source.name,
                source.version,
                pin.label,
                PIN,
                UNKNOWN,
                not_judged=[f"unpinned: {pin.why}"],
            )
        )
    behaviours = _async_behaviours(pin.release, target)
    judged = judge(reading, target, pin_view, behaviours, pin=pin_view)
    records.append(_record(source, target, TARGET, judged, notes))
    return PluginVerdict(source.name, source.version, pin, records)


def _with_producers_run(
    record: Record, source: PluginSource, reading: Reading, pin: str, run: bool
) -> None:
    """The pin's record with what running the plugin's producers (async outputs,
    gatherings) found, or a line saying they were read and not run."""
    from conformance.crater.producer_run import async_output_classes, gatherings, run_producers

    names = [u.member for u in async_output_classes(reading)]
    names += [g.name for g in gatherings(source)]
    if not names:
        return
    if not run:
        record.not_judged.append(
            f"its producers ({', '.join(names)}) were read, not run: --run-producers runs "
            "them at the pin (async outputs on the simulated device, gatherings on CPU)"
        )
        return
    runs = run_producers(source, reading, pin)
    record.findings += runs.findings
    record.not_judged += runs.not_run
    record.executed = [*runs.executed, *runs.ran]
    if runs.findings:
        record.verdict = BREAKS


def _nothing_to_judge(source: PluginSource) -> str:
    if source.unreadable:
        return f"none of its {len(source.unreadable)} Python files is UTF-8 text: nothing to judge"
    if source.skipped:
        return (
            f"its release holds no Python code outside {len(source.skipped)} test, example "
            "and docs files: nothing to judge"
        )
    return "its release holds no Python code (a placeholder): nothing to judge"


def unknown_plugin(name: str, version: str, target: VllmView, why: str) -> PluginVerdict:
    """A plugin whose code cannot be had or read: its own row, the others still judged."""
    record = Record(name, version, target.label, TARGET, UNKNOWN, not_judged=[why])
    return PluginVerdict(name, version, None, [record])


def _record(
    source: PluginSource, view: VllmView, role: str, judged: Judgement, notes: list[str]
) -> Record:
    not_judged = list(notes)
    if judged.dead_at_pin:
        listed = ", ".join(f"{f} ({m})" for f, m in sorted(judged.dead_at_pin.items()))
        not_judged.append(
            f"{len(judged.dead_at_pin)} files cannot be imported at the pin, so their uses "
            f"are not judged: {listed}"
        )
    if judged.missing_modules:
        listed = ", ".join(f"{m} ({at})" for m, at in sorted(judged.missing_modules.items()))
        count = len(judged.missing_modules)
        not_judged.append(
            f"{MISSING_MODULES} {count} module{'s' if count != 1 else ''} the target lacks; "
            f"not judged here: {listed}"
        )
    if judged.unjudged:
        not_judged.append(
            f"{judged.unjudged} uses of vLLM code that {view.label}'s texts do not show"
        )
    verdict = BREAKS if judged.findings else HOLDS
    return Record(
        source.name, source.version, view.label, role, verdict, list(judged.findings), not_judged
    )


def _reading_notes(source: PluginSource, reading: Reading) -> list[str]:
    notes = []
    if reading.conditions_taken:
        count = len(reading.conditions_taken)
        notes.append(
            f"{count} condition{'s are' if count != 1 else ' is'} not a version test: the "
            "code under each branch is judged"
        )
    if reading.unparsed:
        notes.append(f"{len(reading.unparsed)} {UNPARSED}: {', '.join(reading.unparsed[:5])}")
    if reading.placeholders:
        count = len(reading.placeholders)
        notes.append(
            f"{count} line{'s' if count != 1 else ''} {PLACEHOLDERS}, each read as a "
            f"placeholder (a newer Python's syntax?): {', '.join(reading.placeholders[:5])}"
        )
    if source.unreadable:
        notes.append(f"{len(source.unreadable)} files Python cannot read as text")
    if source.skipped:
        shown = ", ".join(source.skipped[:3])
        rest = f" and {len(source.skipped) - 3} more" if len(source.skipped) > 3 else ""
        notes.append(f"{len(source.skipped)} test, example and docs files not read ({shown}{rest})")
    if reading.redirected:
        listed = ", ".join(f"{v} for {k}" for k, v in sorted(reading.redirected.items())[:3])
        more = len(reading.redirected) - 3
        notes.append(
            f"its import hook hands its own modules for {len(reading.redirected)} of vLLM's "
            f"({listed}{f', and {more} more' if more > 0 else ''}): their uses are of its "
            "own code, not judged"
        )
    if not reading.imports_vllm:
        notes.append(NOTHING_USED)  # "holds" then says only that nothing could break
    elif not reading.uses:
        notes.append(NONE_JUDGED)
    return notes


#: How the note naming the other vLLM modules a plugin imports that a vLLM lacks begins.
MISSING_MODULES = "also imports"
#: A file that no Python parses (nor does with its newer syntax read as placeholders).
UNPARSED = "files not parsed"
#: Lines of a newer Python's syntax, read as placeholders: what they did is not judged.
PLACEHOLDERS = "this Python does not parse"
#: The note of a plugin release whose code imports nothing of vLLM.
NOTHING_USED = (
    "its code imports nothing of vLLM: it uses none of vLLM's output types or producers, so "
    "nothing of it is judged"
)
#: The note of one that imports vLLM but shows no use of the output types or producers.
NONE_JUDGED = (
    "its code shows no use of vLLM's output types or producers (its other imports of vLLM "
    "are not judged)"
)


def _async_behaviours(
    pin: str | None, target: VllmView
) -> tuple[frozenset[str], frozenset[str]] | None:
    """The async output behaviours of the pin's revision and of the target's.

    Where both read each request's logprobs rows by ``slice_request`` (from 0.12.0), a
    layout of the rows is none of them: the two runners' layouts read alike, and the
    suite's own checks require the reading, not the layout (a plugin's layout of its pin
    reads right at the target)."""
    from typing import get_args

    from conformance.producers.logprobs_reading import reads_by_request
    from reference.revisions import UnknownRevisionError, canonical_name, revision
    from reference.revisions.model import LogprobsBy

    if pin is None or target.version is None:
        return None
    try:
        pinned = revision(canonical_name(pin))
    except (UnknownRevisionError, ValueError):
        return None
    # vLLM's head (0.35.0.dev12) is judged by the rules of its nearest release.
    for release in (_release_of(target.version), target.nearest):
        try:
            targeted = revision(canonical_name(release or ""))
            break
        except (UnknownRevisionError, ValueError):
            continue
    else:
        return None
    before, after = pinned.async_output.behaviours, targeted.async_output.behaviours
    if reads_by_request(pinned) and reads_by_request(targeted):
        layouts = {f"{ASYNC_OUTPUT_BEHAVIOURS}logprobs-{layout}" for layout in get_args(LogprobsBy)}
        before, after = before - layouts, after - layouts
    return before, after


def _release_of(version: str) -> str:
    from packaging.version import Version

    return ".".join(str(p) for p in Version(version).release[:3])


def breaks_of(findings: Sequence[Finding]) -> list[list[Finding]]:
    """The findings as the breaks a reader counts: one call's several findings (an
    ``AsyncOutput(...)`` missing six parameters, a member of one class) are one break."""
    return [
        list(group)
        for (_, _, _, owner), grouped in itertools.groupby(
            findings, key=lambda f: (f.file, f.line, f.kind, f.member.rpartition(".")[0])
        )
        for group in ([list(grouped)] if owner else [[f] for f in grouped])
    ]
