"""benchmarks/device_check.sh: a valid script that insists on its output folder, and whose
dry run proves every step on CPU, so it cannot rot between the days a GPU is at hand."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from vllm_release_texts import RELEASES, SKIP_REASON


def test_device_check_script_is_executable_bash(repo_root: Path) -> None:
    script = repo_root / "benchmarks" / "device_check.sh"
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_device_check_script_requires_an_output_folder(repo_root: Path) -> None:
    script = repo_root / "benchmarks" / "device_check.sh"
    result = subprocess.run([str(script)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 64
    assert "usage:" in result.stderr


@pytest.mark.parametrize("args", [[], ["run"], ["keep"], ["unpack"]])
def test_device_day_script_is_bash_and_names_its_two_commands(repo_root: Path, args) -> None:
    script = repo_root / "benchmarks" / "device_day.sh"
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True)
    result = subprocess.run([str(script), *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 64 and "usage:" in result.stderr


@pytest.mark.long
@pytest.mark.skipif(not (RELEASES / "producers").is_dir(), reason=SKIP_REASON)
def test_the_dry_run_proves_every_step_on_cpu(repo_root: Path, tmp_path: Path) -> None:
    # What a GPU day runs, on CPU: benchmarks once each, conformance, the race check on
    # vLLM's own producers and their mutants (simulated runtime), the report of it all.
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "DRY_RUN": "1",
        "OUTPUTS_BENCH_DEVICES": "cpu",
        "BENCH_ARGS": r"-b ^(link|transfer)\.",
        "RACE_RELEASES": "0.33.0",
        "VLLM_TEXTS": str(RELEASES),
    }
    script = repo_root / "benchmarks" / "device_check.sh"
    done = subprocess.run(
        [str(script), str(out)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    steps = dict(line.split(": ", 1) for line in (out / "status.txt").read_text().splitlines())
    assert list(steps) == ["env", "bench", "conformance", "race", "report"]
    assert all(verdict.startswith("passed") for verdict in steps.values()), steps
    # The commit asv files the results under, and whether the tree measured is that commit.
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=repo_root, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    commit_line = (out / "env.txt").read_text().splitlines()[0]
    assert commit_line.startswith("commit "), commit_line
    assert commit_line.endswith("(the working tree measured differs from it)") == bool(changed)
    # The link's benchmarks were found (and skipped on CPU: it has no link).
    bench_log = (out / "logs" / "bench.log").read_text()
    assert "link.LinkBandwidth.track_gbps" in bench_log
    assert "link.SmallCopy.time_small_copy" in bench_log

    race = json.loads((out / "race" / "race.json").read_text())
    assert race["real_device"] is None  # no GPU here: the simulated column only
    runs = {run["subject"]: run for run in race["runs"]}
    assert runs["vLLM's own"]["records"], runs["vLLM's own"]
    assert set(runs["vLLM's own"]["records"].values()) == {"passed"}
    for mutants in ("first runner, mutants", "Model Runner V2, mutants"):
        assert set(runs[mutants]["records"].values()) == {"failed"}, runs[mutants]
    assert all(run["outcome"] == "as expected" for run in race["runs"])
    # Every mutant is named in the first runner's records: each way of racing failed.
    labels = " ".join(runs["first runner, mutants"]["records"])
    for label in ("copy-first", "event-first", "logprobs-after-event"):
        assert label in labels

    summary = (out / "report" / "summary.md").read_text()
    assert "vllm-first-runner-mutants" in summary and "`vllm` | 0.33.0" in summary


def test_a_device_day_is_kept_beside_the_earlier_ones(repo_root: Path, tmp_path: Path) -> None:
    # An archive as `device_day.sh run` brings it back, made of the first H200 run's files.
    run = tmp_path / "device-check"
    shutil.copytree(repo_root / "docs" / "examples" / "h200" / "asv-results", run / "asv-results")
    shutil.copy(repo_root / "docs" / "examples" / "h200" / "env.txt", run / "env.txt")
    shutil.copy(
        repo_root / "docs" / "examples" / "h200" / "conformance.json", run / "conformance.json"
    )
    archive = tmp_path / "device-check.tar.gz"
    subprocess.run(["tar", "czf", str(archive), "-C", str(tmp_path), "device-check"], check=True)
    day = datetime.datetime(2026, 12, 24, 12, tzinfo=datetime.timezone.utc).timestamp()
    os.utime(archive, (day, day))
    examples = tmp_path / "examples"
    script = repo_root / "benchmarks" / "device_day.sh"
    env = {**os.environ, "EXAMPLES_DIR": str(examples), "PATH": _python_first()}
    done = subprocess.run(
        [str(script), "keep", str(archive)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    kept = examples / "h200" / "2026-12-24"
    assert (kept / "env.txt").is_file() and (kept / "report" / "summary.md").is_file()
    # Kept once: a second keep of the same day overwrites nothing.
    again = subprocess.run(
        [str(script), "keep", str(archive)], env=env, capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 1 and "exists already; nothing overwritten" in again.stderr
    # A second call's run of the same day is kept beside it, by the label it is given.
    second = subprocess.run(
        [str(script), "keep", str(archive), "decode"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    assert (examples / "h200" / "2026-12-24-decode" / "env.txt").is_file()
    wrong = tmp_path / "notes.tar.gz"
    subprocess.run(["tar", "czf", str(wrong), "-C", str(repo_root), "README.md"], check=True)
    refused = subprocess.run(
        [str(script), "keep", str(wrong)], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 1 and "is not an archive of device_day.sh run" in refused.stderr
    # Cut short while packing (the command killed): what the readable part holds is kept.
    ordered = tmp_path / "ordered.tar.gz"  # env.txt first, as the check writes it first
    subprocess.run(
        ["tar", "czf", str(ordered), "-C", str(tmp_path), "device-check/env.txt", "device-check"],
        check=True,
    )
    whole = ordered.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    os.utime(cut, (day, day))
    partial = subprocess.run(
        [str(script), "keep", str(cut), "cut"], env=env, capture_output=True, text=True, timeout=300
    )
    assert "is cut short (its end is missing): keeping what it holds" in partial.stderr
    assert (examples / "h200" / "2026-12-24-cut" / "env.txt").is_file()
    # A run whose env step wrote nothing is kept too, under a folder saying so.
    (run / "env.txt").unlink()
    nameless = tmp_path / "nameless.tar.gz"
    subprocess.run(["tar", "czf", str(nameless), "-C", str(tmp_path), "device-check"], check=True)
    os.utime(nameless, (day, day))
    unnamed = subprocess.run(
        [str(script), "keep", str(nameless)], env=env, capture_output=True, text=True, timeout=300
    )
    assert "its GPU is not named" in unnamed.stderr
    assert (examples / "device" / "2026-12-24" / "conformance.json").is_file()


def _python_first() -> str:
    """PATH with this interpreter's folder first: the script's python3 is this one."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"


