"""Draft a new vLLM release's revision data from its ``outputs.py``, for review.

``python -m conformance.cli.draft_release outputs-0.34.0.py.txt`` loads the text (no
vLLM install, :mod:`conformance.releases.texts`) and holds each type of the newest
revision against it with the surface checks the suite runs on a backend.  It prints
what to write in ``reference/revisions/releases.py``: with no difference, the one line
that adds the release to the newest revision; otherwise a ``derive(...)`` skeleton
naming each type that changed, with the differences found as comments.  It drafts;
a person decides (a new rule needs a behaviour and a check, see conformance/README.md,
"Adding the next vLLM release").  Exit 0 either way, 4 for a text it cannot read.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from conformance.cli.main import USAGE_ERROR
from conformance.oracle.revisions import SpecRevision, all_revisions
from conformance.oracle.surface import surface_checks
from conformance.releases.texts import load_outputs_module, version_from_name


@dataclass(frozen=True)
class ReleaseDraft:
    """What a release text changes against the newest revision."""

    version: str
    base: SpecRevision
    #: ``{type name: deviations}`` of the base's types the text has but shapes otherwise.
    changed: dict[str, list[str]]
    #: The base's types the text lacks.
    removed: list[str]
    #: Classes the text defines that the base has no type for.
    new_classes: list[str]

    @property
    def unchanged(self) -> bool:
        return not (self.changed or self.removed or self.new_classes)


def draft(outputs_text: Path, version: str) -> ReleaseDraft:
    base = all_revisions()[-1]
    module = load_outputs_module(outputs_text, "vllm_release_draft_" + version.replace(".", "_"))
    changed: dict[str, list[str]] = {}
    removed = []
    for name, spec in base.types.items():
        cls = getattr(module, name, None)
        if cls is None:
            removed.append(name)
            continue
        deviations = [d for check in surface_checks(spec) for d in check.run(cls)]
        if deviations:
            changed[name] = deviations
    return ReleaseDraft(version, base, changed, removed, _new_classes(module, base))


def _new_classes(module: ModuleType, base: SpecRevision) -> list[str]:
    known = set(base.types)
    return sorted(
        name
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and value.__module__ == module.__name__
        and name not in known
        and not name.startswith("_")
    )


def render(found: ReleaseDraft) -> str:
    base, version = found.base, found.version
    variable = "R_" + base.name.replace(".", "_")
    if found.unchanged:
        releases = ", ".join(repr(r) for r in (*base.releases, version))
        return (
            f"# {version}: every type as in {base.name}.  In reference/revisions/releases.py,\n"
            f"# {variable} = derive(...): releases=({releases}),\n"
        )
    lines = [
        f"# {version} differs from {base.name}: review each difference below, then write the",
        "# changed TypeSpecs (evolve(...)) and the behaviours added or removed.",
        f"R_{version.replace('.', '_')} = derive(",
        f"    {variable},",
        f'    "{version}",',
        f'    releases=("{version}",),',
        '    summary="TODO: what changed",',
        "    types=[",
    ]
    for name, deviations in found.changed.items():
        lines.append(f"        # {name}:")
        lines += [f"        #   {line}" for d in deviations for line in d.splitlines()]
        lines.append(f"        evolve(<{name} of {base.name}>, ...),")
    lines.append("    ],")
    for name in found.removed:
        lines.append(f"    # {name}: not in {version} (drop it from the types)")
    for name in found.new_classes:
        lines.append(f"    # {name}: a class {base.name} has no type for (a new held type?)")
    lines += [")", f"# and add R_{version.replace('.', '_')} to RELEASE_REVISIONS."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.cli.draft_release",
        description="Draft a vLLM release's revision data from its outputs.py (for review).",
    )
    parser.add_argument("outputs", type=Path, help="the release's outputs.py (outputs-X.py.txt)")
    parser.add_argument("--version", help="the release (default: from the file name)")
    args = parser.parse_args(argv)
    version = args.version or version_from_name(args.outputs)
    if version is None:
        print(
            f"ERROR: no release version in the name {args.outputs.name}; give --version X",
            file=sys.stderr,
        )
        return USAGE_ERROR
    try:
        found = draft(args.outputs, version)
    except (OSError, SyntaxError, ImportError) as error:
        print(f"ERROR: cannot load {args.outputs}: {error}", file=sys.stderr)
        return USAGE_ERROR
    print(render(found), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
