"""SamplingMaskLists.to_nested_list() (vLLM 0.28.0 on): one Python list of token ids per position.

Position i is ``token_ids[offsets[i]:offsets[i + 1]]`` as Python ints; from 0.30.0
on, masks without offsets (a single position) give ``[token_ids]``.
"""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checks import _sampling_masks as masks
from conformance.checks._support import expect_same
from conformance.oracle.failing import attempt

pytestmark = [
    pytest.mark.spec_type("ModelRunnerOutput"),
    pytest.mark.behaviour("SamplingMaskLists.to_nested_list"),
]


CASES: dict[str, list[list[int]]] = {
    "five-positions": masks.POSITIONS,
    "one-position": [[50001, 50002, 50003]],
    "empty-positions": [[], []],
    "no-positions": [],
}


@pytest.mark.parametrize("case", list(CASES))
def test_sampling_mask_lists_to_nested_list_gives_the_token_ids_of_each_position(
    SamplingMaskLists, case: str
) -> None:
    positions = CASES[case]
    obj = attempt("SamplingMaskLists(...)", masks.make, SamplingMaskLists, positions)
    where = f"{masks.describe(positions, None)}.to_nested_list()"
    result = attempt(where, obj.to_nested_list)
    # Python lists of Python ints: expect_same compares exact types at every level.
    expect_same(result, [list(p) for p in positions], where)


@pytest.mark.parametrize("cu", [None, masks.CU], ids=["without-cu", "with-cu"])
def test_sampling_mask_lists_to_nested_list_does_not_depend_on_cu(SamplingMaskLists, cu) -> None:
    obj = attempt("SamplingMaskLists(...)", masks.make, SamplingMaskLists, masks.POSITIONS, cu)
    where = f"{masks.describe(masks.POSITIONS, cu)}.to_nested_list()"
    expect_same(attempt(where, obj.to_nested_list), masks.POSITIONS, where)


@pytest.mark.behaviour("SamplingMaskLists.to_nested_list:without-offsets")
@pytest.mark.parametrize("ids", [[50001, 50002], []], ids=["two-ids", "no-ids"])
def test_sampling_mask_lists_to_nested_list_without_offsets_is_one_list(
    SamplingMaskLists, ids
) -> None:
    obj = attempt("SamplingMaskLists(token_ids)", SamplingMaskLists, np.array(ids, dtype=np.int32))
    where = f"SamplingMaskLists(token_ids={ids}, offsets=None).to_nested_list()"
    expect_same(attempt(where, obj.to_nested_list), [ids], where)
