"""Which checks a run keeps, which it skips, and why: the one place that decides.

A check is *deselected* when the judged revision lacks its behaviour (it is not part
of that revision at all), and *skipped*, its cause kept as data (``skip_cause`` in the
report), when it needs a device the backend does not declare or this machine lacks,
or a producer the backend does not declare.  The checks' parametrisation only lists
the devices; every verdict about them is made here.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass

import pytest

from conformance.backends import devices
from conformance.backends.backend import Backend

PRODUCER_NOT_DECLARED = "producer-not-declared"
#: The skip cause of a check of a spec type the judged vLLM text does not define.
TYPE_ABSENT = "type-absent"
#: The skip cause of a check of a step kind the backend declares its runner never builds.
STEP_NOT_DECLARED = "step-not-declared"
#: The ``producer_device`` value of a backend whose async output has no accelerator.
NO_ACCELERATOR = "none"


@dataclass(frozen=True)
class Skip:
    cause: str  #: the report's ``skip_cause``
    reason: str  #: what the terminal and the report's message say


def kept(behaviour: str, applicable: frozenset[str]) -> bool:
    """Whether a check of ``behaviour`` belongs to the judged revision."""
    return behaviour in applicable


#: Parameters a check is collected for only when the backend has one to give (an
#: empty set deselects the check: it does not belong to that backend at all).
_PER_PRODUCER = ("runner_v2", "pooling_producer")


def unparametrized(item: pytest.Item) -> bool:
    """Whether ``item`` is a check of a per-producer parameter the backend has none of."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    fixtures = getattr(item, "fixturenames", ())
    # pytest collects an empty parameter set as one item with a placeholder value.
    return any(name in fixtures and not hasattr(params.get(name), "make") for name in _PER_PRODUCER)


def skip_of(
    item: pytest.Item, backend: Backend, types_removed: frozenset[str] = frozenset()
) -> Skip | None:
    """Why ``item`` cannot run for ``backend`` on this machine; None when it can.
    ``types_removed``: spec types the judged vLLM text does not define."""
    if backend.import_fails is not None and item.name != _IMPORT_CHECK:
        return Skip(FOLLOWS_FROM_FAILURE, f"not judged: {backend.import_fails}")
    absent = _type_absent(item, backend.types_absent or types_removed)
    if absent is not None:
        return absent
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    found: devices.DeviceSkip | None = None
    if "producer_device" in params:
        found = _producer_device_skip(backend, params["producer_device"])
    elif params.get("device") or params.get("accelerator"):
        found = devices.skip_for(backend, params.get("device") or params["accelerator"])
    if found is not None:
        return Skip(found.cause, found.message)
    producer = item.get_closest_marker("producer")
    if producer is not None and getattr(backend, producer.args[0]) is None:
        return Skip(PRODUCER_NOT_DECLARED, _not_declared(backend, producer.args[0]))
    return _step_skip(item, backend)


#: The check that fails where the backend's own code does not import with the vLLM
#: judged (:attr:`Backend.import_fails`); every other check is then not judged.
_IMPORT_CHECK = "test_spec_names_are_classes"
FOLLOWS_FROM_FAILURE = "follows-from-failure"


def _not_declared(backend: Backend, name: str) -> str:
    """Why a producer's checks do not run: vLLM itself has none of the spec's shape where
    it gathers logprobs otherwise (0.34.0: ``compute_topk_scores`` only, judged by checks
    of their own), else the backend declares none."""
    if name == "gather_logprobs" and backend.name == "vllm" and _vllm_gathers(backend.version):
        return (
            f"producer gather_logprobs: vLLM {backend.version} has none of this shape "
            "(Sampler.gather_logprobs); the gatherings it has are judged by checks of "
            "their own (the header's 'gatherings found')"
        )
    return f"producer {name}: not declared by the backend"


@functools.cache
def _vllm_gathers(version: str | None) -> bool:
    """Whether the vLLM on the path (of ``version``) has a gathering, found by what it is:
    its files are read once a run, not for each check skipped."""
    from conformance.backends.vllm_producers import gatherings_found

    return bool(gatherings_found())


def _type_absent(item: pytest.Item, absent: Collection[str]) -> Skip | None:
    """A check of a spec type the judged vLLM text lacks: not applicable, never refused."""
    marker = item.get_closest_marker("spec_type")
    spec_type = marker.args[0] if marker is not None and marker.args else None
    if spec_type not in absent:
        return None
    return Skip(
        TYPE_ABSENT,
        f"not applicable: the judged vLLM text has no {spec_type} (type removed)",
    )


def _step_skip(item: pytest.Item, backend: Backend) -> Skip | None:
    """A check of a step kind outside ``Backend.steps``: not applicable, as declared."""
    from conformance.backends.step import STEP_KINDS

    kinds = {kind for marker in item.iter_markers("step_kinds") for kind in marker.args}
    undeclared = [
        kind for kind in STEP_KINDS if kind in kinds and not backend.declares_steps([kind])
    ]
    if not undeclared:
        return _producer_step_skip(item, kinds)
    return Skip(
        STEP_NOT_DECLARED,
        "not applicable (declared): "
        + "; ".join(STEP_KINDS[kind] for kind in undeclared)
        + " (the backend's runner builds no such step: Backend.steps)",
    )


def _producer_step_skip(item: pytest.Item, kinds: set[str]) -> Skip | None:
    """A step the async output judged (one of several a backend declares) is never handed
    by its runner: Model Runner V2 of 0.12.0 .. 0.15.1 builds no logprobs with rows of
    several tokens (``AsyncOutputProducer.steps_not_built``)."""
    from conformance.backends.backend import LOGPROBS_WITH_MULTI_TOKEN_ROWS

    callspec = getattr(item, "callspec", None)
    judged = callspec.params.get("async_producer") if callspec is not None else None
    unbuilt: frozenset[str] = getattr(judged, "steps_not_built", frozenset())
    if (
        judged is not None
        and LOGPROBS_WITH_MULTI_TOKEN_ROWS in unbuilt
        and {"logprobs", "multi-token-rows"} <= kinds
    ):
        return Skip(
            STEP_NOT_DECLARED,
            f"not applicable (declared): {judged.describe()} is never handed logprobs with "
            "rows of several tokens (its runner builds no such step)",
        )
    return None


def steps_not_declared_line(backend: Backend) -> str | None:
    """One line saying what the backend's step declaration leaves unsupported, or None."""
    from conformance.backends.step import STEP_KINDS

    undeclared = backend.steps_not_declared()
    if not undeclared:
        return None
    return "steps not declared, their checks not applicable: " + "; ".join(
        STEP_KINDS[kind] for kind in undeclared
    )


def _producer_device_skip(backend: Backend, value: str) -> devices.DeviceSkip | None:
    from conformance.producers.runtime import producer_devices

    if value == NO_ACCELERATOR:
        declared = ", ".join(backend.async_output_devices)
        return devices.DeviceSkip(
            devices.DEVICE_NOT_DECLARED,
            f"the backend's async output runs on no accelerator ({declared})",
        )
    return next((d.skip for d in producer_devices(backend) if d.value == value), None)
