"""The backend module as a whole: the seven spec names, PLACEHOLDER_TOKEN_ID and
EMPTY_MODEL_RUNNER_OUTPUT."""

from __future__ import annotations

import pytest

from conformance.backends.backend import Backend
from conformance.checks._skips import skip
from conformance.checks._support import expect_same, expect_type, fields_of, held_names
from conformance.oracle.failing import fail
from conformance.spec_names import SPEC_NAMES
from reference.revisions import reference_module

pytestmark = [pytest.mark.spec_type("module"), pytest.mark.behaviour("module.spec-names")]


def test_spec_names_are_classes(backend: Backend) -> None:
    if backend.import_fails is not None:
        # At a bump's target its own code did not import: nothing else is judged there.
        fail(f"{backend.module_name}: {backend.import_fails}")
    # The seven; the types their fields hold are their own surface checks' business.
    wrong = [
        f"{backend.module_name}.{name}: expected a class, found "
        f"{type(value).__name__ if value is not None else 'no such name'}"
        for name in SPEC_NAMES
        if not isinstance(value := backend.spec_type(name), type)
    ]
    if wrong:
        fail(*wrong)


def test_placeholder_token_id_is_minus_one(backend: Backend) -> None:
    if not hasattr(backend.module, "PLACEHOLDER_TOKEN_ID"):
        skip(
            "optional-name-absent",
            "PLACEHOLDER_TOKEN_ID: not exposed by the backend module (optional)",
        )
    value = backend.module.PLACEHOLDER_TOKEN_ID
    if type(value) is not int or value != -1:
        fail(
            f"{backend.module_name}.PLACEHOLDER_TOKEN_ID: expected the int -1, "
            f"found {type(value).__name__} {value!r}"
        )


def test_empty_model_runner_output_is_the_releases(backend: Backend, revision) -> None:
    # The scheduler hands it on for a step with no request: every field is read as the
    # release's own constant holds it (no request, the others their defaults).
    if not hasattr(backend.module, "EMPTY_MODEL_RUNNER_OUTPUT"):
        skip(
            "optional-name-absent",
            "EMPTY_MODEL_RUNNER_OUTPUT: not exposed by the backend module (optional)",
        )
    expected = getattr(reference_module(revision.name), "EMPTY_MODEL_RUNNER_OUTPUT", None)
    if expected is None:
        skip(
            "not-in-this-vllm",
            f"revision {revision.name}: its text shows no EMPTY_MODEL_RUNNER_OUTPUT to hold "
            "the backend's to",
        )
    where = f"{backend.module_name}.EMPTY_MODEL_RUNNER_OUTPUT"
    empty = backend.module.EMPTY_MODEL_RUNNER_OUTPUT
    expect_type(empty, backend.spec_type("ModelRunnerOutput"), where)
    # A field the backend's type lacks is its surface's failure, not this one's.
    own = held_names(empty)
    names = [n for n in revision.type("ModelRunnerOutput").field_names if n in own]
    found, want = fields_of(empty, names), fields_of(expected, names)
    for name in names:
        if _nothing(found[name]) and _nothing(want[name]):
            found[name] = want[name]  # read for no request: None and [] are alike
    expect_same(found, want, where)


def _nothing(value: object) -> bool:
    """None or an empty list, dict or set: what a step with no request holds."""
    return value is None or (type(value) in (list, dict, set) and not value)
