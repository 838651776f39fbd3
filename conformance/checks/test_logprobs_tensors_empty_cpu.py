"""LogprobsTensors.empty_cpu(num_positions, num_tokens_per_position): a static method giving
CPU tensors int32 [n, k], float32 [n, k] and int32 [n].
"""

from __future__ import annotations

import pytest
import torch

from conformance.checks._samples import LOGPROBS_TENSORS_FIELDS as FIELDS
from conformance.checks._support import expect_type
from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("LogprobsTensors"),
    pytest.mark.behaviour("LogprobsTensors.empty_cpu"),
]

SHAPES = [(0, 0), (0, 3), (1, 1), (3, 0), (5, 21)]


@pytest.mark.parametrize(("n", "k"), SHAPES, ids=[f"{n}x{k}" for n, k in SHAPES])
def test_empty_cpu_dtypes_and_shapes(LogprobsTensors, n: int, k: int) -> None:
    where = f"LogprobsTensors.empty_cpu({n}, {k})"
    result = attempt(where, LogprobsTensors.empty_cpu, n, k)
    expect_type(result, LogprobsTensors, where)
    expected = {
        "logprob_token_ids": (torch.int32, (n, k)),
        "logprobs": (torch.float32, (n, k)),
        "selected_token_ranks": (torch.int32, (n,)),
    }
    wrong = []
    for name in FIELDS:
        tensor = getattr(result, name, None)
        dtype, shape = expected[name]
        if not isinstance(tensor, torch.Tensor):
            wrong.append(f"{where}.{name}: expected a tensor, found {type(tensor).__name__}")
            continue
        found = (tensor.dtype, tuple(tensor.shape), tensor.device.type)
        if found != (dtype, shape, "cpu"):
            wrong.append(
                f"{where}.{name}: expected {dtype} of shape {list(shape)} on cpu, "
                f"found {found[0]} of shape {list(found[1])} on {found[2]}"
            )
    if wrong:
        fail(*wrong)


def test_empty_cpu_by_keyword(LogprobsTensors) -> None:
    where = "LogprobsTensors.empty_cpu(num_positions=2, num_tokens_per_position=3)"
    result = attempt(where, LogprobsTensors.empty_cpu, num_positions=2, num_tokens_per_position=3)
    if tuple(result.logprob_token_ids.shape) != (2, 3):
        fail(
            f"{where}.logprob_token_ids: expected shape [2, 3], found {list(result.logprob_token_ids.shape)}"
        )


def test_empty_cpu_gives_independent_tensors(LogprobsTensors) -> None:
    a = attempt("empty_cpu(2, 2)", LogprobsTensors.empty_cpu, 2, 2)
    b = attempt("empty_cpu(2, 2)", LogprobsTensors.empty_cpu, 2, 2)
    a.logprob_token_ids.fill_(5)
    b.logprob_token_ids.fill_(6)
    if int(a.logprob_token_ids[0, 0]) != 5:
        fail(
            "LogprobsTensors.empty_cpu: expected fresh tensors per call, found storage shared "
            "between calls"
        )
