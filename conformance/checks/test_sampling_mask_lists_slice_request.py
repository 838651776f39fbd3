"""SamplingMaskLists.slice_request(req_idx, num_positions): the masks of one request.

Three variants, by release:

* ``offsets-always`` (0.28.0, 0.29.0): positions from ``cu[req_idx]`` (``req_idx``
  without cu), their token ids and their offsets rebased to 0, cu None;
* ``one-position`` (0.30.0, 0.31.0): ``slice_request(req_idx, 1)`` gives the token
  ids of position ``req_idx`` (cu is not consulted), offsets None;
* ``offsets-for-several-positions`` (0.32.0 on): positions from ``cu[req_idx]`` (or
  ``req_idx``); one position gives its token ids with offsets None, several give
  their token ids with offsets rebased to 0.
"""

from __future__ import annotations

import pytest

from conformance.checks import _sampling_masks as masks
from conformance.checks._support import expect_same, expect_type, fields_of
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt

pytestmark = pytest.mark.spec_type("ModelRunnerOutput")

FIELDS = ("token_ids", "offsets", "cu_num_generated_tokens")


def _expected(start: int, num_positions: int, *, offsets_for_one: bool) -> Members:
    chosen = masks.POSITIONS[start : start + num_positions]
    offsets = masks.offsets(chosen) if (num_positions != 1 or offsets_for_one) else None
    return Members(
        {"token_ids": masks.token_ids(chosen), "offsets": offsets, "cu_num_generated_tokens": None}
    )


def _check(SamplingMaskLists, cu, req_idx: int, num_positions: int, expected: Members) -> None:
    obj = attempt("SamplingMaskLists(...)", masks.make, SamplingMaskLists, masks.POSITIONS, cu)
    where = f"{masks.describe(masks.POSITIONS, cu)}.slice_request({req_idx}, {num_positions})"
    result = attempt(where, obj.slice_request, req_idx, num_positions)
    expect_type(result, SamplingMaskLists, where)
    expect_same(fields_of(result, FIELDS), expected, where)


def _cases(cu):
    first = (lambda r: r) if cu is None else (lambda r: cu[r])
    last_req = len(masks.POSITIONS) if cu is None else len(cu) - 1
    return [(r, n) for r in range(last_req) for n in range(1, len(masks.POSITIONS) - first(r) + 1)]


def _ids(cases):
    return [f"req{r}-n{n}" for r, n in cases]


# --- 0.28.0, 0.29.0 -----------------------------------------------------------------------

ALWAYS = "SamplingMaskLists.slice_request:offsets-always"


@pytest.mark.behaviour(ALWAYS)
@pytest.mark.parametrize(("req_idx", "num_positions"), _cases(None), ids=_ids(_cases(None)))
def test_sampling_mask_lists_slice_request_without_cu_starts_at_position_req_idx(
    SamplingMaskLists, req_idx: int, num_positions: int
) -> None:
    expected = _expected(req_idx, num_positions, offsets_for_one=True)
    _check(SamplingMaskLists, None, req_idx, num_positions, expected)


@pytest.mark.behaviour(ALWAYS)
@pytest.mark.parametrize(("req_idx", "num_positions"), _cases(masks.CU), ids=_ids(_cases(masks.CU)))
def test_sampling_mask_lists_slice_request_with_cu_starts_at_cu_of_req_idx(
    SamplingMaskLists, req_idx: int, num_positions: int
) -> None:
    expected = _expected(masks.CU[req_idx], num_positions, offsets_for_one=True)
    _check(SamplingMaskLists, masks.CU, req_idx, num_positions, expected)


# --- 0.30.0, 0.31.0 -----------------------------------------------------------------------

ONE = "SamplingMaskLists.slice_request:one-position"


@pytest.mark.behaviour(ONE)
@pytest.mark.parametrize("cu", [None, masks.CU], ids=["without-cu", "cu-ignored"])
@pytest.mark.parametrize("req_idx", range(len(masks.POSITIONS)))
def test_sampling_mask_lists_slice_request_of_one_position_gives_its_token_ids(
    SamplingMaskLists, req_idx: int, cu
) -> None:
    # One position per request: req_idx is the position whatever the cu says.
    _check(SamplingMaskLists, cu, req_idx, 1, _expected(req_idx, 1, offsets_for_one=False))


# --- 0.32.0 on ----------------------------------------------------------------------------

SEVERAL = "SamplingMaskLists.slice_request:offsets-for-several-positions"


@pytest.mark.behaviour(SEVERAL)
@pytest.mark.parametrize(("req_idx", "num_positions"), _cases(None), ids=_ids(_cases(None)))
def test_sampling_mask_lists_slice_request_without_cu_gives_offsets_only_for_several_positions(
    SamplingMaskLists, req_idx: int, num_positions: int
) -> None:
    expected = _expected(req_idx, num_positions, offsets_for_one=False)
    _check(SamplingMaskLists, None, req_idx, num_positions, expected)


@pytest.mark.behaviour(SEVERAL)
@pytest.mark.parametrize(("req_idx", "num_positions"), _cases(masks.CU), ids=_ids(_cases(masks.CU)))
def test_sampling_mask_lists_slice_request_with_cu_gives_offsets_only_for_several_positions(
    SamplingMaskLists, req_idx: int, num_positions: int
) -> None:
    expected = _expected(masks.CU[req_idx], num_positions, offsets_for_one=False)
    _check(SamplingMaskLists, masks.CU, req_idx, num_positions, expected)


@pytest.mark.behaviour(SEVERAL)
def test_sampling_mask_lists_slice_request_does_not_modify_the_original(SamplingMaskLists) -> None:
    obj = masks.make(SamplingMaskLists, masks.POSITIONS, list(masks.CU))
    attempt("slice_request(0, 2)", obj.slice_request, 0, 2)
    expected = Members(
        {
            "token_ids": masks.token_ids(masks.POSITIONS),
            "offsets": masks.offsets(masks.POSITIONS),
            "cu_num_generated_tokens": masks.CU,
        }
    )
    expect_same(fields_of(obj, FIELDS), expected, "SamplingMaskLists after slice_request(0, 2)")
