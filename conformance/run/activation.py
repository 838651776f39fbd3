"""How a conformance run comes to be: the backend resolved, what it is judged against
(:mod:`conformance.judged`), the xfails file read; any problem is a usage error (exit
code 4) before a check runs.  The run's hooks are :class:`~conformance.run.session.ConformanceRun`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.backends.backend import Backend, BackendResolutionError
from conformance.judged import Judged, JudgedError, judged_at
from conformance.run import nodeids, option_names
from conformance.run.borrowed_types import noted, pin_pythonpath, with_the_targets_vllm
from conformance.run.bump import BUMP_SIDE_ENV
from conformance.run.session import ConformanceRun
from conformance.run.xfails import XfailEntry, XfailsFileError

if TYPE_CHECKING:
    from conformance.run.bump import Bump

_STATE = pytest.StashKey[ConformanceRun]()


def _refuse_unknown_revisions(config: pytest.Config) -> None:
    """A revision option naming no revision (``--revision 0.33``) is refused before the
    backend is imported: importing a plugin and its vLLM takes half a minute."""
    from conformance.oracle.revisions import UnknownRevisionError, canonical_name, names_a_path

    for option in ("revision", "bump-to"):
        value = config.getoption(f"conformance_{option.replace('-', '_')}")
        if not value or names_a_path(value):
            continue
        try:
            canonical_name(value)
        except UnknownRevisionError as error:
            raise pytest.UsageError(f"{option_names.option(option)}: {error}") from None


def activate(config: pytest.Config) -> ConformanceRun:
    """Resolve everything a run needs; any problem is a usage error (exit 4)."""
    if _STATE in config.stash:
        return config.stash[_STATE]
    _refuse_a_shadowed_reference()
    from conformance.run.journal import Journal, take_supervisor_folder

    supervised = take_supervisor_folder()
    from conformance.backends import devices, resolve
    from conformance.backends import known as known_backends
    from conformance.run import xfails

    _refuse_unknown_revisions(config)
    try:
        backend = resolve.load_backend(config.getoption("conformance_backend"))
    except BackendResolutionError as error:
        raise pytest.UsageError(str(error)) from None
    _refuse_an_unwritable_report(config)
    bump_to = config.getoption("conformance_bump_to")
    pin: Judged | None = None
    from conformance.run.guard import check_timeout

    try:
        if bump_to:
            # Judged at the target; at its pin in a run of its own (conformance.run.bump).
            pin = judged_at(
                config.getoption("conformance_revision"), backend, option_names.option("revision")
            )
            judged = judged_at(bump_to, backend, option_names.option("bump-to"))
            backend = with_the_targets_vllm(config, backend, judged, str(bump_to))
        else:
            asked = config.getoption("conformance_revision")
            judged = judged_at(asked, backend, option_names.option("revision"))
            backend = known_backends.retarget_reference(backend, judged.choice.name)
            installed = known_backends.installed_release_borrowed(backend)
            if (
                asked
                and known_backends.borrows_types(backend)
                and judged.revision.name != judged_at(None, backend).revision.name
            ):
                # Judged at another vLLM than its pin (a neighbour leg of its CI matrix).
                backend = with_the_targets_vllm(config, backend, judged, str(asked))
            elif installed is not None and installed != judged.choice.name:
                # Its types are the installed vLLM's, of another release than the one
                # judged: its pin's types are what it holds there.
                backend = noted(
                    with_the_targets_vllm(config, backend, judged, judged.choice.name),
                    f"the vLLM installed ({installed}) is not the release judged "
                    f"({judged.choice.name}), whose types this backend holds there",
                )
        superseded = judged.superseded(check_timeout(config))
    except JudgedError as error:
        raise pytest.UsageError(str(error)) from None
    revision = judged.revision
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
        judged=judged,
        xfails=entries,
        devices_available=available,
        provenance=Provenance.of_run(backend, available, _run_stamp(config)),
    )
    run.superseded = superseded
    if pin is not None and not run.is_worker:
        run.bump = _judged_at_pin(config, backend, pin, judged)
    journal = Journal.of_supervisor(supervised, is_worker=run.is_worker)
    if _is_replacement_worker(config):
        from conformance.producers.warm_up import WarmUp

        # A worker started after another died: the warm-up may be what killed it.
        run.warm_up = WarmUp(skipped="this worker replaces one that died")
    elif not _is_xdist_controller(config):
        from conformance.producers.warm_up import warm_up
        from conformance.run.guard import check_timeout

        announce = journal.warming if journal is not None else lambda producer: None
        run.warm_up = warm_up(backend, revision, check_timeout(config), announce)
    config.stash[_STATE] = run
    config.pluginmanager.register(run, "conformance-run")
    # The terminal names a check as the report and the xfails file do, wherever pytest
    # was started from and wherever the suite is installed.
    config.cwd_relative_nodeid = nodeids.shown_nodeid(config)  # type: ignore[method-assign,assignment]
    from conformance.run.guard import Guard
    from conformance.run.time_limit import TimeLimit
    from conformance.run.worker_crashes import WorkerCrashes

    # A verdict for every check: checks that never ran, time limits, crashed workers.
    guard = Guard(run, config, journal)
    config.pluginmanager.register(guard, "conformance-guard")
    config.pluginmanager.register(TimeLimit(guard), "conformance-time-limit")
    config.pluginmanager.register(WorkerCrashes(guard), "conformance-worker-crashes")
    return run


def _judged_at_pin(config: pytest.Config, backend: Backend, pin: Judged, to: Judged) -> Bump:
    """The backend judged at its pin, in a run of its own, for the bump."""
    from conformance.releases.text_revision import bump_changes
    from conformance.run import bump
    from conformance.run.guard import check_timeout

    base = Path(config.invocation_params.dir)
    at = str(pin.text.source.path) if pin.text is not None else pin.choice.name
    report = bump.from_report_path(config.getoption("conformance_report"), base)
    # Without --report the pin's report is read here, then gone with its folder.
    kept = config.getoption("conformance_report") is not None
    try:
        data = bump.run_from_side(
            backend.source,
            at,
            config.getoption("conformance_xfails"),
            report,
            check_timeout(config),
            base,
            _selection(config),
            pin_pythonpath(config),
        )
    except bump.BumpError as error:
        raise pytest.UsageError(str(error)) from None
    finally:
        if not kept:
            shutil.rmtree(report.parent, ignore_errors=True)
    changes = bump_changes(
        pin.choice.release, pin.text, pin.revision, to.choice.release, to.text, to.revision
    )
    return bump.Bump(
        pin.label(), to.label(), data, str(report) if kept and report.is_file() else None, changes
    )


def _selection(config: pytest.Config) -> list[str]:
    """This run's check selection (``-k``, ``-m``), for the other side of a bump."""
    found = []
    if getattr(config.option, "keyword", ""):
        found += ["-k", config.option.keyword]
    if getattr(config.option, "markexpr", ""):
        found += ["-m", config.option.markexpr]
    return found


