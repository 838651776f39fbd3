"""A backend's pooling async output (``Backend.other_async_outputs`` of kind ``pooling``).

vLLM's own: the first runner's ``AsyncGPUPoolingModelRunnerOutput`` (0.14.0 on) and
Model Runner V2's ``AsyncPoolingOutput`` (0.17.0 on).  ``get_output()`` gives the
runner's ``ModelRunnerOutput`` with ``pooler_output`` a CPU tensor per request (None
for a row with no output this step, an empty batch none), and waits for the device.
The container of the rows is not judged (vLLM's own gave a tuple in 0.17.0); their
values, their device and the None rows are.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

from conformance.checks._simulated import late_copies
from conformance.checks._skips import skip
from conformance.checks._support import expect_type, fail_read_after_the_next_step
from conformance.oracle.failing import attempt, fail, failure_of
from conformance.producers.known_defects import known_defect
from conformance.producers.pooling_steps import (
    INVALID_ROW_CASES,
    POOLING_CASES,
    RACE_CASE,
    PoolingCase,
    build_pooling_step,
    expected_pooler_output,
)
from conformance.run.failure_lines import NOT_A_RACE

pytestmark = [
    pytest.mark.spec_type("AsyncModelRunnerOutput"),
    # Backend(steps=...) without it: a pooling async output is not applicable.
    pytest.mark.step_kinds("pooling-outputs"),
]

#: How long the simulated device takes to write the pooled rows.
SIMULATED_DELAY_S = 0.3


def _output(backend, pooling_producer, step, where: str):
    made = attempt(where, pooling_producer.make, step)
    if not isinstance(made, backend.module.AsyncModelRunnerOutput):
        fail(
            f"{where}: expected an instance of the backend's AsyncModelRunnerOutput, "
            f"found {type(made).__qualname__}"
        )
    return made


def _expect_rows(found, case: PoolingCase, where: str) -> None:
    expect_type(found, type(found), where)
    rows = getattr(found, "pooler_output", None)
    if rows is None:
        fail(f"{where}.pooler_output: expected a row per request, found None")
    rows = list(rows)
    wanted = expected_pooler_output(case)
    if len(rows) != len(wanted):
        fail(f"{where}.pooler_output: expected {len(wanted)} rows, found {len(rows)}")
    for i, (row, want) in enumerate(zip(rows, wanted, strict=True)):
        if want is None:
            if row is not None:
                found = "a tensor" if isinstance(row, torch.Tensor) else type(row).__name__
                fail(
                    f"{where}.pooler_output[{i}]: request {i} has no output this step (the "
                    f"runner's is_valid, or finished_mask, False); expected None, found {found}"
                )
            continue
        if not isinstance(row, torch.Tensor):
            fail(f"{where}.pooler_output[{i}]: expected a tensor, found {type(row).__name__}")
        if row.device.type != "cpu":
            fail(f"{where}.pooler_output[{i}]: expected a CPU tensor, found one on {row.device}")
        plain = torch.Tensor(row.detach().cpu()) if type(row) is not torch.Tensor else row
        if plain.dtype != want.dtype:
            fail(
                f"{where}.pooler_output[{i}]: expected {want.dtype}, the dtype the device "
                f"computed (vLLM's copy keeps it), found {plain.dtype}"
            )
        if plain.shape != want.shape or not torch.equal(plain, want):
            fail(
                f"{where}.pooler_output[{i}]: expected request {i}'s pooled row "
                f"{want.tolist()}, found {plain.tolist()}"
            )


def _check(backend, pooling_producer, revision, step_device, case: PoolingCase) -> None:
    step = build_pooling_step(backend, revision, case, step_device)
    where = f"{pooling_producer.label}(<pooling step {case.name} on {step_device.describe()}>)"
    handed = step.model_runner_output
    fields = [n for n in revision.types["ModelRunnerOutput"].field_names if n != "pooler_output"]
    # What the runner put on its output, before the producer finishes it (in place, as
    # vLLM's does, or on a copy).
    before = {name: getattr(handed, name, None) for name in fields}
    found = attempt(
        f"{where}.get_output()", _output(backend, pooling_producer, step, where).get_output
    )
    expect_type(found, backend.module.ModelRunnerOutput, f"{where}.get_output()")
    if list(found.req_ids) != list(step.model_runner_output.req_ids):
        fail(f"{where}.get_output().req_ids: expected the runner's, found {found.req_ids!r}")
    for name, value in before.items():
        kept = getattr(found, name, None)
        if kept is not value and not _same(kept, value):
            fail(
                f"{where}.get_output().{name}: expected the runner's ModelRunnerOutput with "
                f"its {name} as handed over ({value!r}), found {kept!r}"
            )
    _expect_rows(found, case, f"{where}.get_output()")


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # tensors and other values that refuse a truth value
        return False


@pytest.mark.behaviour("producer.pooling_output")
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            c, id=c.name, marks=[pytest.mark.step_kinds("empty-batch")] * (c.num_reqs == 0)
        )
        for c in POOLING_CASES
    ],
)
def test_pooling_output_gives_a_cpu_row_per_request(
    backend, pooling_producer, revision, step_device, case: PoolingCase
) -> None:
    _check(backend, pooling_producer, revision, step_device, case)


@pytest.mark.behaviour("producer.pooling_output:invalid-rows")
@pytest.mark.parametrize("case", INVALID_ROW_CASES, ids=str)
def test_pooling_output_leaves_rows_without_output_none(
    backend, pooling_producer, revision, step_device, case: PoolingCase
) -> None:
    try:
        _check(backend, pooling_producer, revision, step_device, case)
    except pytest.fail.Exception as failure:
        defect = known_defect(
            backend, pooling_producer, "producer.pooling_output:invalid-rows", str(failure)
        )
        if defect is None:
            raise
        pytest.xfail(f"{defect}: {failure}")


@pytest.mark.behaviour("producer.pooling_output")
def test_a_pooling_step_made_before_the_last_was_read_leaves_it_as_it_was(
    backend, pooling_producer, revision, step_device
) -> None:
    """Async scheduling runs a step ahead: vLLM's runner makes step N+1's async output
    before step N's get_output(), and each of its copies lands in host memory of its own
    (as in ``test_producer_async_output``)."""
    first_case = POOLING_CASES[0]
    second_case = dataclasses.replace(first_case, name=f"{first_case.name}-next", offset=1000.0)

    def made(case: PoolingCase) -> tuple[Any, str]:
        step = build_pooling_step(backend, revision, case, step_device)
        where = f"{pooling_producer.label}(<pooling step {case.name} on {step_device.describe()}>)"
        return _output(backend, pooling_producer, step, where), where

    (first_made, first_where), (second_made, second_where) = made(first_case), made(second_case)
    # Read while the device has done the next step's copies too, as it often has.
    step_device.synchronize()
    first = attempt(f"{first_where}.get_output()", first_made.get_output)
    second = attempt(f"{second_where}.get_output()", second_made.get_output)
    stale = failure_of(lambda: _expect_rows(first, first_case, f"{first_where}.get_output()"))
    if stale is not None:
        alone, where = made(first_case)
        fail_read_after_the_next_step(
            stale, lambda: _expect_rows(alone.get_output(), first_case, where)
        )
    _expect_rows(second, second_case, f"{second_where}.get_output()")


def _same_with_the_device_idle(backend, pooling_producer, revision, step_device, raced) -> bool:
    """Whether the producer gives the raced rows for the same step with nothing late on
    the device: then they differ from the device's by a wrong value, not a race."""
    step = build_pooling_step(backend, revision, RACE_CASE, step_device)
    try:
        idle = pooling_producer.make(step).get_output().pooler_output
    except Exception:
        return False  # it raised on the idle step: the race's failure stands
    rows = [torch.Tensor(r.detach().cpu()) if r is not None else None for r in idle]
    return len(rows) == len(raced) and all(
        (a is None and b is None)
        or (a is not None and b is not None and a.shape == b.shape and torch.equal(a, b))
        for a, b in zip(rows, raced, strict=True)
    )


