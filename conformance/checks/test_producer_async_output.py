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
import itertools
from typing import Any

import numpy as np
import pytest
import torch

from conformance.backends.backend import LOGPROBS_WITH_MULTI_TOKEN_ROWS
from conformance.backends.step import MODEL_RUNNER_V2
from conformance.checks._simulated import late_copies
from conformance.checks._skips import skip
from conformance.checks._support import (
    expect_same,
    expect_type,
    fail_read_after_the_next_step,
    held_names,
    producer_named,
)
from conformance.oracle.compare import Members, differences_between, kind_of, with_misspelt
from conformance.oracle.failing import attempt, check, fail, failure_of
from conformance.producers.late_on_device import LateOnDevice
from conformance.producers.logprobs_reading import expect_read_alike, reads_by_request
from conformance.producers.sampling_masks import step_sampling_masks
from conformance.producers.steps import (
    BEYOND_VOCABULARY_CASE,
    MULTI_TOKEN_CASES,
    ONE_TOKEN_CASES,
    StepCase,
    boundaries_on_device_held,
    build_step,
    expected_output,
    handed_over_by_model_runner_v2,
    has_logprobs_cu,
    host_logprobs,
    logprobs_cases,
    made_after_building,
    made_as_the_runner_makes,
    num_sampled,
)
from conformance.run.activation import current
from conformance.run.failure_lines import COPY_RULE, KEPT_NONE, KEPT_PAST, NOT_A_RACE

pytestmark = [
    pytest.mark.spec_type("AsyncModelRunnerOutput"),
    pytest.mark.producer("make_async_output"),
]

_LOGPROBS_FIELDS = ("logprob_token_ids", "logprobs", "sampled_token_ranks")


def _step_param(case: StepCase, behaviour: str | None = None) -> object:
    """``case`` as a parameter marked with its step kinds (a kind the backend does not
    declare makes the check not applicable) and, when given, its behaviour."""
    marks = [pytest.mark.step_kinds(*sorted(case.kinds))]
    if behaviour is not None:
        marks.append(pytest.mark.behaviour(behaviour))
    return pytest.param(case, id=case.name, marks=marks)


def _one_token_behaviour(case: StepCase) -> str:
    """Each kind of step is a behaviour of its own, so an xfail can name exactly one."""
    for kind in ("empty-batch", "prompt-logprobs", "discarded-rows"):
        if kind in case.kinds:
            return f"producer.async_output:step-{kind}"
    return "producer.async_output"


def _undeclared(backend) -> frozenset[str]:
    """The step kinds the backend declares its runner never builds."""
    return frozenset(backend.steps_not_declared())


def _declared_case(backend, case: StepCase, fallback: StepCase) -> StepCase:
    """``case`` without the parts the backend's runner never builds; ``fallback`` (likewise)
    where it cannot do without them (rows of several tokens)."""
    undeclared = _undeclared(backend)
    adapted = case.without(undeclared)
    return adapted if not adapted.kinds & undeclared else fallback.without(undeclared)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "logprobs_case" in metafunc.fixturenames:
        revision = current(metafunc.config).revision
        # One check, judged under the rule of the revision (logprobs-runner, -tolists,
        # -cu-of-kept-tokens or -filtered-to-kept-tokens): a case carries its behaviour.
        rule = f"producer.async_output:logprobs-{revision.async_output.logprobs}"
        cases = logprobs_cases(revision)
        metafunc.parametrize("logprobs_case", [_step_param(c, rule) for c in cases])
    if "race_case" in metafunc.fixturenames:
        run = current(metafunc.config)
        cases = _race_cases(run.revision)
        # The one-token race is for every backend (without what it does not declare); the
        # one of several tokens is not applicable where rows of several tokens are not.
        first = cases[0].without(_undeclared(run.backend))
        rest = [c.without(_undeclared(run.backend) - {"multi-token-rows"}) for c in cases[1:]]
        params = [pytest.param(first, id=cases[0].name), *(_step_param(c) for c in rest)]
        metafunc.parametrize("race_case", params)


def _run(backend, revision, async_producer, step, where: str):
    """make_async_output(step).get_output(), each failure naming the call."""
    made = _made(backend, revision, async_producer, step, where)
    return attempt(f"{where}.get_output()", made.get_output)


def _made(backend, revision, async_producer, step, where: str):
    """make_async_output(step) as the runner calls it, an instance of the backend's
    AsyncModelRunnerOutput."""
    async_output = attempt(
        where, made_as_the_runner_makes, async_producer.make, step, revision, async_producer.runner
    )
    if not isinstance(async_output, backend.module.AsyncModelRunnerOutput):
        fail(
            f"{where}: expected an instance of the backend's AsyncModelRunnerOutput, "
            f"found {type(async_output).__qualname__}"
        )
    return async_output


def _where(backend, async_producer, case: StepCase, step_device) -> str:
    return (
        f"{producer_named(backend, async_producer)}(<step {case.name} on {step_device.describe()}>)"
    )


def _plain_rows(rows) -> object:
    """Rows as lists of ints whatever their container (the row type is judged on its own)."""
    if not isinstance(rows, list):
        return rows
    return [row.tolist() if isinstance(row, np.ndarray) else row for row in rows]


#: How each runner unpads a row to its kept tokens.
_UNPADDING_RULES = {
    MODEL_RUNNER_V2: "unpad each row to its num_sampled, whatever the values (Model Runner V2)",
    None: "unpad each row to its num_sampled, whatever the values (Model Runner V2), or drop "
    "-1 and ids at or beyond vocab_size (the first runner)",
}
_FIRST_RUNNERS_RULE = "drop -1 and ids at or beyond vocab_size (the first runner's rule)"


