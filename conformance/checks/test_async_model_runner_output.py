"""AsyncModelRunnerOutput: an ABC whose abstract methods are those the revision lists."""

from __future__ import annotations

import pytest

from conformance.oracle.failing import attempt, check, fail
from conformance.oracle.surface import SurfaceCheck

pytestmark = [
    pytest.mark.spec_type("AsyncModelRunnerOutput"),
    pytest.mark.behaviour("AsyncModelRunnerOutput.abc"),
]


@pytest.fixture
def abstract_methods(revision) -> tuple[str, ...]:
    return revision.types["AsyncModelRunnerOutput"].abstract_methods


@pytest.mark.behaviour("AsyncModelRunnerOutput.surface")
def test_surface(surface_check: SurfaceCheck, AsyncModelRunnerOutput) -> None:
    check(surface_check.run(AsyncModelRunnerOutput))


def test_subclass_implementing_get_output_works(AsyncModelRunnerOutput, abstract_methods) -> None:
    sentinel = object()
    methods = {name: (lambda self: None) for name in abstract_methods}
    methods["get_output"] = lambda self: sentinel
    Done = type("Done", (AsyncModelRunnerOutput,), methods)
    obj = attempt(f"a subclass implementing {', '.join(abstract_methods)}", Done)
    if obj.get_output() is not sentinel:
        fail("AsyncModelRunnerOutput: a subclass's get_output() must be the one called")


def test_subclass_without_get_output_cannot_be_instantiated(
    AsyncModelRunnerOutput, abstract_methods
) -> None:
    others = {name: (lambda self: None) for name in abstract_methods if name != "get_output"}
    Incomplete = type("Incomplete", (AsyncModelRunnerOutput,), others)
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
