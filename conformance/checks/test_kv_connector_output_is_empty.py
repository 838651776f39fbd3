"""KVConnectorOutput.is_empty: True unless a field the revision counts is truthy.

Which fields count changed from release to release (the revision's
``counted_by_is_empty``); ``expected_finished_count`` is configuration, not
output, and never makes the object non-empty.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("KVConnectorOutput"),
    pytest.mark.behaviour("KVConnectorOutput.is_empty"),
]


class Opaque:
    """A stand-in for an opaque field value (stats, events, metadata) with a chosen truth."""

    def __init__(self, truthy: bool) -> None:
        self.truthy = truthy

    def __bool__(self) -> bool:
        return self.truthy

    def __repr__(self) -> str:
        return f"<{'truthy' if self.truthy else 'falsy'} object>"


def field_value(annotation: str, truthy: bool) -> Any:
    """A falsy or truthy value of what a field holds."""
    if "set[int]" in annotation:
        return {7} if truthy else set()
    if "set[str]" in annotation:
        return {"r1"} if truthy else set()
    if annotation == "int":
        return 2 if truthy else 0
    return Opaque(truthy)


def truth_table(type_spec) -> list[tuple[dict[str, Any], bool]]:
    """Each field alone, falsy and truthy, with the is_empty() the revision expects."""
    cases: list[tuple[dict[str, Any], bool]] = [({}, True)]
    for field in type_spec.fields:
        counted = field.name in type_spec.counted_by_is_empty
        cases.append(({field.name: field_value(field.annotation, False)}, True))
        cases.append(({field.name: field_value(field.annotation, True)}, not counted))
    return cases


def test_is_empty_truth_table(KVConnectorOutput, revision) -> None:
    type_spec = revision.types["KVConnectorOutput"]
    counted = ", ".join(type_spec.counted_by_is_empty)
    wrong = []
    for fields, expected in truth_table(type_spec):
        obj = attempt(f"KVConnectorOutput(**{fields!r})", KVConnectorOutput, **fields)
        found = attempt(f"KVConnectorOutput(**{fields!r}).is_empty()", obj.is_empty)
        if type(found) is not bool or found is not expected:
            wrong.append(
                f"KVConnectorOutput(**{fields!r}).is_empty(): expected {expected} (revision "
                f"{revision.name} counts {counted}), found {type(found).__name__} {found!r}"
            )
    if wrong:
        fail(*wrong)


@given(data=st.data())
def test_is_empty_agrees_with_reference(
    KVConnectorOutput, reference_backend, revision, data
) -> None:
    type_spec = revision.types["KVConnectorOutput"]
    fields = {
        f.name: field_value(f.annotation, data.draw(st.booleans(), label=f.name))
        for f in type_spec.fields
        if data.draw(st.booleans(), label=f"set {f.name}")
    }
    expected = reference_backend.module.KVConnectorOutput(**fields).is_empty()
    obj = attempt(f"KVConnectorOutput(**{fields!r})", KVConnectorOutput, **fields)
    found = attempt(f"KVConnectorOutput(**{fields!r}).is_empty()", obj.is_empty)
    if found is not expected:
        fail(f"KVConnectorOutput(**{fields!r}).is_empty(): expected {expected}, found {found!r}")
