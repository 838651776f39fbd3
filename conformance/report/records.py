"""The records of a conformance run: one per check, typed, from pytest's reports.

Records are built on the process that sees every test report (the controller
under pytest-xdist), from the :class:`CheckIdentity` each check carries, and sorted
by node id so the report has the same content with and without xdist.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any

import pytest

from conformance.oracle.skipping import SKIP_CAUSE_ATTRIBUTE
from conformance.report.schema import FAILING_OUTCOMES, OUTCOMES, SUMMARY_KEYS
from conformance.report.suite_errors import SUITE_ERROR, error_message

#: The one ``user_properties`` entry a check carries: its identity, as a dict (test
#: reports travel from xdist workers to the controller as plain data).
IDENTITY_PROPERTY = "conformance.check"
_IDENTITY = pytest.StashKey["CheckIdentity"]()
#: The skip cause of a check that never ran (its planned record).
NOT_RUN = "not-run"
#: The ``user_properties`` entry of a check that skipped itself, naming its cause.
SKIP_CAUSE_PROPERTY = "conformance.skip_cause"


def skip_cause_of(error: object) -> str | None:
    """The cause a check gave the skip it raised (``error``), or None."""
    cause = getattr(error, SKIP_CAUSE_ATTRIBUTE, None)
    return cause if isinstance(cause, str) else None


@dataclass(frozen=True)
class CheckIdentity:
    """What a check is, fixed when it is collected: the record's fields but its verdict."""

    nodeid: str
    spec_type: str
    check: str
    behaviour: str | None
    device: str | None
    #: Why it is skipped whatever happens (a device not declared or not here), if so.
    skip_cause: str | None = None
    #: The async output class an async output check judged and its runner's shape
    #: (``vllm.v1.worker.gpu.async_utils.AsyncOutput (model-runner-v2)``); else None.
    producer: str | None = None

    def attach(self, item: pytest.Item) -> None:
        item.stash[_IDENTITY] = self
        item.user_properties.append((IDENTITY_PROPERTY, asdict(self)))

    @classmethod
    def of_item(cls, item: pytest.Item) -> CheckIdentity | None:
        """The identity collection attached; None for a test that is not one of the checks."""
        return item.stash.get(_IDENTITY, None)

    @classmethod
    def of_report(cls, report: pytest.TestReport) -> CheckIdentity | None:
        """The identity a check's test report carries (from any worker)."""
        for key, value in report.user_properties:
            if key == IDENTITY_PROPERTY and isinstance(value, dict):
                return cls(**value)
        return None


@dataclass
class TestRecord:
    nodeid: str
    spec_type: str
    check: str
    behaviour: str | None
    device: str | None
    outcome: str
    message: str
    skip_cause: str | None = None
    producer: str | None = None

    @classmethod
    def unplanned(cls, nodeid: str) -> TestRecord:
        """The record of a check that ended the process before its own was made.

        Its check name is the test's name without ``test_`` (and without its
        parameters), as a planned record has it; the outcome is for the caller."""
        name = nodeid.rpartition("::")[2].partition("[")[0].removeprefix("test_")
        return cls(nodeid, "module", name, None, None, "error", "")

    @classmethod
    def of_check(
        cls, check: CheckIdentity, outcome: str, message: str, skip_cause: str | None = None
    ) -> TestRecord:
        """The record of ``check`` with this verdict."""
        return cls(
            nodeid=check.nodeid,
            spec_type=check.spec_type,
            check=check.check,
            behaviour=check.behaviour,
            device=check.device,
            outcome=outcome,
            message=message,
            skip_cause=skip_cause,
            producer=check.producer,
        )


