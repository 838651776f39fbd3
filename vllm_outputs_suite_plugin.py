"""The pytest entry point of vllm-outputs-suite (``pytest11``: ``conformance``).

pytest loads it in every run of an environment that has the suite installed, so it
is one small module that imports nothing of the suite: not ``conformance``,
``reference`` or ``reports`` (a project with a package of one of those names keeps
its own), nor torch.  It declares the suite's option group, every option namespaced
(``--conformance-*``), and wakes the suite only when the run is a conformance run:
one of those options was given, or the suite was named (``--pyargs conformance``, a
path into the suite's ``conformance/checks``).  Then it registers
:mod:`conformance.run.plugin`, the hooks of a run.

Turn it off in a project that never runs the suite: ``pytest -p no:conformance``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: The suite's own package and checks, beside this module wherever it is installed.
SUITE_DIR = Path(__file__).resolve().parent / "conformance"
CHECKS_DIR = SUITE_DIR / "checks"


def given(text: str) -> str:
    """An option's value, refused empty: ``--backend "$PLUGIN"`` with the variable unset
    would otherwise run on the default, a run nobody asked for."""
    if text.strip():
        return text
    import argparse

    raise argparse.ArgumentTypeError(
        "given empty (an unset variable?): give a value, or leave the option out for its default"
    )


@dataclass(frozen=True)
class SuiteOption:
    """One option of the suite: ``--conformance-NAME`` under pytest, ``--NAME`` for
    ``python -m conformance``; one help text for both (``{X}`` in it names option X
    as the interface spells it)."""

    name: str
    metavar: str
    help: str
    type: Callable[[str], Any] = given

    @property
    def dest(self) -> str:
        """Where pytest keeps its value (``config.getoption``)."""
        return "conformance_" + self.cli_dest

    @property
    def cli_dest(self) -> str:
        """Where ``python -m conformance`` keeps its value."""
        return self.name.replace("-", "_")

    def pytest_flag(self) -> str:
        return f"--conformance-{self.name}"

    def help_for(self, flag_of: Callable[[str], str]) -> str:
        return re.sub(r"\{([a-z-]+)\}", lambda found: flag_of(found[1]), self.help)


def non_negative_seconds(text: str) -> float:
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


#: The suite's options, in the order ``--help`` lists them: the one table pytest's
#: option group and ``python -m conformance`` are both made from.
SUITE_OPTIONS = (
    SuiteOption(
        "backend",
        "SPEC",
        "backend to check: a module path, module:attribute naming a conformance.Backend, "
        "or an entry-point name (default: $OUTPUTS_BACKEND, else 'reference')",
    ),
    SuiteOption(
        "revision",
        "REVISION",
        "spec revision to judge against: 2025.10, a vLLM release such as 0.12.0, or a path "
        "to a vLLM text (any outputs.py), a vLLM checkout or unpacked wheel, or a wheel: "
        "judged as its nearest known release plus what it changed (default: what the "
        "backend declares, the installed vLLM's version for the vllm backend, else "
        "2025.10); python -m conformance --list-revisions lists them",
    ),
    SuiteOption(
        "bump-to",
        "REVISION_OR_PATH",
        "judge the backend at REVISION_OR_PATH too and report what moving its pin there "
        "would break, writing its report at the pin beside {report} as NAME.bump-from.json "
        "(a revision or a path, as for {revision}; the pin is {revision}, else "
        "what it declares): the vLLM changes between them and each behaviour whose "
        "verdict differs, breaks first; exit 1 when something passing there fails here",
    ),
    SuiteOption(
        "xfails",
        "PATH",
        "TOML file of known deviations ([[xfail]] behaviour = ... or nodeid = ..., "
        "reason = ...); see the conformance README",
    ),
    SuiteOption(
        "report", "PATH", "write the JSON conformance report (schema conformance-report/1) to PATH"
    ),
    SuiteOption(
        "write-xfails",
        "PATH",
        "write an xfails file with one entry per behaviour that failed (a new file: an "
        "existing one is never overwritten); review the reasons, then pass it to "
        "{xfails}",
    ),
    SuiteOption(
        "check-timeout",
        "S",
        "time limit of each check in seconds; a check past it fails naming the backend "
        "call it was stuck in, and the run goes on (default: 60; 0 disables it)",
        type=non_negative_seconds,
    ),
)

#: ``{dest: pytest flag}`` of every suite option.
OPTIONS = {option.dest: option.pytest_flag() for option in SUITE_OPTIONS}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "vllm.v1.outputs conformance suite")
    for option in SUITE_OPTIONS:
        group.addoption(
            option.pytest_flag(),
            dest=option.dest,
            default=None,
            metavar=option.metavar,
            help=option.help_for(lambda name: f"--conformance-{name}"),
            type=option.type,
        )


def pytest_configure(config: pytest.Config) -> None:
    if not _asked_for_suite(config):
        return
    # A conformance or reference that is not the suite's (a project's own package of that
    # name, another distribution's): one line, exit 4, before it is imported.
    foreign = _foreign(("conformance",))
    if foreign is not None and not _asked_by_option(config) and not _broken_install():
        return  # --pyargs conformance named a project's own package of that name
    foreign = foreign or _foreign(("reference",))  # the suite's checks need its own
    if foreign is not None:
        raise pytest.UsageError(foreign.removeprefix("ERROR: "))
    import conformance.run.plugin

    # pytest_configure is historic: the suite's own is called as it registers.
    config.pluginmanager.register(conformance.run.plugin, "conformance-suite")


def _broken_install() -> bool:
    """Whether the ``conformance`` found is the suite's own install, broken (mixed with
    another distribution's files, or left without its ``__init__.py``)."""
    try:
        from vllm_outputs_suite_guard import broken_install
    except ImportError:
        return False
    return broken_install("conformance") is not None


def _foreign(names: tuple[str, ...]) -> str | None:
    try:
        from vllm_outputs_suite_guard import problem
    except ImportError:  # an editable install made before it existed maps only older names
        return None
    return problem(names)


def _asked_for_suite(config: pytest.Config) -> bool:
    return _asked_by_option(config) or any(_names_suite(arg, config) for arg in config.args)


def _asked_by_option(config: pytest.Config) -> bool:
    return any(config.getoption(dest) is not None for dest in OPTIONS)


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
    return path in (SUITE_DIR, CHECKS_DIR) or CHECKS_DIR in path.parents


def did_you_mean(given: str, known: list[str]) -> str:
    """`` (did you mean --backend?)`` for an option close to one of ``known``, else ``""``:
    the command lines of the suite and of its reports answer a typo with the fix."""
    import difflib

    close = difflib.get_close_matches(given.split("=", 1)[0], known, n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def typo_hint(parser: Any, message: str) -> str:
    """:func:`did_you_mean` for argparse's ``unrecognized arguments: --backnd ...``
    error of ``parser``, else ``""``."""
    if "unrecognized arguments" not in message:
        return ""
    known = [o for action in parser._actions for o in action.option_strings]
    return did_you_mean(message.rsplit(": ", 1)[-1].split()[0], known)