def _kept_past(found_rows, expected_rows, runner: str | None = None) -> str | None:
    """Where a row goes on past its request's kept tokens (the padding, or what the
    device left there), the unpadding's own rule (``runner``'s where known); None where
    none does."""
    found, want = _plain_rows(found_rows), _plain_rows(expected_rows)
    if not (isinstance(found, list) and isinstance(want, list) and len(found) == len(want)):
        return None
    for i, (row, kept) in enumerate(zip(found, want, strict=True)):
        if not (isinstance(row, list) and isinstance(kept, list) and len(row) > len(kept)):
            continue
        if row[: len(kept)] != kept:
            continue
        if not kept:
            return (
                f"sampled_token_ids[{i}]: {KEPT_PAST} ({row} {KEPT_NONE}): the row "
                "of a discarded request, or of one that kept no token, is empty"
            )
        rule = _UNPADDING_RULES.get(runner, _FIRST_RUNNERS_RULE)
        return f"sampled_token_ids[{i}]: {KEPT_PAST} ({row[len(kept) :]} after {kept}): {rule}"
    return None


def _expect_nothing_kept_past(
    found_rows, expected_rows, where: str, runner: str | None = None
) -> None:
    """No row goes on past its kept tokens: said once for every check that meets it."""
    past = _kept_past(found_rows, expected_rows, runner)
    if past is not None:
        fail(f"{where}.{past}")


def _kv_late(revision, async_producer) -> bool:
    return made_after_building(revision, async_producer.runner)


#: Why an output may lack the KV connector's output it was handed.
_SET_AFTER_BUILDING = (
    " (Model Runner V2's runner puts it on its output after building the async output: "
    "return that output, never a copy made when built)"
)


def _expect_output(
    backend,
    found,
    expected,
    where: str,
    *,
    exact_rows: bool = False,
    kv_late: bool = False,
    runner: str | None = None,
) -> None:
    """``found`` is the backend's ModelRunnerOutput with ``expected``'s values, field by field;
    ``kv_late``: the runner set its KV connector's output after building the async output;
    ``runner``: the runner its producer is shaped like, whose unpadding a failure names."""
    expect_type(found, backend.module.ModelRunnerOutput, where)
    rows = found.sampled_token_ids if exact_rows else _plain_rows(found.sampled_token_ids)
    want = expected.sampled_token_ids if exact_rows else _plain_rows(expected.sampled_token_ids)
    _expect_nothing_kept_past(found.sampled_token_ids, expected.sampled_token_ids, where, runner)
    check([
        with_misspelt(d, found, "sampled_token_ids")
        for d in differences_between(want, rows, f"{where}.sampled_token_ids")[:5]
    ])  # fmt: skip
    differing: dict[str, str] = {}  # {field: how it differs}
    # The runner's output as the backend's type holds it: a dataclass's fields, else
    # what its constructor set (a plain class is its surface check's failure).
    for name in held_names(expected):
        if name in ("sampled_token_ids", "logprobs"):
            continue
        if name == "prompt_logprobs_dict":  # tensors: compared by value, not by ==
            expect_same(
                _host_values(getattr(found, name, "<missing>")),
                expected.prompt_logprobs_dict,
                f"{where}.{name}",
            )
            continue
        if getattr(found, name, "<missing>") != getattr(expected, name):
            differing[name] = with_misspelt(
                f"{where}.{name}: expected the value the runner handed over, "
                f"{getattr(expected, name)!r}, found {getattr(found, name, '<missing>')!r}"
                + (_SET_AFTER_BUILDING if kv_late and name == "kv_connector_output" else ""),
                found,
                name,
            )
    lines = list(differing.values())
    if len(differing) > 1:
        # Every field lost is named first: the one the scheduler needs may not be first.
        lines.insert(
            0,
            f"{where}: {len(differing)} fields not as the runner handed them over "
            f"({', '.join(differing)})",
        )
    check(lines)


def _skip_unless_built(backend, async_producer, revision, case: StepCase) -> None:
    """A step kind the producer's runner never builds is not applicable to it."""
    if not (case.multi_token and case.num_logprobs is not None):
        return
    if LOGPROBS_WITH_MULTI_TOKEN_ROWS in async_producer.steps_not_built:
        skip(
            "step-not-declared",
            f"not applicable (declared): {async_producer.describe()} is never handed logprobs "
            "with rows of several tokens (its runner builds no such step)",
        )
    if async_producer.runner == MODEL_RUNNER_V2 and not has_logprobs_cu(backend, revision):
        skip(
            "step-not-built",
            f"not applicable: Model Runner V2 of revision {revision.name} builds no logprobs "
            "with rows of several tokens (its LogprobsTensors has no cu_num_generated_tokens "
            "for its async output's tolists() to read)",
        )


