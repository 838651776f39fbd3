"""tests/conformance/device_race.py, the GPU day's race check: how it judges each run and
compares the real device with the simulated runtime (the runs themselves are made by
the device check's dry run, tests/benchmarks/test_bench_device_check_script.py)."""

from __future__ import annotations

from pathlib import Path

import device_race
import pytest
from device_race import Job, disagreements, judge
from vllm_release_texts import RELEASES, SKIP_REASON


def _job(expect: str, **records: str) -> Job:
    return Job("0.33.0", "what", expect, [], tree=False, records=dict(records))


def _report(*outcomes: str, message: str = "found stale data") -> dict:
    return {
        "tests": [
            {"nodeid": f"t[race-k5-{i}]", "outcome": o, "message": message if o == "failed" else ""}
            for i, o in enumerate(outcomes)
        ]
    }


@pytest.mark.parametrize(
    ("expect", "outcomes", "verdict"),
    [
        ("pass", ("passed", "passed", "skipped"), "as expected"),
        ("pass", ("passed", "failed"), "1 of 2 passed: vLLM's own must pass"),
        ("fail", ("failed", "failed"), "as expected"),
        ("fail", ("failed", "passed"), "1 of 2 failed: every mutant must fail"),
        ("some-fail", ("passed", "failed"), "as expected"),
        ("some-fail", ("passed",), "nothing failed: the broken backend must fail"),
        ("pass", ("skipped",), "nothing judged (every record skipped or deselected)"),
    ],
)
def test_each_run_is_judged_by_what_it_must_show(expect, outcomes, verdict) -> None:
    assert judge(_job(expect), _report(*outcomes), 0) == verdict


def test_a_mutant_that_raises_has_not_lost_a_race() -> None:
    """On the H200 two mutants failed every record by raising (torch refused the
    stand-in stream; a torch.Event's synchronize could not be replaced): "failed as
    expected" hid that the race was never run."""
    message = "make_async_output(<step race-k5>).get_output(): raised RuntimeError: expected stream"
    verdict = judge(_job("fail"), _report("failed", "failed", message=message), 0)
    assert verdict.startswith("2 of 2 failed by raising, not by a lost race")
    assert "race-k5-0: RuntimeError: expected stream" in verdict
    # Beside a race the device did not lose, still broken: main() revisits only verdicts
    # of passes alone (a race not lost), never one that raised.
    verdict = judge(_job("fail"), _report("failed", "passed", message=message), 0)
    assert verdict.startswith("1 of 2 failed by raising")
    assert not verdict.endswith(device_race.EVERY_MUTANT_MUST_FAIL)
    # A broken backend may well raise: some of its records must fail, however.
    assert judge(_job("some-fail"), _report("failed", message=message), 0) == "as expected"


def test_a_run_without_a_report_says_how_it_ended() -> None:
    assert judge(_job("pass"), None, 3) == "no report (exit 3)"
    assert judge(_job("pass"), None, None) == "no report (exit None)"


def test_only_records_judged_on_both_runtimes_are_compared() -> None:
    real = _job("pass", a="failed", b="failed", c="failed")
    simulated = _job("pass", a="failed", b="passed")
    assert disagreements(real, simulated) == ["b: real failed, simulated passed"]


def test_a_race_only_the_simulation_loses_is_named_not_a_disagreement() -> None:
    """A fast GPU may not lose the race a mutant opens (on the H200, a logprobs copy
    queued after the event landed before the host read it); the simulated runtime, late
    every time, catches it.  The reverse, a failure only the device shows, is the
    simulation's defect."""
    real = _job("fail", late="passed", wait="failed")
    simulated = _job("fail", late="failed", wait="failed")
    assert disagreements(real, simulated) == []
    assert device_race.races_not_lost(real, simulated) == ["late"]
    assert device_race.races_not_lost(_job("pass", late="passed"), simulated) == []


