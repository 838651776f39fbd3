"""Helpers for the tests of the reference's compiled tiers (the rank count, the
unpadding's list builder): whether they can build here, the unpadding's tiers
installed on demand (``conftest.py``'s ``unpad_tier`` runs a test on each), and
the per-row mask every unpadding is held against."""

from __future__ import annotations

import pytest
import torch

from reference import compiled_unpad, native_build, unpad_sampled_token_ids
from reference.background_build import HOT_CALLS, HotBuild


def _has_c_compiler() -> bool:
    try:
        native_build.compiler()
    except RuntimeError:
        return False
    return True


#: Whether the C tiers can build here: the compiler they look for ($CC, cc, gcc, clang).
HAS_C_COMPILER = _has_c_compiler()
UNPAD_TIERS = ["numpy", "C list builder"]


def per_row_mask(sampled: torch.Tensor, vocab_size: int | None = None) -> list[list[int]]:
    """vLLM's unpadding, row by row: a boolean mask, then ``row[mask].tolist()``."""
    rows = []
    for row in sampled.to(torch.int64):
        mask = row != -1
        if vocab_size is not None:
            mask &= row < vocab_size
        rows.append(row[mask].tolist())
    return rows


def unpad_build_on(tier: str) -> HotBuild:
    """A fresh build of the unpadding's list builder, installed as ``tier`` needs it:
    not started (numpy), or built now (the C list builder; skipped without a C
    compiler, a failure where one is present but the build fails)."""
    build = compiled_unpad._fresh_build()
    compiled_unpad._BUILD = build
    if tier == "C list builder":
        if not HAS_C_COMPILER:
            pytest.skip("the C list builder needs a C compiler (cc, gcc or clang)")
        heat = torch.full((4, compiled_unpad.MIN_ELEMENTS), 5, dtype=torch.int32)
        for _ in range(HOT_CALLS):
            unpad_sampled_token_ids(heat)
        assert compiled_unpad.settle(timeout=60) == "compiled (C list builder)"
    return build
