"""LogprobsTensors.cat(tensors, cu_num_generated_tokens=None) (vLLM 0.27.0 on).

Several inputs: one LogprobsTensors whose tensors are the inputs' rows
concatenated in order, dtypes kept, with ``cu_num_generated_tokens`` set to the
argument.  One input: returned as it is (the same object) without a cu, or a copy
of it with its ``cu_num_generated_tokens`` replaced.  The result is the backend's
own LogprobsTensors.
"""

from __future__ import annotations

import pytest
import torch

from conformance.checks._samples import LOGPROBS_TENSORS_FIELDS as FIELDS
from conformance.checks._support import expect_same, expect_type, fields_of, on
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("LogprobsTensors"),
    pytest.mark.behaviour("LogprobsTensors.cat"),
]


def _chunk(first_row: int, num_rows: int, width: int = 3, ranks_dtype=torch.int64):
    """Rows first_row..first_row + num_rows of one long batch, so concatenations are checkable."""
    rows = torch.arange(first_row, first_row + num_rows)
    ids = (70000 + rows[:, None] * width + torch.arange(width)).to(torch.int32)
    logprobs = -(rows[:, None] * width + torch.arange(width)).to(torch.float32) / 4
    ranks = (rows + 1).to(ranks_dtype)
    return ids, logprobs, ranks


def _inputs(LogprobsTensors, device: str, sizes, ranks_dtype=torch.int64):
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    chunks = [
        tuple(on(device, t) for t in _chunk(s, n, ranks_dtype=ranks_dtype))
        for s, n in zip(starts, sizes, strict=True)
    ]
    objects = [attempt("LogprobsTensors(...)", LogprobsTensors, *c) for c in chunks]
    whole = tuple(on(device, t) for t in _chunk(0, sum(sizes), ranks_dtype=ranks_dtype))
    return objects, whole


SIZES = {"two": [2, 3], "three": [1, 0, 4], "empty-first": [0, 2], "all-empty": [0, 0]}


@pytest.mark.parametrize(
    "ranks_dtype", [torch.int32, torch.int64], ids=["ranks-int32", "ranks-int64"]
)
@pytest.mark.parametrize("sizes", list(SIZES))
def test_cat_concatenates_the_rows_in_order_and_sets_cu(
    LogprobsTensors, device: str, sizes: str, ranks_dtype
) -> None:
    objects, whole = _inputs(LogprobsTensors, device, SIZES[sizes], ranks_dtype)
    cu = [0, *(sum(SIZES[sizes][: i + 1]) for i in range(len(SIZES[sizes])))]
    where = f"LogprobsTensors.cat(<{len(objects)} inputs of {SIZES[sizes]} rows on {device}>, {cu})"
    result = attempt(where, LogprobsTensors.cat, objects, cu)
    expect_type(result, LogprobsTensors, where)
    expect_same(fields_of(result, FIELDS), Members(zip(FIELDS, whole, strict=True)), where)
    expect_same(result.cu_num_generated_tokens, cu, f"{where}.cu_num_generated_tokens")


def test_cat_of_several_inputs_without_cu_has_cu_none(LogprobsTensors) -> None:
    objects, whole = _inputs(LogprobsTensors, "cpu", [2, 1])
    where = "LogprobsTensors.cat(<2 inputs>)"
    result = attempt(where, LogprobsTensors.cat, objects)
    expect_type(result, LogprobsTensors, where)
    expect_same(fields_of(result, FIELDS), Members(zip(FIELDS, whole, strict=True)), where)
    if result.cu_num_generated_tokens is not None:
        fail(
            f"{where}.cu_num_generated_tokens: expected None, found {result.cu_num_generated_tokens!r}"
        )


def test_cat_of_one_input_without_cu_returns_it_as_it_is(LogprobsTensors) -> None:
    (only,), _ = _inputs(LogprobsTensors, "cpu", [3])
    where = "LogprobsTensors.cat([x])"
    result = attempt(where, LogprobsTensors.cat, [only])
    if result is not only:
        fail(
            f"{where}: expected x itself (one input without cu is returned as it is), found another {type(result).__name__}"
        )


def test_cat_of_one_input_with_cu_replaces_its_cu(LogprobsTensors) -> None:
    (only,), whole = _inputs(LogprobsTensors, "cpu", [3])
    cu = [0, 1, 3]
    where = f"LogprobsTensors.cat([x], {cu})"
    result = attempt(where, LogprobsTensors.cat, [only], cu)
    expect_type(result, LogprobsTensors, where)
    expect_same(fields_of(result, FIELDS), Members(zip(FIELDS, whole, strict=True)), where)
    expect_same(result.cu_num_generated_tokens, cu, f"{where}.cu_num_generated_tokens")
    if only.cu_num_generated_tokens is not None:
        fail(
            f"{where}: x.cu_num_generated_tokens: expected None (x is left as it was), found "
            f"{only.cu_num_generated_tokens!r}"
        )


def test_cat_does_not_modify_its_inputs(LogprobsTensors) -> None:
    objects, _ = _inputs(LogprobsTensors, "cpu", [2, 3])
    before = [fields_of(o, FIELDS) for o in objects]
    before = [Members({k: v.clone() for k, v in b.items()}) for b in before]
    attempt("LogprobsTensors.cat(<2 inputs>, [0, 2, 5])", LogprobsTensors.cat, objects, [0, 2, 5])
    for i, (obj, expected) in enumerate(zip(objects, before, strict=True)):
        expect_same(fields_of(obj, FIELDS), expected, f"input {i} after LogprobsTensors.cat")
        if obj.cu_num_generated_tokens is not None:
            fail(
                f"input {i} after LogprobsTensors.cat(..., [0, 2, 5]).cu_num_generated_tokens: "
                f"expected None (unchanged), found {obj.cu_num_generated_tokens!r}"
            )
