"""LogprobsTensors.cu_num_generated_tokens (vLLM 0.16.0 on): the boundaries ride along.

The field defaults to None; ``tolists()`` without an argument puts the field's
list into the result, an explicit argument (even an empty list) wins over it, and
``to_cpu_nonblocking()`` on an accelerator carries the list into the CPU copy.
"""

from __future__ import annotations

import pytest

from conformance.backends.devices import synchronize
from conformance.checks._samples import sample_tensors
from conformance.checks._support import expect_same, expect_type, on
from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("LogprobsTensors"),
    pytest.mark.behaviour("LogprobsTensors.cu_num_generated_tokens"),
]

CU = [0, 1, 3]


def test_cu_num_generated_tokens_defaults_to_none(LogprobsTensors) -> None:
    obj = attempt("LogprobsTensors(ids, logprobs, ranks)", LogprobsTensors, *sample_tensors(3, 2))
    found = getattr(obj, "cu_num_generated_tokens", "<missing>")
    if found is not None:
        fail(
            "LogprobsTensors(ids, logprobs, ranks).cu_num_generated_tokens: expected None "
            f"(the field's default), found {found!r}"
        )


def test_cu_num_generated_tokens_stores_the_list_passed_in(LogprobsTensors) -> None:
    cu = list(CU)
    obj = attempt(
        "LogprobsTensors(..., cu_num_generated_tokens=cu)",
        LogprobsTensors,
        *sample_tensors(3, 2),
        cu_num_generated_tokens=cu,
    )
    if obj.cu_num_generated_tokens is not cu:
        fail(
            "LogprobsTensors(..., cu_num_generated_tokens=cu).cu_num_generated_tokens: "
            f"expected the list passed in, found {obj.cu_num_generated_tokens!r}"
        )


@pytest.mark.parametrize(
    "cu", [None, CU, [0, 3]], ids=["field-None", "field-3-reqs", "field-1-req"]
)
def test_tolists_without_argument_falls_back_to_the_field(LogprobsTensors, device: str, cu) -> None:
    tensors = tuple(on(device, t) for t in sample_tensors(3, 2))
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *tensors, cu)
    where = f"LogprobsTensors(<3 rows on {device}>, cu_num_generated_tokens={cu}).tolists()"
    result = attempt(where, obj.tolists)
    expect_same(result.cu_num_generated_tokens, cu, f"{where}.cu_num_generated_tokens")


@pytest.mark.parametrize("field", [None, CU], ids=["field-None", "field-set"])
@pytest.mark.parametrize(
    "argument", [[0, 3], [0, 2, 2, 3], []], ids=["one-req", "three-reqs", "empty"]
)
def test_tolists_argument_wins_over_the_field(LogprobsTensors, field, argument) -> None:
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *sample_tensors(3, 2), field)
    where = f"LogprobsTensors(<3 rows>, cu_num_generated_tokens={field}).tolists({argument})"
    result = attempt(where, obj.tolists, argument)
    expect_same(result.cu_num_generated_tokens, argument, f"{where}.cu_num_generated_tokens")


def test_to_cpu_nonblocking_keeps_cu_num_generated_tokens(
    LogprobsTensors, accelerator: str
) -> None:
    tensors = tuple(on(accelerator, t) for t in sample_tensors(3, 2))
    obj = attempt(f"LogprobsTensors(<{accelerator}>, cu)", LogprobsTensors, *tensors, list(CU))
    where = f"LogprobsTensors(<{accelerator}>, cu_num_generated_tokens={CU}).to_cpu_nonblocking()"
    result = attempt(where, obj.to_cpu_nonblocking)
    synchronize(accelerator)
    expect_type(result, LogprobsTensors, where)
    expect_same(result.cu_num_generated_tokens, CU, f"{where}.cu_num_generated_tokens")
    lists = attempt(f"{where}.tolists()", result.tolists)
    expect_same(lists.cu_num_generated_tokens, CU, f"{where}.tolists().cu_num_generated_tokens")
