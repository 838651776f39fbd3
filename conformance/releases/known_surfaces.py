"""The surfaces of every known vLLM release, shipped with the suite (``known_surfaces.json``).

A text that is no known release is compared with each of these to find its nearest
release (:mod:`conformance.releases.text_revision`).  Users have no folder of
release texts, so the surfaces travel in the package: names, signatures, annotations
and defaults as normalised text, bodies only as hashes (no vLLM code is copied).

Rewritten from a folder of release texts (``outputs-X.py.txt`` with
``producers/producers-X.py.txt``) by ``nox -s add-release`` and by::

    python -m conformance.releases.known_surfaces ~/.cache/vllm-outputs-suite/vllm-releases

A test holds the file to the shared texts.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.oracle.text_surface import OUTPUTS_MODULE, Member, Surface
from conformance.releases.output_classes import KNOWN_FILE, output_classes
from conformance.releases.sources import read_source

FORMAT = "vllm-outputs-suite/known-surfaces/1"
_FIELDS = ("module", "owner", "name", "kind", "shape", "value", "form", "position")


@functools.cache
def known_surfaces(path: Path = KNOWN_FILE) -> dict[str, Surface]:
    """``{release: surface}`` of every release in the file (outputs and producers)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    members = [Member(**dict(zip(_FIELDS, row, strict=True))) for row in data["members"]]
    return {
        release: {members[i].key: members[i] for i in indices}
        for release, indices in data["releases"].items()
    }


def has_producers(surface: Surface) -> bool:
    return any(m.module != OUTPUTS_MODULE for m in surface.values())


def surfaces_of_folder(folder: Path, releases: Sequence[str]) -> dict[str, Surface]:
    """The surfaces of ``releases`` read from a folder of release texts."""
    return {v: read_source(folder / f"outputs-{v}.py.txt").surface() for v in releases}


def encode(surfaces: dict[str, Surface]) -> dict[str, Any]:
    """The file's content: each distinct member once, each release as indices into them."""
    table: dict[tuple[Any, ...], int] = {}
    releases: dict[str, list[int]] = {}
    for release, surface in surfaces.items():
        indices = []
        for member in surface.values():
            row = tuple(getattr(member, f) for f in _FIELDS)
            indices.append(table.setdefault(row, len(table)))
        releases[release] = indices
    return {"format": FORMAT, "members": [list(row) for row in table], "releases": releases}


def write(surfaces: dict[str, Surface], path: Path = KNOWN_FILE) -> Path:
    data = encode(surfaces)
    # One member and one release per line: a diff of the file reads as what changed.
    lines = ["{", f'"format": {json.dumps(data["format"])},', '"members": [']
    rows = [json.dumps(row, ensure_ascii=False) for row in data["members"]]
    lines += [row + ("," if i < len(rows) - 1 else "") for i, row in enumerate(rows)]
    lines += ["],", '"releases": {']
    entries = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in data["releases"].items()]
    lines += [entry + ("," if i < len(entries) - 1 else "") for i, entry in enumerate(entries)]
    lines += ["}", "}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    known_surfaces.cache_clear()
    output_classes.cache_clear()
    return path


def main(argv: Sequence[str] | None = None) -> int:
    from conformance.oracle.revisions import known_releases

    parser = argparse.ArgumentParser(
        prog="python -m conformance.releases.known_surfaces",
        description="Rewrite the known releases' surfaces from a folder of release texts.",
    )
    parser.add_argument("folder", type=Path, help="outputs-X.py.txt files, producers/ beside")
    parser.add_argument("--out", type=Path, default=KNOWN_FILE)
    args = parser.parse_args(argv)
    missing = [v for v in known_releases() if not (args.folder / f"outputs-{v}.py.txt").is_file()]
    if missing:
        print(
            f"ERROR: {args.folder} lacks outputs-X.py.txt of {', '.join(missing)}", file=sys.stderr
        )
        return 4
    write(surfaces_of_folder(args.folder, known_releases()), args.out)
    print(f"wrote the surfaces of {len(known_releases())} releases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
