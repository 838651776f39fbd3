"""KVConnectorOutput.is_empty: true unless a set is non-empty or the stats are truthy.

``expected_finished_count`` is configuration, not output: it never makes the
object non-empty.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance import strategies
from conformance.checks._support import attempt, fail

pytestmark = pytest.mark.spec_type("KVConnectorOutput")


class Stats:
    """A stand-in for KVConnectorStats with a chosen truth value."""

    def __init__(self, truthy: bool) -> None:
        self.truthy = truthy

    def __bool__(self) -> bool:
        return self.truthy

    def __repr__(self) -> str:
        return f"<stats, {'truthy' if self.truthy else 'falsy'}>"


# (field values, expected is_empty()): each field alone, empty and non-empty.
TRUTH_TABLE = [
    ({}, True),
    ({"finished_sending": set()}, True),
    ({"finished_sending": {"r1"}}, False),
    ({"finished_recving": set()}, True),
    ({"finished_recving": {"r1"}}, False),
    ({"kv_connector_stats": Stats(False)}, True),
    ({"kv_connector_stats": Stats(True)}, False),
    ({"invalid_block_ids": set()}, True),
    ({"invalid_block_ids": {7}}, False),
    ({"expected_finished_count": 0}, True),
    ({"expected_finished_count": 2}, True),
    ({"finished_sending": {"r1"}, "expected_finished_count": 2}, False),
]


def _id(case: dict) -> str:
    if not case:
        return "defaults"
    return ",".join(
        f"{k}={'empty' if v in (set(), 0) or (isinstance(v, Stats) and not v) else 'set'}"
        for k, v in case.items()
    )


@pytest.fixture
def KVConnectorOutput(backend):
    return backend.spec_type("KVConnectorOutput")


@pytest.mark.parametrize(("fields", "expected"), TRUTH_TABLE, ids=[_id(c) for c, _ in TRUTH_TABLE])
def test_is_empty_truth_table(KVConnectorOutput, fields, expected) -> None:
    obj = attempt(f"KVConnectorOutput(**{fields!r})", KVConnectorOutput, **fields)
    found = attempt(f"KVConnectorOutput(**{fields!r}).is_empty()", obj.is_empty)
    if type(found) is not bool or found is not expected:
        fail(
            f"KVConnectorOutput(**{fields!r}).is_empty(): expected {expected}, "
            f"found {type(found).__name__} {found!r}"
        )


@strategies.SETTINGS
@given(case=strategies.kv_connector_fields())
def test_is_empty_agrees_with_reference(KVConnectorOutput, reference_backend, case) -> None:
    stats = {"truthy": Stats(True), "falsy": Stats(False), None: None}[case["kv_connector_stats"]]
    fields = {**case, "kv_connector_stats": stats}
    expected = reference_backend.module.KVConnectorOutput(**fields).is_empty()
    obj = attempt(f"KVConnectorOutput(**{fields!r})", KVConnectorOutput, **fields)
    found = attempt(f"KVConnectorOutput(**{fields!r}).is_empty()", obj.is_empty)
    if found is not expected:
        fail(f"KVConnectorOutput(**{fields!r}).is_empty(): expected {expected}, found {found!r}")
