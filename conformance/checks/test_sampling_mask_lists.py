"""SamplingMaskLists (vLLM 0.28.0 on), held by ModelRunnerOutput.sampling_masks: its surface.

Its methods have a module each: ``test_sampling_mask_lists_slice_request.py``,
``_to_nested_list.py`` and ``_merge.py``.
"""

from __future__ import annotations

import pytest

from conformance.oracle.failing import check
from conformance.oracle.surface import SurfaceCheck

pytestmark = [
    pytest.mark.spec_type("ModelRunnerOutput"),
    pytest.mark.behaviour("SamplingMaskLists.surface"),
]


@pytest.mark.surface_of("SamplingMaskLists")
def test_sampling_mask_lists_surface(surface_check: SurfaceCheck, backend) -> None:
    check(surface_check.run(backend.spec_type("SamplingMaskLists")))
