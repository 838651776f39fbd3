"""The backend's make_async_output(step) -> AsyncModelRunnerOutput, judged as vLLM's own of the revision.

A step is what vLLM's runner holds when it builds its async output
(:class:`conformance.Step`).  get_output() must give what the revision's own vLLM
async output gives for it (``AsyncOutputContract``): the runner's
ModelRunnerOutput with the sampled ids as rows of the revision's type, the
discarded requests' rows emptied, rows of several tokens unpadded where the
runner hands them over, and the logprobs converted as that release converts them.
It must wait for the device (the race check, on a simulated runtime where the
device is absent) and share nothing with the producer's later steps.  A second
get_output() is the caller's mistake: the suite never calls it.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from conformance.backends.backend import LOGPROBS_WITH_MULTI_TOKEN_ROWS
from conformance.backends.devices import new_event, synchronize
from conformance.backends.step import MODEL_RUNNER_V2
from conformance.checks._support import expect_same, expect_type
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt, fail
from conformance.producers.logprobs_reading import expect_read_alike, reads_by_request
from conformance.producers.steps import (
    MULTI_TOKEN_CASES,
    ONE_TOKEN_CASES,
    StepCase,
    build_step,
    expected_output,
    has_logprobs_cu,
    logprobs_cases,
)
from conformance.run.session import current

pytestmark = [
    pytest.mark.spec_type("AsyncModelRunnerOutput"),
    pytest.mark.producer("make_async_output"),
]

_LOGPROBS_FIELDS = ("logprob_token_ids", "logprobs", "sampled_token_ranks")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "logprobs_case" in metafunc.fixturenames:
        revision = current(metafunc.config).revision
        # One check, judged under the rule of the revision (logprobs-runner, -tolists,
        # -cu-of-kept-tokens or -filtered-to-kept-tokens): a case carries its behaviour.
        rule = pytest.mark.behaviour(
            f"producer.async_output:logprobs-{revision.async_output.logprobs}"
        )
        cases = logprobs_cases(revision)
        metafunc.parametrize(
            "logprobs_case", [pytest.param(c, id=c.name, marks=rule) for c in cases]
        )


def _run(backend, async_producer, step, where: str):
    """make_async_output(step).get_output(), each failure naming the call."""
    async_output = attempt(where, async_producer.make, step)
    if not isinstance(async_output, backend.module.AsyncModelRunnerOutput):
        fail(
            f"{where}: expected an instance of the backend's AsyncModelRunnerOutput, "
            f"found {type(async_output).__qualname__}"
        )
    return attempt(f"{where}.get_output()", async_output.get_output)


def _where(case: StepCase, step_device) -> str:
    return f"make_async_output(<step {case.name} on {step_device.describe()}>)"


def _plain_rows(rows) -> object:
    """Rows as lists of ints whatever their container (the row type is judged on its own)."""
    if not isinstance(rows, list):
        return rows
    return [row.tolist() if isinstance(row, np.ndarray) else row for row in rows]


def _expect_output(backend, found, expected, where: str, *, exact_rows: bool = False) -> None:
    """``found`` is the backend's ModelRunnerOutput with ``expected``'s values, field by field."""
    expect_type(found, backend.module.ModelRunnerOutput, where)
    rows = found.sampled_token_ids if exact_rows else _plain_rows(found.sampled_token_ids)
    want = expected.sampled_token_ids if exact_rows else _plain_rows(expected.sampled_token_ids)
    expect_same(rows, want, f"{where}.sampled_token_ids")
    for name in type(expected).__dataclass_fields__:
        if name in ("sampled_token_ids", "logprobs"):
            continue
        if getattr(found, name, "<missing>") != getattr(expected, name):
            fail(
                f"{where}.{name}: expected the value the runner handed over, "
                f"{getattr(expected, name)!r}, found {getattr(found, name, '<missing>')!r}"
            )


def _skip_unless_built(backend, async_producer, revision, case: StepCase) -> None:
    """A step kind the producer's runner never builds is not applicable to it."""
    if not (case.multi_token and case.num_logprobs is not None):
        return
    if LOGPROBS_WITH_MULTI_TOKEN_ROWS in async_producer.steps_not_built:
        pytest.skip(
            f"not applicable (declared): {async_producer.describe()} is never handed logprobs "
            "with rows of several tokens (its runner builds no such step)"
        )
    if async_producer.runner == MODEL_RUNNER_V2 and not has_logprobs_cu(backend, revision):
        pytest.skip(
            f"not applicable: Model Runner V2 of revision {revision.name} builds no logprobs "
            "with rows of several tokens (its LogprobsTensors has no cu_num_generated_tokens "
            "for its async output's tolists() to read)"
        )


