"""One conformance run's hooks and state: which checks apply, what they found.

:class:`ConformanceRun` selects checks by behaviour, turns declared deviations into
expected failures, and collects the results :mod:`conformance.report` writes.  How a
run comes to be (the backend, what it is judged against, the xfails file) is
:mod:`conformance.run.activation`; its header :mod:`conformance.run.header`; the lines
that close a failing run :mod:`conformance.run.failure_lines`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.backends.backend import Backend
from conformance.judged import Judged, RevisionChoice
from conformance.report.deviations import xfail_message
from conformance.report.records import CheckIdentity
from conformance.run import nodeids
from conformance.run.failure_lines import failures_by_behaviour
from conformance.run.xfails import XfailEntry

if TYPE_CHECKING:
    from conformance.judged.superseding import Superseded
    from conformance.producers.warm_up import WarmUp
    from conformance.releases.text_revision import TextRevision
    from conformance.report.provenance import Provenance
    from conformance.run.bump import Bump
    from reference.revisions.model import SpecRevision

_USED_XFAIL = "conformance.xfail_entry"


def marker_arg(node: pytest.Item, name: str) -> str | None:
    marker = node.get_closest_marker(name)
    return str(marker.args[0]) if marker is not None and marker.args else None


class ConformanceRun:
    """Hooks and state of a conformance run; registered only when the suite is running."""

    def __init__(
        self,
        config: pytest.Config,
        *,
        backend: Backend,
        judged: Judged,
        xfails: list[XfailEntry],
        devices_available: list[str],
        provenance: Provenance,
    ) -> None:
        from conformance.report.records import Results

        self.config = config
        self.backend = backend
        #: What the run judges against (:mod:`conformance.judged`).
        self.judged = judged
        self.revision: SpecRevision = judged.revision
        self.choice: RevisionChoice = judged.choice
        self.xfails = xfails
        self.devices_available = devices_available
        #: Where and which run this is.
        self.provenance = provenance
        self.results = Results()
        self.used_xfails: set[int] = set()
        self.is_worker = hasattr(config, "workerinput")
        self.warm_up: WarmUp | None = None
        self.written_xfails = 0
        #: ``{check key: Superseded}``: the nearest revision's checks a judged vLLM text
        #: fails itself, judged against that text's own code instead.
        self.superseded: dict[str, Superseded] = {}
        #: With ``--bump-to``: the backend at its own revision (``conformance.run.bump``),
        #: and, once the run is done, the report's ``bump``.
        self.bump: Bump | None = None
        self.bump_report: dict[str, Any] | None = None

    @property
    def text_revision(self) -> TextRevision | None:
        """The vLLM text judged, when the revision was a path (or a release's own code)."""
        return self.judged.text

    @property
    def _types_removed(self) -> frozenset[str]:
        return self.judged.types_removed

    @property
    def applicable_behaviours(self) -> frozenset[str]:
        return self.revision.all_behaviours | self.revision.producer_behaviours

    # --- header ---------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # After every plugin's pytest_configure: Hypothesis's loads --hypothesis-profile there.
        from conformance.oracle import strategies

        strategies.use_suite_profile(self.config.getoption("hypothesis_profile", None))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        # One run, one stamp: the workers take the controller's.
        from conformance.report.provenance import WORKERINPUT_KEY

        node.workerinput[WORKERINPUT_KEY] = self.provenance.stamp.as_json()

    def pytest_report_header(self) -> list[str]:
        from conformance.run.header import header_lines

        return header_lines(self)

    # --- collection -----------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        from conformance.run import selection

        kept, deselected = [], []
        for item in items:
            if not nodeids.in_checks(item.path):
                kept.append(item)
                continue
            behaviour = self._behaviour_of(item)
            if not selection.kept(
                behaviour, self.applicable_behaviours
            ) or selection.unparametrized(item):
                deselected.append(item)
                continue
            skip = selection.skip_of(item, self.backend, self._types_removed)
            identity = self._identify(item, behaviour, skip.cause if skip is not None else None)
            superseded = self._superseding(identity)
            if skip is None and superseded is not None:
                from conformance.judged.superseding import SUPERSEDED

                skip = selection.Skip(SUPERSEDED, superseded)
                identity = self._identify(item, behaviour, SUPERSEDED)
            if skip is not None:
                item.add_marker(pytest.mark.skip(reason=skip.reason))
            identity.attach(item)
            kept.append(item)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept
        self._check_xfails_name_something(items)

    def _superseding(self, identity: CheckIdentity) -> str | None:
        """Why a check is not judged by its rule here (vLLM's own text fails it), or None."""
        if not self.superseded:
            return None
        from conformance.judged.superseding import check_key

        found = self.superseded.get(check_key(identity.nodeid, identity.check))
        judged = self.text_revision
        if found is None or judged is None:
            return None
        changes = "; ".join(
            j.describe() for b in found.by if (j := judged.judged_change(b)) is not None
        ) or "; ".join(c.describe() for c in judged.changes)
        instead = ", ".join(found.by) or "nothing: vLLM demands nothing there now"
        return (
            f"[{identity.behaviour}] superseded: vLLM {judged.what} fails this rule of "
            f"{judged.base} itself ({changes}); judged against vLLM's own code instead: "
            f"{instead}"
        )

    def _behaviour_of(self, item: pytest.Item) -> str:
        behaviour = marker_arg(item, "behaviour")
        if behaviour is None:
            raise pytest.UsageError(
                f"{item.nodeid}: conformance check without a behaviour marker; add "
                "pytestmark = pytest.mark.behaviour('<Type.rule>') to it or its module"
            )
        return behaviour

    def _identify(self, item: pytest.Item, behaviour: str, skip_cause: str | None) -> CheckIdentity:
        spec_type = marker_arg(item, "spec_type")
        if spec_type is None:
            raise pytest.UsageError(
                f"{item.nodeid}: conformance check without a spec_type marker; add "
                "pytestmark = pytest.mark.spec_type('<SpecName>') to its module"
            )
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        device = params.get("device") or params.get("accelerator") or params.get("producer_device")
        name = getattr(item, "originalname", item.name).removeprefix("test_")
        variant = nodeids.without_device(callspec.id, device) if callspec is not None else ""
        return CheckIdentity(
            nodeid=nodeids.canonical_nodeid(item),
            spec_type=spec_type,
            check=f"{name}[{variant}]" if variant else name,
            behaviour=behaviour,
            device=device,
            skip_cause=skip_cause,
            producer=self._async_output_judged(item, params),
        )

    def _async_output_judged(self, item: pytest.Item, params: dict[str, Any]) -> str | None:
        """The async output class a check judges (and its runner's shape), or None."""
        for name in ("async_producer", "pooling_producer"):
            if name in params:
                return str(params[name].describe())
        fixtures = getattr(item, "fixturenames", ())
        if "async_producer" in fixtures:
            found = self.backend.async_output_producers("sampling")
            return found[0].describe() if found else None
        return None

    def _check_xfails_name_something(self, items: list[pytest.Item]) -> None:
        """A node-id entry whose module was collected must name one of its checks."""
        if self.is_worker or not self.xfails:
            return  # under xdist each worker collects; the controller checked the names
        collected_modules = {nodeids.canonical_nodeid(i).partition("::")[0] for i in items}
        ids = [nodeids.canonical_nodeid(i) for i in items if nodeids.in_checks(i.path)]
        for entry in self.xfails:
            if entry.nodeid is None:
                continue
            module = "conformance/checks/" + entry.nodeid.partition("::")[0].rpartition("/")[2]
            if module in collected_modules and not any(entry.names(i, None) for i in ids):
                raise pytest.UsageError(
                    f"xfails entry {entry.number} ({entry.nodeid}) names no check this run "
                    "collected; fix its parameters (node ids are printed as the report "
                    "writes them) or remove it"
                )

    # --- running: declared deviations --------------------------------------------------

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Any:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if report.skipped and call.excinfo is not None:
            from conformance.report.records import SKIP_CAUSE_PROPERTY, skip_cause_of

            cause = skip_cause_of(call.excinfo.value)
            if cause is not None:  # the check said why (conformance.checks._skips)
                report.user_properties.append((SKIP_CAUSE_PROPERTY, cause))
        if report.failed and report.when == "call" and call.excinfo is not None:
            from conformance.report.suite_errors import SUITE_ERROR, suite_function

            raised_by = suite_function(call.excinfo)
            if raised_by is not None:
                report.user_properties.append((SUITE_ERROR, raised_by))
                return  # the suite's error: no behaviour of the backend, no xfail
            _name_the_backends_line(report, call.excinfo.value)
        if report.failed and nodeids.in_checks(item.path):
            _tag_with_behaviour(report, marker_arg(item, "behaviour"))
        if (
            not self.xfails
            or report.when not in ("setup", "call")
            or not nodeids.in_checks(item.path)
        ):
            return
        check = CheckIdentity.of_item(item)
        if check is None:
            return
        entries = [e for e in self.xfails if e.names(check.nodeid, check.behaviour)]
        if not entries or report.skipped:
            return
        if report.failed:
            message = _failure_message(report)
            entry = next((e for e in entries if e.accepts(message)), None)
            if entry is None:
                return  # another deviation than the one declared: a real failure
            report.outcome = "skipped"
            report.wasxfail = xfail_message(entry.reason, entry.label)
            report.user_properties.append((_USED_XFAIL, entry.number))
        elif report.when == "call":
            strict = next((e for e in entries if e.strict), None)
            if strict is not None:
                report.outcome = "failed"
                report.longrepr = (
                    f"[XPASS(strict)] {strict.reason} [{strict.label}]: the check passes; "
                    "remove the entry from the xfails file"
                )
                report.user_properties.append((_USED_XFAIL, strict.number))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Under xdist the controller receives every worker's reports through this hook.
        if self.is_worker:
            return
        self.results.add_report(report)
        for key, value in report.user_properties:
            if key == _USED_XFAIL and isinstance(value, int):
                self.used_xfails.add(value)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # Under xdist the controller gets workers' failed collections through this hook.
        if self.is_worker or not report.failed:
            return
        from conformance.report.records import failure_text

        text = failure_text(report)
        nodeid = nodeids.canonical_module_id(report.fspath)
        if nodeid is None:
            # Collected through --pyargs, a module that fails to import is reported on
            # the session; its path is in the message.
            named = re.search(r"conformance[/\\]checks[/\\](test_\w+\.py)", text)
            nodeid = f"conformance/checks/{named[1]}" if named else f"collection::{report.nodeid}"
        self.results.add_error(nodeid, "collection: " + text)

    # --- the end --------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            return
        for entry in self.xfails:
            if entry.behaviour is not None and entry.number not in self.used_xfails:
                self.results.add_stale_xfail(
                    f"xfails-file::{entry.label}",
                    f"xfails entry {entry.number} ({entry.label}): no check of this behaviour "
                    "failed as declared; the deviation is gone: remove the entry",
                    behaviour=entry.behaviour,
                )
        if self.results.failing() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.bump is not None:
            self.bump_report = self.bump.report_key(self.results.sorted_records())
            # The bump's verdict: 1 when something breaks; what fails on both sides is
            # no news of the bump (the report at the pin says it).
            if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
                session.exitstatus = (
                    pytest.ExitCode.TESTS_FAILED
                    if self.bump_report["breaks"]
                    else pytest.ExitCode.OK
                )
        path = self.config.getoption("conformance_report")
        if path is not None:
            from conformance.report import writer as report

            data = report.build(self)
            report.write(data, Path(self.config.invocation_params.dir) / path)
        xfails_path = self.config.getoption("conformance_write_xfails")
        if xfails_path is not None:
            from conformance.run.xfails import write_entries

            self.written_xfails = write_entries(
                Path(self.config.invocation_params.dir) / xfails_path,
                self.results.sorted_records(),
                header=f"{self.backend.name} against spec {self.choice.name}",
            )

    # The outermost wrapper, so the run ends with the table and one line per failing
    # behaviour: after pytest's own summary of the failed checks (-r), not before it.
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Any:
        yield
        if self.is_worker or not self.results.records:
            return
        from conformance.report.table import table

        b = self.backend
        title = f"conformance: {b.name} {b.version or ''} against spec {self.choice.describe()}"
        terminalreporter.section(" ".join(title.split()))
        for line in table(self.results):
            terminalreporter.write_line(line)
        for record in self.results.sorted_records():
            if record.nodeid.startswith("xfails-file::"):
                terminalreporter.write_line(f"FAIL (stale xfail, XPASS) {record.message}", red=True)
        from conformance.run.definitions import where_defined

        def where(behaviour: str) -> str | None:
            return where_defined(self.backend.module, behaviour)

        for line in failures_by_behaviour(self.results.sorted_records(), where):
            terminalreporter.write_line(line, red=True)
        self._deviation_lines(terminalreporter)
        if self.bump_report is not None:
            from conformance.run.bump import terminal_lines

            for line in terminal_lines(self.bump_report):
                terminalreporter.write_line(line, red=line.lstrip().startswith("BREAKS"))
        path = self.config.getoption("conformance_report")
        if path is not None:
            terminalreporter.write_line(f"conformance report written to {path}")
        xfails_path = self.config.getoption("conformance_write_xfails")
        if xfails_path is not None and self.written_xfails:
            terminalreporter.write_line(
                f"xfails file with {self.written_xfails} behaviour(s) written to {xfails_path}"
            )
        elif xfails_path is not None:
            terminalreporter.write_line(f"no xfails file written to {xfails_path}: nothing failed")

    def _deviation_lines(self, terminalreporter: Any) -> None:
        """What the xfails file declared and caught: a deviation stays visible, and one
        nobody explained yet says so."""
        from conformance.report.deviations import deviations, terminal_lines
        from conformance.run.option_names import option

        found = deviations(self.results.sorted_records())
        for line in terminal_lines(found, option("write-xfails")):
            unexplained = "UNEXPLAINED" in line
            terminalreporter.write_line(line, yellow=not unexplained, red=unexplained)


def _tag_with_behaviour(report: pytest.TestReport, behaviour: str | None) -> None:
    """The failure names the rule it breaks, on the terminal as in the report."""
    if behaviour is None:
        return
    tag = f"[{behaviour}] "
    longrepr = report.longrepr
    if isinstance(longrepr, str):
        if not longrepr.startswith(tag):
            report.longrepr = tag + longrepr
        return
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and tag not in crash.message:
        # After pytest's "Failed: ", which the report's message drops.
        kind, sep, rest = crash.message.partition("Failed: ")
        crash.message = kind + sep + tag + rest if sep and not kind else tag + crash.message


def _name_the_backends_line(report: pytest.TestReport, error: BaseException) -> None:
    """An exception the backend's own code raised (not through ``attempt``, which says
    so itself) names the backend's file, line and source line, on the terminal's line
    and in the report's message."""
    from conformance.oracle.failing import raised_at

    if isinstance(error, pytest.fail.Exception):
        return  # a verdict
    crash = getattr(report.longrepr, "reprcrash", None)
    at = raised_at(error)
    name = type(error).__name__
    if crash is None or not at or at in crash.message or not crash.message.startswith(name):
        return
    crash.message = name + at + crash.message[len(name) :]


def _failure_message(report: pytest.TestReport) -> str:
    from conformance.report.records import failure_text

    return failure_text(report)
