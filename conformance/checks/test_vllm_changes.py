"""What a judged vLLM text changed, judged against that text's own code.

Runs only when the revision is a vLLM text, tree or wheel that differs from its
nearest known release (``--revision PATH``): one behaviour per changed member,
``vllm-change:<Type>.<member>``.  The backend's class is held to the text's class:

* ``fields_as_vllm``: its kind and fields in order, the changed field's default and
  annotation;
* ``construction_as_vllm``: built from the same field values, it stores what vLLM's
  stores;
* ``signature_as_vllm``: the changed (or new) method's binding, abstractness and
  parameters;
* ``results_as_vllm``: called on the same generated instances and arguments, it returns
  what vLLM's returns (inputs on which vLLM's own code raises are not judged);
* ``producer_as_vllm``: the backend's producer against the text's own (from a tree or
  a producer text beside): the same logits, padded rows or runner steps in, the same
  results out.

A check of the nearest revision that vLLM's own text fails is superseded (skipped,
``superseded-by-vllm-change``) and its ground is judged here instead.  A backend that
uses the text's own types passes every check here by construction.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from conformance.checks._skips import skip
from conformance.checks._support import producer
from conformance.oracle import differential
from conformance.oracle.compare import differences_between
from conformance.oracle.failing import fail
from conformance.oracle.strategies import logits_cases
from conformance.run.activation import current

pytestmark = [pytest.mark.spec_type("module"), pytest.mark.behaviour("vllm-change")]

_KINDS = {
    "test_fields_as_vllm": "fields",
    "test_construction_as_vllm": "construction",
    "test_signature_as_vllm": "signature",
    "test_results_as_vllm": "results",
    "test_producer_as_vllm": "producer",
}


#: One failure per check, the simplest: what a backend author reads first.
one_failure = settings(report_multiple_bugs=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "vllm_change" not in metafunc.fixturenames:
        return
    from conformance.judged.superseding import differential_cases

    run = current(metafunc.config)
    kind = _KINDS[metafunc.definition.originalname]
    cases = []
    if run.text_revision is not None:
        cases = [c for c in differential_cases(run.text_revision, run.superseded) if c.kind == kind]
    metafunc.parametrize(
        "vllm_change",
        [
            pytest.param(
                c,
                id=c.id,
                marks=[pytest.mark.spec_type(c.spec_type), pytest.mark.behaviour(c.behaviour)],
            )
            for c in cases
        ],
    )


def _judged(config: pytest.Config) -> Any:
    return current(config).text_revision


def _oracle(config: pytest.Config) -> Any:
    from conformance.backends.known import oracle_backend

    return oracle_backend(_judged(config))


def _changes(config: pytest.Config, case: Any) -> str:
    """What vLLM changed there, for messages: the changes of the case's behaviour."""
    judged = _judged(config)
    found = judged.judged_change(case.behaviour)
    return (
        found.describe() if found is not None else "; ".join(c.describe() for c in judged.changes)
    )


def _fail_naming_change(request: pytest.FixtureRequest, case: Any, deviations: list[str]) -> None:
    if deviations:
        judged = _judged(request.config)
        fail(
            *deviations,
            f"(vLLM {judged.what} changed this since {judged.nearest}: {_changes(request.config, case)})",
        )


def _classes(request: pytest.FixtureRequest, backend: Any, case: Any) -> tuple[Any, Any]:
    vllm = getattr(_oracle(request.config).module, case.type)
    found = backend.spec_type(case.type)
    if found is None:
        _fail_naming_change(
            request, case, [f"{case.type}: expected a class as vLLM's {case.type}, found none"]
        )
    return vllm, found


def test_fields_as_vllm(request: pytest.FixtureRequest, backend, vllm_change) -> None:
    vllm, found = _classes(request, backend, vllm_change)
    member = _judged(request.config).surface.get(
        ("vllm.v1.outputs", vllm_change.type, vllm_change.member)
    )
    written = member.shape if member is not None and member.kind == "field" else None
    deviations = differential.field_differences(
        vllm, found, vllm_change.type, vllm_change.member, written
    )
    _fail_naming_change(request, vllm_change, deviations)


