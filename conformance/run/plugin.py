"""The hooks of a conformance run, registered by the ``pytest11`` entry point
(:mod:`vllm_outputs_suite_plugin`) once a run asks for the suite.

:func:`pytest_configure` registers the suite's markers and lets
:class:`conformance.run.session.ConformanceRun` resolve the backend and the revision (a
bad one is a usage error, exit code 4), select the checks and write the report.
The fixtures the checks use live in ``conformance/checks/conftest.py``, visible to
the suite's own check modules only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.run.nodeids import CHECKS_DIR

#: The markers the checks carry: registered here, once, for every run of the suite (and
#: by the project's own tests, which import check modules outside one).
MARKERS = (
    "spec_type(name): the spec type (or 'module') a conformance check is about",
    "behaviour(name): the named spec behaviour a conformance check belongs to",
    "producer(name): the backend producer a check needs (skipped without it)",
    "accelerator_only: an async output check that needs an accelerator (real or simulated)",
    "surface_of(name): the held type whose surface a check describes",
    "step_kinds(*kinds): the step kinds an async output check's step is of (skipped as not "
    "applicable when the backend's steps do not declare one)",
)


def register_markers(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)


def pytest_configure(config: pytest.Config) -> None:
    from conformance.run.activation import activate

    register_markers(config)
    activate(config)
    # A check module that cannot be collected is one error in the report, and the
    # other checks still run: as under xdist, so the report is the same either way.
    config.option.continue_on_collection_errors = True


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
