"""The plugin is loaded into every pytest run; outside a conformance run it does nothing."""

from __future__ import annotations

import suite_runner


def test_unrelated_run_gets_no_header_table_or_backend_resolution(tmp_path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    # A broken OUTPUTS_BACKEND would be a usage error if the plugin resolved it here.
    run = suite_runner.subprocess_run(
        tmp_path, "test_plain.py", report=False, env={"OUTPUTS_BACKEND": "no_such_backend_module"}
    )
    assert run.exit_code == 0, run.output
    assert "conformance" not in run.output


FOREIGN_CONFTEST = """
import pytest


def pytest_addoption(parser):
    # Names other projects use (array-api-tests defines --xfails-file).
    parser.addoption("--backend", default="numpy")
    parser.addoption("--xfails-file", default=None)
    parser.addoption("--report", default=None)
    parser.addoption("--revision", default="r1")


@pytest.fixture
def backend(request):
    return "their own " + request.config.getoption("backend")


@pytest.fixture
def revision():
    return "their own revision"
"""

FOREIGN_TEST = """
import sys


def test_their_options_and_fixtures(backend, revision, pytestconfig):
    assert backend == "their own jax"
    assert revision == "their own revision"
    assert pytestconfig.getoption("xfails_file") == "skips.txt"
    assert pytestconfig.getoption("report") == "out.json"


def test_the_suite_plugin_imported_no_torch():
    assert "torch" not in sys.modules
    assert "reference" not in sys.modules
"""


def test_a_foreign_project_with_the_same_option_and_fixture_names_runs(tmp_path) -> None:
    (tmp_path / "conftest.py").write_text(FOREIGN_CONFTEST)
    (tmp_path / "test_foreign.py").write_text(FOREIGN_TEST)
    run = suite_runner.subprocess_run(
        tmp_path,
        "test_foreign.py",
        "--backend",
        "jax",
        "--xfails-file",
        "skips.txt",
        "--report",
        "out.json",
        report=False,
        # A new interpreter: the run asserts torch is not imported (a warm parent has it).
        fresh=True,
    )
    assert run.exit_code == 0, run.output
    assert "2 passed" in run.output


def test_the_plugin_registers_only_its_namespaced_option_group(tmp_path) -> None:
    run = suite_runner.subprocess_run(tmp_path, "--help", report=False)
    lines = run.output.splitlines()
    start = next(i for i, line in enumerate(lines) if "vllm.v1.outputs conformance suite" in line)
    group = []
    for line in lines[start + 1 :]:
        if line and not line.startswith(" "):
            break  # the next option group
        if line.startswith("  -"):
            group.append(line.split()[0].split("=")[0].rstrip(","))
    assert all(option.startswith("--conformance-") for option in group), group
    assert {
        "--conformance-backend",
        "--conformance-report",
        "--conformance-revision",
        "--conformance-xfails",
    } <= set(group)


def test_the_plugin_can_be_switched_off(tmp_path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_one():\n    pass\n")
    run = suite_runner.subprocess_run(
        tmp_path,
        "test_plain.py",
        "-p",
        "no:conformance",
        "--conformance-backend",
        "x",
        report=False,
    )
    assert run.exit_code == 4  # the option is unknown once the plugin is off
    assert "unrecognized arguments: --conformance-backend" in run.output


THEIR_PACKAGES_TEST = """
import sys

import conformance
import reference


def test_their_packages_are_the_ones_imported():
    assert conformance.WHOSE == "theirs"
    assert reference.WHOSE == "theirs"
    assert "reports" not in sys.modules
    assert not any(m.startswith("conformance.") for m in sys.modules)
"""


def test_a_project_with_its_own_conformance_and_reference_packages_keeps_them(tmp_path) -> None:
    # The entry point loads a module of its own, so the suite's conformance, reference
    # and reports stay out of sys.modules unless the suite is run.
    for package in ("conformance", "reference"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text('WHOSE = "theirs"\n')
    (tmp_path / "test_theirs.py").write_text(THEIR_PACKAGES_TEST)
    run = suite_runner.subprocess_run(tmp_path, "test_theirs.py", report=False)
    assert run.exit_code == 0, run.output
    assert "1 passed" in run.output


def test_loading_the_entry_point_imports_nothing_of_the_suite() -> None:
    import subprocess
    import sys

    code = (
        "import sys, vllm_outputs_suite_plugin; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('conformance', 'reference', 'reports', 'torch', 'numpy')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
