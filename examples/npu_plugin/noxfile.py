"""CI of a backend repository, as a template: copy this file (and .github/workflows/).

    nox -s conformance    judge this plugin against the vLLM release it pins

It installs vllm-outputs-suite (``$OUTPUTS_SUITE``: a pip requirement such as
``vllm-outputs-suite[reports] @ git+https://<host>/<org>/vllm-outputs-suite``, a
wheel, or a checkout), then this plugin, runs the conformance suite with the known
deviations of ``xfails.toml`` and writes ``conformance-out/report.json`` and
``conformance-out/report/report.html`` (keep both as CI artifacts).  The session
fails when a check fails or an xfails entry has gone stale.
"""

from __future__ import annotations

import os
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
