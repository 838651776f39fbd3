"""The suite beside other packages: where the ``conformance``, ``reference`` or ``reports``
Python imports is not the suite's, one line names it (exit 4); the console command runs
from a folder holding a ``conformance.py``; the docs never tell an author to write one."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import conformance

CHECKOUT = Path(conformance.__file__).resolve().parents[1]
SUITE_NAMES = ("conformance", "reference", "reports", "reference_speedups")

#: The README's example before it was renamed: run from its folder, ``python -m
#: conformance`` ran this file, which then imported itself (a circular ImportError).
AUTHORS_FILE = "from conformance import Backend\nBACKEND = Backend(name='mine', module=None)\n"


def _python(cwd: Path, *args: str, path: list[Path] | None = None, python: str = sys.executable):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    environment["PYTHONPATH"] = os.pathsep.join(str(p) for p in (path or [CHECKOUT]))
    return subprocess.run(
        [python, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


# --- the docs -------------------------------------------------------------------------


def _documented_module_names() -> set[str]:
    names = set()
    for doc in ("README.md", "conformance/README.md", "examples/npu_plugin/README.md"):
        text = (CHECKOUT / doc).read_text(encoding="utf-8")
        names |= set(re.findall(r"# my_plugin/(\w+)\.py", text))
        names |= set(re.findall(r"\b(?:my|example_npu)_plugin\.(\w+):BACKEND", text))
    return names


def test_no_documented_module_of_a_plugin_is_named_like_a_module_it_imports() -> None:
    names = _documented_module_names()
    assert "conformance_backend" in names
    shadowing = {n for n in names if n in SUITE_NAMES or n in sys.stdlib_module_names}
    assert not shadowing, f"run from its folder, python -m would import these: {shadowing}"
    example = CHECKOUT / "examples" / "npu_plugin" / "example_npu_plugin"
    modules = {p.stem for p in example.glob("*.py")}
    assert not modules & {*SUITE_NAMES, *sys.stdlib_module_names} - {"__init__"}


# --- python -m conformance ------------------------------------------------------------


def _site_with_startup_hook(folder: Path) -> str:
    """An interpreter whose site-packages holds the suite's .pth, as a wheel installs it
    (the suite itself stays on PYTHONPATH)."""
    venv.create(folder, with_pip=False)
    python = folder / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    shutil.copy(CHECKOUT / "vllm_outputs_suite.pth", site)
    return str(python)


def _path_with_this_interpreters_packages() -> list[Path]:
    import sysconfig

    return [CHECKOUT, Path(sysconfig.get_paths()["purelib"])]


def test_python_m_conformance_names_a_conformance_py_of_the_working_directory(tmp_path) -> None:
    python = _site_with_startup_hook(tmp_path / "env")
    plugin = tmp_path / "my_plugin"
    plugin.mkdir()
    (plugin / "conformance.py").write_text(AUTHORS_FILE)
    path = _path_with_this_interpreters_packages()

    line = _one_error_line(_python(plugin, "-m", "conformance", "--help", python=python, path=path))
    assert line.startswith("ERROR: the conformance Python imports is ")
    assert str(plugin / "conformance.py") in line
    assert "working directory" in line and "vllm-outputs-suite" in line
    # The same interpreter elsewhere runs the suite: the checkout is not foreign to itself.
    (plugin / "conformance.py").unlink()
    done = _python(plugin, "-m", "conformance", "--help", python=python, path=path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--backend" in done.stdout

    # Another distribution's conformance package first on the path: without the hook,
    # python -m would run it ("'conformance' is a package and cannot be directly executed").
    site = tmp_path / "site"
    _install(site, "conformance-kit", {"conformance/__init__.py": b"KIT = True\n"})
    done = _python(plugin, "-m", "conformance", "--help", python=python, path=[site, *path])
    line = _one_error_line(done)
    assert f"is {site / 'conformance'}, the package of the distribution conformance-kit 1.0" in line


def test_python_m_reports_beside_a_conformance_py_names_the_report_command(tmp_path) -> None:
    (tmp_path / "conformance.py").write_text(AUTHORS_FILE)
    line = _one_error_line(_python(tmp_path, "-m", "reports", "--conformance", "r.json"))
    assert str(tmp_path / "conformance.py") in line
    assert line.endswith(
        "run the suite's command vllm-outputs-suite report, which no folder shadows"
    )


def test_python_m_conformance_names_a_reference_py_of_the_working_directory(tmp_path) -> None:
    (tmp_path / "reference.py").write_text("SPEC_REVISION = 'mine'\n")
    line = _one_error_line(_python(tmp_path, "-m", "conformance", "--help"))
    assert str(tmp_path / "reference.py") in line
    assert "not vllm-outputs-suite's" in line


def test_the_checkout_is_the_suite_from_its_own_folder() -> None:
    done = _python(CHECKOUT, "-c", "import vllm_outputs_suite_guard as g, os; "
                   "print(g.problem(('conformance', 'reference', 'reports'), os.getcwd()))")  # fmt: skip
    assert done.stdout.strip() == "None", done.stderr


@pytest.mark.parametrize(
    ("argv", "module"),
    [
        (["python", "-m", "conformance", "--backend", "x"], "conformance"),
        (["python", "-X", "dev", "-W", "ignore", "-m", "reports"], "reports"),
        (["python", "-Bm", "conformance.cli.main"], "conformance.cli.main"),
        (["python", "-mreports", "--help"], "reports"),
        (["python", "script.py", "-m", "conformance"], None),
        (["python", "-c", "pass", "-m", "conformance"], None),
        (["pytest", "--pyargs", "conformance"], None),
    ],
)
def test_the_startup_hook_reads_which_module_python_m_runs(argv, module) -> None:
    import vllm_outputs_suite_guard

    assert vllm_outputs_suite_guard.run_module(argv) == module


# --- the console command --------------------------------------------------------------


def test_the_console_command_runs_from_a_folder_holding_a_conformance_py(tmp_path) -> None:
    # What pip's console script wrapper does: its own folder, not the working directory,
    # is first on the import path.
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    script = bin_folder / "vllm-outputs-suite"
    script.write_text("import sys\nfrom vllm_outputs_suite_command import main\nsys.exit(main())\n")
    (tmp_path / "conformance.py").write_text(AUTHORS_FILE)
    done = _python(tmp_path, str(script), "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "python -m reports [OPTIONS]" in done.stdout and "--backend SPEC" in done.stdout
    report = _python(tmp_path, str(script), "report", "--help")
    assert report.returncode in (0, 2), report.stderr[-2000:]  # 2: the reports extra missing
    assert "reports" in report.stdout + report.stderr


@pytest.mark.parametrize("package", [True, False], ids=["package", "namespace-package"])
def test_the_console_command_finds_a_backend_of_the_working_directory(tmp_path, package) -> None:
    """As ``python -m conformance`` does: a plugin not installed, run from its folder (a
    folder without ``__init__.py`` too)."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    script = bin_folder / "vllm-outputs-suite"
    script.write_text("import sys\nfrom vllm_outputs_suite_command import main\nsys.exit(main())\n")
    plugin = tmp_path / "work" / "my_plugin"
    plugin.mkdir(parents=True)
    if package:
        (plugin / "__init__.py").write_text("")
    (plugin / "outputs.py").write_text("from reference import *  # noqa: F403\n")
    done = _python(plugin.parent, str(script), "--backend", "my_plugin.outputs",
                   "--report", "report.json")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (plugin.parent / "report.json").is_file()


