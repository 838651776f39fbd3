"""``python -m conformance --backend SPEC [--revision R] [--xfails F] [--report F] [pytest options]``.

A thin wrapper over ``pytest --pyargs conformance``: every option it does not
know goes to pytest unchanged (``-k slice``, ``-x``, ``-n 4``...), and the exit
code is pytest's (0 conforms, 1 a check failed, 4 a usage error).  The run is
supervised (:mod:`conformance.run.supervisor`): if the backend kills the process, the
report is still written, naming the check.  ``--isolate`` runs the checks in an
xdist worker that is replaced when one crashes, so the other checks still run.
Two more jobs:

* ``--list-revisions`` prints one line per spec revision: its name, then the vLLM
  releases it covers;
* ``--vllm-outputs PATH`` judges a vLLM ``outputs.py`` without installing vLLM (see
  :mod:`conformance.releases.texts`): PATH is one text of any name, a vLLM source tree,
  or a folder of release texts; a folder gives one report per release and a
  release x revision summary.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from typing import NoReturn

from vllm_outputs_suite_plugin import SUITE_OPTIONS

#: pytest's exit code for a usage error; this command's own usage errors use it too.
USAGE_ERROR = 4


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error exits 4 (pytest's code, which the docs promise) in one line."""

    def error(self, message: str) -> NoReturn:
        from vllm_outputs_suite_plugin import typo_hint

        hint = typo_hint(self, message)
        self.exit(
            USAGE_ERROR,
            f"ERROR: {message}{hint} ({self.prog} --help lists the options)\n",
        )


#: How the command is named in its usage and messages; the console command names itself.
PROG = "python -m conformance"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        # No abbreviations: "--xfail" or a plugin's "--rep" is not this command's
        # --xfails or --report; what it does not know is pytest's to judge.
        allow_abbrev=False,
        description="Check a backend of vllm.v1.outputs against a spec revision (2025.10 or "
        "a vLLM release). Options not listed here are passed to pytest.",
        epilog=f"{prog} crater TARGET [--plugins ...] judges every known vLLM "
        f"plugin's published code against TARGET ({prog} crater --help).",
    )

    for option in SUITE_OPTIONS:
        parser.add_argument(
            f"--{option.name}",
            dest=option.cli_dest,
            metavar=option.metavar,
            help=option.help_for(lambda name: f"--{name}"),
            type=option.type,
        )
    parser.add_argument(
        "--version",
        action="version",
        version=_version_line(),
        help="print the suite's version (and pytest's, which runs the checks), then exit",
    )
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="run the checks in a worker process (pytest-xdist -n 1) that is replaced when a "
        "check crashes it, so a segfault or os._exit in the backend fails that check only",
    )
    parser.add_argument(
        "--list-revisions",
        action="store_true",
        help="print each revision and the vLLM releases it covers, then exit",
    )
    parser.add_argument(
        "--vllm-outputs",
        metavar="PATH",
        help="judge vLLM's own code without installing vLLM, from a text, a tree or a folder "
        "(an outputs.py, its version read from a name such as "
        "outputs-0.34.0.dev3+g1a2b3c4.py.txt: a release's text is judged as that release, "
        "any other as its nearest known release plus what it changed; a vLLM source tree; "
        "a folder of release texts, one report per release in --report-dir)",
    )
    parser.add_argument(
        "--vllm-release",
        metavar="VERSION",
        help="judge a vLLM release from its published wheel (one before 0.10.2 on the types "
        "it has): pip finds it, and only its outputs.py and producers are read from it "
        "(nothing is installed) into the cache, once",
    )
    parser.add_argument(
        "--report-dir",
        metavar="DIR",
        default="vllm-releases-out",
        help="with --vllm-outputs FOLDER: where the per-release reports and the summary go "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--neighbours",
        action="store_true",
        help="with --vllm-outputs FOLDER: also judge one release of each revision against the "
        "revisions before and after its own",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="with --vllm-outputs FOLDER: releases judged at once (default: the number of CPUs)",
    )
    return parser


def _version_line() -> str:
    import importlib.metadata

    import pytest

    try:
        version = importlib.metadata.version("vllm-outputs-suite")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout not installed
        version = "(not installed)"
    return f"vllm-outputs-suite {version} (pytest {pytest.__version__})"


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    import os

    from conformance.run.option_names import COMMAND_ENV

    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["crater"]:
        from conformance.crater.cli import main as crater_main

        return crater_main(given[1:], prog=f"{prog} crater")
    parser = build_parser(prog)
    args, pytest_args = parser.parse_known_args(given)
    typo = _mistyped_option(parser, pytest_args)
    if typo is not None:
        print(f"ERROR: {typo}", file=sys.stderr)
        return USAGE_ERROR
    os.environ[COMMAND_ENV] = "1"  # messages then name this command's options
    if args.list_revisions:
        from conformance.cli.revision_listing import listing_lines

        print("\n".join(listing_lines()))
        return 0
    if args.vllm_release is not None:
        from conformance.releases.fetch import release_outputs
        from conformance.releases.texts import ReleaseTextError

        if args.vllm_outputs is not None:
            print("ERROR: give --vllm-release or --vllm-outputs, not both", file=sys.stderr)
            return USAGE_ERROR
        try:
            args.vllm_outputs = str(release_outputs(_judged_release(args.vllm_release)))
        except ReleaseTextError as error:
            print(f"ERROR: {error}", file=sys.stderr)
            return USAGE_ERROR
    if args.vllm_outputs is not None:
        return _judge_release_texts(args, pytest_args)
    return run_supervised(args, pytest_args)


