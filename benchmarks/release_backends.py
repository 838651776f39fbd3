"""The backend list that measures every vLLM release in a folder of release texts.

Not a benchmark (asv imports this module while discovering and finds none here).
Run from the repository root::

    python benchmarks/release_backends.py DIR      # prints reference,vllm-release:0.10.2,...

The list is the 2025.10 reference (what the ratios are taken against), then one
``vllm-release:X`` per distinct ``outputs.py`` in release order: releases whose
file is byte-identical to an earlier one run the same code, so the first stands
for them (printed on stderr).  Releases older than the spec types (before
0.10.2) are left out: there is nothing to measure.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path


def release_backend_specs(folder: str | Path) -> tuple[list[str], dict[str, str]]:
    """``(specs, same_as)``: the backend list and, per release left out, the one that stands for it."""
    from conformance.vllm_release import release_texts
    from reference.revisions import UnsupportedReleaseError, revision_for_vllm_version

    specs = ["reference"]
    first_with: dict[str, str] = {}
    same_as: dict[str, str] = {}
    for version, path in release_texts(folder).items():
        try:
            revision_for_vllm_version(version)
        except UnsupportedReleaseError:
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest in first_with:
            same_as[version] = first_with[digest]
            continue
        first_with[digest] = version
        specs.append(f"vllm-release:{version}")
    return specs, same_as


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(
            "usage: python benchmarks/release_backends.py FOLDER_OF_RELEASE_TEXTS", file=sys.stderr
        )
        return 2
    specs, same_as = release_backend_specs(args[0])
    for version, first in same_as.items():
        print(
            f"vllm {version}: outputs.py identical to {first}, measured as {first}", file=sys.stderr
        )
    print(",".join(specs))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
