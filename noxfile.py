"""Every workflow of the project is one nox session.

    nox -s tests          the project's own tests (pytest -n auto)
    nox -s lint           ruff
    nox -s conformance    the conformance suite against reference (and vllm if installed)
    nox -s bench          record asv benchmarks of the current checkout
    nox -s bench-quick    every benchmark once, nothing saved (the CI smoke run)
    nox -s bench-compare  asv continuous between two revisions
    nox -s report         tables and plots from existing results
    nox -s suite          the main job: conformance, benchmarks, report

Sessions that create a virtualenv install torch under ``constraints/cpu-torch.txt``
(the CPU build on this kind of machine's disk).  On a machine whose interpreter
already has the torch it needs (a GPU box), run ``nox --no-venv -s ...``: the
sessions then install nothing that would replace it.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.sessions = ["tests", "lint"]
nox.options.reuse_venv = "yes"
nox.options.default_venv_backend = "venv"

PYTHON = None  # the interpreter nox runs under; CI and this machine are 3.11


def constraints_file() -> str:
    return os.environ.get("OUTPUTS_SUITE_CONSTRAINTS", str(ROOT / "constraints" / "cpu-torch.txt"))


def in_current_interpreter(session: nox.Session) -> bool:
    return session.venv_backend == "none"


def install_project(session: nox.Session, *extras: str) -> None:
    """Install the project (editable) with ``extras``, keeping torch CPU-only in venvs."""
    target = f".[{','.join(extras)}]" if extras else "."
    if in_current_interpreter(session):
        # Reuse whatever torch the interpreter has (e.g. a CUDA build on a GPU machine).
        session.install("-e", target)
    else:
        session.install("-c", constraints_file(), "-e", target)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the project's own tests in parallel."""
    install_project(session, "test", "bench", "reports")
    session.run("pytest", "-n", "auto", "tests", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """Lint with ruff."""
    if not in_current_interpreter(session):
        session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
