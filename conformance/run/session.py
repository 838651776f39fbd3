"""One conformance run: what is judged, which checks apply, what they found.

:func:`activate` resolves the backend, chooses the revision and reads the xfails
file (any problem is a usage error, exit code 4, before a check runs);
:class:`ConformanceRun` holds the hooks that select checks by behaviour, turn
declared deviations into expected failures, and collect the results that
:mod:`conformance.report` writes.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.backends.backend import Backend, BackendResolutionError
from conformance.report.records import CheckIdentity
from conformance.run import nodeids, option_names
from conformance.run.bump import BUMP_SIDE_ENV
from conformance.run.xfails import XfailEntry, XfailsFileError
from conformance.version import suite_version

_STATE = pytest.StashKey["ConformanceRun"]()
_USED_XFAIL = "conformance.xfail_entry"


@dataclass(frozen=True)
class RevisionChoice:
    """The revision judged and why: ``given``, ``declared``, ``detected`` or ``default``.

    ``text`` is the vLLM text judged when the revision was a path
    (:class:`~conformance.releases.text_revision.TextRevision`): ``name`` is then the
    revision of its nearest known release, whose rules judge what the text did not change.
    """

    name: str
    source: str
    detail: str
    text: Any = None
    #: The vLLM release named (``0.15.1`` judges as revision 0.14.0), where one was.
    release: str | None = None

    def describe(self) -> str:
        return f"{self.name} ({self.source}: {self.detail})"


def choose_revision(
    option: str | None, backend: Backend, option_name: str = "revision"
) -> RevisionChoice:
    """``--revision``, else what the backend declares (or detected), else 2025.10.

    Any of them may be a path to a vLLM text, tree or wheel (:func:`text_choice`)."""
    from conformance.oracle.revisions import DEFAULT_REVISION, UnknownRevisionError, canonical_name
    from conformance.oracle.revisions import names_a_path as looks_like_path

    try:
        if option:
            given = f"{option_names.option(option_name)} {option}"
            if looks_like_path(option):
                return text_choice(option, "given", given)
            name = canonical_name(option)
            alias = f", the revision of release {option}" if name != option.strip() else ""
            return RevisionChoice(name, "given", f"{given}{alias}", release=_release(option, name))
        if backend.revision_undetectable is not None:
            raise pytest.UsageError(backend.revision_undetectable)
        if backend.spec_revision is not None:
            detected = backend.revision_detected_from
            if looks_like_path(backend.spec_revision):
                source = "detected" if detected else "declared"
                why = detected or f"the backend targets {backend.spec_revision}"
                return text_choice(backend.spec_revision, source, why)
            name = canonical_name(backend.spec_revision)
            release = _release(backend.spec_revision, name)
            if detected:
                return RevisionChoice(name, "detected", detected, release=release)
            return RevisionChoice(
                name, "declared", f"the backend targets {backend.spec_revision}", release=release
            )
    except UnknownRevisionError as error:
        raise pytest.UsageError(str(error)) from None
    return RevisionChoice(DEFAULT_REVISION, "default", "no revision given or declared")


def _release(asked: str, name: str) -> str | None:
    """The release a revision option names: itself if a release, else its revision's first."""
    from conformance.oracle.revisions import known_releases

    releases = known_releases()
    return asked.strip() if asked.strip() in releases else name if name in releases else None


def text_choice(path: str, source: str, why: str) -> RevisionChoice:
    """A path as the revision: the vLLM text there, judged as its nearest known release
    plus its changes; a path that holds none is a usage error naming it."""
    from conformance.releases.text_revision import text_revision
    from conformance.releases.texts import ReleaseTextError

    try:
        judged = text_revision(path)
    except ReleaseTextError as error:
        raise pytest.UsageError(str(error)) from None
    return RevisionChoice(
        judged.base, source, f"{why}; judged against {judged.headline()}", judged, judged.nearest
    )