def _refuse_an_unwritable_report(config: pytest.Config) -> None:
    """A file the run cannot write is a usage error now, not a lost run at the end."""
    from conformance.report.schema import SCHEMA
    from conformance.report.writer import Unwritable, unwritable

    here = Path(config.invocation_params.dir)
    xfails = config.getoption("conformance_xfails")
    for option, what, replaces in (
        ("conformance_report", "the conformance report", SCHEMA),
        ("conformance_write_xfails", "the xfails file", None),
    ):
        value = config.getoption(option)
        if value is None:
            continue
        path = here / value
        why = unwritable(path, replaces)
        if why is None and option == "conformance_write_xfails" and path.exists():
            why = Unwritable("it exists (an xfails file is never overwritten)", "remove it")
        if why is None and xfails is not None and path.resolve() == (here / xfails).resolve():
            why = Unwritable("it is the xfails file the run reads (--xfails)")
        if why is not None:
            raise pytest.UsageError(f"cannot write {what} to {value}: {why.with_another_path()}")
    written = [config.getoption(o) for o in ("conformance_report", "conformance_write_xfails")]
    if None not in written and (here / written[0]).resolve() == (here / written[1]).resolve():
        raise pytest.UsageError(
            f"cannot write the conformance report and the xfails file both to {written[0]}; "
            "give each a path of its own"
        )


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
    """The suite's oracle is its own ``reference`` package, not a folder that shadows it,
    another distribution's, or what an uninstall left of it."""
    try:
        from vllm_outputs_suite_guard import problem
    except ImportError:  # an editable install made before it existed maps only older names
        line = None
    else:
        line = problem(("reference",))
    if line is not None:
        raise pytest.UsageError(line.removeprefix("ERROR: "))
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


def known_behaviours() -> frozenset[str]:
    from conformance.oracle import revisions

    named = set(revisions.BEHAVIOURS) | set(revisions.PRODUCER_BEHAVIOURS)
    for revision in revisions.all_revisions():
        named |= revision.surface_behaviours
    return frozenset(named)


def current(config: pytest.Config) -> ConformanceRun:
    """The run of ``config`` (made on first use)."""
    return activate(config)