def _dry_run_of_the_limits_plan(repo_root: Path, out: Path, **settings: str) -> list[str]:
    """The limits plan run dry on CPU into ``out``: the names of its steps, each passed."""
    env = {
        **os.environ, "PYTHON": sys.executable, "DRY_RUN": "1", "PLAN": "limits",
        "OUTPUTS_BENCH_DEVICES": "cpu", "PATH": _python_first(),
        # The limits are a GPU run's; a shared CPU proves the steps, not their times.
        **{f"{group}_LIMIT": "400" for group in ("BENCH_GATHER", "BENCH_PADDING", "BENCH_DECODE", "BENCH_LINK", "CONFORMANCE")},
        **settings,
    }  # fmt: skip
    script = repo_root / "benchmarks" / "device_check.sh"
    done = subprocess.run(
        [str(script), str(out)], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    steps = dict(line.split(": ", 1) for line in (out / "status.txt").read_text().splitlines())
    assert all(verdict.startswith("passed") for verdict in steps.values()), steps
    return list(steps)


@pytest.mark.long
def test_the_limits_plan_proves_each_of_its_groups_on_cpu(repo_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # The quick and sure first, vLLM's compiled gathering last, the decode step in the
    # same call (issue 57: one run measures all of it); each gathering in two
    # parts by vocabulary, so that a part cut by its limit loses only its own shapes; the
    # report is made by keep.
    assert _dry_run_of_the_limits_plan(repo_root, out) == [
        "env", "bench-link", "conformance",
        "bench-gather-floor-151936", "bench-gather-floor-32000",
        "bench-gather-mrv2-151936", "bench-gather-mrv2-32000",
        "bench-padding", "bench-padding-vllm", "bench-decode-drafts-0", "bench-decode-drafts-3",
        "bench-gather-vllm-151936", "bench-gather-vllm-32000",
    ]  # fmt: skip
    # The limits the floors are computed against, stated beside the link's.
    assert (
        "limits of cpu: memory no rated memory bandwidth for cpu" in (out / "env.txt").read_text()
    )
    for vocabulary, other in (("151936", "32000"), ("32000", "151936")):
        gather_log = (out / "logs" / f"bench-gather-floor-{vocabulary}.log").read_text()
        assert "track_gather_ratio_to_bandwidth_floor" in gather_log
        assert f", {vocabulary}, " in gather_log and f", {other}, " not in gather_log


@pytest.mark.long
def test_the_decode_steps_group_runs_its_targets_tracks_alone(
    repo_root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    steps = _dry_run_of_the_limits_plan(repo_root, out, LIMITS_GROUPS="decode")
    assert steps == ["env", "bench-decode-drafts-0", "bench-decode-drafts-3"]
    # Only the targets' tracks of the decode step: its grid is 24 shapes.
    decode_log = (out / "logs" / "bench-decode-drafts-0.log").read_text()
    assert "track_decode_step_ratio_to_copies_floor_0_34" in decode_log
    assert "peak_bytes" not in decode_log


def test_a_rerun_of_the_limits_plan_runs_only_the_groups_named(
    repo_root: Path, tmp_path: Path
) -> None:
    steps = _dry_run_of_the_limits_plan(
        repo_root, tmp_path / "out", LIMITS_GROUPS="gather-floor conformance"
    )
    assert steps == ["env", "conformance", "bench-gather-floor-151936", "bench-gather-floor-32000"]


def _check_env(**settings: str) -> dict[str, str]:
    """The environment of a dry run of the limits plan on CPU."""
    return {
        **os.environ, "PYTHON": sys.executable, "DRY_RUN": "1", "PLAN": "limits",
        "OUTPUTS_BENCH_DEVICES": "cpu", "PATH": _python_first(), **settings,
    }  # fmt: skip


def _status(out: Path) -> dict[str, str]:
    lines = (out / "status.txt").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines)


def test_steps_the_runs_budget_leaves_no_time_for_are_named_not_run(
    repo_root: Path, tmp_path: Path
) -> None:
    # The env step runs (its env.txt kept even where it is cut), the rest of the plan
    # finds the budget spent: each is named, for a second call.
    out = tmp_path / "out"
    done = subprocess.run(
        [str(repo_root / "benchmarks" / "device_check.sh"), str(out)],
        env=_check_env(CHECK_BUDGET="8", LIMITS_GROUPS="link conformance"),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    status = _status(out)
    assert "env" in status and (out / "env.txt").is_file()
    assert status["conformance"].startswith("not run: the run's time was spent")


def test_a_run_cut_by_its_outer_limit_stops_its_step_and_says_so(
    repo_root: Path, tmp_path: Path
) -> None:
    # device_day.sh's own limit sends TERM: the step in flight is stopped and waited for
    # before the results are packed, and status.txt names it.
    out = tmp_path / "out"
    done = subprocess.run(
        ["timeout", "--kill-after=30", "15", str(repo_root / "benchmarks" / "device_check.sh"),
         str(out)],
        env=_check_env(LIMITS_GROUPS="gather-vllm", BENCH_GATHER_LIMIT="200"),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 124, done.stdout[-2000:] + done.stderr[-2000:]
    assert _status(out)["bench-gather-vllm-151936"] == "cut by the run's time limit"


def test_a_device_day_run_packs_its_env_first(repo_root: Path, tmp_path: Path) -> None:
    archive = tmp_path / "device-check.tar.gz"
    done = subprocess.run(
        [str(repo_root / "benchmarks" / "device_day.sh"), "run", str(archive)],
        env=_check_env(LIMITS_GROUPS="none"), capture_output=True, text=True, timeout=300,
        cwd=repo_root,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    listed = subprocess.run(
        ["tar", "tzf", str(archive)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert listed[0] == "device-check/env.txt"
