"""Results of a conformance run: one record per check, the JSON report and the summary table.

Records are built on the process that sees every test report (the controller
under pytest-xdist), from the ``user_properties`` each check carries, and sorted by
node id so the report has the same content with and without xdist.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from conformance.backend import Backend
from reports.conformance_schema import FAILING_OUTCOMES, OUTCOMES, SCHEMA, SUMMARY_KEYS

# user_properties names our checks carry (they travel from xdist workers).
PROPERTY_PREFIX = "conformance."


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


class Results:
    """Outcomes by node id, fed with pytest's test reports."""

    def __init__(self) -> None:
        self.records: dict[str, TestRecord] = {}

    def add_report(self, report: pytest.TestReport) -> None:
        props: dict[str, Any] = {
            key[len(PROPERTY_PREFIX) :]: value
            for key, value in report.user_properties
            if isinstance(key, str) and key.startswith(PROPERTY_PREFIX)
        }
        if "nodeid" not in props:
            return  # not one of our checks
        record = self.records.get(props["nodeid"])
        if record is None:
            record = TestRecord(
                nodeid=props["nodeid"],
                spec_type=props["spec_type"],
                check=props["check"],
                behaviour=props.get("behaviour"),
                device=props.get("device"),
                outcome="passed",
                message="",
            )
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
        if outcome in ("failed", "error") and record.behaviour and not message.startswith(tag):
            # A failure names the rule it breaks, so a reader can look it up (and xfail it).
            message = tag + message
        record.outcome, record.message = outcome, message
        record.skip_cause = props.get("skip_cause") if outcome == "skipped" else None

    def add_error(
        self, nodeid: str, message: str, spec_type: str = "module", check: str = ""
    ) -> None:
        """An error not tied to a run check (a check module that cannot be collected)."""
        self.records[nodeid] = TestRecord(nodeid, spec_type, check, None, None, "error", message)

    @staticmethod
    def unplanned(nodeid: str) -> TestRecord:
        """The record of a check that ended the process before its own was made.

        Its check name is the test's name without ``test_`` (and without its
        parameters), as a planned record has it; the outcome is for the caller."""
        name = nodeid.rpartition("::")[2].partition("[")[0].removeprefix("test_")
        return TestRecord(nodeid, "module", name, None, None, "error", "")

    def add_stale_xfail(self, nodeid: str, message: str, behaviour: str) -> None:
        """A behaviour entry of the xfails file none of whose checks failed."""
        self.records[nodeid] = TestRecord(
            nodeid, "module", "xfails_file", behaviour, None, "xpassed", message
        )

    def sorted_records(self) -> list[TestRecord]:
        return [self.records[k] for k in sorted(self.records)]

    def summary(self) -> dict[str, int]:
        counts = Counter(r.outcome for r in self.records.values())
        return {SUMMARY_KEYS[o]: counts.get(o, 0) for o in OUTCOMES}

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
        return "failed", text
    if report.failed:
        return "error", "teardown: " + failure_text(report)
    return None, ""


def _skip_text(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def failure_text(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(longrepr)
    return text.removeprefix("Failed: ").strip()


class ReportedRun(Protocol):
    """What a report is built from: a conformance run (``conformance.session.ConformanceRun``).

    Named here, by the writer, so the run's modules import the report and never the
    other way round."""

    backend: Backend
    revision: Any
    choice: Any
    devices_available: list[str]
    results: Results


def build(run: ReportedRun) -> dict[str, Any]:
    """The JSON report of DESIGN.md section 3."""
    import torch

    from conformance.version import suite_version

    backend = run.backend
    return {
        "schema": SCHEMA,
        "spec_revision": run.choice.name,
        "spec_revision_source": run.choice.source,
        "spec_revision_detail": run.choice.detail,
        "spec_revision_releases": list(run.revision.releases),
        "backend": {
            "name": backend.name,
            "module": backend.module.__name__,
            "version": backend.version,
            "devices_declared": list(backend.devices),
        },
        "suite": {"version": suite_version()},
        "platform": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "devices_available": run.devices_available,
            # Device types whose runtime was simulated for the async output checks.
            "simulated_devices": _simulated_devices(backend),
        },
        "summary": run.results.summary(),
        "tests": [asdict(r) for r in run.results.sorted_records()],
    }


def _simulated_devices(backend: Any) -> list[str]:
    if backend.make_async_output is None:
        return []
    from conformance.producer_runtime import SIMULATED, producer_devices

    return [
        d.value.removesuffix(SIMULATED)
        for d in producer_devices(backend)
        if d.value.endswith(SIMULATED)
    ]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def unwritable(path: Path) -> str | None:
    """Why the report cannot be written at ``path`` (checked before any check runs), or None."""
    if path.is_dir():
        return "it is a folder; give a file name"
    existing = path.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK) or not _can_create_in(existing):
        return f"the folder {existing} is not writable"
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is not writable"
    return None


def _can_create_in(folder: Path) -> bool:
    """Whether a file can be made in ``folder``: asked of the file system itself, since
    permission bits say yes to root (and to nobody's /proc or read-only mounts)."""
    try:
        handle, probe = tempfile.mkstemp(prefix=".conformance-probe-", dir=folder)
    except OSError:
        return False
    os.close(handle)
    os.unlink(probe)
    return True


def write(report: dict[str, Any], path: str | Path) -> Path:
    """Write ``report`` to ``path`` whole or not at all (a temporary file, then a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(json.dumps(report, indent=2) + "\n")
        # mkstemp makes the file private (0600); a report is shared like any file
        # written here (CI artifacts), so it gets the mode the umask gives.
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def table(results: Results) -> list[str]:
    """Lines of the spec type x device table (``-`` for device-independent checks).

    The last column says why checks were skipped, so "the backend does not declare
    this device" and "declared, but not on this machine" stay apart on screen too.
    """
    cells: dict[tuple[str, str], Counter[str]] = {}
    causes: dict[tuple[str, str], set[str]] = {}
    for record in results.records.values():
        key = (record.spec_type, record.device or "-")
        cells.setdefault(key, Counter())[record.outcome] += 1
        if record.outcome == "skipped":
            causes.setdefault(key, set()).add(record.skip_cause or "other")
    if not cells:
        return []
    shown = [
        o
        for o in OUTCOMES
        if o in ("passed", "failed", "skipped") or any(c[o] for c in cells.values())
    ]
    width = max(len("spec type"), *(len(k[0]) for k in cells))
    device_width = max(len("device"), *(len(k[1]) for k in cells))
    head = f"{'spec type':<{width}}  {'device':<{device_width}}" + "".join(
        f" {o:>8}" for o in shown
    )
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