def _check_rows(backend, async_producer, revision, step_device, case: StepCase) -> None:
    """The output of ``case``'s step has the runner's fields and the release's rows."""
    _skip_unless_built(backend, async_producer, revision, case)
    step = build_step(backend, revision, case, step_device)
    expected = expected_output(revision, step.model_runner_output, case)
    on_device = async_producer.runner == MODEL_RUNNER_V2 and step_device.kind != "cpu"
    if on_device and step.model_runner_output.prompt_logprobs_dict:
        # Model Runner V2 computes prompt logprobs on the device and its async output
        # copies them to the host (to_cpu_nonblocking); the first runner's are host ones.
        step.model_runner_output.prompt_logprobs_dict = {
            req_id: _on_the_device(backend, step_device, tensors, f"prompt_logprobs.{req_id}")
            for req_id, tensors in step.model_runner_output.prompt_logprobs_dict.items()
        }
    token_id_logprobs = None
    # Only onto an output whose type has the field: a runner puts nothing else there (a
    # type without it fails the surface checks on its own).
    fields = set(revision.types["ModelRunnerOutput"].field_names) & set(
        getattr(type(step.model_runner_output), "__dataclass_fields__", ())
    )
    if on_device and case.prompt_tokens and "prompt_token_id_logprobs_dict" in fields:
        # Model Runner V2 (0.31.0 on): the prompt tokens' own logprobs, a device tensor
        # per request that its async output copies to the host.
        token_id_logprobs = -torch.arange(case.prompt_tokens - 1, dtype=torch.float32) / 8
        step.model_runner_output.prompt_token_id_logprobs_dict = {
            "req-0": step_device.tensor(token_id_logprobs, "prompt_token_id_logprobs.req-0")
        }
    where = _where(backend, async_producer, case, step_device)
    found = _run(backend, revision, async_producer, step, where)
    if on_device:
        _expect_prompt_logprobs_on_the_host(found, f"{where}.get_output()")
    if token_id_logprobs is not None:
        _expect_token_id_logprobs(found, token_id_logprobs, f"{where}.get_output()")
        # Judged by value just above: the field-by-field comparison takes it as it is.
        expected.prompt_token_id_logprobs_dict = found.prompt_token_id_logprobs_dict
    _expect_output(
        backend,
        found,
        expected,
        f"{where}.get_output()",
        kv_late=_kv_late(revision, async_producer),
        runner=async_producer.runner,
    )


def _expect_token_id_logprobs(found, values: torch.Tensor, where: str) -> None:
    handed = getattr(found, "prompt_token_id_logprobs_dict", None)
    row = handed.get("req-0") if isinstance(handed, dict) else None
    if not isinstance(row, torch.Tensor) or row.device.type != "cpu":
        found = f"one on {row.device}" if isinstance(row, torch.Tensor) else repr(row)
        fail(
            f"{where}.prompt_token_id_logprobs_dict['req-0']: expected the runner's prompt "
            f"token logprobs copied to the host (Model Runner V2's async output copies each "
            f"to the CPU), found {found}"
        )
    if not torch.equal(torch.Tensor(row.detach().cpu()), values):
        fail(
            f"{where}.prompt_token_id_logprobs_dict['req-0']: expected {values.tolist()}, "
            f"found {row.tolist()}"
        )


def _host_values(prompt_logprobs):
    """The prompt logprobs with host copies as plain tensors (a runtime's copy, a simulated
    one too, may be a subclass of its own): what is compared is their values; where they
    are is checked on its own."""
    if not isinstance(prompt_logprobs, dict):
        return prompt_logprobs
    plain = {}
    for req_id, tensors in prompt_logprobs.items():
        fields = getattr(tensors, "_fields", None)
        if fields is None or not hasattr(tensors, "_replace"):
            plain[req_id] = tensors
            continue
        plain[req_id] = tensors._replace(**{
            name: torch.Tensor(value.detach().cpu())
            for name, value in zip(fields, tensors, strict=False)
            if isinstance(value, torch.Tensor) and type(value) is not torch.Tensor
            and value.device.type == "cpu"
        })  # fmt: skip
    return plain


def _on_the_device(backend, step_device, tensors, label: str):
    return attempt(
        f"LogprobsTensors(<{label} on the device>)",
        type(tensors),
        *(step_device.tensor(t, f"{label}.{i}") if isinstance(t, torch.Tensor) else t
          for i, t in enumerate(tensors)),
    )  # fmt: skip


def _expect_prompt_logprobs_on_the_host(found, where: str) -> None:
    for req_id, tensors in (getattr(found, "prompt_logprobs_dict", None) or {}).items():
        for name, value in zip(getattr(tensors, "_fields", ()), tensors or (), strict=False):
            if isinstance(value, torch.Tensor) and value.device.type != "cpu":
                fail(
                    f"{where}.prompt_logprobs_dict[{req_id!r}].{name}: expected a CPU tensor "
                    f"(Model Runner V2's async output copies the prompt logprobs it is "
                    f"handed on the device to the host), found one on {value.device}"
                )


@pytest.mark.parametrize("case", [_step_param(c, _one_token_behaviour(c)) for c in ONE_TOKEN_CASES])
def test_get_output_gives_the_runner_output_with_its_rows(
    backend, async_producer, revision, step_device, case: StepCase
) -> None:
    _check_rows(backend, async_producer, revision, step_device, case)


@pytest.mark.behaviour("producer.async_output:unpads-multi-token-rows")
@pytest.mark.parametrize(
    "case", [_step_param(c) for c in (*MULTI_TOKEN_CASES, BEYOND_VOCABULARY_CASE)]
)
def test_get_output_unpads_rows_of_several_tokens(
    backend, async_producer, revision, step_device, case: StepCase
) -> None:
    _check_rows(backend, async_producer, revision, step_device, case)


def _rows_cases(backend, revision) -> list[StepCase]:
    """Steps with discarded rows, of the kinds the backend declares: one token per request
    (the step of every decode without drafts), and several where the runner hands them
    over (a release unpads those otherwise, so each path is judged)."""
    one = next(c for c in ONE_TOKEN_CASES if c.invalid_req_indices)
    cases = [_declared_case(backend, one, ONE_TOKEN_CASES[1])]
    if revision.async_output.multi_token_rows:
        several = next(c for c in MULTI_TOKEN_CASES if c.invalid_req_indices)
        declared = _declared_case(backend, several, one)
        if declared not in cases:
            cases.append(declared)
    return cases


def _rows_case(backend, revision) -> StepCase:
    """The step of :func:`_rows_cases` with the most in it: rows of several tokens where
    the runner hands them over."""
    return _rows_cases(backend, revision)[-1]


