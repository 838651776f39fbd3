"""Backend(steps=...): the kinds of step a backend's runner builds, declared; the others are
not applicable (skipped with cause ``step-not-declared``), never passed, never failed.

One in-process run per declaration, of the async output checks only.
"""

from __future__ import annotations

import json

import pytest
import suite_runner

from conformance import Backend
from conformance.backends.backend import BackendResolutionError
from conformance.backends.step import STEP_KINDS

BROKEN = "broken_backends.async_output_one_token_per_request"
ASYNC_OUTPUT = suite_runner.check_path("test_producer_async_output.py")
MULTI_TOKEN = "rows of several tokens: speculative decoding under async scheduling"


def _run(tmp_path, attribute: str) -> suite_runner.Run:
    run = suite_runner.in_process(
        tmp_path, ASYNC_OUTPUT, "--conformance-backend", f"{BROKEN}:{attribute}"
    )
    assert run.report is not None
    return run


def test_steps_a_runner_never_builds_are_not_applicable_not_failed(tmp_path) -> None:
    run = _run(tmp_path, "BACKEND")
    tests = run.report["tests"]
    assert run.report["summary"]["failed"] == 0 and run.exit_code == 0, [
        (t["nodeid"], t["message"]) for t in tests if t["outcome"] == "failed"
    ]
    not_applicable = [t for t in tests if t["skip_cause"] == "step-not-declared"]
    assert {t["behaviour"] for t in not_applicable} >= {
        "producer.async_output:unpads-multi-token-rows",
        "producer.async_output:step-discarded-rows",
        "producer.async_output:step-prompt-logprobs",
    }
    for record in not_applicable:
        assert record["outcome"] == "skipped"
        assert record["message"].startswith("not applicable (declared): "), record
    unpads = [t for t in not_applicable if "unpads_rows" in t["nodeid"]]
    assert unpads and all(MULTI_TOKEN in t["message"] for t in unpads)
    # The declared kinds ran and passed; so did the race check (one token, logprobs).
    passed = {t["behaviour"] for t in tests if t["outcome"] == "passed"}
    assert {
        "producer.async_output",
        "producer.async_output:step-empty-batch",
        "producer.async_output:waits-for-device",
        "producer.async_output:independent-outputs",
    } <= passed
    assert run.report["backend"]["steps_declared"] == ["logprobs", "empty-batch"]
    undeclared = run.report["steps_not_declared"]
    assert [e["kind"] for e in undeclared] == [
        "multi-token-rows",
        "discarded-rows",
        "prompt-logprobs",
        "pooling-outputs",
        "nan-counts",
        "routed-experts",
        "sampling-masks",
    ]
    assert undeclared[0]["unsupported"] == MULTI_TOKEN
    html = _html(tmp_path, run)
    assert "not applicable (declared)" in html and MULTI_TOKEN in html


def _html(tmp_path, run: suite_runner.Run) -> str:
    from reports.cli import main

    report = tmp_path / "for-html.json"
    report.write_text(json.dumps(run.report), encoding="utf-8")
    out = tmp_path / "html"
    assert main(["--conformance", str(report), "--out", str(out)]) == 0
    return (out / "report.html").read_text(encoding="utf-8")


def test_the_same_producer_judged_on_every_step_fails_the_multi_token_rows(tmp_path) -> None:
    run = _run(tmp_path, "UNDECLARED")
    failed = {t["behaviour"] for t in run.report["tests"] if t["outcome"] == "failed"}
    assert "producer.async_output:unpads-multi-token-rows" in failed
    assert "producer.async_output:step-discarded-rows" in failed
    assert run.report["steps_not_declared"] == []


def test_a_wrong_answer_on_a_declared_step_kind_still_fails(tmp_path) -> None:
    run = _run(tmp_path, "DISCARDS_DECLARED")
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert "producer.async_output:step-discarded-rows" in {t["behaviour"] for t in failed}
    assert all(t["skip_cause"] is None for t in failed)
    skipped = {
        t["behaviour"] for t in run.report["tests"] if t["skip_cause"] == "step-not-declared"
    }
    assert "producer.async_output:step-discarded-rows" not in skipped