def release_judged_by_its_own_code(choice: RevisionChoice) -> RevisionChoice:
    """A release revision some of whose members vLLM's own code judges
    (``SpecRevision.judged_by_vllm``): the release's text attached, judged as a text is.
    vLLM's own text judged in its self-run is held to the revision's rules alone."""
    from dataclasses import replace

    from conformance.oracle.revisions import revision
    from conformance.releases.text_revision import judged_by_its_own_code
    from conformance.releases.texts import ReleaseTextError
    from conformance.run.text_judging import SELF_RUN_ENV

    if choice.text is not None or os.environ.get(SELF_RUN_ENV):
        return choice
    judged = revision(choice.name)
    try:
        text = judged_by_its_own_code(judged)
    except ReleaseTextError as error:
        raise pytest.UsageError(
            f"revision {judged.name} judges {', '.join(judged.judged_by_vllm)} against vLLM's "
            f"own code of {judged.releases[0]}, whose text is needed: {error}"
        ) from None
    if text is None:
        return choice
    return replace(choice, text=text, detail=f"{choice.detail}; {text.headline()}")


def activate(config: pytest.Config) -> ConformanceRun:
    """Resolve everything a run needs; any problem is a usage error (exit 4)."""
    if _STATE in config.stash:
        return config.stash[_STATE]
    _refuse_a_shadowed_reference()
    from conformance.backends import devices, resolve
    from conformance.backends import known as known_backends
    from conformance.oracle import revisions
    from conformance.run import xfails

    try:
        backend = resolve.load_backend(config.getoption("conformance_backend"))
    except BackendResolutionError as error:
        raise pytest.UsageError(str(error)) from None
    _refuse_an_unwritable_report(config)
    bump_to = config.getoption("conformance_bump_to")
    from_choice = None
    if bump_to:
        # Judged at the target; at its own revision in a run of its own (conformance.run.bump).
        from_choice = choose_revision(config.getoption("conformance_revision"), backend)
        choice = choose_revision(bump_to, backend, option_name="bump-to")
    else:
        choice = choose_revision(config.getoption("conformance_revision"), backend)
        backend = known_backends.retarget_reference(backend, choice.name)
    choice = release_judged_by_its_own_code(choice)
    revision = revisions.revision(choice.name)
    superseded: dict[str, Any] = {}
    if choice.text is not None:
        revision = choice.text.spec_revision()
        superseded = _superseded(config, choice.text)
    entries: list[XfailEntry] = []
    path = config.getoption("conformance_xfails")
    if path is not None:
        try:
            entries = xfails.load(Path(config.invocation_params.dir) / path)
            if bump_to or os.environ.get(BUMP_SIDE_ENV):
                # One file serves both sides of a bump: each keeps the rules it has.
                has = revision.all_behaviours | revision.producer_behaviours
                entries = [e for e in entries if e.behaviour is None or e.behaviour in has]
            xfails.validate(
                entries,
                behaviours=revision.all_behaviours | revision.producer_behaviours,
                known_behaviours=known_behaviours() | revision.all_behaviours,
                check_functions=nodeids.check_functions(),
                revision=revision.name,
                path=path,
            )
        except XfailsFileError as error:
            raise pytest.UsageError(str(error)) from None
    from conformance.report.provenance import Provenance

    available = devices.present_devices(backend.devices)
    run = ConformanceRun(
        config,
        backend=backend,
        revision=revision,
        choice=choice,
        xfails=entries,
        devices_available=available,
        provenance=Provenance.of_run(backend, available, _run_stamp(config)),
    )
    run.superseded = superseded
    if from_choice is not None and not run.is_worker:
        run.bump = _judged_at_from(config, backend, from_choice, choice, revision)
    if _is_replacement_worker(config):
        from conformance.producers.warm_up import WarmUp

        # A worker started after another died: the warm-up may be what killed it.
        run.warm_up = WarmUp(skipped="this worker replaces one that died")
    elif not _is_xdist_controller(config):
        from conformance.producers.warm_up import warm_up
        from conformance.run.guard import check_timeout

        run.warm_up = warm_up(backend, revision, check_timeout(config))
    config.stash[_STATE] = run
    config.pluginmanager.register(run, "conformance-run")
    # The terminal names a check as the report and the xfails file do, wherever pytest
    # was started from and wherever the suite is installed.
    config.cwd_relative_nodeid = nodeids.shown_nodeid(config)  # type: ignore[method-assign,assignment]
    from conformance.run.guard import Guard
    from conformance.run.time_limit import TimeLimit
    from conformance.run.worker_crashes import WorkerCrashes

    # A verdict for every check: checks that never ran, time limits, crashed workers.
    guard = Guard(run, config)
    config.pluginmanager.register(guard, "conformance-guard")
    config.pluginmanager.register(TimeLimit(guard), "conformance-time-limit")
    config.pluginmanager.register(WorkerCrashes(guard), "conformance-worker-crashes")
    return run