def test_construction_as_vllm(request: pytest.FixtureRequest, backend, vllm_change) -> None:
    vllm, _ = _classes(request, backend, vllm_change)
    oracle = _oracle(request.config).module
    classes = differential.classes_of(oracle)

    @one_failure
    @given(st.data())
    def constructed(data: st.DataObject) -> None:
        batch = data.draw(differential.batches(), label="batch")
        instance = data.draw(differential.instance_values(vllm, classes, batch), label="fields")
        try:
            expected = differential.realise(instance, lambda name: getattr(oracle, name))
        except Exception:
            reject()  # vLLM's own class refuses these values: nothing to compare
        try:
            made = differential.realise(instance, lambda name: _backend_class(backend, name))
        except Exception as error:
            _fail_naming_change(
                request,
                vllm_change,
                [
                    f"{vllm_change.type}(...): vLLM's builds it, the backend's raised "
                    f"{type(error).__name__}: {error}",
                    f"on: {instance!r}",
                ],
            )
        _compare(
            request, vllm_change, expected, made, classes, f"{vllm_change.type}(...)", instance
        )

    _run_given(constructed, vllm_change)


def test_signature_as_vllm(request: pytest.FixtureRequest, backend, vllm_change) -> None:
    vllm, found = _classes(request, backend, vllm_change)
    deviations = differential.signature_differences(
        vllm, found, vllm_change.type, vllm_change.member
    )
    _fail_naming_change(request, vllm_change, deviations)


def test_results_as_vllm(request: pytest.FixtureRequest, backend, vllm_change) -> None:
    import inspect

    vllm, found = _classes(request, backend, vllm_change)
    name = vllm_change.member
    oracle = _oracle(request.config).module
    classes = differential.classes_of(oracle)
    raw = inspect.getattr_static(vllm, name)
    bound = not isinstance(raw, staticmethod)
    on_class = isinstance(raw, (staticmethod, classmethod))
    if inspect.getattr_static(found, name, None) is None:
        _fail_naming_change(
            request, vllm_change, [f"{vllm_change.type}.{name}: vLLM's has it, found none"]
        )

    @one_failure
    @given(st.data())
    def same_results(data: st.DataObject) -> None:
        batch = data.draw(differential.batches(), label="batch")
        instance = None
        if not on_class:
            instance = data.draw(differential.instance_values(vllm, classes, batch), label="self")
        arguments = data.draw(
            differential.call_arguments(getattr(vllm, name), classes, batch, bound),
            label="arguments",
        )
        call = f"{vllm_change.type}.{name}(...)"
        owner = repr(instance) if instance is not None else vllm_change.type
        shown = f"{owner}.{name}(*{arguments[0]!r}, **{arguments[1]!r})"
        try:
            expected, expected_self = _call(vllm, instance, name, arguments, oracle_side=oracle)
        except Exception:
            reject()  # vLLM's own code refuses this input: nothing to compare
        try:
            got, got_self = _call(found, instance, name, arguments, backend=backend)
        except Exception as error:
            _fail_naming_change(
                request,
                vllm_change,
                [
                    f"{call}: vLLM's returns a result, the backend's raised "
                    f"{type(error).__name__}: {error}",
                    f"on: {shown}",
                ],
            )
        _compare(request, vllm_change, expected, got, classes, call, shown)
        if instance is not None:
            # Only the fields vLLM's class has: one the backend keeps besides is judged
            # where the fields are.
            kept = differential.field_names(vllm) or []
            _compare(
                request, vllm_change,
                {f: getattr(expected_self, f) for f in kept},
                {f: getattr(got_self, f, "<missing>") for f in kept},
                classes, f"{call}: self after", shown,
            )  # fmt: skip

    _run_given(same_results, vllm_change)


def _backend_class(backend: Any, name: str) -> Any:
    cls = backend.spec_type(name)
    if cls is None:
        raise LookupError(f"the backend has no {name}")
    return cls


def _call(
    cls: Any,
    instance: Any,
    name: str,
    arguments: tuple[list[Any], dict[str, Any]],
    oracle_side: Any = None,
    backend: Any = None,
) -> tuple[Any, Any]:
    if oracle_side is not None:

        def classes(n: str) -> Any:
            return getattr(oracle_side, n)
    else:

        def classes(n: str) -> Any:
            return _backend_class(backend, n)

    args, kwargs = differential.realise(arguments, classes)
    if instance is None:
        return getattr(cls, name)(*args, **kwargs), None
    made = differential.realise(instance, classes)
    member = getattr(made, name)
    result = member(*args, **kwargs) if callable(member) else member
    return result, made


def _compare(
    request: pytest.FixtureRequest,
    case: Any,
    expected: Any,
    found: Any,
    classes: Any,
    where: str,
    shown: Any = None,
) -> None:
    names = frozenset(classes)
    deviations = differences_between(
        differential.plain(expected, names), differential.plain(found, names), where
    )
    if deviations:
        detail = [f"on: {shown!s}"] if shown is not None else []
        _fail_naming_change(
            request, case, [*deviations[:5], "(expected is what vLLM's own code gives)", *detail]
        )