class Results:
    """Outcomes by node id, fed with pytest's test reports."""

    def __init__(self) -> None:
        self.records: dict[str, TestRecord] = {}

    def add_report(self, report: pytest.TestReport) -> None:
        check = CheckIdentity.of_report(report)
        if check is None:
            return  # not one of our checks
        record = self.records.get(check.nodeid)
        if record is None:
            record = TestRecord.of_check(check, "passed", "")
            self.records[record.nodeid] = record
        outcome, message = _outcome(report)
        if outcome is None:
            return
        if report.when == "teardown":
            # A teardown error does not hide the verdict of the call; it adds to it.
            if record.outcome in ("passed", "skipped", "xfailed"):
                record.outcome = "error"
            record.message = "; ".join(m for m in (record.message, message) if m)
            return
        tag = f"[{record.behaviour}] "
        suite_error = message.startswith("error of the suite")
        if (
            outcome in ("failed", "error")
            and record.behaviour
            and not message.startswith(tag)
            and not suite_error
        ):
            # A failure names the rule it breaks, so a reader can look it up (and xfail it).
            message = tag + message
        record.outcome, record.message = outcome, message
        record.skip_cause = (
            (check.skip_cause or _reported_skip_cause(report)) if outcome == "skipped" else None
        )

    def add_error(
        self, nodeid: str, message: str, spec_type: str = "module", check: str = ""
    ) -> None:
        """An error not tied to a run check (a check module that cannot be collected)."""
        self.records[nodeid] = TestRecord(nodeid, spec_type, check, None, None, "error", message)

    def set_verdict(self, planned: TestRecord, outcome: str, message: str) -> TestRecord:
        """A check's verdict decided outside its own test report: a time limit, a death."""
        record = replace(planned, outcome=outcome, message=message, skip_cause=None)
        self.records[record.nodeid] = record
        return record

    def add_not_run(self, plan: Iterable[TestRecord], reason: str) -> None:
        """Each planned check without a record: not run, and why (one skipped whatever
        happens keeps its own skip)."""
        for planned in plan:
            if planned.nodeid in self.records:
                continue
            if planned.skip_cause == NOT_RUN:
                planned = replace(planned, message=f"not run: {reason}")
            self.records[planned.nodeid] = planned

    def add_stale_xfail(self, nodeid: str, message: str, behaviour: str) -> None:
        """A behaviour entry of the xfails file none of whose checks failed."""
        self.records[nodeid] = TestRecord(
            nodeid, "module", "xfails_file", behaviour, None, "xpassed", message
        )

    def sorted_records(self) -> list[TestRecord]:
        return [self.records[k] for k in sorted(self.records)]

    def summary(self) -> dict[str, Any]:
        """The counts per outcome (the contract's keys), then the declared deviations
        (:mod:`conformance.report.deviations`)."""
        from conformance.report.deviations import summary_keys

        counts = Counter(r.outcome for r in self.records.values())
        return {
            **{SUMMARY_KEYS[o]: counts.get(o, 0) for o in OUTCOMES},
            **summary_keys(self.sorted_records()),
        }

    def failing(self) -> bool:
        return any(r.outcome in FAILING_OUTCOMES for r in self.records.values())


def _outcome(report: pytest.TestReport) -> tuple[str | None, str]:
    wasxfail = getattr(report, "wasxfail", None)
    if report.when == "setup":
        if report.passed:
            return None, ""
        if report.skipped:
            return (
                ("xfailed", wasxfail) if wasxfail is not None else ("skipped", _skip_text(report))
            )
        return "error", failure_text(report)
    if report.when == "call":
        if report.passed:
            return ("xpassed", f"[XPASS] {wasxfail}") if wasxfail is not None else ("passed", "")
        if report.skipped:
            return (
                ("xfailed", wasxfail) if wasxfail is not None else ("skipped", _skip_text(report))
            )
        text = failure_text(report)
        if text.startswith("[XPASS(strict)]"):
            return "xpassed", text
        raised_by = dict(report.user_properties).get(SUITE_ERROR)
        if raised_by is not None:
            return "error", error_message(str(raised_by), text)
        return "failed", text
    if report.failed:
        return "error", "teardown: " + failure_text(report)
    return None, ""


def _reported_skip_cause(report: pytest.TestReport) -> str | None:
    """The cause a check gave its own skip (``conformance.checks._skips.skip``)."""
    for key, value in report.user_properties:
        if key == SKIP_CAUSE_PROPERTY and isinstance(value, str):
            return value
    return None


def _skip_text(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def failure_text(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(longrepr)
    return text.removeprefix("Failed: ").strip()