def _judged_at_from(
    config: pytest.Config, backend: Backend, from_choice: RevisionChoice, to: RevisionChoice,
    to_revision: Any,
) -> Any:  # fmt: skip
    """The backend judged at its own revision (A), in a run of its own, for the bump."""
    from conformance.oracle import revisions
    from conformance.releases.text_revision import bump_changes
    from conformance.run import bump
    from conformance.run.guard import check_timeout

    base = Path(config.invocation_params.dir)
    at = str(from_choice.text.source.path) if from_choice.text is not None else from_choice.name
    report = bump.from_report_path(config.getoption("conformance_report"), base)
    try:
        data = bump.run_from_side(
            backend.source,
            at,
            config.getoption("conformance_xfails"),
            report,
            check_timeout(config),
            base,
            _selection(config),
        )
    except bump.BumpError as error:
        raise pytest.UsageError(str(error)) from None
    from_revision = (
        from_choice.text.spec_revision()
        if from_choice.text is not None
        else revisions.revision(from_choice.name)
    )
    changes = bump_changes(
        from_choice.release, from_choice.text, from_revision, to.release, to.text, to_revision
    )
    return bump.Bump(
        _label(from_choice), _label(to), data, str(report) if report.is_file() else None, changes
    )


def _selection(config: pytest.Config) -> list[str]:
    """This run's check selection (``-k``, ``-m``), for the other side of a bump."""
    found = []
    if getattr(config.option, "keyword", ""):
        found += ["-k", config.option.keyword]
    if getattr(config.option, "markexpr", ""):
        found += ["-m", config.option.markexpr]
    return found


def _label(choice: RevisionChoice) -> str:
    """A side of a bump as people name it: the release, the text, or the revision."""
    if choice.text is not None:
        return choice.text.headline()
    return choice.release or choice.name


def _superseded(config: pytest.Config, judged: Any) -> dict[str, Any]:
    """The nearest revision's checks vLLM's own text fails (its self-run, cached)."""
    from conformance.run.guard import check_timeout
    from conformance.run.text_judging import SelfRunError, superseded_checks

    try:
        return superseded_checks(judged, check_timeout(config))
    except SelfRunError as error:
        raise pytest.UsageError(str(error)) from None


def _refuse_an_unwritable_report(config: pytest.Config) -> None:
    """A file the run cannot write is a usage error now, not a lost run at the end."""
    from conformance.report.writer import unwritable

    for option, what in (
        ("conformance_report", "the conformance report"),
        ("conformance_write_xfails", "the xfails file"),
    ):
        value = config.getoption(option)
        if value is None:
            continue
        path = Path(config.invocation_params.dir) / value
        why = unwritable(path)
        if why is None and option == "conformance_write_xfails" and path.exists():
            why = "it exists (an xfails file is never overwritten): remove it"
        if why is not None:
            raise pytest.UsageError(f"cannot write {what} to {value}: {why}; choose another path")


def _run_stamp(config: pytest.Config) -> Any:
    """The run's id and start, decided once: an xdist worker takes its controller's."""
    from conformance.report.provenance import WORKERINPUT_KEY, RunStamp

    workerinput = getattr(config, "workerinput", None)
    handed = RunStamp.of(workerinput.get(WORKERINPUT_KEY)) if workerinput is not None else None
    return handed or RunStamp.new()


