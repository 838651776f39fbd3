"""``python -m conformance --backend SPEC [--report PATH] [pytest options...]``.

A thin wrapper over ``pytest --pyargs conformance``: every option it does not
know goes to pytest unchanged (``-n auto``, ``-k slice``, ``--xfails-file``...),
and the exit code is pytest's.
"""

from __future__ import annotations

import argparse
import sys

import pytest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance",
        description="Check a backend of vllm.v1.outputs against spec revision 2025.10. "
        "Options not listed here are passed to pytest.",
    )
    parser.add_argument(
        "--backend",
        help="module path, module:attribute naming a conformance.Backend, or an entry-point "
        "name (default: $OUTPUTS_BACKEND, else reference)",
    )
    parser.add_argument(
        "--report", metavar="PATH", help="write the JSON conformance report to PATH"
    )
    args, pytest_args = parser.parse_known_args(argv)
    # This process imported the package before pytest could mark it for assertion
    # rewriting; the checks do not rely on rewriting, so that warning is noise.
    forwarded = ["-W", "ignore::pytest.PytestAssertRewriteWarning", "--pyargs", "conformance"]
    forwarded += pytest_args
    if args.backend is not None:
        forwarded += ["--backend", args.backend]
    if args.report is not None:
        forwarded += ["--conformance-report", args.report]
    return int(pytest.main(forwarded))


if __name__ == "__main__":
    sys.exit(main())
