"""Which backends one asv run measures: the conformance suite's backends.

The first asv parameter of every benchmark, ``backend``, takes the list in
``$OUTPUTS_BENCH_BACKENDS`` (comma-separated), else the one backend in
``$OUTPUTS_BACKEND``, else ``reference``.  Each item is a conformance backend spec,
resolved by the suite's own resolver (:func:`conformance.load_backend`), so a
backend is named the same way for both; the forms the release benchmarks use:

* ``reference``: the hand-written reference of spec revision 2025.10;
* ``reference@R``: the project's reference of revision ``R`` (a revision name or
  a vLLM release, e.g. ``reference@0.27.0``);
* ``vllm-release:X``: release X's own ``vllm/v1/outputs.py`` and producers, loaded in
  this process from the folder ``$OUTPUTS_VLLM_RELEASES`` (files ``outputs-X.py.txt``)
  under a module name of its own, so several releases sit side by side;
* any other backend (a module path, ``module:attribute``, an entry-point name),
  judged at the revision it declares (2025.10 when none).

Each resolves to a :class:`Subject`: the module of spec types, the revision it
is written against (the benchmarks call each operation the way that revision
spells it, and skip where it lacks the operation), its devices and producers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from conformance import load_backend
from conformance.backends.backend import Backend, BackendResolutionError
from conformance.backends.known import REFERENCE_AT, VLLM_RELEASE
from conformance.backends.resolve import selected_spec
from conformance.oracle.revisions import DEFAULT_REVISION, UnsupportedReleaseError
from conformance.releases.fetch import FETCH_COMMAND, RELEASES_ENV_VAR, release_outputs
from conformance.releases.texts import ReleaseTextError

BACKENDS_ENV_VAR = "OUTPUTS_BENCH_BACKENDS"
PRODUCERS = (
    "pad_sampled_token_ids",
    "unpad_sampled_token_ids",
    "gather_logprobs",
    "make_async_output",
)
__all__ = [
    "BACKENDS_ENV_VAR",
    "PRODUCERS",
    "REFERENCE_AT",
    "RELEASES_ENV_VAR",
    "VLLM_RELEASE",
    "BackendResolutionError",
    "Subject",
    "release_text",
    "resolve",
    "selected_specs",
]

#: The last release with vLLM's first GPU runner: its ``AsyncGPUModelRunnerOutput``,
#: ``Sampler.gather_logprobs`` and ``RejectionSampler.parse_output`` are the peers of
#: the decode step, the gathering and the unpadding.
FIRST_RUNNER_PEER = "0.33.0"
#: The newest release: its default runner's async output (Model Runner V2's
#: ``AsyncOutput``, vLLM's only GPU runner from 0.34.0) is the decode step's other peer.
DEFAULT_RUNNER_PEER = "0.34.0"
#: vLLM releases whose own producers the benchmarks measure beside the backend's.
PEER_RELEASES = (FIRST_RUNNER_PEER, DEFAULT_RUNNER_PEER)


def fetch_peer_texts() -> None:
    """Fetch :data:`PEER_RELEASES` before a run: a missing index is named once, here
    (each benchmark that needs them then skips saying so), not in every process."""
    for version in PEER_RELEASES:
        try:
            release_outputs(version)
        except ReleaseTextError as error:
            print(f"vLLM {version}'s texts: {error}; the benchmarks beside it will skip")


@cache
def vllm_installed() -> bool:
    """Whether a ``vllm`` package is installed here (found, not imported: cheap), asked
    once: a release's texts loaded later stand in as ``vllm`` without being installed."""
    import importlib.util

    try:
        return importlib.util.find_spec("vllm") is not None
    except (ImportError, ValueError):
        return False


def vllm_own_producer(name: str) -> Callable[..., Any] | None:
    """vLLM's own producer ``name`` (``gather_logprobs``, ``unpad_sampled_token_ids``):
    the installed vLLM's where one imports here, else that of the peer release's texts
    (the first runner's, :data:`FIRST_RUNNER_PEER`), fetched on first use; None where
    neither is to be had."""
    if vllm_installed():
        from conformance.backends.vllm_producers import vllm_producers

        try:
            return vllm_producers().found.get(name)
        except Exception:
            return None
    try:
        return resolve(f"{VLLM_RELEASE}{FIRST_RUNNER_PEER}").producers.get(name)
    except (NotImplementedError, BackendResolutionError):
        return None


def vllm_own_at_hand() -> bool:
    """Whether vLLM's own producers are here without fetching: installed, or the peer
    release's texts in the cache (asv's discovery asks, so nothing is fetched)."""
    from conformance.releases.fetch import is_fetched

    return vllm_installed() or is_fetched(FIRST_RUNNER_PEER)


def release_text(version: str) -> Path:
    """``outputs-X.py.txt`` of vLLM ``version``, its producers beside it: fetched into the
    cache on first use (or read from ``$OUTPUTS_VLLM_RELEASES``).  Where it cannot be
    had, ``NotImplementedError`` (asv: skipped) naming what is missing and the command
    that fetches it."""
    try:
        return release_outputs(version)
    except ReleaseTextError as error:
        raise NotImplementedError(
            f"vLLM {version}'s texts are not here ({error}); fetch them with {FETCH_COMMAND}"
        ) from None


def selected_specs() -> list[str]:
    """The backend specs of this run, in the order given, each once."""
    raw = os.environ.get(BACKENDS_ENV_VAR, "")
    specs = [item.strip() for item in raw.split(",") if item.strip()]
    if not specs:
        specs = [selected_spec()]
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
    """The :class:`Subject` a backend list item names (cached per process).

    A release too old for the spec types is skipped (``NotImplementedError``, asv:
    skipped), not failed: there is nothing of it to measure.
    """
    try:
        backend = load_backend(spec.strip())
    except BackendResolutionError as error:
        if isinstance(error.__cause__, UnsupportedReleaseError):
            raise NotImplementedError(str(error)) from None
        raise
    return subject_of(spec.strip(), backend)


def subject_of(spec: str, backend: Backend) -> Subject:
    """What the benchmarks call of a resolved conformance backend."""
    from reference.revisions import revision

    rev = revision(backend.spec_revision or DEFAULT_REVISION)
    producers = {n: f for n in PRODUCERS if (f := getattr(backend, n, None)) is not None}
    return Subject(
        spec,
        backend.module,
        rev.name,
        rev.behaviours,
        tuple(backend.devices),
        producers,
        rev,
        producer_devices=tuple(backend.async_output_devices),
    )
