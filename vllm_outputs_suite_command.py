"""The console command ``vllm-outputs-suite``: the suite's commands, from any folder.

``vllm-outputs-suite [OPTIONS]`` runs what ``python -m conformance [OPTIONS]`` runs
(every argument goes to :func:`conformance.cli.main.main` unchanged, subcommands too);
``vllm-outputs-suite report [OPTIONS]`` what ``python -m reports [OPTIONS]`` runs.

Unlike ``python -m``, a console command does not put the working directory first on
the import path, so a ``conformance.py`` of the folder it runs in (a plugin's backend
declaration, say) never shadows the suite.  What Python would import instead of the
suite's own packages is named first, in one line, exit 4 (:mod:`vllm_outputs_suite_guard`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import vllm_outputs_suite_guard as guard

#: The subcommand that runs ``python -m reports``.
REPORT = "report"

USAGE = f"""\
usage: {guard.COMMAND} [OPTIONS]          the conformance suite: python -m conformance [OPTIONS]
       {guard.COMMAND} {REPORT} [OPTIONS]   the reports: python -m reports [OPTIONS]
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == [REPORT]:
        return _run("reports", args[1:])
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
    return _run("conformance", args)


def _run(package: str, args: list[str]) -> int:
    line = guard.problem(guard.IMPORTS[package])
    if line is not None:
        print(line, file=sys.stderr)
        return guard.USAGE_ERROR
    if package == "conformance":
        from conformance.cli.main import main as conformance_main

        return conformance_main(args, prog=guard.COMMAND)
    # python -m reports checks its extra before it imports pandas: run that very module.
    import runpy

    # argv[0] names the command in the reports' usage line and messages (reports.invocation).
    sys.argv = [f"{guard.COMMAND} {REPORT}", *args]
    try:
        runpy.run_module("reports", run_name="__main__")
    except SystemExit as done:
        return _exit_code(done.code)
    return 0


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
