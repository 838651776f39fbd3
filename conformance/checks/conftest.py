"""Fixtures and parametrisation of the checks; visible to the suite's own check modules only.

``backend``
    the :class:`conformance.Backend` under test (session scope).  Select it with
    ``--conformance-backend`` / ``$OUTPUTS_BACKEND``, not by overriding this fixture:
    device parametrisation, the header and the report are built from that selection.
``revision``
    the :class:`~reference.revisions.model.SpecRevision` judged.
``reference_backend``
    the oracle of the differential checks: this project's reference of the same
    revision (session scope); the one fixture a backend may override in its
    ``conftest.py`` (e.g. to compare against a released vLLM).

``LogprobsLists``, ``ModelRunnerOutput``, ... (one per spec type, and per type the
spec types' fields hold)
    the backend's class of that name (None when it has none).

``device`` and ``accelerator`` are parameters, not fixtures: every check that
takes them runs once per torch device type (accelerator types only for
``accelerator``): the built-in types plus any other type the backend declares,
skipped where the backend does not declare the device or this machine has none.
``producer_device`` (through the ``step_device`` fixture) is where the async output
runs: each device type the backend declares for it, the first absent accelerator
simulated (``cuda-simulated``); ``pytest.mark.accelerator_only`` leaves out CPU.
A check module marked ``pytest.mark.producer(name)`` is skipped when the backend
declares no such producer.
``async_producer`` (``pooling_producer``) is the async output judged, an
:class:`~conformance.backends.backend.AsyncOutputProducer`: ``make_async_output``, and
with ``Backend.other_async_outputs`` a parameter over each of that kind (ids such as
``gpu-model-runner``, ``model-runner-v2``), so every record names the class it judged.
"""

from __future__ import annotations

import pytest

from conformance.backends import devices
from conformance.backends.backend import Backend
from conformance.checks._skips import skip
from conformance.oracle.failing import fail
from conformance.run.activation import current
from conformance.spec_names import SPEC_NAMES


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> Backend:
    """The backend under test, as --conformance-backend / $OUTPUTS_BACKEND selected it."""
    return current(request.config).backend


@pytest.fixture(scope="session")
def revision(request: pytest.FixtureRequest):
    """The spec revision judged (surface data and behaviours)."""
    return current(request.config).revision


@pytest.fixture(scope="session")
def reference_backend(request: pytest.FixtureRequest) -> Backend:
    """This project's reference of the judged revision: the oracle of the differential checks."""
    from conformance.backends.known import reference_backend as make

    return make(current(request.config).revision.name)


def _spec_type_fixture(name: str):
    @pytest.fixture(name=name)
    def spec_type(backend: Backend, revision):
        value = backend.spec_type(name)
        if value is None and name in revision.types and name not in backend.types_absent:
            # Each check using it fails saying so, not on calling None.
            return _absent(
                f"{backend.module_name}.{name}: no such name, and revision {revision.name}'s "
                f"types hold one: define {name} in the backend's module, or import vLLM's"
            )
        return value

    spec_type.__doc__ = (
        f"The backend's {name} (None when it has none; where the revision has one, a class "
        "that fails the check using it)."
    )
    return spec_type


def _absent(message: str) -> type:
    """A stand-in for a type the backend lacks: building it or reading from it fails
    the check with ``message``."""

    class Absent(type):
        def __call__(cls, *args: object, **kwargs: object) -> None:
            fail(message)

        def __getattr__(cls, attribute: str) -> None:
            if attribute.startswith("__"):
                raise AttributeError(attribute)
            fail(message)

    return Absent("Absent", (), {})


HELD_TYPES = (
    "ECConnectorOutput",
    "SamplingMaskLists",
    "RoutedExpertsTensors",
    "RoutedExpertsLists",
)
for _name in (*SPEC_NAMES, *HELD_TYPES):
    globals()[f"spec_type_{_name}"] = _spec_type_fixture(_name)


@pytest.fixture
def step_device(producer_device: str):
    """The device of the steps handed to the async output (a simulated runtime installed)."""
    from conformance.producers.runtime import step_device as entered

    with entered(producer_device) as device:
        yield device


@pytest.fixture
def async_producer(backend: Backend):
    """The backend's one sampling async output (parametrised when it declares several)."""
    found = backend.async_output_producers("sampling")
    if not found:
        skip("producer-not-declared", "producer make_async_output: not declared by the backend")
    return found[0]


@pytest.fixture
def pooling_producer(backend: Backend):
    """The backend's one pooling async output (parametrised when it declares several)."""
    found = backend.async_output_producers("pooling")
    if not found:
        skip("producer-not-declared", "producer pooling async output: not declared by the backend")
    return found[0]


def _parametrize_async_producers(metafunc: pytest.Metafunc, backend: Backend) -> None:
    for name, kind in (("async_producer", "sampling"), ("pooling_producer", "pooling")):
        if name not in metafunc.fixturenames:
            continue
        found = backend.async_output_producers(kind)
        # One producer keeps the fixture (and the node ids as they were); a pooling
        # check without a pooling producer is deselected (conformance.run.selection).
        if len(found) > 1 or kind == "pooling":
            metafunc.parametrize(name, found, ids=[p.label for p in found])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    run = current(metafunc.config)
    _parametrize_async_producers(metafunc, run.backend)
    if "producer_device" in metafunc.fixturenames:
        _parametrize_producer_devices(metafunc, run.backend)
    # Every device type is listed; which run is decided in conformance/run/selection.py.
    kinds = devices.candidate_devices(run.backend.devices)
    for name, candidates in (("device", kinds), ("accelerator", kinds[1:])):
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, list(candidates), ids=list(candidates))
    if "surface_check" in metafunc.fixturenames:
        from conformance.oracle.surface import surface_checks

        type_name = metafunc.definition.get_closest_marker("surface_of")
        name = type_name.args[0] if type_name else _spec_type(metafunc)
        type_spec = run.revision.type(name)
        checks = surface_checks(type_spec) if type_spec is not None else []
        metafunc.parametrize("surface_check", checks, ids=[c.id for c in checks])


def _parametrize_producer_devices(metafunc: pytest.Metafunc, backend: Backend) -> None:
    from conformance.producers.runtime import is_accelerator, producer_devices
    from conformance.run.selection import NO_ACCELERATOR

    found = [d.value for d in producer_devices(backend)]
    if metafunc.definition.get_closest_marker("accelerator_only"):
        found = [d for d in found if is_accelerator(d)]
    if found:
        metafunc.parametrize("producer_device", found, ids=found)
    else:  # one parameter, so the report says why the check did not run
        metafunc.parametrize("producer_device", [NO_ACCELERATOR], ids=["no-accelerator"])


def _spec_type(metafunc: pytest.Metafunc) -> str:
    marker = metafunc.definition.get_closest_marker("spec_type")
    assert marker is not None, f"{metafunc.definition.nodeid}: no spec_type marker"
    return str(marker.args[0])