@pytest.mark.parametrize("args", [["--help"], ["crater", "--help"]])
def test_the_console_command_names_itself_in_its_help(args, capsys) -> None:
    import vllm_outputs_suite_command

    with pytest.raises(SystemExit) as done:
        vllm_outputs_suite_command.main(args)
    assert done.value.code == 0
    usage = " ".join(["usage: vllm-outputs-suite", *args[:-1], "[-h]"])
    assert usage in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (["--help"], "usage: vllm-outputs-suite report [-h]"),
        (["--no-such-option"], "vllm-outputs-suite report: error: unrecognized arguments"),
    ],
)
def test_the_report_subcommand_names_itself(tmp_path, args, first_line) -> None:
    code = f"import sys, vllm_outputs_suite_command as c; sys.exit(c.main(['report', *{args!r}]))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert (done.stdout + done.stderr).startswith(first_line), done.stdout + done.stderr


def test_the_console_commands_usage_error_names_its_own_help(capsys) -> None:
    import vllm_outputs_suite_command

    with pytest.raises(SystemExit) as done:
        vllm_outputs_suite_command.main(["crater", "0.34.0", "--no-such-option"])
    assert done.value.code == 4
    assert "(vllm-outputs-suite crater --help)" in capsys.readouterr().err


def test_the_console_command_is_the_distributions_script() -> None:
    text = (CHECKOUT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'vllm-outputs-suite = "vllm_outputs_suite_command:main"' in text


# --- another distribution's package ---------------------------------------------------


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _install(site: Path, distribution: str, files: dict[str, bytes]) -> None:
    """What pip leaves of a wheel in ``site``: its files (over any already there) and its
    dist-info with a RECORD."""
    info = f"{distribution.replace('-', '_')}-1.0.dist-info"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n".encode(),
    }
    rows = []
    for name, data in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
        rows.append(f"{name},{_hash(data)},{len(data)}")
    rows.append(f"{info}/RECORD,,")
    (site / info / "RECORD").write_text("\n".join(rows) + "\n")


