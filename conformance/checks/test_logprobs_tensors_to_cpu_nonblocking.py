"""LogprobsTensors.to_cpu_nonblocking(): ``self`` on CPU; elsewhere a LogprobsTensors of
CPU tensors with the same dtypes and, once the device is synchronised, the same values.
"""

from __future__ import annotations

import pytest
import torch

from conformance.backends.devices import synchronize
from conformance.checks._samples import LOGPROBS_TENSORS_FIELDS as FIELDS
from conformance.checks._samples import sample_tensors
from conformance.checks._support import expect_type, on
from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("LogprobsTensors"),
    pytest.mark.behaviour("LogprobsTensors.to_cpu_nonblocking"),
]


@pytest.mark.parametrize("num_rows", [0, 1, 4])
def test_to_cpu_nonblocking_returns_self_on_cpu(LogprobsTensors, num_rows: int) -> None:
    obj = attempt("LogprobsTensors(...)", LogprobsTensors, *sample_tensors(num_rows, 2))
    result = attempt("LogprobsTensors(<cpu>).to_cpu_nonblocking()", obj.to_cpu_nonblocking)
    if result is not obj:
        fail(
            "LogprobsTensors(<cpu>).to_cpu_nonblocking(): expected the object itself (spec: "
            f"'return self' on CPU), found a different {type(result).__name__}"
        )


@pytest.mark.parametrize("num_rows", [0, 1, 4])
def test_to_cpu_nonblocking_round_trips_values_dtypes_and_device(
    LogprobsTensors, accelerator: str, num_rows: int
) -> None:
    host = sample_tensors(num_rows, 3)
    for ranks_dtype in (torch.int32, torch.int64):
        tensors = tuple(on(accelerator, t) for t in (*host[:2], host[2].to(ranks_dtype)))
        obj = attempt(f"LogprobsTensors(<{accelerator}>)", LogprobsTensors, *tensors)
        where = f"LogprobsTensors(<{accelerator}, ranks {ranks_dtype}>).to_cpu_nonblocking()"
        result = attempt(where, obj.to_cpu_nonblocking)
        synchronize(accelerator)
        expect_type(result, LogprobsTensors, where)
        for name, source in zip(FIELDS, tensors, strict=True):
            found = getattr(result, name, None)
            if not isinstance(found, torch.Tensor) or found.device.type != "cpu":
                fail(
                    f"{where}.{name}: expected a CPU tensor, found {getattr(found, 'device', found)}"
                )
            if found.dtype != source.dtype:
                fail(
                    f"{where}.{name}: expected dtype {source.dtype} (unchanged), found {found.dtype}"
                )
            if not torch.equal(found, source.cpu()):
                fail(
                    f"{where}.{name}: expected the device tensor's values after synchronising, "
                    "found other values"
                )
