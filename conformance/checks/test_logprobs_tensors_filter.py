"""LogprobsTensors.filter(mask) (vLLM 0.14.0 on): the rows a boolean mask selects.

The result is the backend's own LogprobsTensors whose every tensor holds the
selected rows, in order, with its dtype and on its device (``tensor[mask]``).  The mask
is a tensor or, where vLLM's own ``RejectionSampler.parse_output`` passes it so (every
release with the first runner: 0.14.0 to 0.33.0), a numpy array.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conformance.checks._samples import LOGPROBS_TENSORS_FIELDS as FIELDS
from conformance.checks._samples import sample_tensors
from conformance.checks._skips import skip
from conformance.checks._support import expect_same, expect_type, fields_of, on
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("LogprobsTensors"),
    pytest.mark.behaviour("LogprobsTensors.filter"),
]

MASKS = {
    "none": [False, False, False, False, False],
    "all": [True, True, True, True, True],
    "first": [True, False, False, False, False],
    "last": [False, False, False, False, True],
    "alternate": [True, False, True, False, True],
}


@pytest.mark.parametrize(
    "ranks_dtype", [torch.int32, torch.int64], ids=["ranks-int32", "ranks-int64"]
)
@pytest.mark.parametrize("mask_kind", ["tensor", "numpy"])
@pytest.mark.parametrize("mask_name", list(MASKS))
def test_filter_keeps_the_rows_the_mask_selects(
    LogprobsTensors, revision, device: str, mask_name: str, mask_kind: str, ranks_dtype
) -> None:
    if mask_kind == "numpy" and not revision.first_runner:
        skip("not-in-this-vllm", f"revision {revision.name}: no caller filters with a numpy mask")
    ids, logprobs, ranks = sample_tensors(5, 3)
    tensors = tuple(on(device, t) for t in (ids, logprobs, ranks.to(ranks_dtype)))
    selects = torch.tensor(MASKS[mask_name])
    mask = on(device, selects) if mask_kind == "tensor" else np.array(MASKS[mask_name])
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors)
    where = (
        f"LogprobsTensors(<5 rows on {device}, ranks {ranks_dtype}>)"
        f".filter(<{mask_kind} mask {mask_name}>)"
    )
    result = attempt(where, obj.filter, mask)
    expect_type(result, LogprobsTensors, where)
    expected = Members(zip(FIELDS, (t[on(device, selects)] for t in tensors), strict=True))
    expect_same(fields_of(result, FIELDS), expected, where)
    _expect_no_request_boundaries(result, where)


def _expect_no_request_boundaries(result, where: str) -> None:
    """vLLM's filter builds its result of the three tensors alone: the fields later
    releases add after them (``cu_num_generated_tokens``, its tensor) keep their
    defaults, None, so that ``tolists()`` of the result takes one row per request."""
    defaults = getattr(type(result), "_field_defaults", {})
    extra = [n for n in getattr(type(result), "_fields", ()) if n not in FIELDS]
    kept = {n: getattr(result, n) for n in extra if getattr(result, n) is not defaults.get(n)}
    if kept:
        named = ", ".join(f"{n}={v!r}" for n, v in kept.items())
        fail(
            f"{where}: expected the fields after the three tensors to keep their defaults "
            f"(None), as vLLM's filter leaves them (its result is LogprobsTensors(ids, "
            f"logprobs, ranks)), found {named}"
        )


def test_filter_of_empty_tensors(LogprobsTensors) -> None:
    tensors = sample_tensors(0, 2)
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors)
    mask = torch.zeros(0, dtype=torch.bool)
    where = "LogprobsTensors(<0 rows>).filter(<empty mask>)"
    result = attempt(where, obj.filter, mask)
    expect_type(result, LogprobsTensors, where)
    expected = Members(zip(FIELDS, (t[mask] for t in tensors), strict=True))
    expect_same(fields_of(result, FIELDS), expected, where)


def test_filter_does_not_modify_the_original(LogprobsTensors) -> None:
    tensors = sample_tensors(5, 3)
    copies = tuple(t.clone() for t in tensors)
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors)
    attempt("filter(<mask alternate>)", obj.filter, torch.tensor(MASKS["alternate"]))
    expect_same(
        fields_of(obj, FIELDS),
        Members(zip(FIELDS, copies, strict=True)),
        "LogprobsTensors after filter(<mask>)",
    )
