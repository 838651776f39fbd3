"""``python -m conformance.cli.fetch_releases [--all | X ...]``: vLLM's texts fetched ahead of time.

Every release's ``outputs.py`` and producers come from its wheel on the package index
into the user cache (:mod:`conformance.releases.fetch`), once; what is already there
and sound is not fetched again.  A run that needs a release fetches it itself: this
command is for a machine that will be offline later, or a CI job that caches the
folder.  Exit 0 when every release asked for is in the cache, 4 (one line) when one
cannot be had.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance.cli.main import USAGE_ERROR, _Parser
from conformance.releases.fetch import (
    FetchError,
    cache_folder,
    every_release,
    fetched,
    manifest,
)

#: Releases fetched at once: each is a few requests, bound by the network's latency.
PARALLEL_FETCHES = 4


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m conformance.cli.fetch_releases",
        description="Fetch vLLM releases' outputs.py and producers from their wheels on the "
        f"package index into the cache ({cache_folder()}).",
    )
    parser.add_argument("releases", nargs="*", metavar="X", help="releases to fetch (0.12.0 ...)")
    parser.add_argument(
        "--all", action="store_true", help="every release the suite knows (0.10.0 on)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    versions = list(every_release()) if args.all else list(dict.fromkeys(args.releases))
    if not versions:
        print(
            "ERROR: name the releases to fetch, or --all (python -m "
            "conformance.cli.fetch_releases --help)",
            file=sys.stderr,
        )
        return USAGE_ERROR
    folder = cache_folder()
    with ThreadPoolExecutor(PARALLEL_FETCHES) as pool:
        futures = [pool.submit(fetched, v, folder) for v in versions]
        problems = []
        for future in futures:
            try:
                future.result()
            except FetchError as error:
                problems.append(str(error))
    if problems:
        print(f"ERROR: {problems[0]}", file=sys.stderr)
        return USAGE_ERROR
    read = sum(_bytes_read(v, folder) for v in versions)
    size = sum(p.stat().st_size for p in folder.rglob("*.txt"))
    print(
        f"{len(versions)} releases' texts in {folder} ({size / 1e6:.1f} MB in the cache; "
        f"{read / 1e6:.1f} MB read from the index when first fetched)"
    )
    return 0


def _bytes_read(version: str, folder: Path) -> int:
    value = (manifest(version, folder) or {}).get("bytes_read", 0)
    return value if isinstance(value, int) else 0


if __name__ == "__main__":
    sys.exit(main())
