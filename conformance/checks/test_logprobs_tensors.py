"""LogprobsTensors: a NamedTuple of its tensors (and, later, cu fields), on any device."""

from __future__ import annotations

import pickle

import pytest

from conformance.checks._samples import LOGPROBS_TENSORS_FIELDS as TENSORS
from conformance.checks._samples import sample_tensors
from conformance.checks._support import expect_same, on
from conformance.oracle.failing import attempt, check, fail
from conformance.oracle.surface import SurfaceCheck

pytestmark = [
    pytest.mark.spec_type("LogprobsTensors"),
    pytest.mark.behaviour("LogprobsTensors.tuple"),
]


@pytest.mark.behaviour("LogprobsTensors.surface")
def test_surface(surface_check: SurfaceCheck, LogprobsTensors) -> None:
    check(surface_check.run(LogprobsTensors))


def test_is_a_tuple_of_its_fields(LogprobsTensors, revision, device: str) -> None:
    names = revision.types["LogprobsTensors"].field_names
    tensors = tuple(on(device, t) for t in sample_tensors())
    obj = attempt("LogprobsTensors(ids, logprobs, ranks)", LogprobsTensors, *tensors)
    if not isinstance(obj, tuple) or len(obj) != len(names):
        fail(
            f"LogprobsTensors: expected a {len(names)}-tuple {names}, found "
            f"{type(obj).__name__} of length {len(obj)}"
        )
    for i, (name, given) in enumerate(zip(TENSORS, tensors, strict=True)):
        if obj[i] is not given or getattr(obj, name) is not given:
            fail(
                f"LogprobsTensors.{name}: expected the tensor passed as item {i} (no copy), "
                f"found another object"
            )
    for name in names[len(TENSORS) :]:
        if getattr(obj, name, "<missing>") is not None:
            fail(
                f"LogprobsTensors.{name}: expected default None, found {getattr(obj, name, '<missing>')!r}"
            )


def test_keyword_construction(LogprobsTensors) -> None:
    tensors = sample_tensors()
    obj = attempt(
        "LogprobsTensors(**fields)", LogprobsTensors, **dict(zip(TENSORS, tensors, strict=True))
    )
    if any(getattr(obj, name) is not t for name, t in zip(TENSORS, tensors, strict=True)):
        fail("LogprobsTensors(**fields): expected the tensors passed, in field order")


def test_pickle_round_trip(LogprobsTensors) -> None:
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *sample_tensors())
    copy = attempt("pickle round trip of LogprobsTensors", lambda: pickle.loads(pickle.dumps(obj)))
    expect_same(copy, obj, "LogprobsTensors after pickle round trip")