def _rows_outputs(backend, async_producer, revision, step_device):
    """``(found, expected, where)`` for each of :func:`_rows_cases`' steps."""
    for case in _rows_cases(backend, revision):
        step = build_step(backend, revision, case, step_device)
        expected = expected_output(revision, step.model_runner_output, case)
        made = _where(backend, async_producer, case, step_device)
        yield _run(backend, revision, async_producer, step, made), expected, f"{made}.get_output()"


@pytest.mark.behaviour("producer.async_output:rows-as-lists")
def test_rows_are_lists_of_python_ints(backend, async_producer, revision, step_device) -> None:
    for found, expected, where in _rows_outputs(backend, async_producer, revision, step_device):
        _expect_output(
            backend, found, expected, where, exact_rows=True,
            kv_late=_kv_late(revision, async_producer), runner=async_producer.runner,
        )  # fmt: skip


#: What a runner may hand its async output beside the step's rows, by step kind: the
#: constructor parameter a class built like vLLM's takes it by, and what vLLM's takes.
_HANDED_OVER = {
    "nan-counts": ("num_nans", "takes_nan_counts", "NaN counts", "0.28.0"),
    "routed-experts": ("routed_experts", "takes_routed_experts", "routed experts", "0.22.0"),
}


def _hands_over(backend, async_producer, kind: str) -> bool:
    """Whether the producer's runner hands over the step's ``kind``: declared
    (``steps``), and taken by the constructor where the suite builds it like vLLM's."""
    taken = getattr(async_producer.make, _HANDED_OVER[kind][1], True)
    return backend.declares_steps([kind]) and taken


def _skip_unless_handed_over(backend, async_producer, kind: str) -> None:
    parameter, taken, what, since = _HANDED_OVER[kind]
    if not backend.declares_steps([kind]):
        skip("step-not-declared", f"the backend declares its runner hands over no {what}")
    if not getattr(async_producer.make, taken, True):
        skip(
            "step-not-declared",
            f"{async_producer.make.__qualname__}: the constructor takes no {parameter}, so "
            f"its runner hands no {what} over (vLLM's takes them from {since})",
        )


@pytest.mark.behaviour("producer.async_output:nan-counts")
def test_nan_counts_are_mapped_by_request(backend, async_producer, revision, step_device) -> None:
    if not revision.async_output.nan_counts and not handed_over_by_model_runner_v2(
        revision, async_producer.runner
    ):
        skip(
            "step-not-built",
            f"not applicable: before 0.28.0 only Model Runner V2's async output maps the NaN "
            f"counts of the device; {async_producer.describe()}'s runner counts them on the "
            "host itself",
        )
    _skip_unless_handed_over(backend, async_producer, "nan-counts")
    case = _rows_case(backend, revision)
    # Counts that differ from request to request, so a count given to another request shows.
    counts = (torch.arange(case.num_reqs, dtype=torch.int64) * 3 + 1) % 7
    # Request ids out of their sorted order, so a mapping by sorted ids shows too.
    ids = [f"req-{(case.num_reqs - i) % case.num_reqs}" for i in range(case.num_reqs)]
    step = build_step(
        backend,
        revision,
        case,
        step_device,
        num_nans=step_device.tensor(counts, "num_nans"),
        req_ids=ids,
        req_id_to_index={r: i for i, r in enumerate(ids)},
    )
    req_ids = list(step.model_runner_output.req_ids)
    where = f"{_where(backend, async_producer, case, step_device)}.get_output()"
    found = _run(
        backend, revision, async_producer, step, _where(backend, async_producer, case, step_device)
    )
    nans = getattr(found, "num_nans_in_logits", None)
    want = dict(zip(req_ids, counts.tolist(), strict=True))
    if not isinstance(nans, dict) or nans != want:
        fail(
            f"{where}.num_nans_in_logits: expected {want}, found {nans!r}: each request id "
            "mapped to the NaN logits the runner counted for it (num_nans, handed over on the "
            "device, in the order of req_ids); vLLM's async output of this release sets "
            "dict(zip(req_ids, num_nans.tolist())), which the scheduler reads by request id"
        )
    # Equal is not enough: 1.0 == 1 and numpy's int32(1) == 1.
    wrong = next(((r, n) for r, n in nans.items() if type(n) is not int), None)
    if wrong is not None:
        fail(
            f"{where}.num_nans_in_logits[{wrong[0]!r}]: expected a Python int, found "
            f"{kind_of(wrong[1])}: vLLM's async output of this release sets "
            "num_nans.tolist()'s ints, which the scheduler hands on as "
            "EngineCoreOutput.num_nans_in_logits (an int)"
        )


@pytest.mark.behaviour("producer.async_output:routed-experts")
def test_routed_experts_reach_the_output(backend, async_producer, revision, step_device) -> None:
    _skip_unless_handed_over(backend, async_producer, "routed-experts")
    for name in ("RoutedExpertsTensors", "RoutedExpertsLists"):
        if getattr(backend.module, name, None) is None:
            fail(
                f"the backend's module has no {name}, which the routed experts a runner of "
                f"this release hands over are held in; export it beside the spec types"
            )
    case = _rows_case(backend, revision)
    tokens = case.num_reqs * len(case.rows[0])
    routing = (torch.arange(tokens * 4, dtype=torch.int32).reshape(tokens, 2, 2) * 5) % 11
    slots = torch.arange(tokens, dtype=torch.int64) * 2 + 1
    tensors = attempt(
        "RoutedExpertsTensors(<routed experts on the device>)",
        backend.module.RoutedExpertsTensors,
        step_device.tensor(routing, "routed_experts.routing_data"),
        step_device.tensor(slots, "routed_experts.slot_mapping"),
    )
    step = build_step(backend, revision, case, step_device, routed_experts=tensors)
    where = f"{_where(backend, async_producer, case, step_device)}.get_output()"
    found = getattr(_run(backend, revision, async_producer, step, _where(backend, async_producer, case, step_device)),
                    "routed_experts", None)  # fmt: skip
    expect_type(found, backend.module.RoutedExpertsLists, f"{where}.routed_experts")
    for name, want in (("routing_data", routing), ("slot_mapping", slots)):
        value = getattr(found, name, None)
        if not (isinstance(value, np.ndarray) and np.array_equal(value, want.numpy())):
            fail(
                f"{where}.routed_experts.{name}: expected the step's values as a numpy array "
                f"(vLLM's async output of this release hands over "
                f"routed_experts.to_cpu_nonblocking().tolists()), found {value!r}"
            )