def _mistyped_option(parser: argparse.ArgumentParser, passed_on: list[str]) -> str | None:
    """An option left for pytest that nobody knows and is close to one of this command's
    (``--backnd``) or pytest's (``--maxfial``): one line naming the option meant, rather
    than pytest's usage text.  What pytest or a plugin it loads knows (``--maxfail``,
    ``--lf``, ``-n``) goes to pytest unchanged (:mod:`conformance.cli.pytest_options`)."""
    from conformance.cli.pytest_options import pytest_view
    from vllm_outputs_suite_plugin import did_you_mean

    ours = [o for action in parser._actions for o in action.option_strings if o.startswith("--")]
    foreign = [given for given in passed_on if given.startswith("--") and _name(given) not in ours]
    if not foreign:
        return None
    view = pytest_view(passed_on)
    if view is None:
        return None  # pytest's parser could not be asked: pytest answers itself
    unknown, pytests = view
    nobody_knows = {_name(word) for word in unknown}
    for given in foreign:
        if _name(given) in nobody_knows:
            hint = did_you_mean(given, ours) or did_you_mean(given, pytests)
            if hint:
                return f"unknown option {_name(given)}{hint} ({parser.prog} --help)"
    return None


def _name(option: str) -> str:
    """``--revision=0.12.0`` -> ``--revision``."""
    return option.split("=", 1)[0]


def _judge_release_texts(args: argparse.Namespace, pytest_args: list[str]) -> int:
    """``--vllm-outputs``: one text is judged here as ``--backend vllm``; a folder of them,
    one process per release (:func:`conformance.releases.runs.run_folder`)."""
    from conformance.releases import runs as release_runs

    if release_runs.is_release_folder(args.vllm_outputs):
        texts = release_runs.texts_to_judge(args)
        if texts is None:
            return USAGE_ERROR
        return release_runs.run_folder(texts, args, pytest_args)
    source = release_runs.source_to_judge(args)
    if source is None:
        return USAGE_ERROR
    with release_runs.source_installed_as_vllm(source):
        args.backend = "vllm"
        return run_supervised(args, pytest_args)


def _judged_release(text: str) -> str:
    """``0.13``, ``v0.13.0`` -> ``0.13.0``.  A release without a revision of its own (before
    0.10.2, or newer than the suite) is judged by its text: the types it has."""
    from conformance.releases.fetch import FetchError, release_name
    from reference.revisions import DEFAULT_REVISION

    if text.strip().removeprefix("v").removesuffix(".0") == DEFAULT_REVISION:
        raise FetchError(
            f"--vllm-release {text.strip()!r} is the spec's own revision, not a vLLM release: "
            f"judge a backend at it with --revision {DEFAULT_REVISION}, or name a release "
            "(python -m conformance --list-revisions)"
        )
    return release_name(text, "--vllm-release")


def run_supervised(args: argparse.Namespace, pytest_args: list[str]) -> int:
    from conformance.run.check_timer import DEFAULT_CHECK_TIMEOUT
    from conformance.run.supervisor import supervised

    limit = DEFAULT_CHECK_TIMEOUT if args.check_timeout is None else args.check_timeout
    # A run that dies (a segfault in the backend) still leaves a complete report.
    return supervised(lambda: run_pytest(args, pytest_args), args.report, limit)


def suite_arguments(args: argparse.Namespace) -> list[str]:
    """The short options of this command as the plugin's namespaced options."""
    forwarded = []
    for option in SUITE_OPTIONS:
        value = getattr(args, option.cli_dest)
        if value is not None:
            # One word each: pytest takes a bare path argument for where its rootdir
            # (and ini file) is, so "--xfails ../x.toml" would move the run's root.
            forwarded.append(f"{option.pytest_flag()}={value}")
    return forwarded


#: Crashed workers replaced before --isolate gives up (each costs a process start).
ISOLATE_WORKER_RESTARTS = 32


def isolation_arguments(args: argparse.Namespace, pytest_args: list[str]) -> list[str]:
    if not args.isolate:
        return []
    given = " ".join(pytest_args)
    extra = [] if "-n" in pytest_args or "--numprocesses" in given else ["-n", "1"]
    if "--max-worker-restart" not in given:
        extra += ["--max-worker-restart", str(ISOLATE_WORKER_RESTARTS)]
    return extra


def run_pytest(args: argparse.Namespace, pytest_args: list[str]) -> int:
    import pytest

    # This process imported the package before pytest could mark it for assertion
    # rewriting; the checks do not rely on rewriting, so that warning is noise.
    forwarded = ["-W", "ignore::pytest.PytestAssertRewriteWarning", "--pyargs", "conformance"]
    # A run leaves nothing in the folder it runs from (the console command runs from any):
    # pytest's cache (``--lf`` still works) and Hypothesis's files live in the suite's
    # cache, one pytest cache per folder run from.
    from conformance.releases.fetch import cache_home

    try:
        home = cache_home()
    except RuntimeError:  # no home directory: pytest's and Hypothesis's own defaults
        home = None
    if home is not None:
        if not any("cache_dir" in a for a in pytest_args):
            folder = hashlib.sha256(os.getcwd().encode()).hexdigest()[:16]
            forwarded += ["-o", f"cache_dir={home / 'pytest' / folder}"]
        os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(home / "hypothesis"))
    # Each failure is one line naming its cause and the backend's line: the tracebacks
    # through the suite's own check code are left out unless asked for (--tb=short).
    if not any(a.startswith("--tb") for a in pytest_args):
        forwarded.append("--tb=no")
    isolation = isolation_arguments(args, pytest_args)
    return int(pytest.main([*forwarded, *isolation, *pytest_args, *suite_arguments(args)]))


if __name__ == "__main__":
    sys.exit(main())
