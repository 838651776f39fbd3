"""LogprobsTensors.to_cpu_nonblocking(): ``self`` on CPU; elsewhere a LogprobsTensors of
CPU tensors with the same dtypes and, once the device is synchronised, the same values,
``cu_num_generated_tokens`` as it was and ``cu_num_generated_tokens_tensor`` on the host.

vLLM calls it on device tensors only, so its device path is judged on every machine: on
a simulated runtime of the backend's first accelerator (cuda where it declares none),
where no such device is present too.
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


@pytest.mark.parametrize(
    "ranks_dtype", [torch.int32, torch.int64], ids=["ranks-int32", "ranks-int64"]
)
@pytest.mark.parametrize("num_rows", [0, 3])
def test_to_cpu_nonblocking_of_device_tensors_copies_every_field(
    LogprobsTensors, backend, revision, num_rows: int, ranks_dtype
) -> None:
    from conformance.producers.simulated_device import SimulatedRuntime, installed

    kind = next((d for d in backend.devices if d != "cpu"), "cuda")
    fields = revision.type("LogprobsTensors").field_names
    ids, logprobs, ranks = sample_tensors(num_rows, 3)
    ranks = ranks.to(ranks_dtype)
    host = {"logprob_token_ids": ids, "logprobs": logprobs, "selected_token_ranks": ranks}
    cu = list(range(num_rows + 1))
    with installed(SimulatedRuntime(kind)) as runtime:
        given: dict[str, object] = {n: runtime.device_tensor(t, n) for n, t in host.items()}
        if "cu_num_generated_tokens" in fields:
            given["cu_num_generated_tokens"] = cu
        if "cu_num_generated_tokens_tensor" in fields:
            cu_host = torch.tensor(cu, dtype=torch.int32)
            host["cu_num_generated_tokens_tensor"] = cu_host
            given["cu_num_generated_tokens_tensor"] = runtime.device_tensor(cu_host, "cu")
        obj = attempt(f"LogprobsTensors(<{kind}>)", LogprobsTensors, **given)
        where = (
            f"LogprobsTensors(<{num_rows} rows on a simulated {kind}, ranks {ranks_dtype}>)"
            ".to_cpu_nonblocking()"
        )
        result = attempt(where, obj.to_cpu_nonblocking)
        runtime.synchronize()
        expect_type(result, LogprobsTensors, where)
        for name, values in host.items():
            found = getattr(result, name, None)
            if not isinstance(found, torch.Tensor) or found.device.type != "cpu":
                shown = getattr(found, "device", found)
                fail(f"{where}.{name}: expected a CPU tensor, found {shown}")
            if found.dtype != values.dtype:
                fail(
                    f"{where}.{name}: expected dtype {values.dtype} (unchanged), found {found.dtype}"
                )
            if not torch.equal(found.as_subclass(torch.Tensor), values):
                fail(f"{where}.{name}: expected the device tensor's values, found other values")
        if "cu_num_generated_tokens" in fields:
            found_cu = getattr(result, "cu_num_generated_tokens", None)
            if found_cu != cu:
                fail(f"{where}.cu_num_generated_tokens: expected {cu} as given, found {found_cu!r}")
