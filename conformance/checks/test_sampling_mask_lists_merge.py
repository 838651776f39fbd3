"""SamplingMaskLists.merge(chunks) (vLLM 0.28.0, 0.29.0): masks of consecutive chunks as one.

The token ids are concatenated in order and the offsets rebuilt (int64, from 0)
from each chunk's position lengths; the result is the backend's own
SamplingMaskLists with cu None.
"""

from __future__ import annotations

import pytest

from conformance.checks import _sampling_masks as masks
from conformance.checks._support import expect_same, expect_type, fields_of
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt

pytestmark = [
    pytest.mark.spec_type("ModelRunnerOutput"),
    pytest.mark.behaviour("SamplingMaskLists.merge"),
]

FIELDS = ("token_ids", "offsets", "cu_num_generated_tokens")


P = masks.POSITIONS
CHUNKINGS = {
    "one-chunk": [P],
    "two-chunks": [P[:2], P[2:]],
    "every-position": [[p] for p in P],
    "with-empty-chunk": [P[:3], [], P[3:]],
}


@pytest.mark.parametrize("chunking", list(CHUNKINGS))
def test_sampling_mask_lists_merge_concatenates_token_ids_and_rebuilds_offsets(
    SamplingMaskLists, chunking: str
) -> None:
    chunks = [masks.make(SamplingMaskLists, c) for c in CHUNKINGS[chunking]]
    where = (
        f"SamplingMaskLists.merge(<{chunking}: {[len(c) for c in CHUNKINGS[chunking]]} positions>)"
    )
    result = attempt(where, SamplingMaskLists.merge, chunks)
    expect_type(result, SamplingMaskLists, where)
    expected = Members(
        {
            "token_ids": masks.token_ids(P),
            "offsets": masks.offsets(P),
            "cu_num_generated_tokens": None,
        }
    )
    expect_same(fields_of(result, FIELDS), expected, where)


def test_sampling_mask_lists_merge_rebases_chunks_whose_offsets_do_not_start_at_zero(
    SamplingMaskLists,
) -> None:
    # A chunk cut from a bigger batch keeps its absolute offsets; merge uses only the lengths.
    second = SamplingMaskLists(masks.token_ids(P[2:]), masks.offsets(P)[2:], None)
    chunks = [masks.make(SamplingMaskLists, P[:2]), second]
    where = "SamplingMaskLists.merge([<2 positions>, <3 positions with offsets from 2>])"
    result = attempt(where, SamplingMaskLists.merge, chunks)
    expect_same(result.offsets, masks.offsets(P), f"{where}.offsets")
