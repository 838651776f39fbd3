"""How a check fails: one precise line per deviation, and backend code called so that an
exception it raises becomes a failure naming the call (no traceback into the suite)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

import pytest

T = TypeVar("T")


def fail(*deviations: str) -> NoReturn:
    """Fail the check with one line per deviation (no traceback into the suite)."""
    pytest.fail("\n".join(name_copies_not_arrived(d) for d in deviations), pytrace=False)


#: The simulated runtime's placeholders of a copy read before it landed
#: (:func:`conformance.producers.simulated_device.sentinel_fill`): integers just above
#: int32's or int64's minimum, floats near a quarter of the float's lowest.
_NOT_ARRIVED = re.compile(
    r"-(?:21474836[0-4]\d|92233720368547757\d\d|92233720368547758\d\d)\b"
    r"|-[0-9.]+e\+(?:37|38|307|308)\b"
)


def name_copies_not_arrived(deviation: str) -> str:
    """``deviation``, saying what a placeholder value in it is: a copy not yet arrived."""
    if _NOT_ARRIVED.search(deviation) is None:
        return deviation
    return deviation + (
        " (that value is the simulated runtime's placeholder of a copy not yet arrived: "
        "read before the wait for it; see producer.async_output:waits-for-device)"
    )


def check(deviations: Sequence[str]) -> None:
    if deviations:
        fail(*deviations)


def attempt(where: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call backend code; an exception becomes a failure naming the call."""
    try:
        return function(*args, **kwargs)
    except Exception as error:
        fail(f"{where}: raised {type(error).__name__}: {error}")
