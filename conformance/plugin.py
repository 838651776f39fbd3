"""pytest plugin of the conformance suite (registered through the ``pytest11`` entry point).

It is loaded into every pytest run of an environment that has this package, so
it adds nothing to a run but its own option group, every option namespaced
(``--conformance-*``), and imports neither torch nor the reference.  It wakes up
only when the run is a conformance run: one of its options was given, or the
suite was named (``--pyargs conformance``, a path into ``conformance/checks``).
Then :class:`conformance.session.ConformanceRun` resolves the backend and the
revision (a bad one is a usage error, exit code 4), selects the checks and writes
the report.  The fixtures the checks use live in ``conformance/checks/conftest.py``,
visible to the suite's own check modules only.

Turn it off in a project that never runs the suite: ``pytest -p no:conformance``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.nodeids import CHECKS_DIR, PACKAGE_DIR

OPTIONS = {
    "conformance_backend": "--conformance-backend",
    "conformance_revision": "--conformance-revision",
    "conformance_xfails": "--conformance-xfails",
    "conformance_report": "--conformance-report",
    "conformance_check_timeout": "--conformance-check-timeout",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "vllm.v1.outputs conformance suite")
    group.addoption(
        "--conformance-backend",
        default=None,
        metavar="SPEC",
        help="backend to check: a module path, module:attribute naming a "
        "conformance.Backend, or an entry-point name (default: $OUTPUTS_BACKEND, "
        "else 'reference')",
    )
    group.addoption(
        "--conformance-revision",
        default=None,
        metavar="REVISION",
        help="spec revision to judge against: 2025.10 or a vLLM release such as 0.12.0 "
        "(default: what the backend declares, the installed vLLM's version for the vllm "
        "backend, else 2025.10); python -m conformance --list-revisions lists them",
    )
    group.addoption(
        "--conformance-xfails",
        default=None,
        metavar="PATH",
        help="TOML file of known deviations ([[xfail]] behaviour = ... or nodeid = ..., "
        "reason = ...); see the conformance README",
    )
    group.addoption(
        "--conformance-report",
        default=None,
        metavar="PATH",
        help="write the JSON conformance report (schema conformance-report/1) to PATH",
    )
    group.addoption(
        "--conformance-check-timeout",
        default=None,
        type=_non_negative_seconds,
        metavar="S",
        help="time limit of each check in seconds; a check past it fails naming the backend "
        "call it was stuck in, and the run goes on (default: 60; 0 disables it)",
    )


def _non_negative_seconds(text: str) -> float:
    # Defined here, not imported: the plugin loads in every pytest run and stays light.
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(
            f"expected seconds >= 0 (0 turns the limit off), got {text}"
        )
    return value


def pytest_configure(config: pytest.Config) -> None:
    if not _asked_for_suite(config):
        return
    from conformance.session import activate

    config.addinivalue_line(
        "markers", "spec_type(name): the spec type (or 'module') a conformance check is about"
    )
    config.addinivalue_line(
        "markers", "behaviour(name): the named spec behaviour a conformance check belongs to"
    )
    config.addinivalue_line(
        "markers", "producer(name): the backend producer a check needs (skipped without it)"
    )
    config.addinivalue_line(
        "markers",
        "accelerator_only: an async output check that needs an accelerator (real or simulated)",
    )
    config.addinivalue_line(
        "markers", "surface_of(name): the held type whose surface a check describes"
    )
    activate(config)
    # A check module that cannot be collected is one error in the report, and the
    # other checks still run: as under xdist, so the report is the same either way.
    config.option.continue_on_collection_errors = True


def _asked_for_suite(config: pytest.Config) -> bool:
    if any(config.getoption(dest) is not None for dest in OPTIONS):
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
