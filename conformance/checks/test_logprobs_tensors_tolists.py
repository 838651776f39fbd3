"""LogprobsTensors.tolists(cu_num_generated_tokens=None): the backend's LogprobsLists of
Python lists of Python ints and floats (not tuples, not numpy scalars), cu passed through.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given

from conformance import strategies
from conformance.checks._samples import sample_tensors
from conformance.checks._support import attempt, expect_same, expect_type, fields_of, on
from conformance.invariants import Members

# Python lists from tolists(); later vLLM releases return numpy arrays.
pytestmark = [pytest.mark.spec_type("LogprobsTensors"), pytest.mark.spec_revisions("2025.10")]

LIST_FIELDS = ("logprob_token_ids", "logprobs", "sampled_token_ranks", "cu_num_generated_tokens")


@pytest.fixture
def LogprobsTensors(backend):
    return backend.spec_type("LogprobsTensors")


@pytest.fixture
def LogprobsLists(backend):
    return backend.spec_type("LogprobsLists")


def _expected(tensors: tuple[torch.Tensor, ...], cu: list[int] | None) -> dict:
    ids, logprobs, ranks = (t.cpu() for t in tensors)
    return Members(
        zip(LIST_FIELDS, (ids.tolist(), logprobs.tolist(), ranks.tolist(), cu), strict=True)
    )


SHAPES = [(0, 1), (0, 3), (1, 1), (1, 4), (5, 3)]


@pytest.mark.parametrize("cu", [None, "cu"], ids=["without-cu", "with-cu"])
@pytest.mark.parametrize(("num_rows", "width"), SHAPES, ids=[f"{n}x{w}" for n, w in SHAPES])
def test_tolists_gives_python_lists_of_python_numbers(
    LogprobsTensors, LogprobsLists, device: str, num_rows: int, width: int, cu
) -> None:
    tensors = tuple(on(device, t) for t in sample_tensors(num_rows, width))
    cu_value = [0, num_rows] if cu else None
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors)
    where = f"LogprobsTensors(<{num_rows}x{width} on {device}>).tolists({cu_value})"
    result = attempt(where, obj.tolists, cu_value) if cu else attempt(where, obj.tolists)
    expect_type(result, LogprobsLists, where)
    expect_same(fields_of(result, LIST_FIELDS), _expected(tensors, cu_value), where)


def test_tolists_passes_cu_through_unchanged(LogprobsTensors) -> None:
    cu = [0, 1, 3]
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *sample_tensors(3, 2))
    result = attempt("tolists(cu)", obj.tolists, cu)
    expect_same(
        result.cu_num_generated_tokens, cu, "LogprobsTensors.tolists(cu).cu_num_generated_tokens"
    )


def test_tolists_accepts_cu_by_keyword(LogprobsTensors) -> None:
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *sample_tensors(2, 2))
    result = attempt(
        "tolists(cu_num_generated_tokens=[0, 2])", obj.tolists, cu_num_generated_tokens=[0, 2]
    )
    expect_same(result.cu_num_generated_tokens, [0, 2], "tolists(cu_num_generated_tokens=[0, 2])")


@strategies.SETTINGS
@given(case=strategies.logprobs_tensors_cases())
def test_tolists_agrees_with_reference(
    LogprobsTensors, LogprobsLists, reference_backend, case
) -> None:
    tensors = (case["logprob_token_ids"], case["logprobs"], case["selected_token_ranks"])
    expected = reference_backend.module.LogprobsTensors(*tensors).tolists(case["cu"])
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors)
    where = f"LogprobsTensors(<{list(tensors[0].shape)}, ranks {tensors[2].dtype}>).tolists({case['cu']})"
    found = attempt(where, obj.tolists, case["cu"])
    expect_type(found, LogprobsLists, where)
    expect_same(fields_of(found, LIST_FIELDS), fields_of(expected, LIST_FIELDS), where)
