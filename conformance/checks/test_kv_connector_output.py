"""KVConnectorOutput: defaults (a fresh set per instance), storage, pickling; fields per revision."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from conformance.checks._support import expect_same
from conformance.oracle.failing import attempt, check, fail
from conformance.oracle.surface import SurfaceCheck

pytestmark = [
    pytest.mark.spec_type("KVConnectorOutput"),
    pytest.mark.behaviour("KVConnectorOutput.dataclass"),
]


@pytest.fixture
def type_spec(revision):
    return revision.types["KVConnectorOutput"]


def sample_value(name: str, annotation: str) -> Any:
    """A non-default value for a field, by what the field holds."""
    if "set[int]" in annotation:
        return {11, 12}
    if "set[str]" in annotation:
        return {f"{name}-r1"}
    if annotation == "int":
        return 2
    return object()  # an opaque object the spec only stores (stats, events, metadata)


@pytest.mark.behaviour("KVConnectorOutput.surface")
def test_surface(surface_check: SurfaceCheck, KVConnectorOutput) -> None:
    check(surface_check.run(KVConnectorOutput))


def test_defaults(KVConnectorOutput, type_spec) -> None:
    obj = attempt("KVConnectorOutput()", KVConnectorOutput)
    wrong = []
    for field in type_spec.fields:
        expected = field.default_value()
        found = getattr(obj, field.name, "<missing>")
        if type(found) is not type(expected) or found != expected:
            wrong.append(
                f"KVConnectorOutput().{field.name}: expected {expected!r}, found {found!r}"
            )
    if wrong:
        fail(*wrong)


def test_set_defaults_are_fresh_per_instance(KVConnectorOutput, type_spec) -> None:
    for field in type_spec.fields:
        if field.default_factory is None:
            continue
        a = attempt("KVConnectorOutput()", KVConnectorOutput)
        b = attempt("KVConnectorOutput()", KVConnectorOutput)
        if getattr(a, field.name) is getattr(b, field.name):
            fail(
                f"KVConnectorOutput.{field.name}: expected a new empty set per instance "
                "(field(default_factory=set)), found one set shared by all instances"
            )
        getattr(a, field.name).add(3 if "int" in field.annotation else "x")
        if getattr(b, field.name):
            fail(f"KVConnectorOutput.{field.name}: adding to one instance's set changed another's")


def test_stores_fields_as_given(KVConnectorOutput, type_spec) -> None:
    values = {f.name: sample_value(f.name, f.annotation) for f in type_spec.fields}
    obj = attempt("KVConnectorOutput(**fields)", KVConnectorOutput, **values)
    wrong = [
        f"KVConnectorOutput.{name}: expected the object passed in, found "
        f"{getattr(obj, name, '<missing>')!r}"
        for name, value in values.items()
        if getattr(obj, name, None) is not value
    ]
    if wrong:
        fail(*wrong)


def test_pickle_round_trip(KVConnectorOutput, type_spec) -> None:
    values = {
        f.name: sample_value(f.name, f.annotation)
        for f in type_spec.fields
        if "set[" in f.annotation or f.annotation == "int"
    }
    obj = attempt("KVConnectorOutput(...)", KVConnectorOutput, **values)
    copy = attempt(
        "pickle round trip of KVConnectorOutput", lambda: pickle.loads(pickle.dumps(obj))
    )
    expect_same(copy, obj, "KVConnectorOutput after pickle round trip")
