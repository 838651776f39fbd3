"""``--bump-to``: the backend judged at its pin and at the target, and what the move breaks."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
import suite_runner
import vllm_texts

from conformance.oracle.vllm_changes import Change
from conformance.releases.texts import write_stub_tree
from conformance.run.bump import Bump, verdicts


def _record(behaviour: str, outcome: str) -> SimpleNamespace:
    return SimpleNamespace(behaviour=behaviour, outcome=outcome, nodeid=f"x::{behaviour}")


def test_a_behaviour_fails_when_any_check_fails_and_passes_when_one_passes() -> None:
    tests = [
        {"behaviour": "A", "outcome": "passed"},
        {"behaviour": "A", "outcome": "failed"},
        {"behaviour": "B", "outcome": "skipped"},
        {"behaviour": "B", "outcome": "passed"},
        {"behaviour": "C", "outcome": "skipped"},
        {"behaviour": "D", "outcome": "xfailed"},
        {"behaviour": "E", "outcome": "xpassed"},
    ]
    assert verdicts(tests) == {
        "A": "failed", "B": "passed", "C": "skipped", "D": "passed", "E": "failed"
    }  # fmt: skip


def test_breaks_come_first_then_fixes_then_the_rest() -> None:
    before = [
        {"behaviour": "T.kept", "outcome": "passed"},
        {"behaviour": "T.breaks", "outcome": "passed"},
        {"behaviour": "T.fixed", "outcome": "failed"},
        {"behaviour": "T.gone", "outcome": "passed"},
        {"behaviour": "T.skipped", "outcome": "passed"},
    ]
    after = [
        _record("T.kept", "passed"),
        _record("T.breaks", "failed"),
        _record("T.fixed", "passed"),
        _record("T.new-failing", "failed"),
        _record("T.new", "passed"),
        _record("T.skipped", "skipped"),
    ]
    change = Change("vllm.v1.outputs", "T", "breaks", "body changed", "body 1", "body 2")
    bump = Bump("A", "B", {"tests": before}, None, [change])
    rows = bump.behaviours(after)
    assert [(r["behaviour"], r["change"]) for r in rows] == [
        ("T.breaks", "breaks"),
        ("T.new-failing", "breaks"),
        ("T.fixed", "fixed"),
        ("T.new", "new"),
        ("T.gone", "gone"),
        ("T.skipped", "changed"),
    ]
    assert rows[0]["vllm_changes"] == ["body changed T.breaks"]
    assert bump.report_key(after)["breaks"] == 2


def test_a_behaviour_failing_at_both_breaks_where_a_check_passing_at_a_fails_at_b() -> None:
    from conformance.run.bump import terminal_lines

    before = [
        {"behaviour": "T.dataclass", "outcome": "failed", "nodeid": "x::defaults"},
        {"behaviour": "T.dataclass", "outcome": "passed", "nodeid": "x::stores"},
        {"behaviour": "T.same", "outcome": "failed", "nodeid": "x::same"},
    ]
    after = [
        SimpleNamespace(behaviour="T.dataclass", outcome="failed", nodeid="x::defaults"),
        SimpleNamespace(behaviour="T.dataclass", outcome="failed", nodeid="x::stores"),
        SimpleNamespace(behaviour="T.same", outcome="failed", nodeid="x::same"),
    ]
    key = Bump("A", "B", {"tests": before}, None, []).report_key(after)
    assert [(r["behaviour"], r["change"], r.get("newly_failing")) for r in key["behaviours"]] == [
        ("T.dataclass", "breaks", 1)
    ]
    assert key["breaks"] == 1
    assert "1 check(s) passing at A now fail" in "\n".join(terminal_lines(key))


def test_a_behaviour_the_target_names_anew_is_not_said_to_be_unjudged_at_the_pin() -> None:
    from conformance.run.bump import terminal_lines

    before = [{"behaviour": "T.old-name", "outcome": "passed", "nodeid": "x::reads"}]
    after = [SimpleNamespace(behaviour="T.new-name", outcome="failed", nodeid="x::reads")]
    key = Bump("A", "B", {"tests": before}, None, []).report_key(after)
    [row] = [r for r in key["behaviours"] if r["behaviour"] == "T.new-name"]
    assert row["newly_failing"] == 1
    line = next(line for line in terminal_lines(key) if "T.new-name" in line)
    assert line.endswith(
        "T.new-name: not a behaviour at A -> failed, its 1 check(s) passed at A under "
        "another behaviour"
    )


def test_vllm_0_32_own_types_bumped_to_0_33_break_on_get_kv_connector_output(tmp_path) -> None:
    vllm_texts.release_text("0.32.0")
    run = suite_runner.subprocess_run(
        tmp_path,
        "--vllm-outputs", str(vllm_texts.RELEASES / "outputs-0.32.0.py.txt"),
        "--bump-to", "0.33.0", "-k", "async_model_runner_output",
        module="conformance",
    )  # fmt: skip
    assert run.exit_code == 1, run.output[-3000:]
    bump = run.report["bump"]
    assert (bump["from"], bump["to"], run.report["spec_revision"]) == ("0.32.0", "0.33.0", "0.33.0")
    added = [c for c in bump["vllm_changes"] if c["type"] == "AsyncModelRunnerOutput"]
    assert [(c["member"], c["change"]) for c in added] == [
        ("get_kv_connector_output", "method added")
    ]
    assert "@abstractmethod" in added[0]["new"]
    breaks = {r["behaviour"]: r for r in bump["behaviours"] if r["change"] == "breaks"}
    assert breaks["AsyncModelRunnerOutput.surface"]["from"] == "passed"
    assert breaks["AsyncModelRunnerOutput.get_kv_connector_output"]["from"] is None
    assert any(
        "get_kv_connector_output" in c
        for c in breaks["AsyncModelRunnerOutput.surface"]["vllm_changes"]
    )
    assert "BREAKS  AsyncModelRunnerOutput.surface: passed -> failed" in run.output
    assert "bump: moving the pin breaks" in run.output
    at_pin = json.loads((tmp_path / "report.bump-from.json").read_text())
    assert at_pin["spec_revision"] == "0.32.0" and at_pin["summary"]["failed"] == 0
    # The side report is named where the user looks: the report and the terminal.
    assert bump["from_report"] == str(tmp_path / "report.bump-from.json")
    assert (
        f"bump: the report at the pin 0.32.0 written to {tmp_path / 'report.bump-from.json'}"
        in (run.output)
    )


def test_the_side_report_of_a_bump_is_documented_where_its_option_is() -> None:
    from conformance.cli.main import build_parser

    [bump_to] = [a for a in build_parser()._actions if "--bump-to" in a.option_strings]
    assert "beside --report as NAME.bump-from.json" in str(bump_to.help)


def test_a_bump_that_breaks_nothing_exits_0(tmp_path) -> None:
    run = suite_runner.in_process(
        tmp_path, "--pyargs", "conformance", "--conformance-backend", "reference@0.15.0",
        "--conformance-bump-to", "0.15.1", "-k", "draft_token_ids",
    )  # fmt: skip
    assert run.exit_code == 0
    bump = run.report["bump"]
    assert (bump["breaks"], bump["behaviours"], bump["vllm_changes"]) == (0, [], [])


@pytest.mark.parametrize("option", ["--conformance-bump-to", "--conformance-revision"])
def test_a_bad_target_is_a_usage_error_before_any_check(tmp_path, option) -> None:
    run = suite_runner.in_process(
        tmp_path, "--pyargs", "conformance", option, str(tmp_path / "nothing-here.py")
    )
    assert run.exit_code == 4 and run.report is None


@pytest.mark.parametrize("option", ["--bump-to", "--revision"])
def test_an_unknown_release_names_the_option_that_gave_it(tmp_path, option) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", "reference", option, "9.9.9", module="conformance", report=False
    )
    assert run.exit_code == 4
    assert f"{option}: unknown spec revision '9.9.9'" in run.output


def test_a_bump_to_the_newest_release_says_what_the_hand_over_becomes() -> None:
    from conformance.run.bump import handover_changes

    from_first_runner = handover_changes("0.12.0", "0.34.0")
    assert from_first_runner[0].startswith(
        "the default runner: gpu-model-runner -> model-runner-v2"
    )
    assert "unpadded by count (not -1, never filtered by value)" in from_first_runner[1]
    assert from_first_runner[2].startswith("the first runner is gone")
    # From a pin where Model Runner V2 was already the default, a plugin shaped like the
    # first runner still meets Model Runner V2's step for the first time.
    assert handover_changes("0.33.0", "0.34.0") == from_first_runner[1:]
    assert handover_changes("0.30.0", "0.33.0") == []  # the same runner, the same step
    assert handover_changes("0.33.0", "/src/vllm") == []  # a tree says no release


def test_a_bump_without_a_report_leaves_no_report_of_the_pin_behind(tmp_path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", "reference@0.15.0", "--bump-to", "0.15.1", "-k",
        "draft_token_ids", report=False, env={"TMPDIR": str(scratch)}, module="conformance",
    )  # fmt: skip
    assert run.exit_code == 0, run.output[-2000:]
    assert "bump from 0.15.0 to 0.15.1" in run.output
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("conformance-bump-")]


BORROWING_THEN_IMPORTING_THE_REST = """
try:
    from vllm.v1.outputs import *  # noqa: F403
    VLLM = True
