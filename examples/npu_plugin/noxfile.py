"""CI of a backend repository, as a template: copy this file (and .github/workflows/).

    nox -s conformance    judge this plugin against the vLLM release it pins
                          (``$OUTPUTS_REVISION``: against another release, a neighbour)
    nox -s merge -- REPORTS [BASE]
                          one matrix of every report under REPORTS (the CI jobs'
                          artefacts), and what changed since BASE (an earlier matrix)
    nox -s shards         the CI matrix's CPU legs as parallel local processes, merged,
                          and checked: the matrix holds exactly what each leg held
    nox -s vllm-head      judge it against vLLM's newest too: what moving the pin would
                          break (a watcher: the weekly job, never a gate)

It installs vllm-outputs-suite (``$OUTPUTS_SUITE``: a pip requirement such as
``vllm-outputs-suite[reports] @ git+https://<host>/<org>/vllm-outputs-suite``, a
wheel, or a checkout), then this plugin, runs the conformance suite with the known
deviations of ``xfails.toml`` and writes ``conformance-out/report.json`` and
``conformance-out/report/report.html`` (keep both as CI artifacts).  The session
fails when a check fails or an xfails entry has gone stale.  Each report says where
it ran: set ``$OUTPUTS_MACHINE`` to a name that stays the same from run to run (CI's
hosted runners get a new host name each time), so runs of one machine can be compared.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import nox

HERE = Path(__file__).parent
#: The backend this repository declares (module:attribute naming a conformance.Backend).
BACKEND = "example_npu_plugin.conformance_backend:BACKEND"
#: Where to get the suite; any pip requirement.  Pin it to a commit or a version in CI.
SUITE = os.environ.get("OUTPUTS_SUITE", "vllm-outputs-suite[reports]")
#: Extra pip arguments for the virtualenvs the sessions make.  Default: the constraints
#: file pinning torch, and PyTorch's index of CPU builds, which serves that version without
#: CUDA (a simulated runtime judges the async output; from the package index alone, torch
#: on Linux is a CUDA build of several GB, whatever pins it).  pip and uv both read the
#: index from here (uv reads no pip configuration).  Where that index cannot be reached,
#: name your own source of a CPU torch (``-c constraints.txt --find-links DIR``).  On a
#: machine whose interpreter has the torch its device needs (a GPU or NPU runner), run
#: ``nox --no-venv``: nothing replaces it.
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
PIP_ARGS = os.environ.get(
    "OUTPUTS_SUITE_PIP_ARGS", f"-c {HERE / 'constraints.txt'} --extra-index-url {CPU_TORCH_INDEX}"
).split()
# uv takes each package from the first index that has it, and that index also serves
# old builds of numpy and others; as pip does, take the best version of any index (for
# torch==2.13.0 that is 2.13.0+cpu).
os.environ.setdefault("UV_INDEX_STRATEGY", "unsafe-best-match")
#: The release this plugin pins (``example_npu_plugin.outputs.PINNED_RELEASE``): it gates.
PINNED_RELEASE = "0.12.0"
#: The CI matrix's releases: the pinned one and its neighbours, the revisions before and
#: after its own (``python -m conformance --list-revisions``), what a bump would meet.
#: .github/workflows/conformance.yml lists the same.
MATRIX_RELEASES = ("0.11.1", "0.12.0", "0.13.0")
#: Where the sessions write (``$OUTPUTS_CONFORMANCE_OUT``, else conformance-out/ here).
OUT = Path(os.environ.get("OUTPUTS_CONFORMANCE_OUT") or HERE / "conformance-out")

# uv fills a session's virtualenv in seconds (the workflow installs nox[uv]); without
# it nox falls back to venv and pip.
nox.options.default_venv_backend = "uv|venv"


def _install(session: nox.Session, *, plugin: bool = True) -> None:
    wanted = [SUITE, str(HERE)] if plugin else [SUITE]
    if session.venv_backend == "none":
        # The interpreter's own torch stays: pip keeps a torch that satisfies the suite.
        session.run("python", "-m", "pip", "install", "--quiet", *wanted)
        return
    for requirement in wanted:
        session.install(*PIP_ARGS, requirement)


def _judge(revision: str | None, report: Path) -> list[str]:
    """The command that judges this plugin (at ``revision``, else the one it declares)."""
    command = ["python", "-m", "conformance", "--backend", BACKEND,
               "--xfails", str(HERE / "xfails.toml"), "--report", str(report)]  # fmt: skip
    return command + (["--revision", revision] if revision else [])


@nox.session
def conformance(session: nox.Session) -> None:
    """The conformance suite against this plugin; report.json and report.html kept.

    ``$OUTPUTS_REVISION`` judges it against another release (a matrix leg); a leg whose
    revision is not the pinned one is what a bump would meet, expected to fail in part.
    """
    _install(session)
    out = OUT
    out.mkdir(parents=True, exist_ok=True)
    report = out / "report.json"
    report.unlink(missing_ok=True)  # a report left by an earlier run must not be uploaded
    try:
        session.run(*_judge(os.environ.get("OUTPUTS_REVISION") or None, report))
    finally:
        # The page is written for a failing run too: that is when it is read.
        if report.exists():
            session.run(
                "python", "-m", "reports", "--conformance", str(report),
                "--out", str(out / "report"), "-q",
            )  # fmt: skip


@nox.session
def merge(session: nox.Session) -> None:
    """``nox -s merge -- REPORTS [BASE]``: one matrix of every report under REPORTS, and the
    diff against BASE (the merged matrix of an earlier run) when BASE holds one.

    Writes ``conformance-out/merged/``: ``report.html`` and ``summary.md`` (the matrix:
    a row per backend and version, a column per release, device and machine),
    ``conformance-matrix.csv``, the reports (``conformance-N.json``: the next run's
    BASE) and, with a BASE, ``conformance-diff.md`` (for a pull request comment),
    ``.html`` and ``.csv``.  Fails when something fails now that did not in BASE.  A
    first run has no BASE: it says so and still writes the matrix.
    """
    if not session.posargs or len(session.posargs) > 2:
        session.error("usage: nox -s merge -- REPORTS [BASE]")
    reports, base = session.posargs[0], (session.posargs[1:] or [None])[0]
    _install(session, plugin=False)
    command = ["python", "-m", "reports", "--conformance", reports, "--out", str(OUT / "merged")]
    if base and _holds_json(Path(base)):
        command += ["--conformance-diff", base, reports]
    else:
        session.log(
            f"no earlier matrix to compare with ({base or 'no BASE given'} holds no report): "
            "a first run; the matrix is written, the diff is not"
        )
    session.run(*command)


def _holds_json(path: Path) -> bool:
    return path.is_file() or (path.is_dir() and any(path.rglob("*.json")))


@nox.session
def shards(session: nox.Session) -> None:
    """The CI matrix's CPU legs (every release of MATRIX_RELEASES) as parallel local
    processes, merged as the merge job merges them, and checked: the merged matrix holds
    exactly what each leg held.  The pinned release must pass; the neighbours may fail.

    Writes ``conformance-out/shards/<release>/report.json`` (and its log) and the merged
    matrix in ``conformance-out/shards/merged/``.
    """
    _install(session)
    root = OUT / "shards"
    python = str(Path(session.bin) / "python")
    running = {}
    for release in MATRIX_RELEASES:
        folder = root / release
        folder.mkdir(parents=True, exist_ok=True)
        report = folder / "report.json"
        report.unlink(missing_ok=True)
        log = (folder / "log.txt").open("w")
        command = [python, *_judge(release, report)[1:], "-p", "no:cacheprovider"]
        # nox's session.env unsets a variable with None (PYTHONHOME, in a venv).
        env = {k: v for k, v in {**os.environ, **session.env}.items() if v is not None}
        running[release] = (subprocess.Popen(command, stdout=log, stderr=log, env=env), log)
        session.log(f"shard {release}: started, log in {folder / 'log.txt'}")
    failed = []
    for release, (process, log) in running.items():
        code = process.wait()
        log.close()
        session.log(f"shard {release}: exit {code}")
        # 1 is "a check failed": a neighbour may; anything else is no judgement at all.
        if code not in (0, 1) or (code and release == PINNED_RELEASE):
            failed.append(f"{release} (exit {code}, see {root / release / 'log.txt'})")
    reports = [str(p) for r in MATRIX_RELEASES if (p := root / r / "report.json").is_file()]
    if not reports:
        session.error("no shard wrote a report: " + "; ".join(failed))
    merged = root / "merged"
    session.run("python", "-m", "reports", "--conformance", *reports, "--out", str(merged), "-q")
    session.run("python", "-m", "reports.merge_check", str(merged), *reports)
    session.log(f"merged matrix: {merged / 'report.html'}")
    if failed:
        session.error("shard(s) that did not judge as expected: " + "; ".join(failed))


#: vLLM's newest, for ``vllm-head``: a checkout of vLLM's main branch (``$VLLM_HEAD``, a
#: path; an unpacked wheel or an outputs.py text do too), else the newest wheel of
#: ``$VLLM_HEAD_DISTRIBUTION`` on the package index (downloaded, never installed).
HEAD_ENV = "VLLM_HEAD"
HEAD_DISTRIBUTION = os.environ.get("VLLM_HEAD_DISTRIBUTION", "vllm")
HEAD_OUT = OUT / "vllm-head"


def head_command(target: str, out: Path = HEAD_OUT) -> list[str]:
    """This plugin judged at its pin and at ``target``: the bump report's command."""
    return [
        "python", "-m", "conformance", "--backend", BACKEND, "--bump-to", target,
        "--xfails", str(HERE / "xfails.toml"), "--report", str(out / "report.json"),
    ]  # fmt: skip


