"""pytest plugin of the conformance suite (registered through the ``pytest11`` entry point).

It is loaded into every pytest run of an environment that has this package, so
it stays inert unless the run is a conformance run: the user passed one of its
options, or named the suite (``--pyargs conformance``, a path into
``conformance/checks``).  Only then does it resolve the backend (a bad spec is a
usage error, exit code 4), print the header and the spec type x device table
and write the JSON report.

Fixtures the checks use:

``backend``
    the :class:`conformance.Backend` under test (session scope).  Select it with
    ``--backend`` / ``$OUTPUTS_BACKEND``, not by overriding this fixture: device
    parametrization, the header and the report are built from that selection.
``reference_backend``
    the oracle of the differential checks (session scope); the one fixture a
    backend may override in its ``conftest.py`` (e.g. to compare against a
    released vLLM instead of this project's reference).

``device`` and ``accelerator`` are parameters, not fixtures: every check that
takes them runs once per torch device type (accelerator types only for
``accelerator``), skipped where the backend does not declare the device or this
machine has none.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path
from typing import Any

import pytest

from conformance.backend import ALL_DEVICES, Backend, BackendResolutionError, load_backend
from conformance.xfails import XfailEntry, XfailsFileError

PACKAGE_DIR = Path(__file__).resolve().parent
CHECKS_DIR = PACKAGE_DIR / "checks"
ACCELERATORS = tuple(d for d in ALL_DEVICES if d != "cpu")
_WORKEROUTPUT_KEY = "conformance_unmatched_xfails"


_STATE = pytest.StashKey["ConformanceRun"]()


# --- options and activation ----------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "vllm.v1.outputs conformance suite")
    group.addoption(
        "--backend",
        default=None,
        help="backend to check: a module path, module:attribute naming a "
        "conformance.Backend, or an entry-point name (default: $OUTPUTS_BACKEND, "
        "else 'reference')",
    )
    group.addoption(
        "--conformance-report",
        default=None,
        metavar="PATH",
        help="write the JSON conformance report (schema conformance-report/1) to PATH",
    )
    group.addoption(
        "--xfails-file",
        default=None,
        metavar="PATH",
        help="TOML file of known deviations ([[xfail]] nodeid = ..., reason = ...); "
        "strict: a listed check that passes fails the run",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "spec_type(name): the spec type (or 'module') a conformance check is about"
    )
    config.addinivalue_line(
        "markers",
        "spec_revisions(*names): the spec revisions whose behaviour a conformance check "
        "encodes (skipped for a backend targeting another; unmarked checks apply to all)",
    )
    if _asked_for_suite(config):
        _activate(config)
        # A check module that cannot be collected is one error in the report, and the
        # other checks still run: as under xdist, so the report is the same either way.
        config.option.continue_on_collection_errors = True


def _asked_for_suite(config: pytest.Config) -> bool:
    options = ("backend", "conformance_report", "xfails_file")
    if any(config.getoption(name) is not None for name in options):
        return True
    return any(_names_suite(arg, config) for arg in config.args)


def _names_suite(arg: str, config: pytest.Config) -> bool:
    target = arg.split("::", 1)[0]
    if config.getoption("pyargs") and (
        target == "conformance" or target.startswith("conformance.")
    ):
        return True
    try:
        path = (config.invocation_params.dir / target).resolve()
    except (OSError, ValueError):
        return False
    return path in (PACKAGE_DIR, CHECKS_DIR) or CHECKS_DIR in path.parents


def _activate(config: pytest.Config) -> ConformanceRun:
    """Resolve the backend and the xfails file; any problem is a usage error (exit 4)."""
    if _STATE in config.stash:
        return config.stash[_STATE]
    from conformance import devices, spec, xfails

    try:
        backend = load_backend(config.getoption("backend"))
    except BackendResolutionError as error:
        raise pytest.UsageError(str(error)) from None
    entries: list[XfailEntry] = []
    path = config.getoption("xfails_file")
    if path is not None:
        try:
            entries = xfails.load(Path(config.invocation_params.dir) / path)
        except XfailsFileError as error:
            raise pytest.UsageError(str(error)) from None
    run = ConformanceRun(
        config,
        backend=backend,
        revision=spec.revision(backend.spec_revision),
        xfails=entries,
        devices_available=devices.present_devices(),
    )
    config.stash[_STATE] = run
    config.pluginmanager.register(run, "conformance-run")
    return run


def _state(config: pytest.Config) -> ConformanceRun | None:
    return config.stash.get(_STATE, None)


def _in_checks(path: Path) -> bool:
    return CHECKS_DIR in Path(path).resolve().parents


def suite_version() -> str | None:
    try:
        return importlib.metadata.version("vllm-outputs-suite")
    except importlib.metadata.PackageNotFoundError:
        return None


# --- collection ----------------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    # A backend's ini may set python_files to something else; the checks are
    # collected whatever it says.
    if file_path.suffix != ".py" or not file_path.name.startswith("test_"):
        return None
    if file_path.resolve().parent != CHECKS_DIR:
        return None
    patterns = parent.config.getini("python_files")
    if any(file_path.match(p) for p in patterns):
        return None  # pytest's own collector takes it
    return pytest.Module.from_parent(parent, path=file_path)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not _in_checks(metafunc.definition.path):
        return
    run = _activate(metafunc.config)
    from conformance.devices import skip_reason

    for name, kinds in (("device", ALL_DEVICES), ("accelerator", ACCELERATORS)):
        if name in metafunc.fixturenames:
            params = []
            for kind in kinds:
                reason = skip_reason(run.backend, kind)
                marks = [pytest.mark.skip(reason=reason)] if reason else []
                params.append(pytest.param(kind, id=kind, marks=marks))
            metafunc.parametrize(name, params)
    if "surface_check" in metafunc.fixturenames:
        from conformance.surface import surface_checks

        type_name = _spec_type_of(metafunc.definition)
        checks = surface_checks(run.revision.types[type_name])
        metafunc.parametrize("surface_check", checks, ids=[c.id for c in checks])


def _spec_type_of(node: pytest.Item) -> str:
    marker = node.get_closest_marker("spec_type")
    if marker is None or not marker.args:
        raise pytest.UsageError(
            f"{node.nodeid}: conformance check without a spec_type marker; add "
            "pytestmark = pytest.mark.spec_type('<SpecName>') to its module"
        )
    return str(marker.args[0])


def revision_skip_reason(node: pytest.Item, revision: str) -> str | None:
    """Why a check written for other spec revisions does not run; None when it applies."""
    marker = node.get_closest_marker("spec_revisions")
    if marker is None or revision in marker.args:
        return None
    return f"written for spec revision(s) {', '.join(marker.args)}; the backend targets {revision}"


def canonical_nodeid(item: pytest.Item) -> str:
    """``conformance/checks/<module>::<test>``, whatever the rootdir and install location."""
    relative = Path(item.path).resolve().relative_to(PACKAGE_DIR).as_posix()
    _, _, rest = item.nodeid.partition("::")
    return f"conformance/{relative}::{rest}"


def _canonical_module_id(path: str) -> str | None:
    """``conformance/checks/<module>`` for a report path naming one of the checks.

    Report paths are relative to wherever pytest counted from (rootdir, or the
    initial ``--pyargs`` path), so they are matched by their tail: the check modules
    all live directly in ``conformance/checks``.
    """
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    if not name.startswith("test_") or not (CHECKS_DIR / name).is_file():
        return None
    if len(parts) > 1 and parts[-2] != "checks":
        return None
    return f"conformance/checks/{name}"


def _without_device(callspec_id: str, device: str | None) -> str:
    """The parameter id of a check minus its device part (the device has its own field)."""
    if device is None:
        return callspec_id
    if callspec_id == device:
        return ""
    return callspec_id.removeprefix(f"{device}-").removesuffix(f"-{device}")


# --- fixtures ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> Backend:
    """The backend under test, as --backend / $OUTPUTS_BACKEND selected it."""
    return _activate(request.config).backend


@pytest.fixture(scope="session")
def reference_backend() -> Backend:
    """This project's reference implementation: the oracle of the differential checks."""
    from conformance.known_backends import reference_backend as make

    return make()