except ImportError:
    VLLM = False
    from reference.revisions import reference_module

    _types = reference_module("0.12.0")
    globals().update({name: getattr(_types, name) for name in _types.__all__})
if VLLM:
    import vllm.engine.arg_utils  # the rest of vLLM, which 0.34.0 has and no text holds
"""


def test_a_borrowing_backend_that_cannot_import_the_targets_vllm_is_judged_as_imported(
    tmp_path,
) -> None:
    # Its re-import with vLLM 0.34.0's texts raises: the import path is put back, so the
    # workers (-n 2) import it as this process did, and the run judges it as imported.
    (tmp_path / "borrowing_outputs.py").write_text(BORROWING_THEN_IMPORTING_THE_REST)
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend", "borrowing_outputs", "--revision", "0.12.0", "--bump-to", "0.34.0",
        "-k", "test_logprobs_lists.py", "-n", "2",
        module="conformance", env={"PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert run.exit_code in (0, 1), run.output[-3000:]
    assert "imported with 0.34.0 as its vllm, it raised" in run.output
    assert "judged as imported" in run.output and "INTERNALERROR" not in run.output
    assert run.report["summary"]["passed"] > 0


BORROWING_THEN_IMPORTING_WHAT_THE_TARGET_LACKS = BORROWING_THEN_IMPORTING_THE_REST.replace(
    "    import vllm.engine.arg_utils  # the rest of vLLM, which 0.34.0 has and no text holds",
    "    from vllm.v1.worker.gpu_model_runner import (  # 0.34.0 has no first runner\n"
    "        AsyncGPUModelRunnerOutput,\n"
    "    )",
)


def test_a_borrowing_backend_whose_own_import_the_target_lacks_breaks_there_alone(
    tmp_path,
) -> None:
    # Its own line imports a module 0.34.0's wheel does not hold: that import is what
    # moving the pin breaks, not vLLM's classes of the pin judged at the target.
    (tmp_path / "borrowing_outputs.py").write_text(BORROWING_THEN_IMPORTING_WHAT_THE_TARGET_LACKS)
    vllm_texts.release_text("0.33.0")  # skips where the texts are not fetched
    stub = write_stub_tree(
        vllm_texts.RELEASES / "outputs-0.33.0.py.txt", "0.33.0", tmp_path / "pin"
    )
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend", "borrowing_outputs", "--bump-to", "0.34.0",
        "-k", "test_module.py or test_logprobs_lists.py",
        module="conformance", env={"PYTHONPATH": os.pathsep.join([str(stub), str(tmp_path)])},
    )  # fmt: skip
    assert run.exit_code == 1, run.output[-3000:]
    lacked = "its own code imports vllm.v1.worker.gpu_model_runner (at borrowing_outputs.py:12: "
    breaks = {
        r["behaviour"]: r for r in run.report["bump"]["behaviours"] if r["change"] == "breaks"
    }
    assert set(breaks) == {"module.spec-names"}, breaks
    [failed] = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert lacked in failed["message"] and "which vLLM 0.34.0 does not have" in failed["message"]
    others = [t for t in run.report["tests"] if "test_logprobs_lists.py" in t["nodeid"]]
    assert others and {t["skip_cause"] for t in others} == {"follows-from-failure"}
    assert "BREAKS  module.spec-names: passed -> failed" in run.output
