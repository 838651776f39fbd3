"""An unresolvable backend spec ends the run with exit code 4 and one line naming the fix.

These run in a subprocess, from an empty directory, as a backend author runs the
suite: the point is what the terminal shows (one ``ERROR:`` line, no traceback,
no INTERNALERROR).
"""

from __future__ import annotations

import importlib.util

import pytest
import suite_runner

#: Whether a vLLM is installed, asked before any check puts a stand-in of it in sys.modules.
_VLLM_INSTALLED = importlib.util.find_spec("vllm") is not None

BAD_SPECS = {
    "no-such-module": ("no_such_backend_module", "no module named 'no_such_backend_module'"),
    "import-error-inside": (
        "broken_backends.raises_on_import",
        "importing 'broken_backends.raises_on_import' failed with RuntimeError: this backend cannot be imported",
    ),
    "missing-spec-name": (
        "broken_backends.missing_spec_name",
        "lacks spec name(s) DraftTokenIds; export all of",
    ),
    "backend-attribute-left-out": (
        "broken_backends.async_output_rebuilds_output",
        "declares conformance.Backend BACKEND rather than the spec's types; use --backend "
        "broken_backends.async_output_rebuilds_output:BACKEND",
    ),
    "attribute-not-a-backend": (
        "broken_backends.not_a_backend:BACKEND",
        "is a dict, not a conformance.Backend",
    ),
    "unknown-spec-revision": (
        "broken_backends.future_revision:BACKEND",
        "targets unknown spec revision '2026.01'; known revisions: 0.10.2, 0.11.0, 2025.10",
    ),
    "no-such-attribute": ("reference:NO_SUCH_BACKEND", "has no attribute 'NO_SUCH_BACKEND'"),
    "malformed-attribute-spec": ("reference:", "is not of the form module:attribute"),
    "mistyped-module": (
        "broken_backends.missing_spec_nam",
        "no module named 'broken_backends.missing_spec_nam' "
        "(did you mean 'broken_backends.missing_spec_name'?); install",
    ),
    "mistyped-package": (
        "broken_backend.not_a_backend",
        "(did you mean 'broken_backends.not_a_backend'?)",
    ),
    "mistyped-nested-attribute": (
        "broken_backends.not_a_backend:BACKEND.keyss",
        "(did you mean 'broken_backends.not_a_backend:BACKEND.keys'?)",
    ),
    "mistyped-attribute": (
        "broken_backends.not_a_backend:BACKND",
        "has no attribute 'BACKND' (did you mean 'broken_backends.not_a_backend:BACKEND'?)",
    ),
    "a-dot-for-the-colon": (
        "broken_backends.not_a_backend.BACKEND",
        "(did you mean 'broken_backends.not_a_backend:BACKEND'?)",
    ),
    "a-producer-named-as-the-backend": (
        "reference:gather_logprobs",
        "gather_logprobs is a callable taking arguments, not a conformance.Backend",
    ),
    # The fix of a module importing vLLM, which is not installed, is to install it.
    "imports-vllm-not-installed": (
        "broken_backends.imports_vllm",
        "No module named 'vllm' (",
    ),
    # The module imported the Backend class to build BACKEND: the object is meant.
    "attribute-in-another-case": (
        "broken_backends.empty_output_holds_a_request:backend",
        "(did you mean 'broken_backends.empty_output_holds_a_request:BACKEND'?)",
    ),
}


def _assert_usage_error(run: suite_runner.Run, expected: str) -> None:
    assert run.exit_code == pytest.ExitCode.USAGE_ERROR, run.output
    errors = [line for line in run.output.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, run.output
    assert expected in errors[0]
    assert "Traceback" not in run.output
    assert "INTERNALERROR" not in run.output
    assert "the run died" not in run.output  # a usage error is no crash


@pytest.mark.parametrize(("spec", "expected"), list(BAD_SPECS.values()), ids=list(BAD_SPECS))
def test_bad_backend_option_is_a_usage_error(tmp_path, spec: str, expected: str) -> None:
    if spec.endswith("imports_vllm") and _VLLM_INSTALLED:
        pytest.skip("vLLM is installed here")
    run = suite_runner.subprocess_run(
        tmp_path, "--pyargs", "conformance", "--conformance-backend", spec, report=False
    )
    _assert_usage_error(run, expected)
    if spec.endswith("imports_vllm"):
        assert "vLLM is not installed here: install the release the backend targets" in run.output
        assert "fix that error in the backend's module" not in run.output


def test_bad_backend_from_the_environment_is_a_usage_error(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path,
        "--pyargs",
        "conformance",
        report=False,
        env={"OUTPUTS_BACKEND": "no_such_backend_module"},
    )
    _assert_usage_error(run, "no module named 'no_such_backend_module'")


def test_python_m_conformance_reports_a_bad_backend_the_same_way(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", "no_such_backend_module", module="conformance", report=False
    )
    _assert_usage_error(run, "no module named 'no_such_backend_module'; install")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_vllm_entry_point_without_vllm_says_how_to_install_it(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, "--pyargs", "conformance", "--conformance-backend", "vllm", report=False
    )
    _assert_usage_error(run, "pip install vllm")


def test_bad_xfails_file_is_a_usage_error(tmp_path) -> None:
    (tmp_path / "xfails.toml").write_text(
        '[[xfail]]\nnodeid = "conformance/checks/test_module.py"\n'
    )
    run = suite_runner.subprocess_run(
        tmp_path, "--pyargs", "conformance", "--conformance-xfails", "xfails.toml", report=False
    )
    _assert_usage_error(run, "has no reason; add reason = ")


@pytest.mark.parametrize(
    ("revision", "expected"),
    [
        ("2099.01", "unknown spec revision '2099.01'; known revisions: 0.10.2, 0.11.0, 2025.10"),
        ("0.9.0", "unknown spec revision '0.9.0'"),
    ],
)
def test_unknown_revision_is_a_usage_error(tmp_path, revision: str, expected: str) -> None:
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        "reference",
        "--revision",
        revision,
        module="conformance",
        report=False,
    )
    _assert_usage_error(run, expected)


