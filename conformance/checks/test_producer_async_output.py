"""The backend's make_async_output(sampler_output, req_ids) -> AsyncModelRunnerOutput.

get_output() must give the right ModelRunnerOutput, refuse a second call, and
on an accelerator wait for the device: the race check keeps the device busy with
a long computation that produces the sampled values, starts the backend's copy
and calls get_output() at once.  A backend that does not wait reads stale data.
"""

from __future__ import annotations

from itertools import accumulate

import pytest
import torch

from conformance.checks._samples import lists_values_of, rows_are_arrays
from conformance.checks._support import (
    attempt,
    check,
    expect_same,
    expect_type,
    fail,
    fields_of,
    on,
    producer,
    spec_class,
)
from conformance.compare import Members
from conformance.devices import new_event, synchronize
from conformance.invariants import PLACEHOLDER_TOKEN_ID, model_runner_output_violations

pytestmark = [
    pytest.mark.spec_type("AsyncModelRunnerOutput"),
    pytest.mark.producer("make_async_output"),
    pytest.mark.behaviour("producer.async_output"),
]

# Padded sampler outputs: [num_reqs, max_num_generated_tokens].
STEPS = {
    "empty-batch": [],
    "one-token-per-request": [[70001], [70002], [70003]],
    "speculative-decoding": [[70001, 70002, -1], [-1, -1, -1], [70003, 70004, 70005]],
}


def _unpadded(rows: list[list[int]]) -> list[list[int]]:
    return [[t for t in row if t != PLACEHOLDER_TOKEN_ID] for row in rows]


