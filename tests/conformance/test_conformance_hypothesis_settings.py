"""The checks' Hypothesis settings: the suite's profile by default, the user's when chosen."""

from __future__ import annotations

import re

import suite_runner

CHECK = "test_tolists_agrees_with_reference"


def _passing_examples(tmp_path, *args: str) -> int:
    run = suite_runner.subprocess_run(
        tmp_path, "--pyargs", "conformance", "--conformance-backend", "reference",
        "-k", CHECK, "--hypothesis-show-statistics", *args, report=False,
    )  # fmt: skip
    assert run.exit_code == 0, run.output[-2000:]
    [count] = re.findall(r"- (\d+) passing examples", run.output)
    return int(count)


def test_without_a_chosen_profile_the_suite_draws_its_own_40_examples(tmp_path) -> None:
    assert _passing_examples(tmp_path) == 40


def test_a_profile_the_user_chooses_applies_to_the_checks(tmp_path) -> None:
    (tmp_path / "conftest.py").write_text(
        "from hypothesis import settings\nsettings.register_profile('tiny', max_examples=3)\n"
    )
    # Health checks stay off under the user's profile: they would judge the suite's
    # fixtures and drawing speed, not the backend.
    assert _passing_examples(tmp_path, "--hypothesis-profile", "tiny") == 3
