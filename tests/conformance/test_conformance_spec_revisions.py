"""Spec revisions as data: the registry, the 2025.10 description, revision-specific checks."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import conformance.checks
import reference
from conformance import spec
from conformance.backend import KNOWN_SPEC_REVISIONS, SPEC_NAMES
from conformance.plugin import revision_skip_reason
from conformance.surface import surface_checks


def test_registry_knows_2025_10_and_refuses_others() -> None:
    assert spec.known_revisions() == KNOWN_SPEC_REVISIONS == ("2025.10",)
    with pytest.raises(KeyError, match=r"unknown spec revision '2099\.01'; known: 2025\.10"):
        spec.revision("2099.01")


def test_2025_10_describes_the_seven_types_and_the_reference_matches_it() -> None:
    revision = spec.revision("2025.10")
    assert sorted(revision.types) == sorted(SPEC_NAMES)
    assert revision.constants == {"PLACEHOLDER_TOKEN_ID": -1}
    deviations = [
        d
        for type_spec in revision.types.values()
        for check in surface_checks(type_spec)
        for d in check.run(getattr(reference, type_spec.name))
    ]
    assert deviations == []


class _Node:
    def __init__(self, *revisions: str) -> None:
        self.marker = pytest.mark.spec_revisions(*revisions).mark if revisions else None

    def get_closest_marker(self, name: str):
        return self.marker if name == "spec_revisions" else None


def test_revision_specific_checks_skip_other_revisions() -> None:
    assert revision_skip_reason(_Node(), "2025.10") is None
    assert revision_skip_reason(_Node("2025.10"), "2025.10") is None
    assert revision_skip_reason(_Node("2025.10"), "2026.01") == (
        "written for spec revision(s) 2025.10; the backend targets 2026.01"
    )


def test_check_modules_name_only_known_revisions() -> None:
    for info in pkgutil.iter_modules(conformance.checks.__path__):
        if not info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"conformance.checks.{info.name}")
        marks = module.pytestmark if isinstance(module.pytestmark, list) else [module.pytestmark]
        names = {m.mark.name: m.mark.args for m in marks}
        assert names["spec_type"][0] in (*SPEC_NAMES, "module"), info.name
        assert set(names.get("spec_revisions", ())) <= set(KNOWN_SPEC_REVISIONS), info.name
