"""Which backends one asv run measures, and how each is loaded.

The first asv parameter of every benchmark, ``backend``, takes the list in
``$OUTPUTS_BENCH_BACKENDS`` (comma-separated), else the one backend in
``$OUTPUTS_BACKEND``, else ``reference``.  An item is

* ``reference``: the hand-written reference of spec revision 2025.10;
* ``reference@R``: the project's reference of revision ``R`` (a revision name or
  a vLLM release, e.g. ``reference@0.27.0``);
* ``vllm-release:X``: release X's own ``vllm/v1/outputs.py``, loaded in this
  process from the folder ``$OUTPUTS_VLLM_RELEASES`` (files ``outputs-X.py.txt``)
  under a module name of its own, so several releases sit side by side;
* any other conformance backend spec (a module path, ``module:attribute``, an
  entry-point name), judged at the revision it declares (2025.10 when none).

Each resolves to a :class:`Subject`: the module of spec types, the revision it
is written against (the benchmarks call each operation the way that revision
spells it, and skip where it lacks the operation), its devices and producers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

BACKENDS_ENV_VAR = "OUTPUTS_BENCH_BACKENDS"
BACKEND_ENV_VAR = "OUTPUTS_BACKEND"
RELEASES_ENV_VAR = "OUTPUTS_VLLM_RELEASES"
DEFAULT_SPEC = "reference"
DEFAULT_REVISION = "2025.10"
REFERENCE_AT = "reference@"
VLLM_RELEASE = "vllm-release:"
PRODUCERS = (
    "pad_sampled_token_ids",
    "unpad_sampled_token_ids",
    "gather_logprobs",
    "make_async_output",
)
#: Device types a backend that declares none is measured on (vLLM's own: cpu, cuda).
RELEASE_DEVICES = ("cpu", "cuda")

#: The behaviours of 2025.10, for commits older than ``reference.revisions``
#: (asv history runs import today's benchmarks against an old installed project).
BEHAVIOURS_2025_10 = frozenset(
    {
        "LogprobsLists.tuple",
        "LogprobsLists.slice:cu-not-rebased",
        "LogprobsTensors.tuple",
        "LogprobsTensors.tolists:python-lists",
        "LogprobsTensors.tolists:cu-argument",
        "LogprobsTensors.to_cpu_nonblocking",
        "LogprobsTensors.empty_cpu",
    }
)


class BackendSpecError(ValueError):
    """A backend list item that names nothing this run can load; the message says the fix."""


def selected_specs() -> list[str]:
    """The backend specs of this run, in the order given, each once."""
    raw = os.environ.get(BACKENDS_ENV_VAR, "")
    specs = [item.strip() for item in raw.split(",") if item.strip()]
    if not specs:
        specs = [os.environ.get(BACKEND_ENV_VAR) or DEFAULT_SPEC]
    return list(dict.fromkeys(specs))


@dataclass(frozen=True)
class Subject:
    """A resolved backend: what the benchmarks call and how its revision spells it."""

    spec: str
    module: ModuleType
    revision_name: str
    behaviours: frozenset[str]
    devices: tuple[str, ...]
    producers: dict[str, Callable[..., Any]] = field(default_factory=dict)
    #: Surface data of the revision (``reference.revisions.SpecRevision``), when known.
    revision: Any = None
    #: The device types its async output is written for (``Backend.producer_devices``),
    #: when they differ from ``devices``.
    producer_devices: tuple[str, ...] | None = None

    @property
    def async_output_device(self) -> str:
        """The accelerator its async output runs on (simulated where absent): the first
        it declares for it, else ``cuda``, vLLM's own."""
        declared = self.producer_devices if self.producer_devices is not None else self.devices
        return next((d for d in declared if d != "cpu"), "cuda")

    def has(self, behaviour: str) -> bool:
        return behaviour in self.behaviours

    def require(self, *behaviours: str) -> None:
        """Skip (``NotImplementedError``, asv: skipped) unless the revision has every behaviour."""
        missing = [b for b in behaviours if not self.has(b)]
        if missing:
            raise NotImplementedError(
                f"{self.spec} (revision {self.revision_name}) lacks {', '.join(missing)}"
            )

    def type(self, name: str) -> Any:
        value = getattr(self.module, name, None)
        if value is None:
            raise NotImplementedError(f"backend {self.spec!r} has no {name}")
        return value

    def producer(self, name: str) -> Callable[..., Any]:
        value = self.producers.get(name)
        if value is None:
            raise NotImplementedError(f"backend {self.spec!r} provides no {name}")
        return value

    def field_annotation(self, type_name: str, field_name: str) -> str:
        """How the revision annotates a field ('' when unknown)."""
        spec = self.revision.type(type_name) if self.revision is not None else None
        found = spec.field_named(field_name) if spec is not None else None
        return found.annotation if found is not None else ""


