"""A backend author benchmarks their own backend on their own device.

The device parameter covers the device types the run's backends declare (``npu`` of
a plugin), ``$OUTPUTS_BENCH_DEVICES`` never drops a name silently, and a backend that
does not load in the benchmarks' interpreter is one line before asv runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "npu_plugin"
PLUGIN = "example_npu_plugin.conformance_backend:BACKEND"


def _bench_view(*, backend: str, devices: str = "", plugin_on_path: bool = True) -> dict:
    env = {**os.environ, "OUTPUTS_BACKEND": backend, "OUTPUTS_BENCH_DEVICES": devices}
    env.pop("OUTPUTS_BENCH_BACKENDS", None)
    env.pop("OUTPUTS_BENCH_QUICK", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([str(EXAMPLE)] if plugin_on_path else [])])
    code = (
        "import json; from benchmarks import common; "
        "print(json.dumps({'params': common.device_params(), 'problem': common.preflight()}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_devices_a_plugin_declares_are_measured() -> None:
    view = _bench_view(backend=PLUGIN)
    assert view["params"] == ["cpu", "cuda", "xpu", "mps", "npu"]
    assert view["problem"] is None


def test_a_device_asked_for_is_kept_and_an_undeclared_one_is_named() -> None:
    assert _bench_view(backend=PLUGIN, devices="npu,cpu")["problem"] is None
    view = _bench_view(backend="reference", devices="nup,cpu")
    assert "nup" in view["params"]  # its skip names it; it is never dropped
    assert view["problem"].startswith("$OUTPUTS_BENCH_DEVICES names nup, which no backend")


def test_a_backend_that_does_not_load_is_one_line_naming_the_fix() -> None:
    problem = _bench_view(backend=PLUGIN, plugin_on_path=False)["problem"]
    assert problem.startswith(f"backend {PLUGIN!r} does not load in the benchmarks' interpreter")
    assert "OUTPUTS_BENCH_INSTALL=" in problem
    assert "\n" not in problem