def _is_xdist_controller(config: pytest.Config) -> bool:
    """The xdist controller runs no check, so it warms nothing up (each worker does)."""
    workers = getattr(config.option, "numprocesses", None)
    return bool(workers) and not hasattr(config, "workerinput")


def _is_replacement_worker(config: pytest.Config) -> bool:
    """An xdist worker started in place of one that died (--isolate restarts them)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return False
    number = str(workerinput.get("workerid", "gw0")).removeprefix("gw")
    return number.isdigit() and int(number) >= int(workerinput.get("workercount", 1))


def _refuse_a_shadowed_reference() -> None:
    """The suite's oracle is its own ``reference`` package, not a folder that shadows it."""
    own = Path(nodeids.PACKAGE_DIR).parent / "reference"
    module = sys.modules.get("reference")
    origin = getattr(module, "__file__", None)
    if module is None:
        found = importlib.util.find_spec("reference")
        origin = found.origin if found is not None else None
    if origin is None or Path(origin).resolve().parent != own.resolve():
        where = Path(origin).parent if origin else "a namespace package"
        raise pytest.UsageError(
            f"the module 'reference' is {where}, not this suite's reference package ({own}): "
            "a folder named reference in the working directory (or earlier on sys.path) "
            "shadows it; run from another directory or rename that folder"
        )


def current(config: pytest.Config) -> ConformanceRun:
    return activate(config)


