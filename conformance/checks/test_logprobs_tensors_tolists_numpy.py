"""LogprobsTensors.tolists() as vLLM 0.11.1 on writes it: numpy arrays, not Python lists.

Each row field of the result is a numpy array with the tensor's dtype, shape and
values (``tensor.cpu().numpy()``), whatever device the tensors are on; the result
is the backend's own LogprobsLists.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given

from conformance.checks._samples import sample_tensors
from conformance.checks._simulated import tolists_on_simulated_device
from conformance.checks._support import expect_same, expect_type, fields_of, on
from conformance.oracle import strategies
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt

pytestmark = [
    pytest.mark.spec_type("LogprobsTensors"),
    pytest.mark.behaviour("LogprobsTensors.tolists:numpy-arrays"),
]

ROW_FIELDS = ("logprob_token_ids", "logprobs", "sampled_token_ranks")


def _arrays(tensors: tuple[torch.Tensor, ...]) -> Members:
    """What the release computes: each tensor as a host numpy array of its own dtype."""
    return Members(zip(ROW_FIELDS, (np.asarray(t.cpu().numpy()) for t in tensors), strict=True))


SHAPES = [(0, 1), (0, 3), (1, 1), (1, 4), (5, 3)]


@pytest.mark.parametrize(
    "ranks_dtype", [torch.int32, torch.int64], ids=["ranks-int32", "ranks-int64"]
)
@pytest.mark.parametrize(("num_rows", "width"), SHAPES, ids=[f"{n}x{w}" for n, w in SHAPES])
def test_tolists_gives_numpy_arrays_with_the_tensors_dtypes_shapes_and_values(
    LogprobsTensors, LogprobsLists, device: str, num_rows: int, width: int, ranks_dtype
) -> None:
    ids, logprobs, ranks = sample_tensors(num_rows, width)
    tensors = tuple(on(device, t) for t in (ids, logprobs, ranks.to(ranks_dtype)))
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors)
    where = f"LogprobsTensors(<{num_rows}x{width}, ranks {ranks_dtype} on {device}>).tolists()"
    result = attempt(where, obj.tolists)
    expect_type(result, LogprobsLists, where)
    expect_same(fields_of(result, ROW_FIELDS), _arrays(tensors), where)


@pytest.mark.parametrize(("num_rows", "width"), [(0, 3), (4, 3)], ids=["0x3", "4x3"])
def test_tolists_of_device_tensors_gives_host_arrays(
    LogprobsTensors, LogprobsLists, backend, num_rows: int, width: int
) -> None:
    tensors = sample_tensors(num_rows, width)
    result, where = tolists_on_simulated_device(backend, LogprobsTensors, tensors)
    expect_type(result, LogprobsLists, where)
    expect_same(fields_of(result, ROW_FIELDS), _arrays(tensors), where)


def test_tolists_with_cu_argument_gives_numpy_arrays_too(LogprobsTensors, LogprobsLists) -> None:
    tensors = sample_tensors(3, 2)
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors)
    where = "LogprobsTensors(<3x2>).tolists([0, 1, 3])"
    result = attempt(where, obj.tolists, [0, 1, 3])
    expect_type(result, LogprobsLists, where)
    expect_same(fields_of(result, ROW_FIELDS), _arrays(tensors), where)


@given(case=strategies.logprobs_tensors_cases())
def test_tolists_agrees_with_reference(
    LogprobsTensors, LogprobsLists, reference_backend, case
) -> None:
    tensors = (case["logprob_token_ids"], case["logprobs"], case["selected_token_ranks"])
    expected = reference_backend.module.LogprobsTensors(*tensors).tolists()
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors)
    where = f"LogprobsTensors(<{list(tensors[0].shape)}, ranks {tensors[2].dtype}>).tolists()"
    found = attempt(where, obj.tolists)
    expect_type(found, LogprobsLists, where)
    expect_same(fields_of(found, ROW_FIELDS), fields_of(expected, ROW_FIELDS), where)
