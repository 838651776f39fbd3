"""AsyncModelRunnerOutput.get_kv_connector_output() (vLLM 0.33.0 on).

It is abstract beside ``get_output()``: a subclass must implement both to be
instantiated.  A backend's own async output (the ``make_async_output`` producer)
returns the KVConnectorOutput of the ModelRunnerOutput the runner handed over, or
None, so that a failed ``get_output()`` does not lose it.
"""

from __future__ import annotations

import pytest

from conformance.checks._support import producer, spec_class
from conformance.oracle.failing import attempt, fail
from conformance.producers.steps import ONE_TOKEN_CASES, build_step

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


def _async_output(backend, revision, step_device, **fields):
    case = ONE_TOKEN_CASES[1]
    step = build_step(backend, revision, case, step_device, **fields)
    make = producer(backend, "make_async_output")
    return attempt(f"make_async_output(<step {case.name}>)", make, step)


@pytest.mark.producer("make_async_output")
def test_producer_get_kv_connector_output_is_none_without_kv(
    backend, revision, step_device
) -> None:
    async_output = _async_output(backend, revision, step_device, kv_connector_output=None)
    where = "make_async_output(<step without KVConnectorOutput>).get_kv_connector_output()"
    found = attempt(where, async_output.get_kv_connector_output)
    if found is not None:
        fail(f"{where}: expected None (the runner's output holds none), found {found!r}")


@pytest.mark.producer("make_async_output")
@pytest.mark.parametrize("when", ["before-get-output", "after-get-output"])
def test_producer_get_kv_connector_output_returns_the_runners(
    backend, revision, step_device, when: str
) -> None:
    kv = backend.module.KVConnectorOutput(finished_sending={"a"})
    async_output = _async_output(backend, revision, step_device, kv_connector_output=kv)
    if when == "after-get-output":
        attempt("get_output()", async_output.get_output)
    where = "make_async_output(<step whose output holds kv>).get_kv_connector_output()"
    found = attempt(where, async_output.get_kv_connector_output)
    if found is not kv:
        fail(
            f"{where} {when.replace('-', ' ')}: expected the KVConnectorOutput the runner "
            f"put on its output, found {found!r}"
        )