def _check_rows(backend, async_producer, revision, step_device, case: StepCase) -> None:
    """The output of ``case``'s step has the runner's fields and the release's rows."""
    _skip_unless_built(backend, async_producer, revision, case)
    step = build_step(backend, revision, case, step_device)
    expected = expected_output(revision, step.model_runner_output, case)
    where = _where(case, step_device)
    found = _run(backend, async_producer, step, where)
    _expect_output(backend, found, expected, f"{where}.get_output()")


@pytest.mark.behaviour("producer.async_output")
@pytest.mark.parametrize("case", ONE_TOKEN_CASES, ids=str)
def test_get_output_gives_the_runner_output_with_its_rows(
    backend, async_producer, revision, step_device, case: StepCase
) -> None:
    _check_rows(backend, async_producer, revision, step_device, case)


@pytest.mark.behaviour("producer.async_output:unpads-multi-token-rows")
@pytest.mark.parametrize("case", MULTI_TOKEN_CASES, ids=str)
def test_get_output_unpads_rows_of_several_tokens(
    backend, async_producer, revision, step_device, case: StepCase
) -> None:
    _check_rows(backend, async_producer, revision, step_device, case)


def _rows_case(revision) -> StepCase:
    cases = MULTI_TOKEN_CASES if revision.async_output.multi_token_rows else ONE_TOKEN_CASES
    return next(c for c in cases if c.invalid_req_indices)


@pytest.mark.behaviour("producer.async_output:rows-as-lists")
def test_rows_are_lists_of_python_ints(backend, async_producer, revision, step_device) -> None:
    case = _rows_case(revision)
    step = build_step(backend, revision, case, step_device)
    expected = expected_output(revision, step.model_runner_output, case)
    where = f"{_where(case, step_device)}.get_output()"
    found = _run(backend, async_producer, step, where)
    _expect_output(backend, found, expected, where, exact_rows=True)


@pytest.mark.behaviour("producer.async_output:rows-as-arrays")
def test_rows_are_numpy_arrays(backend, async_producer, revision, step_device) -> None:
    case = _rows_case(revision)
    step = build_step(backend, revision, case, step_device)
    expected = expected_output(revision, step.model_runner_output, case)
    where = f"{_where(case, step_device)}.get_output()"
    found = _run(backend, async_producer, step, where)
    _expect_output(backend, found, expected, where)
    for i, row in enumerate(found.sampled_token_ids):
        if not isinstance(row, np.ndarray):
            fail(
                f"{where}.sampled_token_ids[{i}]: expected a numpy array (this release's rows "
                f"are arrays, a discarded request's an empty one), found {type(row).__name__}"
            )
        if row.size and row.dtype.kind not in "iu":
            fail(f"{where}.sampled_token_ids[{i}]: expected integer token ids, found {row.dtype}")


def _logprobs_outputs(backend, async_producer, revision, step_device, case: StepCase):
    _skip_unless_built(backend, async_producer, revision, case)
    step = build_step(backend, revision, case, step_device)
    expected = expected_output(revision, step.model_runner_output, case)
    where = f"{_where(case, step_device)}.get_output()"
    found = _run(backend, async_producer, step, where)
    _expect_output(backend, found, expected, where)
    return found, expected, where


def _has_cu(output) -> bool:
    return "cu_num_generated_tokens" in getattr(type(output.logprobs), "_fields", ())


def test_logprobs_reach_the_output_as_the_release_converts_them(
    backend, async_producer, revision, step_device, logprobs_case: StepCase
) -> None:
    # Its behaviour is the revision's logprobs rule (set with the cases, above).  Where
    # vLLM's consumer reads each request's rows by slice_request, two layouts that read
    # the same are vLLM's own (its two runners lay them out differently): the layout of
    # the rule is then reported, not required, and the reading is judged on its own.
    found, expected, where = _logprobs_outputs(
        backend, async_producer, revision, step_device, logprobs_case
    )
    if expected.logprobs is None or found.logprobs is None:
        expect_same(found.logprobs, expected.logprobs, f"{where}.logprobs")
        return
    expect_type(found.logprobs, backend.module.LogprobsLists, f"{where}.logprobs")
    names = [*_LOGPROBS_FIELDS, *(["cu_num_generated_tokens"] if _has_cu(expected) else [])]
    found_members = Members({n: getattr(found.logprobs, n, "<missing>") for n in names})
    expected_members = Members({n: getattr(expected.logprobs, n) for n in names})
    if logprobs_case.multi_token and reads_by_request(revision):
        from conformance.oracle.compare import differences_between

        if differences_between(expected_members, found_members, f"{where}.logprobs"):
            expect_read_alike(revision, found, expected, where)
            pytest.skip(
                f"{where}.logprobs: laid out otherwise than the first runner's "
                f"({revision.async_output.logprobs}); not required: vLLM's consumer reads "
                "each request's rows alike (producer.async_output:logprobs-read-by-request)"
            )
    expect_same(found_members, expected_members, f"{where}.logprobs")


