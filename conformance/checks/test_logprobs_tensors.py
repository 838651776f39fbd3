"""LogprobsTensors: a NamedTuple of three tensors, on any device, picklable on CPU."""

from __future__ import annotations

import pickle

import pytest

from conformance.checks._samples import LOGPROBS_TENSORS_FIELDS as FIELDS
from conformance.checks._samples import sample_tensors
from conformance.checks._support import attempt, expect_same, fail, on
from conformance.surface import SurfaceCheck

pytestmark = pytest.mark.spec_type("LogprobsTensors")


@pytest.fixture
def LogprobsTensors(backend):
    return backend.spec_type("LogprobsTensors")


def test_surface(surface_check: SurfaceCheck, LogprobsTensors) -> None:
    found = surface_check.run(LogprobsTensors)
    if found:
        fail(*found)


def test_is_a_tuple_of_its_three_tensors(LogprobsTensors, device: str) -> None:
    tensors = tuple(on(device, t) for t in sample_tensors())
    obj = attempt("LogprobsTensors(ids, logprobs, ranks)", LogprobsTensors, *tensors)
    if not isinstance(obj, tuple) or len(obj) != 3:
        fail(
            f"LogprobsTensors: expected a 3-tuple, found {type(obj).__name__} of length {len(obj)}"
        )
    for i, (name, given) in enumerate(zip(FIELDS, tensors, strict=True)):
        if obj[i] is not given or getattr(obj, name) is not given:
            fail(
                f"LogprobsTensors.{name}: expected the tensor passed as item {i} (no copy), "
                f"found another object"
            )


def test_keyword_construction(LogprobsTensors) -> None:
    tensors = sample_tensors()
    obj = attempt(
        "LogprobsTensors(**fields)", LogprobsTensors, **dict(zip(FIELDS, tensors, strict=True))
    )
    if any(a is not b for a, b in zip(obj, tensors, strict=True)):
        fail("LogprobsTensors(**fields): expected the tensors passed, in field order")


def test_pickle_round_trip(LogprobsTensors) -> None:
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *sample_tensors())
    copy = attempt("pickle round trip of LogprobsTensors", lambda: pickle.loads(pickle.dumps(obj)))
    expect_same(copy, obj, "LogprobsTensors after pickle round trip")