def known_behaviours() -> frozenset[str]:
    from conformance.oracle import revisions

    named = set(revisions.BEHAVIOURS) | set(revisions.PRODUCER_BEHAVIOURS)
    for revision in revisions.all_revisions():
        named |= revision.surface_behaviours
    return frozenset(named)


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
        revision: Any,
        choice: RevisionChoice,
        xfails: list[XfailEntry],
        devices_available: list[str],
        provenance: Any,
    ) -> None:
        from conformance.report.records import Results

        self.config = config
        self.backend = backend
        self.revision = revision
        self.choice = choice
        self.xfails = xfails
        self.devices_available = devices_available
        #: Where and which run this is (``conformance.report.provenance.Provenance``).
        self.provenance = provenance
        self.results = Results()
        self.used_xfails: set[int] = set()
        self.is_worker = hasattr(config, "workerinput")
        self.warm_up: Any = None
        self.written_xfails = 0
        #: ``{check key: Superseded}``: the nearest revision's checks a judged vLLM text
        #: fails itself, judged against that text's own code instead.
        self.superseded: dict[str, Any] = {}
        #: With ``--bump-to``: the backend at its own revision (``conformance.run.bump``),
        #: and, once the run is done, the report's ``bump``.
        self.bump: Any = None
        self.bump_report: dict[str, Any] | None = None

    @property
    def text_revision(self) -> Any:
        """The vLLM text judged (a ``TextRevision``), when the revision was a path."""
        return self.choice.text

    @property
    def _types_removed(self) -> frozenset[str]:
        judged = self.text_revision
        return judged.types_removed if judged is not None else frozenset()

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
        import platform

        import torch

        b = self.backend
        lines = [
            f"conformance: backend {b.name} {b.version or '(no version)'} "
            f"(module {b.module_name}, from {b.source!r})",
            f"conformance: spec revision {self.choice.describe()}, "
            f"suite {suite_version() or '(unknown)'}",
            f"conformance: devices declared {', '.join(b.devices)}; "
            f"present here {', '.join(self.devices_available)}",
        ]
        where = f"Python {platform.python_version()}, torch {torch.__version__}"
        lines += [f"conformance: {line}" for line in self.provenance.header(where)]
        from conformance.producers.runtime import producer_devices

        if b.make_async_output is not None:
            judged = [d.value for d in producer_devices(b) if d.skip is None]
            lines.append(
                f"conformance: async output judged on {', '.join(judged) or 'no device'}"
                + (
                    " (a simulated runtime: the device is not on this machine)"
                    if any(v.endswith("-simulated") for v in judged)
                    else ""
                )
            )
        from conformance.run.selection import steps_not_declared_line

        if b.make_async_output is not None and (unsupported := steps_not_declared_line(b)):
            lines.append(f"conformance: {unsupported}")
        lines += self._runners_header()
        lines += self._text_header()
        if self.bump is not None:
            lines.append(
                f"conformance: bump from {self.bump.from_label} to {self.bump.to_label} "
                f"(judged at {self.bump.from_label} too: {self.bump.from_report.get('summary')})"
            )
        warmed = self.warm_up.header() if self.warm_up is not None else None
        if warmed:
            lines.append(f"conformance: {warmed}")
        if self.xfails:
            path = self.config.getoption("conformance_xfails")
            lines.append(f"conformance: {len(self.xfails)} known deviation(s) from {path}")
        lines += [f"conformance: note: {note}" for note in b.notes]
        return lines

    def _text_header(self) -> list[str]:
        """The vLLM text judged: its nearest release, and each change once."""
        judged = self.text_revision
        if judged is None:
            return []
        lines = [f"conformance: judged against {judged.headline()}"]
        for change in judged.changes:
            forms = f"{change.known or '-'} -> {change.new or '-'}"
            lines.append(f"conformance:   {change.describe()}: {forms}")
        if self.superseded:
            lines.append(
                f"conformance: {len(self.superseded)} check(s) of {judged.base} that vLLM's own "
                "text fails are judged against its own code instead (vllm-change behaviours)"
            )
        return lines

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
                from conformance.run.text_judging import SUPERSEDED

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
        from conformance.run.text_judging import check_key

        found = self.superseded.get(check_key(identity.nodeid, identity.check))
        if found is None:
            return None
        judged = self.text_revision
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

    def _runners_header(self) -> list[str]:
        """The release's default GPU runner and each async output class judged."""
        from conformance.producers.runners import async_outputs_key

        key = async_outputs_key(self.backend, self.revision)
        lines = []
        default = key["default_runner"]
        release = self.backend.version if self.backend.name == "vllm" else None
        if default is not None:
            of = f"vLLM {release}" if release else f"revision {self.revision.name}"
            lines.append(
                f"conformance: {of}'s default GPU runner: {default['runner']} ({default['why']})"
            )
        if len(key["judged"]) > 1:
            lines.append(f"conformance: async outputs judged: {'; '.join(key['judged'])}")
        if self.backend.name == "vllm":
            from conformance.backends.vllm_producers import gatherings_found

            if gatherings := gatherings_found():
                lines.append(f"conformance: gatherings found: {'; '.join(gatherings)}")
        return lines

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
        if report.failed and report.when == "call" and call.excinfo is not None:
            from conformance.report.suite_errors import SUITE_ERROR, suite_function

            raised_by = suite_function(call.excinfo)
            if raised_by is not None:
                report.user_properties.append((SUITE_ERROR, raised_by))
                return  # the suite's error: no behaviour of the backend, no xfail
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
            report.wasxfail = f"{entry.reason} [{entry.label}]"
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

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
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
        for line in failures_by_behaviour(self.results.sorted_records()):
            terminalreporter.write_line(line, red=True)
        if self.bump_report is not None:
            from conformance.run.bump import terminal_lines

            for line in terminal_lines(self.bump_report):
                terminalreporter.write_line(line, red=line.lstrip().startswith("BREAKS"))
        path = self.config.getoption("conformance_report")
        if path is not None:
            terminalreporter.write_line(f"conformance report written to {path}")
        xfails_path = self.config.getoption("conformance_write_xfails")
        if xfails_path is not None:
            terminalreporter.write_line(
                f"xfails file with {self.written_xfails} behaviour(s) written to {xfails_path}"
            )


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


def _failure_message(report: pytest.TestReport) -> str:
    from conformance.report.records import failure_text

    return failure_text(report)