def _logprobs_rows(num_tokens: int, k: int = 2) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One row per generated token: ids, float32 logprobs (sorted top-k), int64 ranks."""
    ids = torch.arange(80000, 80000 + num_tokens * (k + 1), dtype=torch.int32).reshape(
        num_tokens, k + 1
    )
    logprobs = (
        -torch.arange(num_tokens * (k + 1), dtype=torch.float32).reshape(num_tokens, k + 1) / 8
    )
    ranks = torch.arange(1, num_tokens + 1, dtype=torch.int64)
    return ids, logprobs, ranks


def _sampler_output(backend, device: str, rows: list[list[int]], with_logprobs: bool):
    ids = on(device, torch.tensor(rows, dtype=torch.int32).reshape(len(rows), -1 if rows else 1))
    logprobs = None
    if with_logprobs:
        tensors = _logprobs_rows(sum(map(len, _unpadded(rows))))
        logprobs = backend.module.LogprobsTensors(*(on(device, t) for t in tensors))
    return backend.module.SamplerOutput(ids, logprobs)


def _expect_output(
    backend,
    revision,
    output,
    rows: list[list[int]],
    req_ids: list[str],
    with_logprobs: bool,
    where: str,
) -> None:
    expect_type(output, spec_class(backend, "ModelRunnerOutput"), where)
    expected = _unpadded(rows)
    expect_same(output.req_ids, req_ids, f"{where}.req_ids")
    expect_same(
        output.req_id_to_index, {r: i for i, r in enumerate(req_ids)}, f"{where}.req_id_to_index"
    )
    found_rows = output.sampled_token_ids
    if rows_are_arrays(revision) and isinstance(found_rows, list):
        found_rows = [r.tolist() if hasattr(r, "tolist") else r for r in found_rows]
    expect_same(found_rows, expected, f"{where}.sampled_token_ids")
    if not with_logprobs:
        if output.logprobs is not None:
            fail(
                f"{where}.logprobs: expected None (the sampler produced no logprobs), found {output.logprobs!r}"
            )
    else:
        ids, logprobs, ranks = _logprobs_rows(sum(map(len, expected)))
        if output.logprobs is None:
            fail(f"{where}.logprobs: expected a LogprobsLists, found None")
        expect_type(output.logprobs, spec_class(backend, "LogprobsLists"), f"{where}.logprobs")
        names = ("logprob_token_ids", "logprobs", "sampled_token_ranks")
        found = fields_of(output.logprobs, names)
        values = lists_values_of(revision, ids, logprobs, ranks)
        expect_same(found, Members(zip(names, values, strict=True)), f"{where}.logprobs")
        cu = getattr(output.logprobs, "cu_num_generated_tokens", None)
        if cu is not None and cu != [0, *accumulate(map(len, expected))]:
            fail(
                f"{where}.logprobs.cu_num_generated_tokens: expected "
                f"{[0, *accumulate(map(len, expected))]} (request i owns its tokens' rows), found {cu!r}"
            )
    check(model_runner_output_violations(output, revision=revision))


@pytest.mark.parametrize("with_logprobs", [False, True], ids=["no-logprobs", "logprobs"])
@pytest.mark.parametrize("step", list(STEPS))
def test_get_output_gives_the_model_runner_output(
    backend, revision, device: str, step: str, with_logprobs: bool
) -> None:
    make = producer(backend, "make_async_output")
    rows = STEPS[step]
    req_ids = [f"req-{i}" for i in range(len(rows))]
    where = f"make_async_output(<{step} on {device}>, req_ids)"
    async_output = attempt(
        where, make, _sampler_output(backend, device, rows, with_logprobs), req_ids
    )
    if not isinstance(async_output, spec_class(backend, "AsyncModelRunnerOutput")):
        fail(
            f"{where}: expected an instance of the backend's AsyncModelRunnerOutput, "
            f"found {type(async_output).__qualname__}"
        )
    output = attempt(f"{where}.get_output()", async_output.get_output)
    _expect_output(backend, revision, output, rows, req_ids, with_logprobs, f"{where}.get_output()")


def test_second_get_output_is_refused(backend, device: str) -> None:
    make = producer(backend, "make_async_output")
    rows = STEPS["one-token-per-request"]
    async_output = attempt(
        "make_async_output(...)",
        make,
        _sampler_output(backend, device, rows, False),
        ["a", "b", "c"],
    )
    attempt("first get_output()", async_output.get_output)
    try:
        async_output.get_output()
    except Exception:
        return
    fail(
        "AsyncModelRunnerOutput.get_output(): a second call returned normally; expected an "
        "exception (the spec allows one call per object, and the copies are gone)"
    )


# Long enough to keep any accelerator busy for tens of milliseconds or more.
_BUSY_SIZE = 2048
_BUSY_ITERATIONS = 200


def _produced_after_long_work(device: str, *values: torch.Tensor) -> list[torch.Tensor]:
    """Device tensors that hold a sentinel (0) until a long computation writes ``values``."""
    staged = [on(device, v) for v in values]
    outputs = [torch.zeros_like(s) for s in staged]
    x = torch.rand(_BUSY_SIZE, _BUSY_SIZE, device=device)
    synchronize(device)
    for _ in range(_BUSY_ITERATIONS):
        x = torch.tanh(x @ x)  # bounded, so the zero below is a real zero
    zero = x[0, 0] * 0
    for out, source in zip(outputs, staged, strict=True):
        torch.add(source, zero.to(source.dtype), out=out)
    return outputs


@pytest.mark.behaviour("producer.async_output:waits-for-device")
def test_get_output_waits_for_the_device(backend, revision, accelerator: str) -> None:
    make = producer(backend, "make_async_output")
    rows = [[70000 + 7 * i + j for j in range(3)] for i in range(64)]
    host_ids = torch.tensor(rows, dtype=torch.int32)
    host_lp = _logprobs_rows(64 * 3)
    ids, lp_ids, lp_values, lp_ranks = _produced_after_long_work(accelerator, host_ids, *host_lp)
    done = new_event(accelerator)
    if done is not None:
        done.record()
    sampler_output = backend.module.SamplerOutput(
        ids, backend.module.LogprobsTensors(lp_ids, lp_values, lp_ranks)
    )
    req_ids = [f"req-{i}" for i in range(64)]
    async_output = attempt("make_async_output(<busy device>)", make, sampler_output, req_ids)
    still_busy = done is not None and not done.query()
    output = attempt("get_output() right after make_async_output", async_output.get_output)
    found_rows = [r.tolist() if hasattr(r, "tolist") else r for r in output.sampled_token_ids]
    if found_rows != rows:
        stale = sum(
            a != b
            for found, want in zip(found_rows, rows, strict=False)
            for a, b in zip(found, want, strict=False)
        )
        fail(
            f"get_output() on {accelerator}: expected the values the device computed, found "
            f"stale data ({stale} of {64 * 3} token ids differ): it returned before the device-to-host "
            "copies were complete, or copied before the producing kernels finished"
        )
    _expect_output(backend, revision, output, rows, req_ids, True, f"get_output() on {accelerator}")
    if done is not None and not still_busy:
        pytest.skip(
            f"race check inconclusive on {accelerator}: the device was already idle when "
            "get_output() was called (make_async_output may block)"
        )
