"""How the checks are found: --pyargs, a path, any python_files setting of the backend's ini."""

from __future__ import annotations

import suite_runner


def test_checks_are_collected_whatever_python_files_says(tmp_path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\npython_files = check_*.py\n")
    run = suite_runner.subprocess_run(tmp_path, "--pyargs", "conformance.checks.test_module")
    assert run.exit_code == 0, run.output
    assert [t["check"] for t in run.report["tests"]] == [
        "empty_model_runner_output_is_the_releases",
        "placeholder_token_id_is_minus_one",
        "spec_names_are_classes",
    ]


def test_a_path_into_the_checks_activates_the_suite(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, suite_runner.check_path("test_module.py"), report=False
    )
    assert run.exit_code == 0, run.output
    assert "conformance: backend reference" in run.output
    assert "spec type" in run.output  # the table