def test_missing_release_texts_are_one_line_naming_the_fix(tmp_path: Path, capsys) -> None:
    code = device_race.main(["--texts", str(tmp_path), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "no release text for 0.11.0, 0.22.0, 0.33.0, 0.34.0" in err
    assert "--texts" in err and not (tmp_path / "o").exists()


@pytest.mark.skipif(not (RELEASES / "producers").is_dir(), reason=SKIP_REASON)
def test_with_a_device_each_run_is_made_on_both_runtimes_and_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    made: list[tuple[str, str]] = []

    def fake_run(job: Job, out, trees, simulated: bool, cwd) -> Job:
        runtime = "simulated" if simulated else "real"
        made.append((job.subject, runtime))
        # The device fails vLLM's own (the simulation's defect) and does not lose
        # the first runner's mutants' race (no defect: the simulation caught it).
        verdict = {"pass": "passed", "fail": "failed", "some-fail": "failed"}[job.expect]
        flipped = {"passed": "failed", "failed": "passed"}[verdict]
        differs = runtime == "real" and job.subject in ("vLLM's own", "first runner, mutants")
        outcome = flipped if differs else verdict
        nodeid = f"t::{device_race.RACE}"
        report = {"tests": [{"nodeid": nodeid, "outcome": outcome, "message": ""}]}
        return Job(**{**job.__dict__, "runtime": runtime, "outcome": judge(job, report, 0),
                      "records": {nodeid: outcome}})  # fmt: skip

    monkeypatch.setattr(device_race, "run", fake_run)
    monkeypatch.setattr(device_race, "real_device_present", lambda: True)
    code = device_race.main(
        ["--texts", str(RELEASES), "--out", str(tmp_path), "--releases", "0.33.0"]
    )
    assert code == 1  # the runtimes disagreed on vLLM's own
    # The Triton kernels run on the real device alone; everything else on both.
    assert ("Model Runner V2, Triton kernels", "simulated") not in made
    assert ("Model Runner V2, Triton kernels", "real") in made
    assert made.count(("vLLM's own", "real")) == made.count(("vLLM's own", "simulated")) == 1
    table = (tmp_path / "race.md").read_text()
    assert f"t::{device_race.RACE}: real failed, simulated passed" in table
    assert (
        "| 0.33.0 | vLLM's own | pass | 1 failed: 0 of 1 passed: vLLM's own must pass "
        "| 1 passed: as expected | no |" in table
    )
    assert (
        "| 0.33.0 | first runner, mutants | fail | 1 passed: as expected: 0 races lost on the "
        f"device, 1 not lost there and caught by the simulated runtime (t::{device_race.RACE}) "
        "| 1 failed: as expected | yes |"
    ) in table
    # The pooling race check is the simulated runtime's alone.
    assert ("first runner pooling, mutants", "real") not in made
    assert ("first runner pooling, mutants", "simulated") in made
    assert "| first runner pooling, mutants | fail | simulated runtime only |" in table
    assert (
        "| 0.33.0 | Model Runner V2, Triton kernels | pass | 1 passed: as expected | - | - |"
        in table
    )


def test_each_runner_a_release_has_is_raced_and_only_those(tmp_path: Path) -> None:
    """0.33.0 has both runners; 0.34.0 removed the first: no first-runner mutants there."""
    (tmp_path / "producers").mkdir()
    (tmp_path / "producers-mrv2").mkdir()
    for release in ("0.33.0", "0.34.0"):
        (tmp_path / f"outputs-{release}.py.txt").write_text("")
        (tmp_path / "producers-mrv2" / f"producers-mrv2-{release}.py.txt").write_text("")
    (tmp_path / "producers" / "producers-0.33.0.py.txt").write_text("")
    both = {job.subject for job in device_race.jobs_of("0.33.0", tmp_path)}
    newest = {job.subject for job in device_race.jobs_of("0.34.0", tmp_path)}
    mrv2 = {"vLLM's own", "Model Runner V2, mutants", "Model Runner V2, waits on an idle stream",
            "Model Runner V2, Triton kernels"}  # fmt: skip
    assert newest == mrv2
    assert both == mrv2 | {"first runner, mutants", "first runner pooling, mutants"}


def test_the_default_releases_are_printed_for_the_device_check(capsys) -> None:
    """benchmarks/device_check.sh reads them here rather than keeping a copy."""
    assert device_race.main(["--print-releases"]) == 0
    assert capsys.readouterr().out.split() == list(device_race.RACE_RELEASES)
