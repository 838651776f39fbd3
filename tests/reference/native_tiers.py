"""The tiers of ``unpad_sampled_token_ids`` (numpy until hot, then the C list builder),
installed on demand for the tests (``conftest.py``'s ``unpad_tier`` runs a test on each)."""

from __future__ import annotations

import shutil

import pytest
import torch

from reference import compiled_unpad, unpad_sampled_token_ids
from reference.background_build import HOT_CALLS, HotBuild

HAS_C_COMPILER = any(shutil.which(name) for name in ("cc", "gcc", "clang"))
UNPAD_TIERS = ["numpy", "C list builder"]


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
