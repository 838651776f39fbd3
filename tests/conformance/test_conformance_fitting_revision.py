"""A module of one release's types judged at another: the header names the one it fits."""

from __future__ import annotations

import pytest

from conformance.run.fitting_revision import differing_types, fitting_revision_line
from reference.revisions import known_revisions, reference_module, revision


@pytest.mark.parametrize("name", known_revisions())
def test_each_revisions_reference_fits_its_own_revision(name: str) -> None:
    assert differing_types(reference_module(name), revision(name)) == 0
    assert fitting_revision_line(reference_module(name), revision(name)) is None


def test_types_of_0_12_0_judged_at_0_34_0_name_0_12_0_and_the_way_on() -> None:
    line = fitting_revision_line(reference_module("0.12.0"), revision("0.34.0"))
    assert line is not None
    assert line.startswith("the module's types have the fields of revision 0.12.0, not those of ")
    assert line.endswith(
        "--revision 0.12.0 judges them by their own, --bump-to 0.34.0 from there lists what "
        "moving breaks"
    )


def test_a_module_fitting_no_revision_better_gets_no_line() -> None:
    import types

    empty = types.ModuleType("nothing_of_vllms")
    # No revision's types are all there: none is guessed.
    assert fitting_revision_line(empty, revision("0.34.0")) is None
