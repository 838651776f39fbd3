"""The test suite's own plumbing: the strategies module and the hypothesis profiles."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import reference_strategies
from hypothesis import settings

import reference


def test_strategies_module_is_the_file_beside_this_test():
    assert sys.modules["reference_strategies"] is reference_strategies
    assert Path(reference_strategies.__file__) == Path(__file__).with_name(
        "reference_strategies.py"
    )


def test_the_package_under_test_is_not_shadowed_by_the_test_directory():
    # A tests/reference/__init__.py would make pytest import these modules as
    # reference.test_*, colliding with the package under test.
    assert not Path(__file__).with_name("__init__.py").exists()
    assert Path(reference.__file__).parent.name == "reference"
    assert Path(reference.__file__).parent != Path(__file__).parent
    assert hasattr(reference, "gather_logprobs")


@pytest.mark.skipif(
    os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci", reason="another profile was selected"
)
def test_default_hypothesis_profile_is_the_stable_ci_one():
    current = settings()
    assert current.derandomize is True
    assert current.deadline is None
    assert current.database is None


@pytest.mark.parametrize("profile", ["ci", "dev", "thorough"])
def test_hypothesis_profiles_are_registered_without_deadline(profile):
    assert settings.get_profile(profile).deadline is None
