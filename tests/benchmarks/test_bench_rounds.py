"""asv's rounds: two by default, as the environment says (the device day's one)."""

from __future__ import annotations

import pytest

from benchmarks.common import ROUNDS_ENV_VAR, asv_rounds


@pytest.mark.parametrize(
    ("stated", "rounds"), [(None, 2), ("1", 1), ("3", 3), ("0", 2), ("two", 2), (" ", 2)]
)
def test_rounds_are_the_environments_whole_number_from_one(
    monkeypatch: pytest.MonkeyPatch, stated: str | None, rounds: int
) -> None:
    if stated is None:
        monkeypatch.delenv(ROUNDS_ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(ROUNDS_ENV_VAR, stated)
    assert asv_rounds(2) == rounds