@nox.session(name="vllm-head")
def vllm_head(session: nox.Session) -> None:
    """What vLLM's newest would break: this plugin at its pin and at vLLM's newest.

    ``--bump-to`` judges the plugin at the release it pins and at vLLM's newest (the
    newest ``vllm`` wheel on the index, or ``$VLLM_HEAD``), and lists the vLLM changes
    between them and each behaviour whose verdict differs, breaks first.  The reports
    stay in ``conformance-out/vllm-head/`` (``report.json`` with its ``bump``, the report
    at the pin ``report.bump-from.json``, ``report/report.html``, ``verdict.txt``).  A
    watcher, not a gate: a bump that breaks something is reported, and the session still
    succeeds (only a run that cannot judge at all fails it), so the pinned job decides CI.
    """
    _install(session)
    HEAD_OUT.mkdir(parents=True, exist_ok=True)
    target = os.environ.get(HEAD_ENV)
    if not target:
        # Beside the session, not in the reports the workflow uploads (the wheel is
        # hundreds of MB; the suite reads only its directory and vllm/v1 texts).
        wheels = Path(session.create_tmp()) / "vllm-head-wheel"
        shutil.rmtree(wheels, ignore_errors=True)
        session.run(
            "python", "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
            "--dest", str(wheels), HEAD_DISTRIBUTION,
        )  # fmt: skip
        found = sorted(glob.glob(str(wheels / "*.whl")))
        if not found:
            session.error(f"pip downloaded no wheel of {HEAD_DISTRIBUTION}")
        target = found[0]
    report = HEAD_OUT / "report.json"
    report.unlink(missing_ok=True)
    # 1: the bump breaks something (reported, not a failure of this watcher).
    session.run(*head_command(target), success_codes=[0, 1])
    if report.exists():
        session.run(
            "python", "-m", "reports", "--conformance", str(report),
            "--out", str(HEAD_OUT / "report"), "-q",
        )  # fmt: skip
        session.run("python", "-c", _VERDICT, str(report), str(HEAD_OUT / "verdict.txt"))


#: One line for the job's summary: what vLLM's newest breaks.
_VERDICT = """import json, sys
bump = json.load(open(sys.argv[1]))["bump"]
broken = [r["behaviour"] for r in bump["behaviours"] if r["change"] == "breaks"]
line = (f"vLLM's newest ({bump['to']}) breaks {bump['breaks']} behaviour(s) of this plugin "
        f"pinned to {bump['from']}: {', '.join(broken) or 'none'}")
open(sys.argv[2], "w").write(line + "\\n")
print(line)
"""
