"""The checks' Hypothesis settings: the suite's profile by default, the user's when chosen.

The run's own conftest records the settings in effect when the checks ran (what any
version of Hypothesis reports the same way).
"""

from __future__ import annotations

import json

import suite_runner

RECORDER = """
import json
from hypothesis import settings

settings.register_profile("tiny", max_examples=3)


def pytest_sessionfinish(session):
    chosen = settings.default
    with open("settings.json", "w") as out:
        json.dump({"max_examples": chosen.max_examples, "derandomize": chosen.derandomize,
                   "deadline": chosen.deadline, "health_checks_off": len(chosen.suppress_health_check),
                   "multiple_bugs": chosen.report_multiple_bugs}, out)
"""


def _settings(tmp_path, *args: str, env: dict[str, str] | None = None) -> dict:
    (tmp_path / "conftest.py").write_text(RECORDER)
    run = suite_runner.subprocess_run(
        tmp_path, "--pyargs", "conformance", "--conformance-backend", "reference",
        "-k", "test_tolists_agrees_with_reference", *args, report=False, env=env,
    )  # fmt: skip
    assert run.exit_code == 0, run.output[-2000:]
    return json.loads((tmp_path / "settings.json").read_text())


def test_without_a_chosen_profile_the_checks_run_under_the_suites(tmp_path) -> None:
    found = _settings(tmp_path)
    assert found["max_examples"] == 40 and found["derandomize"] is True
    # One failure a check: its line names the input, not "2 distinct failures".
    assert found["multiple_bugs"] is False


def test_a_profile_hypothesis_picks_on_ci_machines_is_not_a_choice(tmp_path) -> None:
    # With $CI set Hypothesis loads its own "ci" profile (100 examples); the verdict
    # must not depend on the machine's environment.
    found = _settings(tmp_path, env={"CI": "true"})
    assert found["max_examples"] == 40 and found["derandomize"] is True


def test_a_profile_the_user_chooses_applies_to_the_checks(tmp_path) -> None:
    found = _settings(tmp_path, "--hypothesis-profile", "tiny")
    assert found["max_examples"] == 3
    # Health checks and the deadline stay off: they would judge the suite's own
    # fixtures and drawing speed, not the backend.
    assert found["deadline"] is None and found["health_checks_off"] > 0
    assert found["multiple_bugs"] is False