def _sampling_masks_case(backend, revision) -> StepCase:
    """A step with discarded rows, of rows of several tokens where the release's masks
    have a slot per token (0.32.0 on) and the runner hands such rows over."""
    if revision.async_output.sampling_masks_listed == "request-slots":
        return _rows_case(backend, revision)
    one = next(c for c in ONE_TOKEN_CASES if c.invalid_req_indices)
    return _declared_case(backend, one, ONE_TOKEN_CASES[1])


@pytest.mark.behaviour("producer.async_output:sampling-masks")
@pytest.mark.step_kinds("sampling-masks")
def test_sampling_masks_reach_the_output(backend, async_producer, revision, step_device) -> None:
    if async_producer.runner != MODEL_RUNNER_V2:
        skip(
            "step-not-built",
            f"not applicable: {async_producer.describe()} is shaped like the first runner, "
            "whose sampler records no sampling masks (Model Runner V2's alone hands them over)",
        )
    lists_type = getattr(backend.module, "SamplingMaskLists", None)
    if lists_type is None:
        fail(
            "the backend's module has no SamplingMaskLists, which the sampling masks a "
            "runner of this release hands over are held in; export it beside the spec types"
        )
    case = _sampling_masks_case(backend, revision)
    listed = revision.async_output.sampling_masks_listed
    slots = len(case.rows[0]) if case.multi_token else 1
    masks, expected = step_sampling_masks(step_device, listed, num_sampled(case), slots, lists_type)
    step = build_step(backend, revision, case, step_device, sampling_mask_tensors=masks)
    where = _where(backend, async_producer, case, step_device)
    found = getattr(_run(backend, revision, async_producer, step, where), "sampling_masks", None)
    how = (
        "vLLM's async output of this release copies sampler_output.sampling_mask_tensors "
        f"with to_cpu_nonblocking() and, after its wait, sets sampling_masks to the copy's "
        f"{_MASKS_TOLISTS[listed]}"
    )
    if found is None:
        fail(f"{where}.get_output().sampling_masks: expected the step's masks ({how}), found None")
    token_ids, offsets, cu = expected
    # A wrong value read from copies not yet arrived is that read's failure: it says which
    # copy was read where, and what to wait for, in place of how vLLM lists them.
    early = "; ".join(late_copies(step_device.simulated))
    for index, (name, want) in enumerate((("token_ids", token_ids), ("offsets", offsets))):
        value = found[index] if isinstance(found, tuple) and len(found) > index else None
        if not (isinstance(value, np.ndarray) and np.array_equal(value, want)):
            fail(
                f"{where}.get_output().sampling_masks.{name}: expected {want.tolist()}"
                + (f", found {value!r}: {early}" if early else f" ({how}), found {value!r}")
            )
    value = found[2] if isinstance(found, tuple) and len(found) > 2 else None
    if cu is not None and value != cu:
        fail(
            f"{where}.get_output().sampling_masks.cu_num_generated_tokens: expected {cu}"
            + (f", found {value!r}: {early}" if early else f" ({how}), found {value!r}")
        )


#: How the async output of a release lists the masks' host copy
#: (:attr:`reference.revisions.model.AsyncOutputContract.sampling_masks_listed`).
_MASKS_TOLISTS = {
    "sampled-requests": "tolists(<the host copy of num_sampled>), the rows of requests that "
    "sampled a token",
    "every-request": "tolists(), a row per request",
    "request-slots": "tolists(<the host copy of num_sampled>), a row per slot holding a "
    "sampled token",
}


@pytest.mark.behaviour("producer.async_output:rows-as-arrays")
def test_rows_are_numpy_arrays(backend, async_producer, revision, step_device) -> None:
    for found, expected, where in _rows_outputs(backend, async_producer, revision, step_device):
        _expect_output(
            backend, found, expected, where,
            kv_late=_kv_late(revision, async_producer), runner=async_producer.runner,
        )  # fmt: skip
        for i, row in enumerate(found.sampled_token_ids):
            if not isinstance(row, np.ndarray):
                fail(
                    f"{where}.sampled_token_ids[{i}]: expected a numpy array (this release's "
                    f"rows are arrays, a discarded request's an empty one), found "
                    f"{type(row).__name__}"
                )
            if row.size and row.dtype.kind not in "iu":
                fail(
                    f"{where}.sampled_token_ids[{i}]: expected integer token ids, found {row.dtype}"
                )


def _logprobs_outputs(backend, async_producer, revision, step_device, case: StepCase):
    _skip_unless_built(backend, async_producer, revision, case)
    step = build_step(backend, revision, case, step_device)
    expected = expected_output(revision, step.model_runner_output, case)
    where = f"{_where(backend, async_producer, case, step_device)}.get_output()"
    found = _run(
        backend, revision, async_producer, step, _where(backend, async_producer, case, step_device)
    )
    _expect_output(
        backend, found, expected, where,
        kv_late=_kv_late(revision, async_producer), runner=async_producer.runner,
    )  # fmt: skip
    return found, expected, where


