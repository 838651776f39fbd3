"""AsyncModelRunnerOutput.get_kv_connector_output() (vLLM 0.33.0 on).

It is abstract beside ``get_output()``: a subclass must implement both to be
instantiated.  A backend's own async output (the ``make_async_output`` producer)
returns the KVConnectorOutput of the ModelRunnerOutput the runner handed over, or
None, so that a failed ``get_output()`` does not lose it.
"""

from __future__ import annotations

import contextlib
import types

import pytest

from conformance.checks._support import producer_named, spec_class
from conformance.oracle.failing import attempt, fail
from conformance.producers.pooling_steps import POOLING_CASES, build_pooling_step
from conformance.producers.steps import (
    ONE_TOKEN_CASES,
    build_step,
    made_after_building,
    made_as_the_runner_makes,
)

pytestmark = [
    pytest.mark.spec_type("AsyncModelRunnerOutput"),
    pytest.mark.behaviour("AsyncModelRunnerOutput.get_kv_connector_output"),
]


def test_subclass_implementing_only_get_output_cannot_be_instantiated(backend) -> None:
    base = spec_class(backend, "AsyncModelRunnerOutput")
    Partial = type("OnlyGetOutput", (base,), {"get_output": lambda self: None})
    try:
        Partial()
    except TypeError:
        return
    fail(
        "AsyncModelRunnerOutput: a subclass implementing only get_output() was instantiated; "
        "expected TypeError (get_kv_connector_output() is abstract too)"
    )


def test_subclass_implementing_get_output_and_get_kv_connector_output_can_be_instantiated(
    backend,
) -> None:
    base = spec_class(backend, "AsyncModelRunnerOutput")
    Complete = type(
        "BothMethods",
        (base,),
        {"get_output": lambda self: None, "get_kv_connector_output": lambda self: None},
    )
    attempt(
        "AsyncModelRunnerOutput subclass implementing get_output and get_kv_connector_output()",
        Complete,
    )


def _async_output(backend, revision, async_producer, step_device, **fields):
    """The async output of a one-token step, made as the runner makes it: Model Runner
    V2's puts the KV connector's output on its ModelRunnerOutput only after building it."""
    case = ONE_TOKEN_CASES[1]
    step = build_step(backend, revision, case, step_device, **fields)
    where = f"{producer_named(backend, async_producer)}(<step {case.name}>)"
    return attempt(
        where, made_as_the_runner_makes, async_producer.make, step, revision, async_producer.runner
    )


def _set_after_building(revision, async_producer) -> str:
    """What the failure adds where the runner sets the field after building the output."""
    if made_after_building(revision, async_producer.runner):
        return (
            " (Model Runner V2's runner puts it on its output after building the async "
            "output: read it from that output when asked, never keep what it held when built)"
        )
    return ""


@pytest.mark.producer("make_async_output")
def test_producer_get_kv_connector_output_is_none_without_kv(
    backend, revision, async_producer, step_device
) -> None:
    async_output = _async_output(
        backend, revision, async_producer, step_device, kv_connector_output=None
    )
    where = f"{producer_named(backend, async_producer)}(<step without KVConnectorOutput>)"
    found = attempt(f"{where}.get_kv_connector_output()", async_output.get_kv_connector_output)
    if found is not None:
        fail(
            f"{where}.get_kv_connector_output(): expected None (the runner's output holds "
            f"none), found {found!r}"
        )


@pytest.mark.producer("make_async_output")
@pytest.mark.parametrize("when", ["before-get-output", "after-get-output", "get-output-failed"])
def test_producer_get_kv_connector_output_returns_the_runners(
    backend, revision, async_producer, step_device, when: str
) -> None:
    kv = backend.module.KVConnectorOutput(finished_sending={"a"})
    async_output = _async_output(
        backend, revision, async_producer, step_device, kv_connector_output=kv
    )
    where = f"{producer_named(backend, async_producer)}(<step whose output holds kv>)"
    if when == "after-get-output":
        attempt(f"{where}.get_output()", async_output.get_output)
    if when == "get-output-failed":
        # vLLM's one caller (the executor's enqueue_output) asks for it exactly when
        # get_output() raised, to salvage the step's KV transfers: going through
        # get_output() raises again there, and the output thread dies.
        _make_get_output_fail(async_output)
    found = attempt(f"{where}.get_kv_connector_output()", async_output.get_kv_connector_output)
    # Equal is enough: vLLM's consumer tests it (is_empty) and passes it on.
    equal = found is kv or attempt(f"{where}.get_kv_connector_output() == kv", lambda: found == kv)
    if not equal:
        said = {
            "before-get-output": "before get_output()",
            "after-get-output": "after get_output()",
            "get-output-failed": "after get_output() raised (vLLM asks for it then, "
            "to salvage the step's KV output: never through get_output())",
        }[when]
        fail(
            f"{where}.get_kv_connector_output() {said}: expected the KVConnectorOutput the "
            f"runner put on its output, found {found!r}{_set_after_building(revision, async_producer)}"
        )


@pytest.mark.step_kinds("pooling-outputs")
@pytest.mark.parametrize("when", ["before-get-output", "get-output-failed"])
def test_pooling_output_get_kv_connector_output_returns_the_runners(
    backend, revision, pooling_producer, step_device, when: str
) -> None:
    # A pooling step's output is asked the same way (its runner sets the KV output
    # before building it, in either runner).
    step = build_pooling_step(backend, revision, POOLING_CASES[0], step_device)
    kv = step.model_runner_output.kv_connector_output
    where = f"{pooling_producer.label}(<pooling step whose output holds kv>)"
    async_output = attempt(where, pooling_producer.make, step)
    if when == "get-output-failed":
        _make_get_output_fail(async_output)
    found = attempt(f"{where}.get_kv_connector_output()", async_output.get_kv_connector_output)
    equal = found is kv or attempt(f"{where}.get_kv_connector_output() == kv", lambda: found == kv)
    if not equal:
        after = " after get_output() raised" if when == "get-output-failed" else ""
        fail(
            f"{where}.get_kv_connector_output(){after}: expected the KVConnectorOutput the "
            f"runner put on its output, found {found!r}"
        )


class GetOutputFailed(RuntimeError):
    """The step's get_output() failed (a device error, an expert-parallel fault)."""


def _make_get_output_fail(async_output) -> None:
    """Make ``async_output.get_output()`` raise, as a failing step's does, leaving the rest
    of the object as built: its class is swapped for a subclass of it that adds nothing
    else (slots too), else the method is set on the instance.  A class allowing neither
    is asked as it is (the check is then the one before get_output())."""

    def get_output(self):
        raise GetOutputFailed(
            "get_output() failed, as a failing step's does, and vLLM asks for the KV "
            "output exactly then, to salvage it: return the runner's output's "
            "kv_connector_output, never through get_output()"
        )

    cls = type(async_output)
    with contextlib.suppress(TypeError):
        failing = type(cls.__name__, (cls,), {"__slots__": (), "get_output": get_output})
        failing.__qualname__ = cls.__qualname__
        failing.__module__ = cls.__module__
        async_output.__class__ = failing
        return
    with contextlib.suppress(AttributeError, TypeError):
        async_output.get_output = types.MethodType(get_output, async_output)