@cache
def resolve(spec: str) -> Subject:
    """The :class:`Subject` a backend list item names (cached per process)."""
    spec = spec.strip()
    if spec.startswith(VLLM_RELEASE):
        return _release(spec, spec.removeprefix(VLLM_RELEASE))
    if spec.startswith(REFERENCE_AT):
        return _reference(spec, spec.removeprefix(REFERENCE_AT))
    return _conformance_backend(spec)


def _revision(name: str) -> Any:
    from reference.revisions import revision

    return revision(name)


def _subject(
    spec: str,
    module: ModuleType,
    revision_name: str,
    devices: tuple[str, ...],
    producers: dict[str, Callable[..., Any]],
) -> Subject:
    rev = _revision(revision_name)
    return Subject(spec, module, rev.name, rev.behaviours, devices, producers, rev)


def _reference(spec: str, revision_name: str) -> Subject:
    from reference.revisions import reference_module

    from .devices import candidate_devices

    module = reference_module(revision_name)
    producers = {n: getattr(module, n) for n in PRODUCERS if getattr(module, n, None)}
    if hasattr(module, "RunnerAsyncModelRunnerOutput"):
        from conformance.backends.step import constructed_like_vllm

        # The revision's async output as vLLM's runner of it builds one (as the
        # conformance suite's reference backend declares it).
        async_output = constructed_like_vllm(module.RunnerAsyncModelRunnerOutput)
        producers["make_async_output"] = async_output
    return _subject(spec, module, revision_name, candidate_devices(), producers)


def _conformance_backend(spec: str) -> Subject:
    try:
        from conformance import load_backend
    except ImportError:
        if spec != DEFAULT_SPEC:
            raise
        return _reference_without_revisions()
    backend = load_backend(spec)
    producers = {n: f for n in PRODUCERS if (f := getattr(backend, n, None)) is not None}
    revision_name = backend.spec_revision or DEFAULT_REVISION
    subject = _subject(spec, backend.module, revision_name, tuple(backend.devices), producers)
    return replace(subject, producer_devices=tuple(backend.async_output_devices))


def _reference_without_revisions() -> Subject:
    """``reference`` on a commit older than ``conformance`` and ``reference.revisions``."""
    import reference

    from .devices import candidate_devices

    producers = {n: getattr(reference, n) for n in PRODUCERS if getattr(reference, n, None)}
    return Subject(
        DEFAULT_SPEC,
        reference,
        DEFAULT_REVISION,
        BEHAVIOURS_2025_10,
        candidate_devices(),
        producers,
    )


def release_folder() -> Path:
    raw = os.environ.get(RELEASES_ENV_VAR, "")
    if not raw:
        raise BackendSpecError(
            f"a {VLLM_RELEASE}X backend needs ${RELEASES_ENV_VAR}: the folder of release texts "
            "(outputs-X.py.txt, e.g. shared/spec/vllm-releases)"
        )
    return Path(raw)


def release_module_name(version: str) -> str:
    """``vllm_release_0_12_0``: a module name of its own per release, so they coexist."""
    return "vllm_release_" + re.sub(r"\W", "_", version)


def _release(spec: str, version: str) -> Subject:
    from conformance.backends.vllm_producers import producers_of_release_text
    from conformance.releases.texts import load_outputs_module, release_texts
    from reference.revisions import UnsupportedReleaseError, revision_for_vllm_version

    texts = release_texts(release_folder())
    if version not in texts:
        raise BackendSpecError(
            f"{spec}: no outputs-{version}.py.txt in {release_folder()}; "
            f"releases there: {', '.join(texts)}"
        )
    try:
        revision_name = revision_for_vllm_version(version)
    except UnsupportedReleaseError as error:
        # Too old to have the spec types: nothing to measure, not a failure.
        raise NotImplementedError(f"{spec}: {error}") from None
    module = load_outputs_module(texts[version], release_module_name(version))
    # The release's own producers (gather_logprobs, unpadding, its async output), from
    # the producer text beside its outputs.py: the release view times them too.
    producers = producers_of_release_text(texts[version], version).found
    return _subject(spec, module, revision_name, RELEASE_DEVICES, producers)