def _has_cu(output) -> bool:
    return "cu_num_generated_tokens" in getattr(type(output.logprobs), "_fields", ())


def _one_row_each(found, expected) -> bool:
    """Rows of one token each, said by boundaries ``[0, 1, ..., n]`` where the release's
    runner leaves them None: slice_request reads each request's row alike."""
    cu = getattr(found, "cu_num_generated_tokens", None)
    rows = getattr(expected, "logprob_token_ids", None)
    return (
        getattr(expected, "cu_num_generated_tokens", None) is None
        and isinstance(cu, list)
        and rows is not None
        and cu == list(range(len(rows) + 1))
    )


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
    if (
        (logprobs_case.multi_token or _one_row_each(found.logprobs, expected.logprobs))
        and reads_by_request(revision)
        and differences_between(expected_members, found_members, f"{where}.logprobs")
    ):
        expect_read_alike(revision, found, expected, where)
        skip(
            "allowed-layout",
            f"{where}.logprobs: laid out otherwise than the release's runner "
            f"({revision.async_output.logprobs}); not required: vLLM's consumer reads "
            "each request's rows alike (producer.async_output:logprobs-read-by-request)",
        )
    expect_same(found_members, expected_members, f"{where}.logprobs")


@pytest.mark.behaviour("producer.async_output:logprobs-read-by-request")
@pytest.mark.parametrize(
    "case",
    [_step_param(c.with_logprobs(5)) for c in MULTI_TOKEN_CASES]
    + [_step_param(MULTI_TOKEN_CASES[1].with_logprobs(5).with_boundaries_on_device())],
)
def test_each_request_reads_its_own_logprobs(
    backend, async_producer, revision, step_device, case: StepCase
) -> None:
    if not (revision.async_output.logprobs_with_multi_token_rows and reads_by_request(revision)):
        skip(
            "not-in-this-vllm",
            f"revision {revision.name}: no logprobs with rows of several tokens read by request",
        )
    if case.boundaries_on_device and not handed_over_by_model_runner_v2(
        revision, async_producer.runner
    ):
        skip(
            "step-not-built",
            "not applicable: only Model Runner V2's sampler keeps request boundaries on the "
            f"device alone; {async_producer.describe()} at revision {revision.name} is never "
            "handed them",
        )
    if case.boundaries_on_device and not boundaries_on_device_held(backend, revision):
        skip(
            "not-in-this-vllm",
            f"not applicable: the LogprobsTensors of revision {revision.name}, or the "
            "backend's, holds no cu_num_generated_tokens_tensor (adaptive verification's "
            "boundaries on the device, 0.29.0 on)",
        )
    found, expected, where = _logprobs_outputs(backend, async_producer, revision, step_device, case)
    expect_read_alike(revision, found, expected, where)


def _two_steps(backend, revision) -> tuple[StepCase, StepCase]:
    """Two steps of the same shape with other ids and other logprobs: a producer reusing
    its host buffers overwrites both."""
    cases = [c for c in logprobs_cases(revision) if c.invalid_req_indices]
    first_case = cases[0].without(_undeclared(backend))
    second_case = StepCase(
        "second-step",
        tuple((t + 1,) for (t,) in first_case.rows),
        num_logprobs=first_case.num_logprobs,
        salt=first_case.salt + 1,
    )
    return first_case, second_case


@pytest.mark.behaviour("producer.async_output:independent-outputs")
def test_an_output_shares_nothing_with_later_steps(
    backend, async_producer, revision, step_device
) -> None:
    first_case, second_case = _two_steps(backend, revision)
    first_step = build_step(backend, revision, first_case, step_device)
    first = _run(backend, revision, async_producer, first_step, "first step")
    kept = copy.deepcopy((_plain_rows(first.sampled_token_ids), first.logprobs))
    second_step = build_step(backend, revision, second_case, step_device)
    expected_second = expected_output(revision, second_step.model_runner_output, second_case)
    second = _run(backend, revision, async_producer, second_step, "second step")
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


@pytest.mark.behaviour("producer.async_output:independent-outputs")
def test_a_step_made_before_the_last_was_read_leaves_it_as_it_was(
    backend, async_producer, revision, step_device
) -> None:
    """Async scheduling runs a step ahead: vLLM's runner makes step N+1's async output
    before step N's get_output() is called, and each of vLLM's copies to the host lands
    in memory of its own (host buffers reused from step to step hand step N the values
    of step N+1)."""
    first_case, second_case = _two_steps(backend, revision)
    first_step = build_step(backend, revision, first_case, step_device)
    first_where = _where(backend, async_producer, first_case, step_device)
    first_made = _made(backend, revision, async_producer, first_step, first_where)
    second_step = build_step(backend, revision, second_case, step_device)
    second_where = _where(backend, async_producer, second_case, step_device)
    second_made = _made(backend, revision, async_producer, second_step, second_where)
    # Read while the device has done the next step's copies too, as it often has on a
    # real one: host memory the two share then holds the next step's values.
    step_device.synchronize()
    first = attempt(f"{first_where}.get_output()", first_made.get_output)
    second = attempt(f"{second_where}.get_output()", second_made.get_output)
    expected_first = expected_output(revision, first_step.model_runner_output, first_case)
    expected_second = expected_output(revision, second_step.model_runner_output, second_case)
    stale = failure_of(
        lambda: _expect_output(backend, first, expected_first, f"{first_where}.get_output()")
    )
    if stale is not None:
        alone = build_step(backend, revision, first_case, step_device)
        fail_read_after_the_next_step(
            stale,
            lambda: _expect_output(
                backend,
                _run(backend, revision, async_producer, alone, first_where),
                expected_first,
                "",
            ),
        )
    _expect_output(backend, second, expected_second, f"{second_where}.get_output()")


