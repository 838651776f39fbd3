"""LogprobsTensors.tolists(): the backend's LogprobsLists of Python lists of Python ints and
floats (not tuples, not numpy scalars) up to 2025.10; and, from 2025.10 on, the
``cu_num_generated_tokens`` argument passed through unchanged.  The numpy form of
0.11.1 on has its own module.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given

from conformance.checks._samples import lists_fields, sample_tensors
from conformance.checks._simulated import tolists_on_simulated_device
from conformance.checks._support import expect_same, expect_type, fields_of, on
from conformance.oracle import strategies
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt

pytestmark = [
    pytest.mark.spec_type("LogprobsTensors"),
    pytest.mark.behaviour("LogprobsTensors.tolists:python-lists"),
]
CU_ARGUMENT = pytest.mark.behaviour("LogprobsTensors.tolists:cu-argument")


def _expected(revision, tensors: tuple[torch.Tensor, ...]) -> Members:
    ids, logprobs, ranks = (t.cpu().tolist() for t in tensors)
    names = lists_fields(revision)
    values = (ids, logprobs, ranks, None)[: len(names)]
    return Members(zip(names, values, strict=True))


SHAPES = [(0, 1), (0, 3), (1, 1), (1, 4), (5, 3)]


@pytest.mark.parametrize(("num_rows", "width"), SHAPES, ids=[f"{n}x{w}" for n, w in SHAPES])
def test_tolists_gives_python_lists_of_python_numbers(
    LogprobsTensors, LogprobsLists, revision, device: str, num_rows: int, width: int
) -> None:
    tensors = tuple(on(device, t) for t in sample_tensors(num_rows, width))
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors)
    where = f"LogprobsTensors(<{num_rows}x{width} on {device}>).tolists()"
    result = attempt(where, obj.tolists)
    expect_type(result, LogprobsLists, where)
    names = lists_fields(revision)
    expect_same(fields_of(result, names), _expected(revision, tensors), where)


@pytest.mark.parametrize(("num_rows", "width"), [(0, 3), (4, 3)], ids=["0x3", "4x3"])
def test_tolists_of_device_tensors_gives_their_values_on_the_host(
    LogprobsTensors, LogprobsLists, backend, revision, num_rows: int, width: int
) -> None:
    tensors = sample_tensors(num_rows, width)
    result, where = tolists_on_simulated_device(backend, LogprobsTensors, tensors)
    expect_type(result, LogprobsLists, where)
    names = lists_fields(revision)
    expect_same(fields_of(result, names), _expected(revision, tensors), where)


@given(case=strategies.logprobs_tensors_cases())
def test_tolists_agrees_with_reference(
    LogprobsTensors, LogprobsLists, reference_backend, revision, case
) -> None:
    tensors = (case["logprob_token_ids"], case["logprobs"], case["selected_token_ranks"])
    cu = case["cu"] if revision.has("LogprobsTensors.tolists:cu-argument") else None
    arguments = () if cu is None else (cu,)
    expected = reference_backend.module.LogprobsTensors(*tensors).tolists(*arguments)
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors)
    where = (
        f"LogprobsTensors(<{list(tensors[0].shape)}, ranks {tensors[2].dtype}>).tolists({cu or ''})"
    )
    found = attempt(where, obj.tolists, *arguments)
    expect_type(found, LogprobsLists, where)
    names = lists_fields(revision)
    expect_same(fields_of(found, names), fields_of(expected, names), where)


@CU_ARGUMENT
@pytest.mark.parametrize(
    "cu", [[0, 1, 3], [0, 0, 0, 3], []], ids=["two-requests", "empty-requests", "empty"]
)
def test_tolists_passes_cu_through_unchanged(LogprobsTensors, device: str, cu) -> None:
    obj = attempt(
        "LogprobsTensors(...)", LogprobsTensors, *(on(device, t) for t in sample_tensors(3, 2))
    )
    result = attempt(f"tolists({cu})", obj.tolists, cu)
    expect_same(
        result.cu_num_generated_tokens,
        cu,
        f"LogprobsTensors(<on {device}>).tolists({cu}).cu_num_generated_tokens",
    )


@CU_ARGUMENT
def test_tolists_accepts_cu_by_keyword(LogprobsTensors) -> None:
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *sample_tensors(2, 2))
    result = attempt(
        "tolists(cu_num_generated_tokens=[0, 2])", obj.tolists, cu_num_generated_tokens=[0, 2]
    )
    expect_same(result.cu_num_generated_tokens, [0, 2], "tolists(cu_num_generated_tokens=[0, 2])")