@pytest.mark.behaviour("producer.pooling_output:waits-for-device")
@pytest.mark.accelerator_only
def test_pooling_output_waits_for_the_device(
    backend, pooling_producer, revision, step_device
) -> None:
    runtime = step_device.simulated
    if runtime is None:
        skip(
            "simulated-runtime-only",
            "the pooling race check runs on a simulated runtime (a real device: the "
            "async output's race check covers its copies)",
        )
    values = RACE_CASE.values()
    rows = runtime.device_tensor(torch.zeros_like(values), label="pooler_output")
    runtime.write_later(rows, values, SIMULATED_DELAY_S)
    step = build_pooling_step(backend, revision, RACE_CASE, step_device, pooler_output=rows)
    where = f"{pooling_producer.label}(<pooling step of 64 requests on {step_device.describe(busy=True)}>)"
    made = _output(backend, pooling_producer, step, where)
    still_busy = not runtime.idle()
    found = attempt(f"{where}.get_output() right away", made.get_output)
    # What the simulated runtime saw of this step before the suite reads its rows (and
    # before any other step runs on it): a read before a copy arrived, a copy handed over
    # unwaited, a copy ordered after none of the work computing its rows.
    seen = late_copies(runtime, made)
    rows_found = [
        torch.Tensor(r.detach().cpu()) if r is not None else None for r in found.pooler_output
    ]
    stale = sum(
        1
        for row, want in zip(rows_found, values, strict=False)
        if row is None or not torch.equal(row, want)
    )
    wrong = stale or len(rows_found) != len(values)
    if (
        wrong
        and not seen
        and _same_with_the_device_idle(backend, pooling_producer, revision, step_device, rows_found)
    ):
        fail(
            f"{where}.get_output(): {NOT_A_RACE}: expected the rows the device computed, "
            f"found other rows ({stale} of {len(values)} rows differ)"
        )
    if wrong:
        fail(
            f"{where}.get_output(): expected the rows the device computed, found stale data "
            f"({stale} of {len(values)} rows differ): "
            + (
                "; ".join(seen)
                if seen
                else "it read the host copies before they were complete, or copied on a "
                "stream that did not wait for the one computing them"
            )
        )
    if not still_busy:
        skip(
            "inconclusive",
            f"race check inconclusive on {step_device.describe()}: the device was already "
            "idle when the async output was made (it may block)",
        )
