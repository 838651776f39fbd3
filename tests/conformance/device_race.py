"""The race check's verdicts on vLLM's own producers and their mutants, on a real device
and on the simulated runtime side by side.

``python tests/conformance/device_race.py --texts DIR --out OUT [--releases 0.11.0 ...]``

For each release (default 0.11.0, 0.22.0, 0.33.0, 0.34.0; ``DIR`` is a folder of release texts
laid out as the cache of fetched texts, producers beside them; default: that cache) it runs
``python -m conformance``:

- on vLLM's own async outputs, both runners' where the release has two, from the
  texts (``--vllm-outputs``): every race record must pass;
- on the same classes changed to race (:mod:`first_runner_mutants`, :mod:`mrv2_mutants`,
  :mod:`first_runner_pooling_mutants`), for each runner the release has: every race
  record must fail; Model Runner V2's copies ordered after an idle stream too;
- on the broken backends whose defect is a device's (:data:`BROKEN`): some check must fail;
- on Model Runner V2's Triton kernels (its gathering, its rejection sampler's logprobs of
  speculative rows), on the real device only: every record must pass.

Each run happens on the real device when torch sees one (``cuda``) and always on the
simulated runtime (the same run with ``CUDA_VISIBLE_DEVICES`` empty).  A record the
device fails and the simulation passes is a defect of the simulation: the run says
which.  The reverse is not: the simulation delivers every value late, a fast device only
when the race is lost, so a mutant's race the device did not lose is named, not wrong.
On a machine without a GPU only the simulated column is filled: the CPU dry run of
``benchmarks/device_check.sh``, which the project's tests make.

Writes ``OUT/race.json`` (every run: what it judged, what was expected, the records),
``OUT/race.md`` (a table) and each run's report and log under ``OUT/runs/``.  Exit
status: 0 when every verdict is as expected and the runtimes agree, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from conformance.releases.fetch import texts_folder
from conformance.releases.texts import mrv2_text_beside, producer_text_beside

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

RACE_RELEASES = ("0.11.0", "0.22.0", "0.33.0", "0.34.0")
#: The race checks' records (``test_*_waits_for_the_device``).
RACE = "waits_for_the_device"
#: Broken backends whose defect is in how they reach the host from the device.
BROKEN = (
    "async_output_does_not_wait:BACKEND",
    "to_cpu_copies_on_cpu",
    "without_to_cpu_nonblocking",
)
SIMULATED = "-simulated"
#: How a check words an exception the producer raised (conformance.oracle.failing.attempt).
RAISED = ": raised "
#: The end of a run's verdict where a mutant's record passed.
EVERY_MUTANT_MUST_FAIL = "every mutant must fail"
#: Seconds one run may take (a release text's first run compiles nothing; a few seconds).
RUN_TIMEOUT = 300


@dataclass
class Job:
    """One ``python -m conformance`` run: what it judges and what must come of it."""

    release: str
    subject: str
    expect: str  # "pass": every record passes; "fail": every record fails; "some-fail"
    args: list[str]
    tree: bool  # the release's stub tree first on the path (mutants import vllm)
    real_only: bool = False  # what only a real device runs (Triton kernels)
    simulated_only: bool = False  # what the suite judges on the simulated runtime alone
    runtime: str = ""
    outcome: str = ""  # "as expected", or what went wrong
    records: dict[str, str] = field(default_factory=dict)  # node id -> outcome


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def jobs_of(release: str, texts: Path) -> list[Job]:
    """The runs that judge ``release``: its own producers, its mutants, the broken backends."""
    text = texts / f"outputs-{release}.py.txt"
    race = ["-k", RACE]
    jobs = [Job(release, "vLLM's own", "pass", ["--vllm-outputs", str(text), *race], tree=False)]
    # The first runner's text beside the release's: 0.34.0 removed that runner.
    first_runner = producer_text_beside(text, release) is not None
    if first_runner:
        jobs.append(
            Job(
                release,
                "first runner, mutants",
                "fail",
                ["--backend", "first_runner_mutants:make", *race],
                tree=True,
            )
        )
    if mrv2_text_beside(text, release) is not None:
        jobs.append(
            Job(
                release,
                "Model Runner V2, mutants",
                "fail",
                ["--backend", "mrv2_mutants:make", *race],
                tree=True,
            )
        )
        jobs.append(
            Job(
                release,
                "Model Runner V2, waits on an idle stream",
                "fail",
                ["--backend", "mrv2_mutants:waits_on_an_idle_stream", *race],
                tree=True,
            )
        )
        # Its Triton kernels (the gathering, the rejection sampler's logprobs of
        # speculative rows), which only a GPU (or Triton's interpreter) runs.
        jobs.append(
            Job(
                release,
                "Model Runner V2, Triton kernels",
                "pass",
                ["--vllm-outputs", str(text), "-k", "triton"],
                tree=False,
                real_only=True,
            )
        )
    if first_runner and _version_key(release) >= (0, 14, 0):  # its pooling output
        jobs.append(
            Job(
                release,
                "first runner pooling, mutants",
                "fail",
                ["--backend", "first_runner_pooling_mutants:make", *race],
                tree=True,
                # The pooling race check runs on the simulated runtime only (on a real
                # device the sampling output's race check covers the same copies).
                simulated_only=True,
            )
        )
    return jobs


def broken_jobs() -> list[Job]:
    return [
        Job(
            "2025.10",
            f"broken: {spec.split(':')[0]}",
            "some-fail",
            ["--backend", f"broken_backends.{spec}"],
            tree=False,
        )
        for spec in BROKEN
    ]


def judge(job: Job, report: dict | None, exit_code: int | None) -> str:
    """``"as expected"``, or what went wrong, in a line."""
    if report is None:
        return f"no report (exit {exit_code})"
    outcomes = [t["outcome"] for t in report["tests"] if t["outcome"] != "skipped"]
    if not outcomes:
        return "nothing judged (every record skipped or deselected)"
    if job.expect == "pass" and set(outcomes) != {"passed"}:
        return f"{outcomes.count('passed')} of {len(outcomes)} passed: vLLM's own must pass"
    raised = [t for t in report["tests"] if t["outcome"] == "failed" and RAISED in t["message"]]
    if job.expect == "fail" and raised:
        # A mutant must fail by the race it opens; one that raises does not run here
        # (on the H200, a stream torch refused, an event method it would not replace).
        return (
            f"{len(raised)} of {len(outcomes)} failed by raising, not by a lost race: "
            f"the mutant is broken here ({_case_of(raised[0]['nodeid'])}: "
            f"{raised[0]['message'].split(RAISED, 1)[1][:160]})"
        )
    if job.expect == "fail" and set(outcomes) != {"failed"}:
        return f"{outcomes.count('failed')} of {len(outcomes)} failed: {EVERY_MUTANT_MUST_FAIL}"
    if job.expect == "some-fail" and "failed" not in outcomes:
        return "nothing failed: the broken backend must fail"
    return "as expected"


def run(job: Job, out: Path, trees: dict[str, Path], simulated: bool, cwd: Path) -> Job:
    """``job`` on one runtime, its report and log under ``out/runs``; ``cwd``: where
    the run works (its ``.hypothesis`` database stays there)."""
    job = Job(**{**asdict(job), "runtime": "simulated" if simulated else "real"})
    name = re.sub(r"[^\w.-]+", "_", f"{job.release}-{job.subject}-{job.runtime}")
    report_path, log_path = out / "runs" / f"{name}.json", out / "runs" / f"{name}.log"
    env = dict(os.environ)
    path = [str(HERE)] + ([str(trees[job.release])] if job.tree else [])
    env["PYTHONPATH"] = os.pathsep.join([*path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if simulated:
        env["CUDA_VISIBLE_DEVICES"] = ""
    command = [sys.executable, "-m", "conformance", *job.args, "--report", str(report_path)]
    with log_path.open("w", encoding="utf-8") as log:
        try:
            done = subprocess.run(
                command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                timeout=RUN_TIMEOUT, check=False,
            )  # fmt: skip
            exit_code: int | None = done.returncode
        except subprocess.TimeoutExpired:
            exit_code = None
    report = json.loads(report_path.read_text()) if report_path.is_file() else None
    job.outcome = judge(job, report, exit_code)
    if report is not None:
        job.records = {
            t["nodeid"].replace(SIMULATED, ""): t["outcome"]
            for t in report["tests"]
            if t["outcome"] != "skipped"
        }
    return job


def disagreements(real: Job, simulated: Job) -> list[str]:
    """The records judged on both runtimes whose verdicts differ as they must not: the
    device failed and the simulation passed (it missed what the device showed).

    The simulated runtime delivers a step's values late every time; a real device only
    when the race is lost, which a fast GPU may not lose (a copy queued after the event
    can still land before the host reads it).  So a record that fails simulated may pass
    on the device without the simulation being wrong: :func:`races_not_lost` names them."""
    return [
        f"{nodeid}: real failed, simulated passed"
        for nodeid, outcome in sorted(real.records.items())
        if outcome == "failed" and simulated.records.get(nodeid) == "passed"
    ]


def races_not_lost(real: Job, simulated: Job) -> list[str]:
    """The records of a run that must fail which the device passed and the simulation failed."""
    if real.expect != "fail":
        return []
    return [
        nodeid
        for nodeid, outcome in sorted(real.records.items())
        if outcome == "passed" and simulated.records.get(nodeid) == "failed"
    ]


def _case_of(nodeid: str) -> str:
    """``race-k5-logprobs-after-event-cuda`` of a record's node id."""
    return nodeid.rsplit("[", 1)[-1].rstrip("]")


