"""AsyncModelRunnerOutput: an ABC whose only abstract method is get_output()."""

from __future__ import annotations

import pytest

from conformance.checks._support import attempt, fail
from conformance.surface import SurfaceCheck

pytestmark = pytest.mark.spec_type("AsyncModelRunnerOutput")


@pytest.fixture
def AsyncModelRunnerOutput(backend):
    return backend.spec_type("AsyncModelRunnerOutput")


def test_surface(surface_check: SurfaceCheck, AsyncModelRunnerOutput) -> None:
    found = surface_check.run(AsyncModelRunnerOutput)
    if found:
        fail(*found)


def test_subclass_implementing_get_output_works(AsyncModelRunnerOutput) -> None:
    sentinel = object()
    Done = type("Done", (AsyncModelRunnerOutput,), {"get_output": lambda self: sentinel})
    obj = attempt("a subclass implementing get_output()", Done)
    if obj.get_output() is not sentinel:
        fail("AsyncModelRunnerOutput: a subclass's get_output() must be the one called")


def test_subclass_without_get_output_cannot_be_instantiated(AsyncModelRunnerOutput) -> None:
    Incomplete = type("Incomplete", (AsyncModelRunnerOutput,), {})
    try:
        Incomplete()
    except TypeError:
        return
    except Exception as error:
        fail(
            f"AsyncModelRunnerOutput: instantiating a subclass without get_output() raised "
            f"{type(error).__name__}, expected TypeError"
        )
    fail(
        "AsyncModelRunnerOutput: a subclass without get_output() was instantiated; "
        "expected TypeError (get_output must be an @abstractmethod)"
    )
