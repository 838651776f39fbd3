"""ECConnectorOutput (vLLM 0.11.1 on), held by ModelRunnerOutput.ec_connector_output.

A dataclass whose every field defaults to None, that stores what it is given and
survives pickling; from 0.28.0 on ``is_empty()`` is True exactly when every field
the revision counts is falsy.
"""

from __future__ import annotations

import pickle

import pytest

from conformance.checks._support import expect_same, fields_of
from conformance.oracle.failing import attempt, check, fail
from conformance.oracle.surface import SurfaceCheck

pytestmark = [
    pytest.mark.spec_type("ModelRunnerOutput"),
    pytest.mark.behaviour("ECConnectorOutput.dataclass"),
]


class Opaque:
    """A stand-in for the opaque stats and worker metadata, with a chosen truth value."""

    def __init__(self, truthy: bool) -> None:
        self.truthy = truthy

    def __bool__(self) -> bool:
        return self.truthy

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and other.truthy == self.truthy

    def __hash__(self) -> int:
        return hash(self.truthy)

    def __repr__(self) -> str:
        return f"<opaque, {'truthy' if self.truthy else 'falsy'}>"


def _names(revision) -> tuple[str, ...]:
    return revision.type("ECConnectorOutput").field_names


def _value(name: str, truthy: bool):
    """A value for field ``name``: sets of multimodal hashes, opaque objects otherwise."""
    if name.startswith("finished_"):
        return {"mm-hash-1"} if truthy else set()
    return Opaque(truthy)


@pytest.mark.surface_of("ECConnectorOutput")
@pytest.mark.behaviour("ECConnectorOutput.surface")
def test_ec_connector_output_surface(surface_check: SurfaceCheck, backend) -> None:
    check(surface_check.run(backend.spec_type("ECConnectorOutput")))


def test_ec_connector_output_defaults_every_field_to_none(ECConnectorOutput, revision) -> None:
    obj = attempt("ECConnectorOutput()", ECConnectorOutput)
    for name in _names(revision):
        found = getattr(obj, name, "<missing>")
        if found is not None:
            fail(f"ECConnectorOutput().{name}: expected None (the default), found {found!r}")


def test_ec_connector_output_stores_the_objects_passed_in(ECConnectorOutput, revision) -> None:
    values = {name: _value(name, True) for name in _names(revision)}
    obj = attempt(f"ECConnectorOutput(**{values!r})", ECConnectorOutput, **values)
    for name, value in values.items():
        if getattr(obj, name, "<missing>") is not value:
            fail(
                f"ECConnectorOutput(**{values!r}).{name}: expected the object passed in, found "
                f"{getattr(obj, name, '<missing>')!r}"
            )
    positional = attempt("ECConnectorOutput(*values)", ECConnectorOutput, *values.values())
    for name, value in values.items():
        if getattr(positional, name, "<missing>") is not value:
            fail(
                f"ECConnectorOutput(*values).{name}: expected the object passed in at its position"
            )


def test_ec_connector_output_survives_pickling(ECConnectorOutput, revision) -> None:
    values = {name: _value(name, True) for name in _names(revision)}
    obj = attempt("ECConnectorOutput(...)", ECConnectorOutput, **values)
    copy = attempt(
        "pickle round trip of ECConnectorOutput", lambda: pickle.loads(pickle.dumps(obj))
    )
    if type(copy) is not ECConnectorOutput:
        fail(
            f"pickle round trip of ECConnectorOutput: expected ECConnectorOutput, found {type(copy).__qualname__}"
        )
    expect_same(
        fields_of(copy, _names(revision)),
        fields_of(obj, _names(revision)),
        "ECConnectorOutput after pickling",
    )


# --- is_empty (0.28.0 on) ---------------------------------------------------------------


def _truth_table(revision) -> list[tuple[dict, bool]]:
    spec = revision.type("ECConnectorOutput")
    counted = spec.counted_by_is_empty
    rows: list[tuple[dict, bool]] = [({}, True)]
    for name in spec.field_names:
        rows.append(({name: _value(name, False)}, True))
        rows.append(({name: _value(name, True)}, name not in counted))
    rows.append(({name: _value(name, True) for name in counted}, not counted))
    return rows


@pytest.mark.behaviour("ECConnectorOutput.is_empty")
def test_ec_connector_output_is_empty_truth_table(ECConnectorOutput, revision) -> None:
    """Each field alone, falsy then truthy: is_empty() is False exactly for a truthy counted field."""
    deviations = []
    for fields, expected in _truth_table(revision):
        where = f"ECConnectorOutput(**{fields!r}).is_empty()"
        obj = attempt(f"ECConnectorOutput(**{fields!r})", ECConnectorOutput, **fields)
        found = attempt(where, obj.is_empty)
        if not isinstance(found, bool) or found is not expected:
            deviations.append(
                f"{where}: expected {expected}, found {type(found).__name__} {found!r}"
            )
    check(deviations)


@pytest.mark.behaviour("ECConnectorOutput.is_empty")
def test_ec_connector_output_is_empty_with_none_sets(ECConnectorOutput) -> None:
    obj = attempt(
        "ECConnectorOutput(None, None)",
        ECConnectorOutput,
        finished_sending=None,
        finished_recving=None,
    )
    found = attempt(
        "ECConnectorOutput(finished_sending=None, finished_recving=None).is_empty()", obj.is_empty
    )
    if found is not True:
        fail(
            f"ECConnectorOutput(finished_sending=None, finished_recving=None).is_empty(): expected True, found {found!r}"
        )