# --- one conformance run ---------------------------------------------------------------


class ConformanceRun:
    """Hooks and state of a conformance run; registered only when the suite is running."""

    def __init__(
        self,
        config: pytest.Config,
        *,
        backend: Backend,
        revision: Any,
        xfails: list[XfailEntry],
        devices_available: list[str],
    ) -> None:
        from conformance.report import Results

        self.config = config
        self.backend = backend
        self.revision = revision
        self.xfails = xfails
        self.devices_available = devices_available
        self.results = Results()
        self.unmatched_xfails: set[str] = set()
        self.is_worker = hasattr(config, "workerinput")

    def pytest_report_header(self) -> list[str]:
        b = self.backend
        return [
            f"conformance: backend {b.name} {b.version or '(no version)'} "
            f"(module {b.module.__name__}, from {b.source!r})",
            f"conformance: spec revision {b.spec_revision}, suite {suite_version() or '(unknown)'}",
            f"conformance: devices declared {', '.join(b.devices)}; "
            f"present here {', '.join(self.devices_available)}",
        ] + (
            [
                f"conformance: {len(self.xfails)} known deviation(s) from {self.config.getoption('xfails_file')}"
            ]
            if self.xfails
            else []
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        matched: set[str] = set()
        for item in items:
            if not _in_checks(item.path):
                continue
            nodeid = canonical_nodeid(item)
            callspec = getattr(item, "callspec", None)
            params = callspec.params if callspec is not None else {}
            device = params.get("device") or params.get("accelerator")
            name = getattr(item, "originalname", item.name).removeprefix("test_")
            variant = _without_device(callspec.id, device) if callspec is not None else ""
            item.user_properties += [
                ("conformance.nodeid", nodeid),
                ("conformance.spec_type", _spec_type_of(item)),
                ("conformance.check", f"{name}[{variant}]" if variant else name),
                ("conformance.device", device),
            ]
            reason = revision_skip_reason(item, self.backend.spec_revision)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
            for entry in self.xfails:
                if entry.matches(nodeid, item.nodeid):
                    matched.add(entry.nodeid)
                    item.add_marker(pytest.mark.xfail(reason=entry.reason, strict=True))
                    break
        self.unmatched_xfails = {e.nodeid for e in self.xfails} - matched

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Under xdist the controller receives every worker's reports through this hook.
        if not self.is_worker:
            self.results.add_report(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # Under xdist the controller gets workers' failed collections through this hook.
        if self.is_worker or not report.failed:
            return
        from conformance.report import failure_text

        text = failure_text(report)
        nodeid = _canonical_module_id(report.fspath)
        if nodeid is None:
            # Collected through --pyargs, a module that fails to import is reported on
            # the session; its path is in the message.
            named = re.search(r"conformance[/\\]checks[/\\](test_\w+\.py)", text)
            nodeid = f"conformance/checks/{named[1]}" if named else f"collection::{report.nodeid}"
        self.results.add_error(nodeid, "collection: " + text)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        self.unmatched_xfails |= set(output.get(_WORKEROUTPUT_KEY, []))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            self.config.workeroutput[_WORKEROUTPUT_KEY] = sorted(self.unmatched_xfails)  # type: ignore[attr-defined]
            return
        for entry in sorted(self.unmatched_xfails):
            self.results.add_error(
                f"xfails-file::{entry}",
                f"xfails file entry {entry!r} matches no collected check; "
                "fix the node id or remove the entry",
                check="xfails_file",
            )
        if self.unmatched_xfails and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        path = self.config.getoption("conformance_report")
        if path is not None:
            from conformance import report

            data = report.build(self.results, self.backend, suite_version(), self.devices_available)
            report.write(data, Path(self.config.invocation_params.dir) / path)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or not self.results.records:
            return
        from conformance.report import table

        b = self.backend
        title = f"conformance: {b.name} {b.version or ''} against spec {b.spec_revision}"
        terminalreporter.section(" ".join(title.split()))
        for line in table(self.results):
            terminalreporter.write_line(line)
        for entry in sorted(self.unmatched_xfails):
            terminalreporter.write_line(
                f"ERROR xfails file entry {entry!r} matches no collected check; "
                "fix the node id or remove the entry",
                red=True,
            )
        path = self.config.getoption("conformance_report")
        if path is not None:
            terminalreporter.write_line(f"conformance report written to {path}")
