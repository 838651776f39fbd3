"""The backend list that measures every vLLM release in a folder of release texts.

Not a benchmark (asv imports this module while discovering and finds none here).
Run from the repository root::

    python benchmarks/release_backends.py DIR      # prints reference,vllm-release:0.10.2,...
    python benchmarks/release_backends.py DIR --releases 0.11.0,0.11.1   # a subset

The list is the 2025.10 reference (what the ratios are taken against), then one
``vllm-release:X`` per distinct ``outputs.py`` in release order: releases whose
file is byte-identical to an earlier one run the same code, so the first stands
for them (printed on stderr).  Releases older than the spec types (before
0.10.2) are left out: there is nothing to measure.  ``--releases`` keeps the
reference and the releases it names (a release whose text repeats an earlier one
is measured as that one); a release not in the folder is an error naming those
that are.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path


class UnknownReleaseError(ValueError):
    """``--releases`` named a release the folder has no text of."""


def release_backend_specs(
    folder: str | Path, only: Sequence[str] = ()
) -> tuple[list[str], dict[str, str]]:
    """``(specs, same_as)``: the backend list and, per release left out, the one that
    stands for it; with ``only``, the reference and those releases."""
    from conformance.releases.texts import release_texts
    from reference.revisions import UnsupportedReleaseError, revision_for_vllm_version

    specs = ["reference"]
    too_old: list[str] = []
    first_with: dict[str, str] = {}
    same_as: dict[str, str] = {}
    for version, path in release_texts(folder).items():
        try:
            revision_for_vllm_version(version)
        except UnsupportedReleaseError:
            too_old.append(version)
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest in first_with:
            same_as[version] = first_with[digest]
            continue
        first_with[digest] = version
        specs.append(f"vllm-release:{version}")
    if only:
        missing = [v for v in only if v not in release_texts(folder)]
        if missing:
            raise UnknownReleaseError(
                f"no outputs-X.py.txt in {folder} for {', '.join(missing)}; releases there: "
                f"{', '.join(release_texts(folder))}"
            )
        old = [v for v in only if v in too_old]
        if old:
            raise UnknownReleaseError(
                f"{', '.join(old)}: older than the spec types (0.10.2), nothing to measure"
            )
        wanted = {f"vllm-release:{same_as.get(v, v)}" for v in only}
        specs = [s for s in specs if s == "reference" or s in wanted]
        same_as = {v: first for v, first in same_as.items() if v in only}
    return specs, same_as


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/release_backends.py",
        description="The backend list measuring every vLLM release text of a folder.",
    )
    parser.add_argument("folder", help="a folder of outputs-X.py.txt")
    parser.add_argument(
        "--releases", default="", help="only these releases (comma-separated), e.g. 0.11.0,0.11.1"
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    only = [v.strip() for v in args.releases.split(",") if v.strip()]
    try:
        specs, same_as = release_backend_specs(args.folder, only)
    except UnknownReleaseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for version, first in same_as.items():
        print(
            f"vllm {version}: outputs.py identical to {first}, measured as {first}", file=sys.stderr
        )
    print(",".join(specs))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