def real_device_present() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _cell(runs: dict[str, Job], runtime: str) -> str:
    """A run's records counted by outcome, and its verdict."""
    job = runs.get(runtime)
    if job is None and runtime == "real" and next(iter(runs.values())).simulated_only:
        return "simulated runtime only"
    if job is None:
        return "no device" if runtime == "real" else "-"
    outcomes = list(job.records.values())
    told = ", ".join(f"{outcomes.count(o)} {o}" for o in sorted(set(outcomes)))
    return f"{told}: {job.outcome}"


def markdown(
    by_runtime: dict[tuple[str, str], dict[str, Job]], disagreeing: dict[str, list[str]]
) -> str:
    lines = [
        "# The race check on vLLM's own producers and their mutants",
        "",
        "| release | what | expected | real cuda | simulated runtime | runtimes agree |",
        "|---|---|---|---|---|---|",
    ]
    for (release, subject), runs in by_runtime.items():
        key = f"{release} {subject}"
        agree = "-" if key not in disagreeing else ("no" if disagreeing[key] else "yes")
        expected = next(iter(runs.values())).expect
        lines.append(
            f"| {release} | {subject} | {expected} | {_cell(runs, 'real')} "
            f"| {_cell(runs, 'simulated')} | {agree} |"
        )
    for key, found in disagreeing.items():
        if found:
            lines += ["", f"**{key}**: the simulation disagrees with the device:", ""]
            lines += [f"- {line}" for line in found]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=Path, default=texts_folder(), help="release texts folder")
    parser.add_argument("--out", type=Path, help="folder for race.json, race.md (required)")
    parser.add_argument("--releases", nargs="+", default=list(RACE_RELEASES))
    parser.add_argument(
        "--print-releases", action="store_true", help="print the default releases and exit"
    )
    parser.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    if args.print_releases:
        print(" ".join(RACE_RELEASES))
        return 0
    if args.out is None:
        parser.error("the following arguments are required: --out")
    missing = [r for r in args.releases if not (args.texts / f"outputs-{r}.py.txt").is_file()]
    if missing:
        print(
            f"device_race: no release text for {', '.join(missing)} in {args.texts}. "
            "Fix: fetch them (python -m conformance.cli.fetch_releases "
            f"{' '.join(missing)}) or pass --texts with a folder of outputs-X.py.txt files",
            file=sys.stderr,
        )
        return 2
    out = args.out.resolve()
    (out / "runs").mkdir(parents=True, exist_ok=True)

    from conformance.releases.texts import write_stub_tree

    jobs = [job for release in args.releases for job in jobs_of(release, args.texts)]
    jobs += broken_jobs()
    real = real_device_present()
    with tempfile.TemporaryDirectory(prefix="device-race-") as scratch:
        trees = {
            r: write_stub_tree(args.texts / f"outputs-{r}.py.txt", r, Path(scratch) / r)
            for r in args.releases
        }
        runs = [
            (job, simulated)
            for job in jobs
            for simulated in ([True, False] if real else [True])
            if not (simulated and job.real_only) and not (not simulated and job.simulated_only)
        ]
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(
                pool.map(lambda pair: run(pair[0], out, trees, pair[1], Path(scratch)), runs)
            )
    by_runtime: dict[tuple[str, str], dict[str, Job]] = {}
    for job in results:
        by_runtime.setdefault((job.release, job.subject), {})[job.runtime] = job
    disagreeing = {
        f"{release} {subject}": disagreements(pair["real"], pair["simulated"])
        for (release, subject), pair in by_runtime.items()
        if {"real", "simulated"} <= set(pair)
    }
    for pair in by_runtime.values():
        if {"real", "simulated"} <= set(pair):
            real_job = pair["real"]
            lucky = races_not_lost(real_job, pair["simulated"])
            failed = list(real_job.records.values()).count("failed")
            # Only a verdict of passes alone is revisited: a mutant that raised stays broken.
            if (
                lucky
                and real_job.outcome.endswith(EVERY_MUTANT_MUST_FAIL)
                and failed + len(lucky) == len(real_job.records)
            ):
                real_job.outcome = (
                    f"as expected: {failed} races lost on the device, {len(lucky)} not "
                    "lost there and caught by the simulated runtime ("
                    + ", ".join(_case_of(nodeid) for nodeid in lucky)
                    + ")"
                )
    (out / "race.json").write_text(
        json.dumps(
            {
                "real_device": "cuda" if real else None,
                "runs": [asdict(job) for job in results],
                "disagreements": disagreeing,
            },
            indent=2,
        )
    )
    table = markdown(by_runtime, disagreeing)
    (out / "race.md").write_text(table)
    print(table)
    wrong = [job for job in results if not job.outcome.startswith("as expected")]
    for job in wrong:
        print(f"device_race: {job.release} {job.subject} ({job.runtime}): {job.outcome}")
    return 1 if wrong or any(disagreeing.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
