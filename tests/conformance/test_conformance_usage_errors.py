"""Bad input to ``python -m conformance`` is one line and exit code 4, before any check runs."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import suite_runner


def _conformance(tmp_path, *args: str) -> suite_runner.Run:
    return suite_runner.subprocess_run(tmp_path, *args, module="conformance", report=False)


def _error_line(run: suite_runner.Run) -> str:
    [line] = [line for line in run.output.splitlines() if line.startswith("ERROR:")]
    return line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--check-timeout", "-1"], "expected seconds >= 0 (0 turns the limit off), got -1"),
        (["--check-timeout", "soon"], "expected seconds, got 'soon'"),
        (["--jobs", "many"], "argument --jobs"),
        (["--revision", "0.13"], "did you mean 0.13.0?"),
        (["--revision", "v0.13.0"], "did you mean 0.13.0?"),
        (["--revision", "0.24.1"], "did you mean 0.24.0?"),  # by number, not 0.27.1 by spelling
        (["--revision", "0.10.1"], "vLLM 0.10.1 lacks spec types"),
        # An unset variable (--backend "$PLUGIN") never falls back to the reference.
        (["--backend", ""], "argument --backend: given empty (an unset variable?)"),
        (["--revision", " "], "argument --revision: given empty (an unset variable?)"),
        (["--bump-to", ""], "argument --bump-to: given empty (an unset variable?)"),
        (["--xfails", ""], "argument --xfails: given empty (an unset variable?)"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_4(tmp_path, args: list[str], expected: str) -> None:
    run = _conformance(tmp_path, *args)
    assert run.exit_code == 4, run.output[-2000:]
    assert expected in _error_line(run)


def test_the_pytest_option_refuses_a_negative_time_limit(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, "--pyargs", "conformance", "--conformance-check-timeout", "-5", report=False
    )
    assert run.exit_code == 4
    assert "expected seconds >= 0" in run.output


def test_an_unwritable_report_path_is_refused_before_any_check(tmp_path) -> None:
    (tmp_path / "a-file").write_text("")
    run = _conformance(tmp_path, "--report", "a-file/report.json")
    assert run.exit_code == 4
    assert _error_line(run) == (
        "ERROR: cannot write the conformance report to a-file/report.json: "
        f"{tmp_path / 'a-file'} is a file, not a folder; choose another path"
    )
    assert "passed" not in run.output  # refused before any check ran


@pytest.mark.parametrize(
    ("kept", "text"),
    [("xfails.toml", '[xfail]\n"module" = "ours"\n'), ("worker.py", "print(1)\n"),
     ("crater.json", '{"schema": "crater-report/1"}\n')],
)  # fmt: skip
def test_a_file_that_is_no_conformance_report_is_never_overwritten(
    tmp_path, kept: str, text: str
) -> None:
    (tmp_path / kept).write_text(text)
    run = _conformance(tmp_path, "--report", kept)
    assert run.exit_code == 4
    assert _error_line(run) == (
        f"ERROR: cannot write the conformance report to {kept}: it exists and is no "
        "conformance report (a run replaces only an earlier report); remove it if it may go, "
        "or choose another path"
    )
    assert (tmp_path / kept).read_text() == text


def test_the_report_and_the_xfails_file_at_one_path_are_refused(tmp_path) -> None:
    run = _conformance(tmp_path, "--write-xfails", "both.toml", "--report", "both.toml")
    assert run.exit_code == 4
    assert _error_line(run) == (
        "ERROR: cannot write the conformance report and the xfails file both to both.toml; "
        "give each a path of its own"
    )
    assert not (tmp_path / "both.toml").exists()


def test_an_earlier_report_is_replaced(tmp_path) -> None:
    (tmp_path / "report.json").write_text('{"schema": "conformance-report/1", "tests": []}\n')
    run = _conformance(tmp_path, "--report", "report.json", "-k", "test_spec_names_are_classes")
    assert run.exit_code == 0, run.output[-2000:]
    assert '"summary"' in (tmp_path / "report.json").read_text()


def test_a_folder_as_report_path_is_refused(tmp_path) -> None:
    (tmp_path / "out").mkdir()
    run = _conformance(tmp_path, "--report", "out")
    assert run.exit_code == 4
    assert "it is a folder; give a file name" in _error_line(run)


def test_the_report_gets_the_mode_the_umask_gives(tmp_path) -> None:
    report = tmp_path / "report.json"
    code = (
        "import os, sys; os.umask(0o022); from conformance.cli.main import main; "
        f"sys.exit(main(['-k', 'test_module', '-q', '-p', 'no:cacheprovider', '--report', {str(report)!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert stat.S_IMODE(report.stat().st_mode) == 0o644  # not mkstemp's private 0600


def test_reports_without_its_extra_says_which_to_install() -> None:
    code = (
        "import sys, runpy; sys.modules['pandas'] = None; "
        "runpy.run_module('reports', run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True)
    assert done.returncode == 2  # bad input, as the reports command gives it; 1 is a regression
    assert done.stderr.strip() == (
        "python -m reports needs pandas: install the reports extra from the suite's checkout "
        "or wheel (the distribution is on no index), pip install "
        "'/path/to/vllm-outputs-suite[reports]' or 'vllm_outputs_suite-<version>.whl[reports]'"
    )


@pytest.mark.parametrize(
    ("broken", "backend"),
    [("half_written.py", "half_written"), ("my_plugin/__init__.py", "my_plugin.outputs")],
)
def test_a_backend_with_a_syntax_error_names_its_file_and_line(tmp_path, broken, backend) -> None:
    (tmp_path / "my_plugin").mkdir()
    (tmp_path / "my_plugin" / "outputs.py").write_text("")
    (tmp_path / broken).write_text("import sys\nLogprobsLists = (\n")
    run = _conformance(tmp_path, "--backend", backend)
    assert run.exit_code == 4
    line = _error_line(run)
    # The whole path: an __init__.py alone does not say which package's.
    assert f"SyntaxError: '(' was never closed ({tmp_path / broken}:2)" in line
    assert "frozen" not in line


@pytest.mark.parametrize("spec", ["my_backend.py", "./my_backend.py", "plugins/my_backend.py"])
def test_a_backend_given_as_a_file_path_gets_its_module_name(tmp_path, spec: str) -> None:
    run = _conformance(tmp_path, "--backend", spec)
    assert run.exit_code == 4
    line = _error_line(run)
    assert f"backend {spec!r} is a file path; a backend is named by its module: " in line
    assert "--backend my_backend" in line
    if "plugins" in spec:
        assert "PYTHONPATH=plugins" in line


def test_a_file_of_a_package_given_as_a_path_is_named_through_its_package(tmp_path) -> None:
    (tmp_path / "my_plugin").mkdir()
    (tmp_path / "my_plugin" / "__init__.py").write_text("")
    run = _conformance(tmp_path, "--backend", "my_plugin/conformance_backend.py:BACKEND")
    assert run.exit_code == 4
    assert _error_line(run).endswith(
        "--backend my_plugin.conformance_backend:BACKEND, run from its folder"
    )


def test_a_declaration_file_given_as_a_path_is_named_with_its_backend(tmp_path) -> None:
    (tmp_path / "my_plugin").mkdir()
    (tmp_path / "my_plugin" / "__init__.py").write_text("")
    (tmp_path / "my_plugin" / "conformance_backend.py").write_text(
        "from conformance import Backend\nfrom my_plugin import outputs\n\n"
        "NPU = Backend(name='npu', module=outputs)\n"
    )
    run = _conformance(tmp_path, "--backend", "my_plugin/conformance_backend.py")
    assert run.exit_code == 4
    assert _error_line(run).endswith(
        "--backend my_plugin.conformance_backend:NPU, run from its folder"
    )


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs a /proc file system")
def test_a_folder_no_file_can_be_made_in_is_refused_even_as_root(tmp_path) -> None:
    # Permission bits say yes to root; the file system itself says no.
    run = _conformance(tmp_path, "--report", "/proc/report.json")
    assert run.exit_code == 4
    assert "the folder /proc is not writable" in _error_line(run)


def test_an_error_outside_the_checks_is_shown_not_swallowed(capfd) -> None:
    from conformance.run.supervisor import supervised

    def broken() -> int:
        raise RuntimeError("the suite itself broke")

    assert supervised(broken, None, 1.0) == 3  # pytest's code for an internal error
    assert "RuntimeError: the suite itself broke" in capfd.readouterr().err


def test_an_xfails_file_elsewhere_does_not_move_pytests_root(tmp_path) -> None:
    elsewhere = tmp_path / "plugin"
    elsewhere.mkdir()
    (elsewhere / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-x"\n')
    (elsewhere / "xfails.toml").write_text("")
    work = tmp_path / "work"
    work.mkdir()
    run = _conformance(work, "--xfails", "../plugin/xfails.toml", "-k", "test_module")
    assert run.exit_code == 0, run.output[-2000:]
    assert f"rootdir: {work}" in run.output


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("--backnd", "--backend"),
        ("--revison=0.12.0", "--revision"),
        ("--xfail", "--xfails"),  # an option nobody knows, close to the suite's
        ("--maxfial=1", "--maxfail"),  # close to pytest's own
    ],
)
def test_a_mistyped_option_is_answered_with_the_option_meant(tmp_path, typed, meant) -> None:
    run = _conformance(tmp_path, typed, "reference")
    assert run.exit_code == 4
    line = _error_line(run)
    assert f"(did you mean {meant}?)" in line
    assert "pytest" not in run.output  # never pytest's usage text


@pytest.mark.parametrize(
    "options",
    [
        ["--maxfail=1"],  # close to --xfails, but pytest's
        ["--tb", "line"],
        ["-k", "test_module"],
        ["-n", "1", "--max-worker-restart", "2"],  # pytest-xdist's, a loaded plugin
    ],
)
def test_an_option_pytest_or_its_plugins_know_reaches_pytest(tmp_path, options) -> None:
    run = _conformance(tmp_path, *options, "-k", "test_module", "--co")
    assert run.exit_code == 0, run.output[-2000:]
    assert "unknown option" not in run.output
    assert "test_module" in run.output  # collected: pytest took the option


@pytest.mark.parametrize("option", ["--lf", "--last-failed", "--maxfail=1", "--max-worker-restart"])
def test_an_option_pytest_knows_is_never_taken_for_a_typo(option) -> None:
    # The runs above turn pytest's cache (--lf) off; the decision is the same code.
    from conformance.cli.main import _mistyped_option, build_parser

    assert _mistyped_option(build_parser(), [option, "reference"]) is None


def test_pytests_known_options_come_from_its_parser_with_plugins_loaded() -> None:
    from conformance.cli.pytest_options import pytest_view

    view = pytest_view(["--maxfail=1", "--lf", "-n", "2", "--backnd", "reference"])
    assert view is not None
    unknown, known = view
    assert unknown == ["--backnd"]
    assert {"--maxfail", "--last-failed", "--numprocesses", "--max-worker-restart"} <= set(known)


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("0.24.1", "0.24.0"),  # its own minor series, though 0.27.1 is spelled closer
        ("0.13.7", "0.13.0"),
        ("0.11.9", "0.11.2"),  # the newest of its series below it
        ("0.99.0", "newest"),  # newer than any: the newest known
        ("2025.1", "2025.10"),  # a calendar name is a revision mistyped, not a release
    ],
)
def test_an_unknown_release_is_answered_with_the_nearest_by_number(given, meant) -> None:
    from reference.revisions import UnknownRevisionError, canonical_name, known_releases

    meant = known_releases()[-1] if meant == "newest" else meant
    with pytest.raises(UnknownRevisionError, match=rf"did you mean {re.escape(meant)}\?"):
        canonical_name(given)


def test_a_report_path_that_is_a_link_or_a_device_replaces_nothing(tmp_path) -> None:
    from conformance.files import write_whole
    from conformance.report.writer import unwritable

    target = tmp_path / "kept" / "report.json"
    target.parent.mkdir()
    link = tmp_path / "report.json"
    link.symlink_to(target)
    assert unwritable(link) is None
    write_whole(link, "{}\n")
    assert link.is_symlink() and target.read_text() == "{}\n"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert str(unwritable(fifo)) == "it is not a regular file (a device, a pipe); give a file name"
    assert unwritable(Path("/dev/null")) is not None
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert (
        str(unwritable(loop))
        == "it is a link that leads nowhere (a loop of links); give a file name"
    )
    # A link planted where the temporary file goes is not followed.
    victim = tmp_path / "victim"
    victim.write_text("mine")
    planted = tmp_path / f".plain.json.{os.getpid()}-{threading.get_ident()}.partial"
    planted.symlink_to(victim)
    write_whole(tmp_path / "plain.json", "{}\n")
    assert victim.read_text() == "mine" and (tmp_path / "plain.json").read_text() == "{}\n"
