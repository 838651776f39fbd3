"""A structural diff for the checks: where does one object differ from another?

Values, exact types at every level, tensor dtypes and devices, numpy dtypes and
shapes, NamedTuple and dataclass fields by name.  The checks compare a backend's
objects with the expected ones (or with the reference's) through it, so every
difference is named by its path (``LogprobsLists.cu_num_generated_tokens[2]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch


class Members(dict):
    """An object's members by name: differences are reported as ``where.name``."""


def differences_between(expected: Any, found: Any, where: str) -> list[str]:
    """Where ``found`` differs from ``expected``: values, exact types, tensor dtypes/devices."""
    if as_the_backend_sees(type(expected)) is not as_the_backend_sees(type(found)):
        return [f"{where}: expected {kind_of(expected)}, found {kind_of(found)}"]
    if isinstance(expected, np.ndarray):
        if expected.dtype != found.dtype or expected.shape != found.shape:
            return [
                f"{where}: expected a numpy array {array_text(expected)}, found {array_text(found)}"
            ]
        if not np.array_equal(expected, found, equal_nan=expected.dtype.kind == "f"):
            return [
                f"{where}: array values differ: expected {short(expected.tolist())}, found {short(found.tolist())}"
            ]
        return []
    if isinstance(expected, torch.Tensor):
        if expected.dtype != found.dtype or expected.device != found.device:
            return [
                f"{where}: expected {expected.dtype} on {expected.device}, found "
                f"{found.dtype} on {found.device}"
            ]
        if expected.shape != found.shape or not torch.equal(expected.cpu(), found.cpu()):
            return [
                f"{where}: tensor values differ: expected {tensor_text(expected.cpu())}, "
                f"found {tensor_text(found.cpu())}"
            ]
        return []
    if isinstance(expected, Mapping):
        if list(expected) != list(found):
            return [f"{where}: expected keys {list(expected)}, found {list(found)}"]
        name = "{where}.{key}" if isinstance(expected, Members) else "{where}[{key!r}]"
        return [
            d
            for key in expected
            for d in differences_between(
                expected[key], found[key], name.format(where=where, key=key)
            )
        ]
    if isinstance(expected, (list, tuple)) and not hasattr(expected, "__dataclass_fields__"):
        if len(expected) != len(found):
            return [f"{where}: expected {len(expected)} items, found {len(found)}"]
        names = getattr(type(expected), "_fields", None)
        return [
            d
            for i, (a, b) in enumerate(zip(expected, found, strict=True))
            for d in differences_between(a, b, f"{where}.{names[i]}" if names else f"{where}[{i}]")
        ]
    fields = getattr(expected, "__dataclass_fields__", None)
    if fields:
        return [
            with_misspelt(d, found, name)
            for name in fields
            for d in differences_between(
                getattr(expected, name), getattr(found, name), f"{where}.{name}"
            )
        ]
    state = _plain_state(expected)
    if state is not None:
        # A plain class without an ``__eq__`` of its own compares by identity: its
        # members are what a round trip must keep (once each: an object may hold itself).
        pair = (id(expected), id(found))
        if pair in _COMPARING:
            return []
        _COMPARING.add(pair)
        try:
            return differences_between(state, _plain_state(found), where)
        finally:
            _COMPARING.discard(pair)
    if expected != found:
        return [f"{where}: expected {short(expected)}, found {short(found)}"]
    return []


#: ``object.__getstate__`` (Python 3.11 on): a class whose own differs says its state.
_OBJECTS_GETSTATE = getattr(object, "__getstate__", None)
#: The pairs of plain objects being compared now (a cycle compares each pair once).
_COMPARING: set[tuple[int, int]] = set()


def _plain_state(value: object) -> Members | None:
    """The members of an instance of a class comparing by identity (no ``__eq__`` of
    its own): what its ``__getstate__`` hands pickle where it has its own, else its
    ``__dict__`` and ``__slots__``; None for any other value."""
    cls = type(value)
    if cls.__eq__ is not object.__eq__ or cls.__module__ == "builtins":
        return None
    if getattr(cls, "__getstate__", _OBJECTS_GETSTATE) is not _OBJECTS_GETSTATE:
        state = value.__getstate__()  # type: ignore[attr-defined]
        parts = state if isinstance(state, tuple) else (state,)
        if all(isinstance(part, dict) or part is None for part in parts):
            return Members(sorted(kv for part in parts if part for kv in part.items()))
        return Members({"__getstate__()": state})
    members = dict(getattr(value, "__dict__", {}))
    for klass in cls.__mro__:
        slots = getattr(klass, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(value, name):
                members[name] = getattr(value, name)
    return Members(sorted(members.items()))


def array_text(array: np.ndarray) -> str:
    """``int32 of shape [1, 2]: [[70002, 302]]``: a shape never reads as values."""
    return f"{array.dtype} of shape {list(array.shape)}: {short(array.tolist())}"


def tensor_text(tensor: torch.Tensor) -> str:
    """``shape [2, 3]: [[...], ...]`` of a tensor already on the host."""
    return f"shape {list(tensor.shape)}: {short(tensor.tolist())}"


def with_misspelt(difference: str, found: Any, field: str) -> str:
    """``difference`` of the dataclass field ``field`` of ``found``, and where ``found``
    holds an attribute that is no field yet is spelt nearly as this one
    (``output.sampled_token_id = rows``), that attribute: the value was most likely set
    there."""
    import difflib

    fields = getattr(found, "__dataclass_fields__", None)
    if not fields:
        return difference
    own = getattr(found, "__dict__", {})
    # Spelt nearly so: a letter or two off, not another name built on it
    # (``sampled_token_ids_cpu``, a host copy the output keeps).
    extra = [
        name
        for name in own
        if name not in fields and not name.startswith("_") and abs(len(name) - len(field)) <= 2
    ]
    close = difflib.get_close_matches(field, extra, n=1, cutoff=0.8)
    if not close:
        return difference
    return (
        f"{difference} (it holds {close[0]}, which is no field of "
        f"{type(found).__name__}: {field} misspelt?)"
    )


def as_the_backend_sees(cls: type) -> type:
    """``cls``, or ``torch.Tensor`` for the simulated device's tensors (the host copies
    it hands a backend) and ``numpy.ndarray`` for its arrays (``.numpy()`` of one): to
    the backend, and in what it returns, they are torch's and numpy's."""
    if cls.__module__.startswith("conformance."):
        if issubclass(cls, torch.Tensor):
            return torch.Tensor
        if issubclass(cls, np.ndarray):
            return np.ndarray
    return cls


def kind_of(value: object) -> str:
    """``type value`` for messages: ``tuple (1, 2)``, ``numpy.int64 3``, ``None``."""
    if value is None:
        return "None"
    cls = as_the_backend_sees(type(value))
    if cls is np.ndarray and type(value) is not np.ndarray:
        value = value.view(np.ndarray)  # type: ignore[attr-defined]  # a simulated one
    module = "" if cls.__module__ == "builtins" else f"{cls.__module__.partition('.')[0]}."
    return f"{module}{cls.__qualname__} {short(value)}"


def short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
