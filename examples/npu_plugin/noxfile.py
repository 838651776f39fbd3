"""CI of a backend repository, as a template: copy this file (and .github/workflows/).

    nox -s conformance    judge this plugin against the vLLM release it pins
    nox -s vllm-head      judge it against vLLM's newest too: what moving the pin would break

It installs vllm-outputs-suite (``$OUTPUTS_SUITE``: a pip requirement such as
``vllm-outputs-suite[reports] @ git+https://<host>/<org>/vllm-outputs-suite``, a
wheel, or a checkout), then this plugin, runs the conformance suite with the known
deviations of ``xfails.toml`` and writes ``conformance-out/report.json`` and
``conformance-out/report/report.html`` (keep both as CI artifacts).  The session
fails when a check fails or an xfails entry has gone stale.
"""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import nox

HERE = Path(__file__).parent
#: The backend this repository declares (module:attribute naming a conformance.Backend).
BACKEND = "example_npu_plugin.conformance_backend:BACKEND"
#: Where to get the suite; any pip requirement.  Pin it to a commit or a version in CI.
SUITE = os.environ.get("OUTPUTS_SUITE", "vllm-outputs-suite[reports]")
#: Extra pip arguments, e.g. a constraints file that keeps torch a CPU build.
PIP_ARGS = os.environ.get("OUTPUTS_SUITE_PIP_ARGS", "").split()

nox.options.default_venv_backend = "venv"


@nox.session
def conformance(session: nox.Session) -> None:
    """The conformance suite against this plugin; report.json and report.html kept."""
    session.install(*PIP_ARGS, SUITE)
    session.install(*PIP_ARGS, str(HERE))
    out = HERE / "conformance-out"
    out.mkdir(exist_ok=True)
    report = out / "report.json"
    try:
        session.run(
            "python", "-m", "conformance", "--backend", BACKEND,
            "--xfails", str(HERE / "xfails.toml"), "--report", str(report),
        )  # fmt: skip
    finally:
        # The page is written for a failing run too: that is when it is read.
        if report.exists():
            session.run(
                "python", "-m", "reports", "--conformance", str(report),
                "--out", str(out / "report"), "-q",
            )  # fmt: skip


#: vLLM's newest, for ``vllm-head``: a checkout of vLLM's main branch (``$VLLM_HEAD``, a
#: path; an unpacked wheel or an outputs.py text do too), else the newest wheel of
#: ``$VLLM_HEAD_DISTRIBUTION`` on the package index (downloaded, never installed).
HEAD_ENV = "VLLM_HEAD"
HEAD_DISTRIBUTION = os.environ.get("VLLM_HEAD_DISTRIBUTION", "vllm")
HEAD_OUT = HERE / "conformance-out" / "vllm-head"


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
    session.install(*PIP_ARGS, SUITE)
    session.install(*PIP_ARGS, str(HERE))
    HEAD_OUT.mkdir(parents=True, exist_ok=True)
    target = os.environ.get(HEAD_ENV)
    if not target:
        wheels = HEAD_OUT / "wheel"
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
