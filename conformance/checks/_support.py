"""Small helpers the checks share: failing with a precise message, calling backend code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import torch

from conformance.backends.backend import Backend
from conformance.backends.devices import to_device
from conformance.checks._skips import skip
from conformance.oracle.compare import Members, differences_between
from conformance.oracle.failing import check, fail, failure_of


def spec_class(backend: Backend, name: str) -> Any:
    """The backend's class for spec name ``name``; fails when it is not a class."""
    value = backend.spec_type(name)
    if not isinstance(value, type):
        fail(f"{name}: expected a class, found {type(value).__name__} {value!r}")
    return value


def producer(backend: Backend, name: str) -> Callable[..., Any]:
    """The backend's producer ``name``; the check is skipped when it declares none."""
    function = getattr(backend, name)
    if function is None:
        skip("producer-not-declared", f"producer {name}: not declared by the backend")
    return function


def producer_named(backend: Backend, async_producer: Any) -> str:
    """How messages name an async output producer: ``make_async_output``, or the label
    of another declared async output (``model-runner-v2``)."""
    if async_producer.make is backend.make_async_output:
        return "make_async_output"
    return str(async_producer.label)


def held_names(obj: Any) -> list[str]:
    """The fields ``obj``'s type holds: a dataclass's, else what its instance keeps (its
    ``__dict__``, or the ``__slots__`` of its classes that it has set)."""
    fields = getattr(type(obj), "__dataclass_fields__", None)
    if fields:
        return list(fields)
    names = list(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in names and name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                names.append(name)
    return names


def fields_of(obj: Any, names: Sequence[str]) -> Members:
    """``{name: obj.name}``, to compare two implementations' objects member by member."""
    return Members({name: getattr(obj, name, "<missing>") for name in names})


def expect_same(found: Any, expected: Any, where: str) -> None:
    """Fail unless ``found`` equals ``expected`` with the same exact types at every level."""
    check(differences_between(expected, found, where)[:5])


def expect_type(obj: Any, cls: Any, where: str) -> None:
    if type(obj) is not cls:
        name = getattr(cls, "__name__", repr(cls))
        fail(
            f"{where}: expected an instance of the backend's {name}, found "
            f"{type(obj).__module__}.{type(obj).__qualname__}"
        )


def on(device: str, tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` moved to ``device`` and the copy finished."""
    return to_device(device, tensor)


def fail_read_after_the_next_step(stale: str, read_alone: Callable[[], object]) -> NoReturn:
    """Fail a step read after the next step's async output was made (async scheduling
    runs a step ahead) with what was wrong, ``stale``: host memory shared with the next
    step where ``read_alone`` (the same step made and read by itself) passes, else the
    wrong value itself, which no sharing explains."""
    if failure_of(read_alone) is not None:
        fail(stale)
    fail(
        "host memory shared with the next step, whose async output was made before this "
        "one was read (async scheduling runs a step ahead; vLLM copies each step into "
        f"memory of its own): {stale}"
    )
