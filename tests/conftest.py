"""Settings shared by all of the project's own tests.

Hypothesis profiles, chosen with the ``HYPOTHESIS_PROFILE`` environment variable:

``ci`` (default)
    derandomized, so a CI run tests the same examples every time and a red build
    is reproducible; no deadline, because timing on shared runners is noise and
    the tests here assert behaviour, not speed; no example database on disk.
``dev``
    random examples and the local database, for finding new failures while working.
``thorough``
    many more random examples, for an occasional long hunt.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# The helpers every test folder shares (vllm_release_texts) import by name.  A folder of
# their own: tests/ itself on the path would make its conformance/ shadow the package.
_SUPPORT = str(Path(__file__).resolve().parent / "support")
if _SUPPORT not in sys.path:
    sys.path.insert(0, _SUPPORT)

settings.register_profile("ci", derandomize=True, deadline=None, database=None, max_examples=50)
settings.register_profile("dev", deadline=None, max_examples=50)
settings.register_profile("thorough", deadline=None, max_examples=1000)


def _import_the_checks_under_the_suites_profile() -> None:
    """A Hypothesis check keeps the settings in effect when its module is imported.  The
    suite's runs in this process (``suite_runner.in_process``) reuse modules a test here
    may import first (to read the checks' markers or helpers): imported under this
    file's profile, their checks would keep its health checks and example counts, and a
    run's verdict would depend on which test ran first on the worker.  Imported here, in
    every process, they hold the suite's settings, as in a run of the suite."""
    import importlib

    import conformance.checks
    from conformance.oracle.strategies import PROFILE

    settings.load_profile(PROFILE)
    for path in sorted(Path(conformance.checks.__path__[0]).glob("test_*.py")):
        importlib.import_module(f"conformance.checks.{path.stem}")


_import_the_checks_under_the_suites_profile()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config: pytest.Config) -> None:
    # The suite's markers (conformance.run.plugin owns them): the project's tests import
    # check modules outside a conformance run too.
    from conformance.run.plugin import register_markers

    register_markers(config)


#: Set (CI sets it) to make a test that skips for want of the vLLM release texts fail
#: instead: CI fetches them first and must never skip them silently.
REQUIRE_TEXTS_ENV = "OUTPUTS_SUITE_REQUIRE_TEXTS"


def _require_texts(report: pytest.TestReport | pytest.CollectReport) -> None:
    from vllm_release_texts import SKIP_MARK

    if not (report.skipped and os.environ.get(REQUIRE_TEXTS_ENV)):
        return
    if SKIP_MARK in str(report.longrepr):
        report.outcome = "failed"
        report.longrepr = (
            f"skipped for want of the vLLM release texts, which ${REQUIRE_TEXTS_ENV} requires: "
            f"{report.longrepr}"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    _require_texts(outcome.get_result())


@pytest.hookimpl(tryfirst=True)
def pytest_collectreport(report: pytest.CollectReport) -> None:
    # A module that skips itself whole (allow_module_level) is skipped at collection.
    _require_texts(report)