def test_backend_from_the_environment_is_named_in_the_error(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, "--pyargs", "conformance", report=False, env={"OUTPUTS_BACKEND": "reference:"}
    )
    _assert_usage_error(run, "(the backend came from $OUTPUTS_BACKEND)")


def test_an_empty_backend_variable_is_a_usage_error_never_the_reference(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, "--pyargs", "conformance", report=False, env={"OUTPUTS_BACKEND": " "}
    )
    _assert_usage_error(run, "$OUTPUTS_BACKEND is set but empty (an unset variable?)")


def test_a_local_reference_folder_that_shadows_the_suite_is_a_usage_error(tmp_path) -> None:
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "__init__.py").write_text("")
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", "reference", module="conformance", report=False
    )
    # Named before the suite imports anything (vllm_outputs_suite_guard), with the folder.
    _assert_usage_error(
        run,
        f"the reference Python imports is {(tmp_path / 'reference').resolve()}, a package in the",
    )


def test_a_backend_whose_module_is_any_object_holding_the_names_runs(tmp_path) -> None:
    # A types.SimpleNamespace holding the seven names: judged like a module, no INTERNALERROR.
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_module.py"),
        "--conformance-backend",
        "broken_backends.names_in_a_namespace:BACKEND",
    )
    assert run.exit_code == 0
    assert run.report is not None
    assert run.report["backend"]["module"] == "<SimpleNamespace of backend names-in-a-namespace>"
    assert run.report["summary"]["failed"] == 0 and run.report["summary"]["passed"] > 0


def test_a_plugin_of_vllms_own_types_borrows_them_and_vllm_and_the_reference_do_not() -> None:
    import types

    from conformance import Backend
    from conformance.backends.known import borrows_types, reference_backend
    from reference.revisions import reference_module

    pinned = reference_module("0.12.0")
    plugin = types.ModuleType("npu_plugin.outputs")
    plugin.__dict__.update({name: getattr(pinned, name) for name in pinned.__all__})
    assert borrows_types(Backend(name="npu", module=plugin))
    own = types.ModuleType("npu_plugin.types")
    own.__dict__.update(vars(plugin))
    own.ModelRunnerOutput = type("ModelRunnerOutput", (), {"__module__": "npu_plugin.types"})
    assert not borrows_types(Backend(name="npu", module=own))  # one type of its own
    assert not borrows_types(reference_backend("0.12.0"))


DEPRECATING_ON_IMPORT = """
import warnings

warnings.warn("torch.jit.script_method is deprecated", DeprecationWarning, stacklevel=1)
from reference import *  # noqa: E402,F403
"""


def test_what_a_backends_imports_deprecate_is_not_shown(tmp_path) -> None:
    # vLLM's imports warn of torch.jit's deprecations: 28 lines atop every run, of no use.
    (tmp_path / "deprecating_outputs.py").write_text(DEPRECATING_ON_IMPORT)
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", "deprecating_outputs", "-k", "test_module.py",
        module="conformance", env={"PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert run.exit_code == 0, run.output[-3000:]
    assert "DeprecationWarning" not in run.output


def test_a_revision_naming_none_is_refused_before_the_backend_is_imported(tmp_path) -> None:
    # Importing a plugin and its vLLM takes half a minute: a typo is told first.
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", "broken_backends.raises_on_import", "--revision", "0.33",
        module="conformance", report=False,
    )  # fmt: skip
    _assert_usage_error(run, "--revision: unknown spec revision '0.33'; did you mean 0.33.0?")
