"""RoutedExpertsTensors and RoutedExpertsLists (vLLM 0.22.0 to 0.30.x), held by
ModelRunnerOutput.routed_experts.

``RoutedExpertsTensors.to_cpu_nonblocking()`` returns the object itself on CPU
and elsewhere CPU tensors of the same dtypes and (once synchronised) values;
``tolists()`` returns the backend's RoutedExpertsLists of numpy arrays with the
tensors' dtypes, shapes and values.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conformance.backends.devices import synchronize
from conformance.checks._support import expect_same, expect_type, fields_of, on
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt, check, fail
from conformance.oracle.surface import SurfaceCheck

pytestmark = [
    pytest.mark.spec_type("ModelRunnerOutput"),
    pytest.mark.behaviour("RoutedExpertsTensors.to_lists"),
]

FIELDS = ("routing_data", "slot_mapping")


def _tensors(num_tokens: int, dtype=torch.uint8, num_layers: int = 3, top_k: int = 2):
    """Expert ids [tokens, layers, top_k] (uint8/int16 as vLLM stores them) and int64 slots."""
    routing = (torch.arange(num_tokens * num_layers * top_k) % 61).to(dtype)
    routing = routing.reshape(num_tokens, num_layers, top_k)
    slots = torch.arange(1000, 1000 + num_tokens, dtype=torch.int64)
    return routing, slots


@pytest.mark.surface_of("RoutedExpertsTensors")
@pytest.mark.behaviour("RoutedExpertsTensors.surface")
def test_routed_experts_tensors_surface(surface_check: SurfaceCheck, backend) -> None:
    check(surface_check.run(backend.spec_type("RoutedExpertsTensors")))


@pytest.mark.surface_of("RoutedExpertsLists")
@pytest.mark.behaviour("RoutedExpertsLists.surface")
def test_routed_experts_lists_surface(surface_check: SurfaceCheck, backend) -> None:
    check(surface_check.run(backend.spec_type("RoutedExpertsLists")))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16], ids=["uint8", "int16"])
@pytest.mark.parametrize("num_tokens", [0, 1, 5])
def test_routed_experts_tensors_tolists_gives_numpy_arrays_with_the_same_values(
    RoutedExpertsTensors, RoutedExpertsLists, device: str, num_tokens: int, dtype
) -> None:
    tensors = tuple(on(device, t) for t in _tensors(num_tokens, dtype))
    obj = attempt("RoutedExpertsTensors(...)", RoutedExpertsTensors, *tensors)
    where = f"RoutedExpertsTensors(<{num_tokens} tokens, {dtype} on {device}>).tolists()"
    result = attempt(where, obj.tolists)
    expect_type(result, RoutedExpertsLists, where)
    expected = Members(zip(FIELDS, (t.cpu().numpy() for t in tensors), strict=True))
    expect_same(fields_of(result, FIELDS), expected, where)
    for name in FIELDS:
        if not isinstance(getattr(result, name), np.ndarray):
            fail(
                f"{where}.{name}: expected a numpy array, found {type(getattr(result, name)).__name__}"
            )


def test_routed_experts_tensors_to_cpu_nonblocking_returns_self_on_cpu(
    RoutedExpertsTensors,
) -> None:
    obj = attempt("RoutedExpertsTensors(...)", RoutedExpertsTensors, *_tensors(4))
    result = attempt("RoutedExpertsTensors(<cpu>).to_cpu_nonblocking()", obj.to_cpu_nonblocking)
    if result is not obj:
        fail(
            "RoutedExpertsTensors(<cpu>).to_cpu_nonblocking(): expected the object itself, found "
            f"a different {type(result).__name__}"
        )


def test_routed_experts_tensors_to_cpu_nonblocking_copies_to_the_host(
    RoutedExpertsTensors, accelerator: str
) -> None:
    host = _tensors(6, torch.int16)
    obj = attempt(
        f"RoutedExpertsTensors(<{accelerator}>)",
        RoutedExpertsTensors,
        *(on(accelerator, t) for t in host),
    )
    where = f"RoutedExpertsTensors(<{accelerator}>).to_cpu_nonblocking()"
    result = attempt(where, obj.to_cpu_nonblocking)
    synchronize(accelerator)
    expect_type(result, RoutedExpertsTensors, where)
    expect_same(fields_of(result, FIELDS), Members(zip(FIELDS, host, strict=True)), where)
