"""The first runner's pooling async output, vLLM's ``AsyncGPUPoolingModelRunnerOutput``
(0.14.0 on), is judged like Model Runner V2's: vLLM's own class passes its revision, from
a release text (its copy helper the suite's stand-in, and a note says so), and the same
class changed to race fails the pooling race check, both ways it can.  The release texts
come from the release texts (fetched into the user cache); without them these tests skip.
"""

from __future__ import annotations

import pytest
import suite_runner
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance.releases.texts import write_stub_tree

needs_texts = pytest.mark.skipif(not (RELEASES / "producers").is_dir(), reason=SKIP_REASON)
JUDGED = "vllm.v1.worker.gpu_model_runner.AsyncGPUPoolingModelRunnerOutput (gpu-model-runner)"


def _pooling_records(run: suite_runner.Run, producer: str) -> list[dict]:
    assert run.report is not None, run.output[-2000:]
    return [t for t in run.report["tests"] if t.get("producer") == producer]


# 0.14.0 copies through json_map_leaves, 0.17.0 on through _copy_pooler_output_to_cpu.
@needs_texts
@pytest.mark.parametrize(("version", "helper"), [
    ("0.14.0", "json_map_leaves"),
    ("0.33.0", "_copy_pooler_output_to_cpu"),
])  # fmt: skip
def test_the_first_runners_own_pooling_output_passes_its_release(
    tmp_path, version: str, helper: str
) -> None:
    run = suite_runner.subprocess_run(
        tmp_path,
        "--vllm-outputs",
        str(RELEASES / f"outputs-{version}.py.txt"),
        "-k",
        "pooling",
        module="conformance",
    )
    assert run.exit_code == 0, run.output[-2000:]
    records = _pooling_records(run, JUDGED)
    behaviours = {r["behaviour"] for r in records}
    # From 0.33.0 it is asked for its KV output too (get_kv_connector_output).
    asked_for_kv = (
        {"AsyncModelRunnerOutput.get_kv_connector_output"} if version >= "0.33" else set()
    )
    assert (
        behaviours
        == {
            "producer.pooling_output",
            "producer.pooling_output:invalid-rows",
            "producer.pooling_output:waits-for-device",
        }
        | asked_for_kv
    )
    assert all(r["outcome"] == "passed" for r in records), records
    # The race ran (the device still busy when the output was made), not skipped.
    assert any(r["behaviour"].endswith("waits-for-device") for r in records)
    assert f"the suite's stand-in for {helper}" in run.output


@needs_texts
@pytest.mark.parametrize("version", ["0.14.0", "0.17.0"])
def test_the_first_runners_pooling_output_racing_fails_waits_for_device(
    tmp_path, version: str
) -> None:
    tree = write_stub_tree(RELEASES / f"outputs-{version}.py.txt", version, tmp_path / "tree")
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        "first_runner_pooling_mutants:make",
        "-k",
        "pooling",
        module="conformance",
        env={"PYTHONPATH": str(tree)},
    )
    assert run.report is not None, run.output[-2000:]
    race = [
        t for t in run.report["tests"]
        if t["behaviour"] == "producer.pooling_output:waits-for-device"
    ]  # fmt: skip
    assert {t["nodeid"].split("[")[1].split("-")[0] for t in race} == {"without", "copy"}
    for record in race:
        assert record["outcome"] == "failed", record
        assert "stale data" in record["message"], record
    # The output that never waits is told which copy it handed over and what to wait for.
    [unwaited] = [t for t in race if "[without-wait" in t["nodeid"]]
    assert "get_output() returned before its copy arrived" in unwaited["message"], unwaited
    assert (
        "wait first for WithoutWait.async_copy_ready_event.synchronize()" in unwaited["message"]
    ), unwaited
    # Copying first is only wrong while the device is still computing: on an idle one
    # the rest of the contract holds.  Not waiting reads every copy before it arrived
    # (the simulated copies land only at a wait), except in the empty batch.
    for record in run.report["tests"]:
        if record in race:
            continue
        empty = record["nodeid"].endswith("-empty-batch]")
        # The check of a step made ahead lets the device finish both steps' copies first.
        ahead = "made_before_the_last" in record["nodeid"]
        expected = "passed" if "[copy-first" in record["nodeid"] or empty or ahead else "failed"
        assert record["outcome"] == expected, record


@needs_texts
def test_rows_handed_to_other_requests_are_a_wrong_value_not_a_race(tmp_path) -> None:
    tree = write_stub_tree(RELEASES / "outputs-0.17.0.py.txt", "0.17.0", tmp_path / "tree")
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        "first_runner_pooling_mutants:swapped",
        "-k",
        "pooling",
        module="conformance",
        env={"PYTHONPATH": str(tree)},
    )
    assert run.report is not None, run.output[-2000:]
    outcomes = {(t["behaviour"], t["outcome"]) for t in run.report["tests"]}
    assert ("producer.pooling_output", "failed") in outcomes
    [race] = [
        t for t in run.report["tests"]
        if t["behaviour"] == "producer.pooling_output:waits-for-device"
    ]  # fmt: skip
    assert race["outcome"] == "failed", race
    assert "a wrong value, not a race (the same with the device idle)" in race["message"]
    assert "values read before they arrived" not in run.output


@needs_texts
@pytest.mark.parametrize(
    ("mutant", "words", "checks"),
    [
        ("cast", "expected torch.float32, the dtype the device computed", "pooling_output_gives"),
        (
            "rebuilt",
            ".kv_connector_output: expected the runner's ModelRunnerOutput with its",
            "pooling_output_gives",
        ),
        # Right step by step; wrong where the next step is made before one is read.
        ("one_buffer", "host memory shared with the next step", "pooling"),
    ],
)
def test_a_pooling_output_hands_over_the_runners_output_and_rows_as_computed(
    tmp_path, mutant: str, words: str, checks: str
) -> None:
    tree = write_stub_tree(RELEASES / "outputs-0.17.0.py.txt", "0.17.0", tmp_path / "tree")
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        f"first_runner_pooling_mutants:{mutant}",
        "-k",
        checks,
        module="conformance",
        env={"PYTHONPATH": str(tree)},
    )
    assert run.report is not None, run.output[-2000:]
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert failed, run.output[-2000:]
    assert all(words in t["message"] for t in failed), [t["message"] for t in failed]


@needs_texts
def test_a_plugin_declaring_the_first_runners_pooling_class_unchanged_passes(tmp_path) -> None:
    tree = write_stub_tree(RELEASES / "outputs-0.22.0.py.txt", "0.22.0", tmp_path / "tree")
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        "first_runner_pooling_mutants:unchanged",
        "-k",
        "pooling",
        module="conformance",
        env={"PYTHONPATH": str(tree)},
    )
    assert run.exit_code == 0, run.output[-2000:]
    assert run.report is not None
    assert len(run.report["tests"]) == 5
    assert all(t["outcome"] == "passed" for t in run.report["tests"])
