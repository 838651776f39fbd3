"""AsyncModelRunnerOutput.get_kv_connector_output() (vLLM 0.33.0 on).

It is abstract beside ``get_output()``: a subclass must implement both to be
instantiated.  A backend's own async output (the ``make_async_output`` producer)
returns the step's KVConnectorOutput it was given, or None, so that a failed
``get_output()`` does not lose it.
"""

from __future__ import annotations

import pytest
import torch

from conformance.checks._support import attempt, fail, producer, spec_class

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


def _sampler_output(backend):
    ids = torch.tensor([[70001], [70002]], dtype=torch.int32)
    return backend.module.SamplerOutput(ids, None)


@pytest.mark.producer("make_async_output")
def test_producer_get_kv_connector_output_is_none_without_kv(backend) -> None:
    make = producer(backend, "make_async_output")
    async_output = attempt(
        "make_async_output(<2 requests>, req_ids)", make, _sampler_output(backend), ["a", "b"]
    )
    where = "make_async_output(<2 requests>, req_ids).get_kv_connector_output()"
    found = attempt(where, async_output.get_kv_connector_output)
    if found is not None:
        fail(f"{where}: expected None (no KVConnectorOutput was given), found {found!r}")


@pytest.mark.producer("make_async_output")
@pytest.mark.parametrize("when", ["before-get-output", "after-get-output"])
def test_producer_get_kv_connector_output_returns_the_kv_given(backend, when: str) -> None:
    make = producer(backend, "make_async_output")
    kv = backend.module.KVConnectorOutput(finished_sending={"a"})
    try:
        async_output = make(_sampler_output(backend), ["a", "b"], kv_connector_output=kv)
    except TypeError as error:
        pytest.skip(f"make_async_output takes no kv_connector_output keyword ({error})")
    if when == "after-get-output":
        attempt("get_output()", async_output.get_output)
    where = "make_async_output(..., kv_connector_output=kv).get_kv_connector_output()"
    found = attempt(where, async_output.get_kv_connector_output)
    if found is not kv:
        fail(
            f"{where} {when.replace('-', ' ')}: expected the KVConnectorOutput given, found {found!r}"
        )