# --- the race: get_output() must wait for the device ------------------------------------

#: How long the simulated device takes to write the sampled values.
SIMULATED_DELAY_S = 0.2
_RACE_CASE = StepCase("race", tuple((130_000 + 7 * i,) for i in range(64)))
_RACE_MULTI_TOKEN_CASE = StepCase(
    "race-multi-token",
    tuple(
        (130_000 + 7 * i, 140_000 + i, -1) if i % 3 else (130_000 + 7 * i, -1, -1)
        for i in range(32)
    ),
    invalid_req_indices=(5,),
)


#: One salt per race step of the process (:meth:`StepCase.salted`).
_RACE_SALTS = itertools.count(1)


def _race_cases(revision) -> list[StepCase]:
    """The busy steps: 64 requests with logprobs, and rows of several tokens where the
    revision's runner hands them over (with logprobs where it hands both)."""
    cases = [_RACE_CASE.with_logprobs(5)]
    if revision.async_output.multi_token_rows:
        k = 5 if revision.async_output.logprobs_with_multi_token_rows else None
        cases.append(_RACE_MULTI_TOKEN_CASE.with_logprobs(k))
    return cases


class _Landed:
    """Stands for the race step's runtime where every write has landed: the same step,
    the device idle (:func:`_late_device_tensor` puts the values there at once)."""

    def __init__(self, step_device) -> None:
        self.step_device = step_device

    def idle(self) -> bool:
        return True


def _late_device_tensor(runtime, name: str, values: torch.Tensor) -> torch.Tensor:
    """A device tensor named ``name`` holding zeros until a kernel writes ``values``, late.

    The kernels queue on one stream: only the first sleeps, the others follow it at once
    (so every tensor of the step is late, and the step costs one delay)."""
    if isinstance(runtime, _Landed):
        return runtime.step_device.tensor(values, name)
    tensor = runtime.device_tensor(torch.zeros_like(values), label=name)
    runtime.write_later(tensor, values, SIMULATED_DELAY_S if runtime.idle() else 0.0)
    return tensor


def _late_logprobs(backend, async_producer, revision, case: StepCase, runtime):
    """The step's logprobs tensors, every part written late on the simulated device; the
    device ``cu_num_generated_tokens_tensor`` too where the revision's type has it, the
    rows are one token each (vLLM's ``filter`` of rows of several tokens refuses it) and
    Model Runner V2 builds the output (only its sampler sets that field)."""
    host = host_logprobs(case, revision)
    if host is None:
        return None
    cls = backend.module.LogprobsTensors
    parts = [
        _late_device_tensor(runtime, f"logprobs.{name}", values)
        for name, values in zip(_LOGPROBS_FIELDS, host, strict=True)
    ]
    extra = {}
    if (
        "cu_num_generated_tokens_tensor" in getattr(cls, "_fields", ())
        and not case.multi_token
        and handed_over_by_model_runner_v2(revision, async_producer.runner)
    ):
        cu = torch.arange(case.num_reqs + 1, dtype=torch.int32)
        extra["cu_num_generated_tokens_tensor"] = _late_device_tensor(
            runtime, "logprobs.cu_num_generated_tokens_tensor", cu
        )
    return attempt("LogprobsTensors(<step logprobs, written late>)", cls, *parts, **extra)


def _late_extras(backend, async_producer, revision, case: StepCase, runtime) -> dict:
    """What else the revision's runner may hand its async output on the device, written
    late: NaN counts per request, and the routed experts where the revision has them."""
    extras = {}
    if "num_nans_in_logits" in revision.types["ModelRunnerOutput"].field_names and (
        _hands_over(backend, async_producer, "nan-counts")
    ):
        counts = torch.arange(case.num_reqs, dtype=torch.int32) % 2
        extras["num_nans"] = _late_device_tensor(runtime, "num_nans", counts)
    routed = getattr(backend.module, "RoutedExpertsTensors", None)
    if (
        routed is not None
        and getattr(routed, "_fields", None) == ("routing_data", "slot_mapping")
        and _hands_over(backend, async_producer, "routed-experts")
    ):
        tokens = case.num_reqs * len(case.rows[0])
        extras["routed_experts"] = attempt(
            "RoutedExpertsTensors(<step routed experts, written late>)",
            routed,
            _late_device_tensor(
                runtime,
                "routed_experts.routing_data",
                torch.arange(tokens * 4, dtype=torch.int32).reshape(tokens, 2, 2) % 8,
            ),
            _late_device_tensor(
                runtime, "routed_experts.slot_mapping", torch.arange(tokens, dtype=torch.int64)
            ),
        )
    return extras


def _race_step(backend, async_producer, revision, step_device, case: StepCase, landed=False):
    """The step of ``case`` on a busy device (``landed``: the same step, the device idle),
    and a probe saying whether it is still busy."""
    simulated = step_device.simulated
    late: Any = (
        _Landed(step_device)
        if landed
        else simulated
        if simulated is not None
        else LateOnDevice(step_device.kind)
    )
    step = build_step(
        backend,
        revision,
        case,
        step_device,
        sampled_token_ids=_late_device_tensor(late, "sampled_token_ids", case.padded()),
        logprobs_tensors=_late_logprobs(backend, async_producer, revision, case, late),
        **_late_extras(backend, async_producer, revision, case, late),
    )
    if isinstance(late, LateOnDevice):
        # Queued only now: building the step waits on the host for nothing of it.
        late.start()
    return step, lambda: not late.idle()


