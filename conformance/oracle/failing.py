"""How a check fails: one precise line per deviation, and backend code called so that an
exception it raises becomes a failure naming the call (no traceback into the suite)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

import pytest

T = TypeVar("T")


def fail(*deviations: str) -> NoReturn:
    """Fail the check with one line per deviation (no traceback into the suite)."""
    pytest.fail("\n".join(deviations), pytrace=False)


def check(deviations: Sequence[str]) -> None:
    if deviations:
        fail(*deviations)


def attempt(where: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call backend code; an exception becomes a failure naming the call."""
    try:
        return function(*args, **kwargs)
    except Exception as error:
        fail(f"{where}: raised {type(error).__name__}: {error}")
