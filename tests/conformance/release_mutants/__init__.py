"""vLLM releases with one behaviour broken: proof that each behaviour's checks catch it.

Each mutant loads a real release text (fetched into the user cache by the test run
that starts the mutants' processes; never copied here) with :func:`conformance.releases.texts.load_outputs_module`
and replaces one method or attribute of one class with a small, wrong version
written from the release's rule.  A mutant is a zero-argument callable returning
a :class:`conformance.Backend`, so ``--conformance-backend
release_mutants.catalogue:<name>`` judges it; ``release_mutants.catalogue:release``
plus the version (``release_0_12_0``) judges the release unmutated.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from conformance.backends.backend import Backend
from conformance.releases.fetch import texts_folder

#: The release texts (the tests' processes fetched them before starting these).
RELEASES = texts_folder()

_serial = itertools.count()


def release_text(version: str) -> Path:
    return RELEASES / f"outputs-{version}.py.txt"


def load_release(version: str, label: str = "release") -> ModuleType:
    """A fresh copy of release ``version``'s outputs.py, under a module name of its own."""
    from conformance.releases.texts import load_outputs_module

    name = f"release_mutants_{label}_{version.replace('.', '_')}_{next(_serial)}"
    return load_outputs_module(release_text(version), name)


def release_backend(version: str) -> Backend:
    """Release ``version`` unmutated, judged at its own revision."""
    return Backend(
        name=f"vllm-{version}-release-text",
        module=load_release(version),
        spec_revision=version,
        version=version,
    )


@dataclass(frozen=True)
class Mutant:
    """Release ``release`` with ``behaviour`` broken by ``breaks(module)``.

    ``checks`` are the check modules (``conformance.checks.<name>``) that a run
    judging this mutant needs: those of the broken type and method.
    """

    name: str
    behaviour: str
    release: str
    checks: tuple[str, ...]
    breaks: Callable[[ModuleType], None]
    how: str

    def __call__(self) -> Backend:
        module = load_release(self.release, self.name)
        self.breaks(module)
        return Backend(
            name=f"vllm-{self.release}-mutant-{self.name}",
            module=module,
            spec_revision=self.release,
            version=self.release,
            notes=(f"mutant: {self.how}",),
        )

    @property
    def spec(self) -> str:
        """The --conformance-backend value that selects it."""
        return f"release_mutants.catalogue:{self.name}"
