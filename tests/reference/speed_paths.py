"""Helpers for the tests of the reference's two paths (pure Python, and the C extension
of ``reference_speedups`` built at install): whether the extension is here, the
unpadding's path set on demand (``conftest.py``'s ``unpad_tier`` runs a test on
each), the per-row mask every unpadding is held against, and the torch ops a call
dispatches (:class:`DispatchedOps`)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import reference_speedups


def _extension() -> ModuleType | None:
    try:
        from reference_speedups import _speedups
    except ImportError:
        return None
    return _speedups


#: The extension built at install, or None (installed where no C compiler was).
EXTENSION = _extension()
UNPAD_TIERS = ["numpy", "C extension"]


def per_row_mask(sampled: torch.Tensor, vocab_size: int | None = None) -> list[list[int]]:
    """vLLM's unpadding, row by row: a boolean mask, then ``row[mask].tolist()``."""
    rows = []
    for row in sampled.to(torch.int64):
        mask = row != -1
        if vocab_size is not None:
            mask &= row < vocab_size
        rows.append(row[mask].tolist())
    return rows


def unpad_path_on(tier: str) -> None:
    """The reference's unpadding set to ``tier``: the pure Python path, or the
    extension (skipped where it was not built)."""
    if tier == "C extension" and EXTENSION is None:
        pytest.skip("the C extension of reference_speedups was not built at install")
    reference_speedups._EXT = EXTENSION if tier == "C extension" else None


class DispatchedOps(TorchDispatchMode):
    """Within its with-block, every aten op torch dispatches, with its arguments: what
    a call queues on a device (kernels, copies) shows here; host reads that are no op
    (``tolist()``, ``numpy()``, ``data_ptr()``) do not."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, tuple[Any, ...]]] = []

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        self.calls.append((func, args))
        return func(*args, **(kwargs or {}))

    @property
    def names(self) -> list[str]:
        """The ops' names in call order (``aten::copy_``...)."""
        return [func._schema.name for func, _ in self.calls]
