"""LogprobsTensors.cu_num_generated_tokens_tensor (vLLM 0.29.0 on): device-side boundaries.

The field defaults to None.  ``tolists()`` without an argument takes the
boundaries from the tensor first (as a list of Python ints), (the fallback to the list
field is the behaviour ``LogprobsTensors.cu_num_generated_tokens``); an explicit
argument wins over both.  ``to_cpu_nonblocking()`` on an accelerator copies the
tensor to the host with the other tensors.
"""

from __future__ import annotations

import pytest
import torch

from conformance.backends.devices import synchronize
from conformance.checks._samples import sample_tensors
from conformance.checks._support import expect_same, expect_type, on
from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("LogprobsTensors"),
    pytest.mark.behaviour("LogprobsTensors.cu_num_generated_tokens_tensor"),
]

CU_TENSOR_VALUES = [0, 2, 2, 3]
CU_LIST = [0, 1, 3]


def _make(LogprobsTensors, device: str, cu_list, cu_values, dtype=torch.int32):
    tensors = tuple(on(device, t) for t in sample_tensors(3, 2))
    cu_tensor = None if cu_values is None else on(device, torch.tensor(cu_values, dtype=dtype))
    return attempt(
        "LogprobsTensors(..., cu_num_generated_tokens, cu_num_generated_tokens_tensor)",
        LogprobsTensors,
        *tensors,
        cu_num_generated_tokens=cu_list,
        cu_num_generated_tokens_tensor=cu_tensor,
    )


def test_cu_num_generated_tokens_tensor_defaults_to_none(LogprobsTensors) -> None:
    obj = attempt("LogprobsTensors(ids, logprobs, ranks)", LogprobsTensors, *sample_tensors(3, 2))
    found = getattr(obj, "cu_num_generated_tokens_tensor", "<missing>")
    if found is not None:
        fail(
            "LogprobsTensors(ids, logprobs, ranks).cu_num_generated_tokens_tensor: expected "
            f"None (the field's default), found {found!r}"
        )


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=["int32", "int64"])
@pytest.mark.parametrize("cu_list", [None, CU_LIST], ids=["list-None", "list-set"])
def test_tolists_without_argument_uses_the_tensor_first(
    LogprobsTensors, device: str, cu_list, dtype
) -> None:
    obj = _make(LogprobsTensors, device, cu_list, CU_TENSOR_VALUES, dtype)
    where = (
        f"LogprobsTensors(<on {device}>, cu_num_generated_tokens={cu_list}, "
        f"cu_num_generated_tokens_tensor=tensor({CU_TENSOR_VALUES}, {dtype})).tolists()"
    )
    result = attempt(where, obj.tolists)
    # A list of Python ints, as tensor.tolist() gives: expect_same checks the exact types.
    expect_same(
        result.cu_num_generated_tokens, CU_TENSOR_VALUES, f"{where}.cu_num_generated_tokens"
    )


@pytest.mark.parametrize("cu_list", [None, CU_LIST], ids=["list-None", "list-set"])
def test_tolists_argument_wins_over_the_tensor(LogprobsTensors, cu_list) -> None:
    obj = _make(LogprobsTensors, "cpu", cu_list, CU_TENSOR_VALUES)
    where = (
        f"LogprobsTensors(cu_num_generated_tokens={cu_list}, "
        f"cu_num_generated_tokens_tensor=tensor({CU_TENSOR_VALUES})).tolists([0, 3])"
    )
    result = attempt(where, obj.tolists, [0, 3])
    expect_same(result.cu_num_generated_tokens, [0, 3], f"{where}.cu_num_generated_tokens")


def test_to_cpu_nonblocking_copies_the_tensor_to_the_host(
    LogprobsTensors, accelerator: str
) -> None:
    obj = _make(LogprobsTensors, accelerator, None, CU_TENSOR_VALUES)
    where = f"LogprobsTensors(<{accelerator}>, cu tensor).to_cpu_nonblocking()"
    result = attempt(where, obj.to_cpu_nonblocking)
    synchronize(accelerator)
    expect_type(result, LogprobsTensors, where)
    found = result.cu_num_generated_tokens_tensor
    if not isinstance(found, torch.Tensor) or found.device.type != "cpu":
        fail(
            f"{where}.cu_num_generated_tokens_tensor: expected a CPU tensor, found "
            f"{getattr(found, 'device', found)!r}"
        )
    expect_same(
        found,
        torch.tensor(CU_TENSOR_VALUES, dtype=torch.int32),
        f"{where}.cu_num_generated_tokens_tensor",
    )
    lists = attempt(f"{where}.tolists()", result.tolists)
    expect_same(
        lists.cu_num_generated_tokens,
        CU_TENSOR_VALUES,
        f"{where}.tolists().cu_num_generated_tokens",
    )
