"""What the tests of Model Runner V2's Triton kernel checks need: its release texts, and
Triton to run vLLM's own kernels under the interpreter (not a dependency of the project:
``pip install triton`` runs those here; a GPU day runs them for real)."""

from __future__ import annotations

import importlib.util

import pytest
from vllm_release_texts import RELEASES, SKIP_REASON

needs_mrv2_texts = pytest.mark.skipif(
    not (RELEASES / "producers-mrv2").is_dir(), reason=SKIP_REASON
)
needs_triton = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None,
    reason="Triton is not installed here (pip install triton runs its interpreter on CPU)",
)
