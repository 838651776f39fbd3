"""KVConnectorOutput: defaults (a fresh set per instance), storage, equality, pickling."""

from __future__ import annotations

import pickle

import pytest

from conformance.checks._support import attempt, expect_same, fail
from conformance.surface import SurfaceCheck

pytestmark = pytest.mark.spec_type("KVConnectorOutput")


@pytest.fixture
def KVConnectorOutput(backend):
    return backend.spec_type("KVConnectorOutput")


def test_surface(surface_check: SurfaceCheck, KVConnectorOutput) -> None:
    found = surface_check.run(KVConnectorOutput)
    if found:
        fail(*found)


def test_defaults(KVConnectorOutput) -> None:
    obj = attempt("KVConnectorOutput()", KVConnectorOutput)
    expected = {
        "finished_sending": None,
        "finished_recving": None,
        "kv_connector_stats": None,
        "invalid_block_ids": set(),
        "expected_finished_count": 0,
    }
    wrong = [
        f"KVConnectorOutput().{name}: expected {value!r}, found {getattr(obj, name, '<missing>')!r}"
        for name, value in expected.items()
        if type(getattr(obj, name, None)) is not type(value) or getattr(obj, name) != value
    ]
    if wrong:
        fail(*wrong)


def test_invalid_block_ids_default_is_fresh_per_instance(KVConnectorOutput) -> None:
    a = attempt("KVConnectorOutput()", KVConnectorOutput)
    b = attempt("KVConnectorOutput()", KVConnectorOutput)
    if a.invalid_block_ids is b.invalid_block_ids:
        fail(
            "KVConnectorOutput.invalid_block_ids: expected a new empty set per instance "
            "(field(default_factory=set)), found one set shared by all instances"
        )
    a.invalid_block_ids.add(3)
    if b.invalid_block_ids:
        fail("KVConnectorOutput.invalid_block_ids: adding to one instance's set changed another's")


def test_stores_fields_as_given(KVConnectorOutput) -> None:
    values = {
        "finished_sending": {"r1"},
        "finished_recving": {"r2", "r3"},
        "kv_connector_stats": object(),
        "invalid_block_ids": {11, 12},
        "expected_finished_count": 2,
    }
    obj = attempt("KVConnectorOutput(**fields)", KVConnectorOutput, **values)
    wrong = [
        f"KVConnectorOutput.{name}: expected the object passed in, found {getattr(obj, name, '<missing>')!r}"
        for name, value in values.items()
        if getattr(obj, name, None) is not value
    ]
    if wrong:
        fail(*wrong)


def test_pickle_round_trip(KVConnectorOutput) -> None:
    obj = attempt(
        "KVConnectorOutput(...)",
        KVConnectorOutput,
        finished_sending={"a"},
        invalid_block_ids={1, 2},
        expected_finished_count=3,
    )
    copy = attempt(
        "pickle round trip of KVConnectorOutput", lambda: pickle.loads(pickle.dumps(obj))
    )
    expect_same(copy, obj, "KVConnectorOutput after pickle round trip")
