"""The backend module as a whole: the seven spec names, and PLACEHOLDER_TOKEN_ID."""

from __future__ import annotations

import pytest

from conformance.backends.backend import Backend
from conformance.checks._skips import skip
from conformance.oracle.failing import fail
from conformance.spec_names import SPEC_NAMES

pytestmark = [pytest.mark.spec_type("module"), pytest.mark.behaviour("module.spec-names")]


def test_spec_names_are_classes(backend: Backend) -> None:
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