@pytest.mark.behaviour("producer.async_output:logprobs-read-by-request")
@pytest.mark.parametrize("case", MULTI_TOKEN_CASES, ids=str)
def test_each_request_reads_its_own_logprobs(
    backend, async_producer, revision, step_device, case: StepCase
) -> None:
    if not (revision.async_output.logprobs_with_multi_token_rows and reads_by_request(revision)):
        pytest.skip(
            f"revision {revision.name}: no logprobs with rows of several tokens read by request"
        )
    found, expected, where = _logprobs_outputs(
        backend, async_producer, revision, step_device, case.with_logprobs(5)
    )
    expect_read_alike(revision, found, expected, where)


@pytest.mark.behaviour("producer.async_output:independent-outputs")
def test_an_output_shares_nothing_with_later_steps(
    backend, async_producer, revision, step_device
) -> None:
    cases = [c for c in logprobs_cases(revision) if c.invalid_req_indices]
    first_case, second_case = (
        cases[0],
        StepCase(
            "second-step",
            tuple((t + 1,) for (t,) in cases[0].rows),
            num_logprobs=cases[0].num_logprobs,
        ),
    )
    first_step = build_step(backend, revision, first_case, step_device)
    first = _run(backend, async_producer, first_step, "first step")
    kept = copy.deepcopy((_plain_rows(first.sampled_token_ids), first.logprobs))
    second_step = build_step(backend, revision, second_case, step_device)
    expected_second = expected_output(revision, second_step.model_runner_output, second_case)
    second = _run(backend, async_producer, second_step, "second step")
    after = (_plain_rows(first.sampled_token_ids), first.logprobs)
    expect_same(after[0], kept[0], "first step's sampled_token_ids after a second step")
    if kept[1] is not None:
        expect_same(
            Members({n: getattr(after[1], n) for n in _LOGPROBS_FIELDS}),
            Members({n: getattr(kept[1], n) for n in _LOGPROBS_FIELDS}),
            "first step's logprobs after a second step",
        )
    # Changing what the consumer got must not reach the producer's next output.
    for row in first.sampled_token_ids:
        if isinstance(row, list):
            row.append(-7)
        elif isinstance(row, np.ndarray) and row.size:
            row[...] = -7
    _expect_output(backend, second, expected_second, "second step, after the first was changed")


# --- the race: get_output() must wait for the device ------------------------------------

#: How long the simulated device takes to write the sampled values.
SIMULATED_DELAY_S = 0.3
# Long enough to keep a real accelerator busy for tens of milliseconds or more.
_BUSY_SIZE = 2048
_BUSY_ITERATIONS = 200
_RACE_CASE = StepCase("race", tuple((130_000 + 7 * i,) for i in range(64)))


def _produced_after_long_work(device: str, values: torch.Tensor) -> torch.Tensor:
    """A device tensor holding a sentinel (0) until a long computation writes ``values``."""
    staged = values.to(device)
    out = torch.zeros_like(staged)
    x = torch.rand(_BUSY_SIZE, _BUSY_SIZE, device=device)
    synchronize(device)
    for _ in range(_BUSY_ITERATIONS):
        x = torch.tanh(x @ x)  # bounded, so the zero below is a real zero
    zero = x[0, 0] * 0
    torch.add(staged, zero.to(staged.dtype), out=out)
    return out


@pytest.mark.behaviour("producer.async_output:waits-for-device")
@pytest.mark.accelerator_only
def test_get_output_waits_for_the_device(backend, async_producer, revision, step_device) -> None:
    values = _RACE_CASE.padded()
    runtime = step_device.simulated
    if runtime is not None:
        sampled = runtime.device_tensor(torch.zeros_like(values))
        runtime.write_later(sampled, values, SIMULATED_DELAY_S)
        done = None
    else:
        sampled = _produced_after_long_work(step_device.kind, values)
        done = new_event(step_device.kind)
        if done is not None:
            done.record()
    step = build_step(backend, revision, _RACE_CASE, step_device, sampled_token_ids=sampled)
    expected = expected_output(revision, step.model_runner_output, _RACE_CASE)
    make = async_producer.make
    where = f"make_async_output(<step of 64 requests on busy {step_device.describe()}>)"
    async_output = attempt(where, make, step)
    still_busy = not runtime.idle() if runtime is not None else done is None or not done.query()
    output = attempt(f"{where}.get_output() right away", async_output.get_output)
    found, want = _plain_rows(output.sampled_token_ids), _plain_rows(expected.sampled_token_ids)
    if found != want:
        stale = sum(
            a != b for f, w in zip(found, want, strict=False) for a, b in zip(f, w, strict=False)
        )
        fail(
            f"{where}.get_output() on {step_device.describe()}: expected the values the device "
            f"computed, found stale data ({stale} of {len(want)} token ids differ): it read the "
            "host copies before they were complete, or copied on a stream that did not wait "
            "for the one computing the values"
        )
    if not still_busy:
        pytest.skip(
            f"race check inconclusive on {step_device.describe()}: the device was already idle "
            "when make_async_output returned (it may block)"
        )