def _expect_race_logprobs(revision, case: StepCase, output, expected, where: str) -> None:
    """Fail unless ``output``'s logprobs are the values the device computed."""
    if case.multi_token and reads_by_request(revision):
        # The layout may be either runner's: what each request reads must be the values.
        expect_read_alike(revision, output, expected, f"{where}.get_output()")
    else:
        expect_same(
            Members({n: getattr(output.logprobs, n, "<missing>") for n in _LOGPROBS_FIELDS}),
            Members({n: getattr(expected.logprobs, n) for n in _LOGPROBS_FIELDS}),
            f"{where}.get_output().logprobs (the values the device computed)",
        )


def _same_with_the_device_idle(
    backend, async_producer, revision, step_device, case: StepCase, raced
) -> bool:
    """Whether the producer gives the raced output's values for the same step with nothing
    late on the device (the device synchronized before it reads): then a difference from
    the device's values is a wrong value, not a read before the copy arrived."""
    step, _ = _race_step(backend, async_producer, revision, step_device, case, landed=True)
    try:
        made = async_producer.make(step)
        if step_device.simulated is None and step_device.kind != "cpu":
            getattr(torch, step_device.kind).synchronize()  # nothing left to race
        idle = made.get_output()
    except Exception:
        return False  # it raised on the idle step: the race's failure stands
    if _plain_rows(idle.sampled_token_ids) != _plain_rows(raced.sampled_token_ids):
        return False
    if (idle.logprobs is None) != (raced.logprobs is None):
        return False
    if idle.logprobs is None:
        return True
    same = failure_of(
        lambda: expect_same(
            Members({n: getattr(idle.logprobs, n, None) for n in _LOGPROBS_FIELDS}),
            Members({n: getattr(raced.logprobs, n, None) for n in _LOGPROBS_FIELDS}),
            "the idle step's logprobs",
        )
    )
    return same is None


@pytest.mark.behaviour("producer.async_output:waits-for-device")
@pytest.mark.accelerator_only
def test_get_output_waits_for_the_device(
    backend, async_producer, revision, step_device, race_case
) -> None:
    _skip_unless_built(backend, async_producer, revision, race_case)
    # Values no earlier step of this process wrote: the host buffers a producer copies
    # into are reused, and one still holding an earlier step's identical values would
    # pass a read made before the copy landed (on the H200, mutants without the wait
    # passed after a step of the same case).
    case = race_case.salted(next(_RACE_SALTS))
    make = async_producer.make
    if step_device.simulated is None:
        # A producer's first step pays one-time costs longer than the device stays
        # busy: the pinned host allocator, and its kernels' first launches, which CUDA
        # may load by synchronizing the device.  vLLM's runner is past them at steady
        # state.  (LateOnDevice rehearses its own writes for the same reason.)
        warm = build_step(backend, revision, race_case, step_device)
        attempt(f"{producer_named(backend, async_producer)}(<step {case.name}, a first call>).get_output()",
                lambda: make(warm).get_output())  # fmt: skip
    step, busy = _race_step(backend, async_producer, revision, step_device, case)
    expected = expected_output(revision, step.model_runner_output, case)
    where = (
        f"{producer_named(backend, async_producer)}(<step {case.name} of {case.num_reqs} requests on "
        f"{step_device.describe(busy=True)}>)"
    )
    async_output = attempt(where, make, step)
    still_busy = busy()
    output = attempt(f"{where}.get_output() right away", async_output.get_output)
    simulated = step_device.simulated
    unordered = simulated.unordered_reads() if simulated is not None else []
    late = late_copies(simulated, async_output)
    if late:
        fail(
            f"{where}.get_output() on {step_device.describe()}: {'; '.join(late)}"
            + (f": {COPY_RULE}" if len(late) > len(unordered) else "")
        )
    found, want = _plain_rows(output.sampled_token_ids), _plain_rows(expected.sampled_token_ids)
    logprobs_wrong = None
    if expected.logprobs is not None and output.logprobs is not None:
        logprobs_wrong = failure_of(
            lambda: _expect_race_logprobs(revision, case, output, expected, where)
        )
    parts = []
    if found != want:
        # Row by row, a token missing or extra counts: a stale count unpads to other lengths.
        stale = sum(
            a != b
            for f, w in itertools.zip_longest(found, want, fillvalue=[])
            for a, b in itertools.zip_longest(f, w)
        )
        parts.append(
            f"sampled_token_ids ({stale} of {sum(map(len, want))} token ids differ or are missing)"
        )
    if logprobs_wrong is not None:
        said = logprobs_wrong.replace("\n", "; ").replace(f"{where}.get_output().", "")
        parts.append(said.replace(" (the values the device computed)", ""))
    if parts and _same_with_the_device_idle(
        backend, async_producer, revision, step_device, case, output
    ):
        past = _kept_past(
            output.sampled_token_ids, expected.sampled_token_ids, async_producer.runner
        )
        fail(
            f"{where}.get_output() on {step_device.describe()}: {NOT_A_RACE}: expected the "
            f"values the device computed, found other values in {'; '.join(parts)}"
            + (f"; {past}" if past else "")
        )
    if found != want:
        fail(
            f"{where}.get_output() on {step_device.describe()}: expected the values the device "
            f"computed, found stale data in {'; '.join(parts)}: it read the host copies "
            "before they were complete, or copied on a stream that did not wait for the one "
            "computing the values"
        )
    if logprobs_wrong is not None:
        fail(logprobs_wrong)
    if not still_busy:
        skip(
            "inconclusive",
            f"race check inconclusive on {step_device.describe()}: the device was already idle "
            "when make_async_output returned (it may block)",
        )
