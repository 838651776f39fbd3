"""Argument checks shared by the reference operations.

Each helper raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind,
wrong value) with a message that names the argument, what was expected and what
was found, so a caller can fix the call without reading this package.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

import torch


def require_int(name: str, value: object, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int, rejecting bools, floats and out-of-range values."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def require_tensor(
    name: str,
    value: object,
    *,
    ndim: int,
    kind: str,
) -> torch.Tensor:
    """Check that ``value`` is a tensor of ``ndim`` dimensions and of dtype kind ``kind``.

    ``kind`` is ``"integer"`` or ``"floating"``.
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dim() != ndim:
        raise ValueError(
            f"{name} must be {ndim}-D, got shape {tuple(value.shape)} ({value.dim()}-D)"
        )
    if kind == "integer":
        ok = not value.dtype.is_floating_point and not value.dtype.is_complex
        ok = ok and value.dtype != torch.bool
    elif kind == "floating":
        ok = value.dtype.is_floating_point
    else:  # pragma: no cover - programming error in this package
        raise AssertionError(f"unknown dtype kind {kind!r}")
    if not ok:
        article = "an" if kind == "integer" else "a"
        raise TypeError(f"{name} must have {article} {kind} dtype, got {value.dtype}")
    return value


def require_list_of_int_lists(name: str, value: object) -> Sequence[Sequence[int]]:
    """Check the outer shape of a ``list[list[int]]`` argument (items are checked later)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of lists of ints, got {type(value).__name__}")
    for i, row in enumerate(value):
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
            raise TypeError(f"{name}[{i}] must be a list of ints, got {type(row).__name__} {row!r}")
    return value
