"""One table of options feeds pytest's option group and ``python -m conformance``."""

from __future__ import annotations

import pytest

from conformance.cli.main import build_parser, suite_arguments
from vllm_outputs_suite_plugin import SUITE_OPTIONS


def test_the_command_line_takes_every_suite_option_with_the_same_help() -> None:
    actions = {a.dest: a for a in build_parser()._actions}
    for option in SUITE_OPTIONS:
        action = actions[option.cli_dest]
        assert action.option_strings == [f"--{option.name}"]
        assert action.metavar == option.metavar
        # The same words; only another option's name is spelled the command's way.
        assert action.help == option.help_for(lambda name: f"--{name}")
    write = actions["write_xfails"].help
    assert write.endswith("pass it to --xfails")


def test_pytest_takes_every_suite_option_namespaced(pytestconfig: pytest.Config) -> None:
    for option in SUITE_OPTIONS:
        assert pytestconfig.getoption(option.dest) is None  # declared (not given here)
    group = pytestconfig._parser.getgroup("conformance")
    flags = {o.names()[0]: o for o in group.options}
    write = flags["--conformance-write-xfails"].attrs()["help"]
    assert write.endswith("pass it to --conformance-xfails")
    assert set(flags) == {option.pytest_flag() for option in SUITE_OPTIONS}


def test_the_command_forwards_each_option_as_one_namespaced_word() -> None:
    args = build_parser().parse_args(["--backend", "mine", "--check-timeout", "5"])
    assert suite_arguments(args) == [
        "--conformance-backend=mine",
        "--conformance-check-timeout=5.0",
    ]


def test_version_names_the_suite_not_only_pytest(capsys) -> None:
    import pytest as _pytest

    from conformance.cli.main import main

    with _pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("vllm-outputs-suite ") and f"(pytest {_pytest.__version__})" in out