@pytest.mark.parametrize("steps", [("speculative",), (1,)])
def test_an_unknown_step_kind_is_refused_naming_the_kinds(steps) -> None:
    import reference

    with pytest.raises(BackendResolutionError, match="step kind"):
        Backend(name="x", module=reference, steps=steps)


def test_each_step_kind_says_what_it_leaves_unsupported() -> None:
    assert set(STEP_KINDS) == {
        "multi-token-rows",
        "discarded-rows",
        "logprobs",
        "prompt-logprobs",
        "pooling-outputs",
        "empty-batch",
        "nan-counts",
        "routed-experts",
        "sampling-masks",
    }
    assert STEP_KINDS["multi-token-rows"] == MULTI_TOKEN


NANS = "broken_backends.async_output_drops_nan_counts"
ROUTED = "broken_backends.async_output_drops_routed_experts"


@pytest.mark.parametrize(
    ("spec", "behaviour", "outcome", "words"),
    [
        (f"{NANS}:BACKEND", "nan-counts", "failed", "num_nans_in_logits: expected {"),
        (
            f"{NANS}:REVERSED",
            "nan-counts",
            "failed",
            "num_nans_in_logits: expected {",
        ),
        (f"{NANS}:NOT_TAKEN", "nan-counts", "skipped", "takes no num_nans"),
        (f"{ROUTED}:BACKEND", "routed-experts", "failed", "routed_experts.routing_data: expected"),
        (f"{ROUTED}:NOT_TAKEN", "routed-experts", "skipped", "takes no routed_experts"),
    ],
)
def test_what_the_runner_hands_over_beside_the_rows_reaches_the_output(
    tmp_path, spec, behaviour, outcome, words
) -> None:
    run = suite_runner.in_process(
        tmp_path,
        ASYNC_OUTPUT,
        "--conformance-backend",
        spec,
        "-k",
        "nan_counts or routed_experts or waits_for_the_device",
    )
    assert run.report is not None
    tests = run.report["tests"]
    judged = [
        t
        for t in tests
        if t["behaviour"] == f"producer.async_output:{behaviour}"
        and t["skip_cause"] != "device-not-present"
    ]
    assert judged and {t["outcome"] for t in judged} == {outcome}, judged
    assert words in judged[0]["message"]
    if outcome == "skipped":
        assert {t["skip_cause"] for t in judged} == {"step-not-declared"}
    # Dropped or not taken, they never make the race check fail.
    races = [t for t in tests if t["behaviour"] == "producer.async_output:waits-for-device"]
    assert races and all(t["outcome"] != "failed" for t in races), races


def test_an_output_rebuilt_from_the_ids_and_rows_loses_what_the_runner_put_on_it(
    tmp_path,
) -> None:
    run = suite_runner.in_process(
        tmp_path,
        ASYNC_OUTPUT,
        "--conformance-backend",
        "broken_backends.async_output_rebuilds_output:BACKEND",
        "-k",
        "gives_the_runner_output_with_its_rows or made_before_the_last",
    )
    assert run.report is not None
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert failed, run.output
    assert any(
        "kv_connector_output: expected the value the runner handed over" in t["message"]
        for t in failed
    ), failed
    # Every field lost is named on the first line, not only the first in field order.
    assert any(
        t["message"]
        .splitlines()[0]
        .endswith(
            ".get_output(): 2 fields not as the runner handed them over "
            "(kv_connector_output, num_nans_in_logits)"
        )
        for t in failed
    ), [t["message"].splitlines()[0] for t in failed]
    # Wrong read alone too: no host memory shared with the next step explains it.
    ahead = [t for t in failed if "made_before_the_last" in t["nodeid"]]
    assert ahead and not [t for t in ahead if "host memory shared" in t["message"]], ahead