def _run_given(test: Any, case: Any) -> None:
    try:
        test()
    except Unsatisfiable:
        skip(
            "inconclusive",
            f"{case.id}: vLLM's own code raised on every input drawn; nothing to compare "
            "(inconclusive)",
        )


# --- producers --------------------------------------------------------------------------


def test_producer_as_vllm(request: pytest.FixtureRequest, backend, revision, vllm_change) -> None:
    name = vllm_change.producer
    if not hasattr(backend, name):
        skip(
            "not-compared",
            f"vLLM's own {name} changed; the suite compares a backend's gathering, unpadding "
            "and sampling async output with vLLM's, not this producer (its own checks judge it)",
        )
    ours = producer(backend, name)
    oracle = _oracle(request.config)
    theirs = getattr(oracle, name)
    if theirs is None:
        skip(
            "vllm-code-not-loadable",
            f"vLLM's own {name} does not load here: {'; '.join(oracle.notes)}",
        )
    classes = differential.classes_of(oracle.module)
    if name == "gather_logprobs":
        _gather_as_vllm(request, vllm_change, ours, theirs, classes)
    elif name == "unpad_sampled_token_ids":
        _unpad_as_vllm(request, vllm_change, ours, theirs, classes)
    else:
        _async_output_as_vllm(request, vllm_change, backend, oracle, revision, classes)


def _gather_as_vllm(request, case, ours, theirs, classes) -> None:
    @one_failure
    @given(logits_cases())
    def same(found: dict[str, Any]) -> None:
        where = f"gather_logprobs(<logprobs {list(found['logprobs'].shape)}>, {found['k']}, <ids>)"
        try:
            expected = theirs(found["logprobs"].clone(), found["k"], found["token_ids"].clone())
        except Exception:
            reject()
        try:
            got = ours(found["logprobs"].clone(), found["k"], found["token_ids"].clone())
        except Exception as error:
            _fail_naming_change(request, case, [f"{where}: raised {type(error).__name__}: {error}"])
        _compare(request, case, expected, got, classes, where)

    _run_given(same, case)


def _unpad_as_vllm(request, case, ours, theirs, classes) -> None:
    import torch

    rows = st.lists(st.lists(st.integers(0, 200), min_size=0, max_size=4), min_size=0, max_size=5)

    @one_failure
    @given(rows, st.sampled_from([None, 100, 201]))
    def same(found: list[list[int]], vocab_size: int | None) -> None:
        width = max((len(r) for r in found), default=1) or 1
        padded = torch.tensor(
            [r + [-1] * (width - len(r)) for r in found], dtype=torch.int32
        ).reshape(len(found), width)
        where = f"unpad_sampled_token_ids(<{found}>, vocab_size={vocab_size})"
        try:
            expected = theirs(padded.clone(), vocab_size=vocab_size)
        except Exception:
            reject()
        try:
            got = ours(padded.clone(), vocab_size=vocab_size)
        except Exception as error:
            _fail_naming_change(request, case, [f"{where}: raised {type(error).__name__}: {error}"])
        _compare(request, case, expected, got, classes, where)

    _run_given(same, case)


def _async_output_as_vllm(request, case, backend, oracle, revision, classes) -> None:
    from conformance.oracle.failing import attempt
    from conformance.producers.runtime import producer_devices, step_device
    from conformance.producers.steps import (
        MULTI_TOKEN_CASES,
        ONE_TOKEN_CASES,
        build_step,
        logprobs_cases,
    )

    def run(side: Any, device: str, step_case: Any) -> Any:
        with step_device(device) as where:
            step = build_step(side, revision, step_case, where)
            made = attempt(
                f"make_async_output(<step {step_case.name}>)", side.make_async_output, step
            )
            return attempt(
                f"make_async_output(<step {step_case.name}>).get_output()", made.get_output
            )

    ours = [d.value for d in producer_devices(backend) if d.skip is None]
    theirs = [d.value for d in producer_devices(oracle) if d.skip is None]
    if not ours or not theirs:
        skip("device-not-present", "no device here for the async output (real or simulated)")
    cases = [*ONE_TOKEN_CASES, *logprobs_cases(revision)]
    if revision.async_output.multi_token_rows:
        cases += list(MULTI_TOKEN_CASES)
    # Only the kinds of step the backend's runner builds (Backend.steps).
    for step_case in [c for c in cases if backend.declares_steps(c.kinds)]:
        try:
            expected = run(oracle, theirs[0], step_case)
        except BaseException as error:  # vLLM's own fails this step: not judged
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise
            continue
        got = run(backend, ours[0], step_case)
        _compare(request, case, expected, got, classes, f"get_output() of step {step_case.name}")