def _suites_reports() -> dict[str, bytes]:
    package = CHECKOUT / "reports"
    return {
        f"reports/{p.relative_to(package).as_posix()}": p.read_bytes()
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


FOREIGN_REPORTS = {"reports/__init__.py": b"def build():\n    return 'their reports'\n"}


def _report_command(cwd: Path, site: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys, vllm_outputs_suite_command as c; sys.exit(c.main(['report', '--help']))"
    return _python(cwd, "-c", code, path=[site, CHECKOUT])


def test_another_distributions_package_first_on_the_path_is_named(tmp_path) -> None:
    site = tmp_path / "site"
    _install(site, "not-the-suite", FOREIGN_REPORTS)
    line = _one_error_line(_report_command(tmp_path, site))
    assert f"is {site / 'reports'}, the package of the distribution not-the-suite 1.0" in line
    # Found through PYTHONPATH, not installed beside the suite: that is what to change.
    assert line.endswith(f"take {site} off PYTHONPATH, which puts it first")


def test_another_distributions_files_mixed_into_the_suites_folder_are_named(tmp_path) -> None:
    site = tmp_path / "site"
    _install(site, "vllm-outputs-suite", _suites_reports())
    _install(site, "not-the-suite", {"reports/cli_of_theirs.py": b"X = 1\n"})
    line = _one_error_line(_report_command(tmp_path, site))
    assert f"is {site / 'reports'}, where files of the distribution not-the-suite 1.0 " in line
    assert "mixed with vllm-outputs-suite's" in line


def test_a_distribution_whose_files_the_suite_overwrote_is_named(tmp_path) -> None:
    # Installed first, its files all of names the suite's package has: the suite's wheel
    # overwrote each, and uninstalling either would take the other's away.
    site = tmp_path / "site"
    _install(site, "team-reports", {"reports/__init__.py": b"def render(): ...\n",
                                    "reports/cli.py": b"def main(): ...\n"})  # fmt: skip
    _install(site, "vllm-outputs-suite", _suites_reports())
    line = _one_error_line(_report_command(tmp_path, site))
    assert "where files of the distribution team-reports 1.0 are mixed" in line


def test_the_suites_init_overwritten_by_another_distribution_is_named(tmp_path) -> None:
    site = tmp_path / "site"
    _install(site, "vllm-outputs-suite", _suites_reports())
    _install(site, "not-the-suite", FOREIGN_REPORTS)
    line = _one_error_line(_report_command(tmp_path, site))
    assert "files of the distribution not-the-suite 1.0 are mixed with" in line


def test_a_file_no_distribution_installed_in_the_suites_folder_asks_for_a_reinstall(
    tmp_path,
) -> None:
    site = tmp_path / "site"
    _install(site, "vllm-outputs-suite", _suites_reports())
    (site / "reports" / "left_behind.py").write_text("X = 1\n")
    line = _one_error_line(_report_command(tmp_path, site))
    assert f"is {site / 'reports'}, which holds reports/left_behind.py, a file" in line
    # The suite is on no index: the command reinstalls it from where it came, torch kept.
    assert "pip install --force-reinstall --no-deps <the suite's checkout or wheel>" in line


@pytest.mark.parametrize(
    ("direct_url", "command"),
    [
        ({"url": "file:///src/vllm-outputs-suite", "dir_info": {}},
         "pip install --force-reinstall --no-deps /src/vllm-outputs-suite"),
        ({"url": "file:///src/my%20suite", "dir_info": {"editable": True}},
         "pip install --force-reinstall --no-deps -e /src/my suite"),
        ({"url": "file:///w/vllm_outputs_suite-0.1-py3-none-any.whl", "archive_info": {}},
         "pip install --force-reinstall --no-deps /w/vllm_outputs_suite-0.1-py3-none-any.whl"),
    ],
)  # fmt: skip
def test_the_reinstall_command_names_where_the_suite_was_installed_from(
    tmp_path, direct_url, command
) -> None:
    import json

    import vllm_outputs_suite_guard

    info = tmp_path / "vllm_outputs_suite-0.1.dist-info"
    info.mkdir()
    (info / "direct_url.json").write_text(json.dumps(direct_url))
    assert vllm_outputs_suite_guard.reinstall_command(tmp_path) == command


def test_the_suites_init_taken_by_another_distributions_uninstall_asks_for_a_reinstall(
    tmp_path,
) -> None:
    # Both installed reports/__init__.py; uninstalling the other one removed it.
    # The suite's modules in the same folder, as a wheel installs them, and nothing else
    # on the path: the checkout's reports would otherwise stand in for the broken one.
    site = tmp_path / "site"
    _install(site, "vllm-outputs-suite", _suites_reports())
    for module in ("vllm_outputs_suite_guard.py", "vllm_outputs_suite_command.py"):
        shutil.copy(CHECKOUT / module, site)
    (site / "reports" / "__init__.py").unlink()
    code = "import sys, vllm_outputs_suite_command as c; sys.exit(c.main(['report', '--help']))"
    line = _one_error_line(_python(tmp_path, "-c", code, path=[site]))
    assert f"is {site / 'reports'}, whose __init__.py is not the one vllm-outputs-suite" in line


def test_the_suites_own_wheel_install_is_not_foreign(tmp_path) -> None:
    site = tmp_path / "site"
    _install(site, "vllm-outputs-suite", _suites_reports())
    done = _report_command(tmp_path, site)
    assert done.returncode in (0, 2), done.stderr[-2000:]
    assert "ERROR" not in done.stderr


def test_python_m_conformance_names_a_foreign_reference_distribution(tmp_path) -> None:
    site = tmp_path / "site"
    _install(site, "reference-kit", {"reference/__init__.py": b"KIT = True\n"})
    line = _one_error_line(_python(tmp_path, "-m", "conformance", "--help", path=[site, CHECKOUT]))
    assert "the package of the distribution reference-kit 1.0" in line


# --- the pytest plugin ----------------------------------------------------------------


def test_a_conformance_run_under_pytest_names_a_foreign_reference(tmp_path) -> None:
    (tmp_path / "reference.py").write_text("SPEC_REVISION = 'mine'\n")
    done = _python(
        tmp_path, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "conformance",
        "--conformance-backend", "reference",
    )  # fmt: skip
    assert done.returncode == 4, done.stdout[-2000:]
    assert f"ERROR: the reference Python imports is {tmp_path / 'reference.py'}" in done.stderr


def test_the_suites_checks_under_pytest_name_a_foreign_reference_without_options(
    tmp_path,
) -> None:
    (tmp_path / "reference.py").write_text("SPEC_REVISION = 'mine'\n")
    done = _python(tmp_path, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "conformance")
    assert done.returncode == 4, done.stdout[-2000:]
    assert f"ERROR: the reference Python imports is {tmp_path / 'reference.py'}" in done.stderr


def test_only_the_suites_own_broken_install_is_named_without_options(tmp_path) -> None:
    """``pytest --pyargs conformance`` with no option leaves a project's own package
    alone, not the suite's install that another distribution's files broke."""
    code = "import vllm_outputs_suite_guard as g; print(g.broken_install('conformance'))"
    ours = {"conformance/__init__.py": b'__distribution__ = "vllm-outputs-suite"\n'}
    theirs = {"conformance/__init__.py": b"KIT = True\n"}
    site = tmp_path / "site"
    _install(site, "vllm-outputs-suite", ours)
    _install(site, "conformance-kit", theirs)
    done = _python(tmp_path, "-c", code, path=[site, *_guard_only(tmp_path)])
    assert "are mixed with vllm-outputs-suite's" in done.stdout, done.stderr
    alone = tmp_path / "alone"
    _install(alone, "conformance-kit", theirs)
    done = _python(tmp_path, "-c", code, path=[alone, *_guard_only(tmp_path)])
    assert done.stdout.strip() == "None", done.stderr


def _guard_only(tmp_path: Path) -> list[Path]:
    """A folder holding the guard module alone (the checkout would bring its own
    conformance)."""
    folder = tmp_path / "guard"
    folder.mkdir(exist_ok=True)
    shutil.copy(CHECKOUT / "vllm_outputs_suite_guard.py", folder)
    return [folder]


def test_a_projects_own_conformance_package_under_pytest_is_left_alone(tmp_path) -> None:
    package = tmp_path / "conformance"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "test_theirs.py").write_text("def test_theirs():\n    assert True\n")
    done = _python(tmp_path, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "conformance")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


def test_a_command_line_of_the_suites_is_stopped_whatever_runs_instead(tmp_path) -> None:
    """``python -m conformance --backend ...`` means the suite: a module of the working
    directory or another distribution's package that would run instead is named."""
    python = _site_with_startup_hook(tmp_path / "env")
    project = tmp_path / "project"
    project.mkdir()
    (project / "conformance.py").write_text("print('their own conformance')\n")
    path = _path_with_this_interpreters_packages()
    done = _python(project, "-m", "conformance", "--backend", "my_plugin.outputs",
                   python=python, path=path)  # fmt: skip
    line = _one_error_line(done)
    assert str(project / "conformance.py") in line and "working directory" in line
    site = tmp_path / "site"
    _install(site, "conformance-kit", {"conformance/__init__.py": b"",
                                       "conformance/__main__.py": b"print('the kit')\n"})  # fmt: skip
    done = _python(tmp_path, "-m", "conformance", "crater", "0.34.0", python=python,
                   path=[site, *path])  # fmt: skip
    assert "the package of the distribution conformance-kit 1.0" in _one_error_line(done)


def test_the_arguments_that_mean_the_suite_are_the_suites_options() -> None:
    import vllm_outputs_suite_guard
    from conformance.cli.main import build_parser as conformance_parser
    from reports.cli import build_parser as reports_parser

    for package, parser in (("conformance", conformance_parser()), ("reports", reports_parser())):
        options = {o for action in parser._actions for o in action.option_strings}
        arguments = vllm_outputs_suite_guard.SUITE_ARGUMENTS[package] - {"crater"}
        assert arguments <= options, arguments - options


def test_python_m_reports_names_a_conformance_py_it_would_read_the_schema_from(tmp_path) -> None:
    (tmp_path / "conformance.py").write_text("print('their own conformance')\n")
    line = _one_error_line(_python(tmp_path, "-m", "reports", "--conformance", "report.json"))
    assert f"ERROR: the conformance Python imports is {tmp_path / 'conformance.py'}" in line


def test_the_startup_hook_wakes_only_for_python_m(tmp_path) -> None:
    """pytest's ``--pyargs conformance``, a folder argument ``reports``: the guard stays
    unimported (pytest would warn that it cannot rewrite a module imported before it)."""
    python = _site_with_startup_hook(tmp_path / "env")
    code = "import sys; print('vllm_outputs_suite_guard' in sys.modules)"
    path = _path_with_this_interpreters_packages()
    for args in (["reports"], ["--pyargs", "conformance"]):
        done = _python(tmp_path, "-c", code, *args, python=python, path=path)
        assert done.stdout.strip() == "False", (args, done.stderr)


@pytest.mark.parametrize("args", [["--compare", "box@1a2b3c4d", "box@5e6f7a8b"]])
def test_a_benchmark_report_command_line_is_stopped_beside_a_reports_py(tmp_path, args) -> None:
    """The regression gate (``--compare``, exit 1 on a regression) must not exit 0 having
    run a ``./reports.py`` of the working directory instead."""
    python = _site_with_startup_hook(tmp_path / "env")
    project = tmp_path / "project"
    project.mkdir()
    (project / "reports.py").write_text("print('their own reports')\n")
    path = _path_with_this_interpreters_packages()
    done = _python(project, "-m", "reports", *args, python=python, path=path)
    line = _one_error_line(done)
    assert str(project / "reports.py") in line and "working directory" in line


def test_another_projects_own_python_m_conformance_runs_untouched(tmp_path) -> None:
    """The start-up hook stops only what would fail anyway: a module of the working
    directory that imports the suite's name, a package without ``__main__``."""
    python = _site_with_startup_hook(tmp_path / "env")
    project = tmp_path / "project"
    project.mkdir()
    (project / "conformance.py").write_text("print('their own conformance')\n")
    path = _path_with_this_interpreters_packages()
    done = _python(project, "-m", "conformance", python=python, path=path)
    assert (done.returncode, done.stdout.strip()) == (0, "their own conformance"), done.stderr
    # The suite's subcommand only as the first argument: elsewhere it is a value.
    done = _python(project, "-m", "conformance", "--name", "crater", python=python, path=path)
    assert (done.returncode, done.stdout.strip()) == (0, "their own conformance"), done.stderr
    site = tmp_path / "site"
    _install(site, "conformance-kit", {"conformance/__init__.py": b"",
                                       "conformance/__main__.py": b"print('the kit')\n"})  # fmt: skip
    done = _python(tmp_path, "-m", "conformance", python=python, path=[site, *path])
    assert (done.returncode, done.stdout.strip()) == (0, "the kit"), done.stderr


def test_another_projects_packages_and_their_modules_run_untouched(tmp_path) -> None:
    """A project's own ``reports`` package whose ``__main__`` imports its own part, and a
    module of a package of the suite's names: theirs to run (``python -m`` of the
    suite's is asked for by its options)."""
    python = _site_with_startup_hook(tmp_path / "env")
    project = tmp_path / "project"
    (project / "reports").mkdir(parents=True)
    (project / "reports" / "__init__.py").write_text('"""team reports"""\n')
    (project / "reports" / "cli.py").write_text("def main():\n    print('their cli')\n")
    (project / "reports" / "__main__.py").write_text("from reports.cli import main\nmain()\n")
    (project / "conformance").mkdir()
    (project / "conformance" / "__init__.py").write_text("")
    (project / "conformance" / "check.py").write_text("print('their check')\n")
    path = _path_with_this_interpreters_packages()
    for module, said in (("reports", "their cli"), ("reports.cli", ""),
                         ("conformance.check", "their check")):  # fmt: skip
        done = _python(project, "-m", module, python=python, path=path)
        assert (done.returncode, done.stdout.strip()) == (0, said), (module, done.stderr)
    # Their package, asked for with the suite's options: named.
    done = _python(project, "-m", "reports", "--conformance", "r.json", python=python, path=path)
    assert str(project / "reports") in _one_error_line(done)


def test_a_shadow_outside_python_m_is_not_sent_to_the_console_command(tmp_path) -> None:
    # The console command with the working directory on PYTHONPATH: running it again is
    # no fix.
    (tmp_path / "reference.py").write_text("SPEC_REVISION = 'mine'\n")
    code = "import sys, vllm_outputs_suite_command as c; sys.exit(c.main(['--list-revisions']))"
    line = _one_error_line(_python(tmp_path, "-c", code, path=[tmp_path, CHECKOUT]))
    assert str(tmp_path / "reference.py") in line
    assert "off the import path" in line and "vllm-outputs-suite, which" not in line


def test_a_run_leaves_nothing_in_the_folder_it_runs_from(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    # Hypothesis draws (logprobs lists) and pytest's cache would each leave a folder.
    done = _python(work, "-m", "conformance", "--backend", "reference", "-k", "logprobs_lists")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert sorted(p.name for p in work.iterdir()) == []
