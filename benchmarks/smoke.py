"""The CI smoke run: every benchmark once, nothing saved, non-zero if any benchmark errors.

Not a benchmark (asv imports this module while discovering and finds none here).
Run from the repository root::

    python benchmarks/smoke.py [--config asv.conf.json] [extra asv run options]

It runs ``asv run --python=same --quick --dry-run --show-stderr`` on the current
interpreter.  asv exits 2 when a benchmark failed and 1 when the suite cannot be
imported; this script also fails when no benchmark ran at all, and lists the
failed benchmarks last so a CI log shows them without scrolling.  A benchmark
that raises ``NotImplementedError`` in ``setup`` (device absent, producer missing)
is skipped, not failed.  The reference's run-time build stays off here
(``OUTPUTS_REFERENCE_COMPILE=0`` unless set) and each measurement is taken once
(``OUTPUTS_BENCH_DRY_RUN=1``): a smoke run times nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Set in the benchmarks' processes: a dry run, whose numbers no one keeps, so each
#: measurement is taken once (:func:`benchmarks.interleaved.dry_run`).
DRY_RUN_ENV_VAR = "OUTPUTS_BENCH_DRY_RUN"
# "[ 41.67%] ··· transfer.Transfer.time_x     ok" / "... 1/2 failed" / "... failed"
_STATUS_LINE = re.compile(r"^\[\s*[\d.]+%\] ··· (?P<name>\S+)\s+(?P<status>.*\S)\s*$")


def asv_machine_file() -> Path:
    """Where asv keeps this machine's description (``asv machine`` writes it)."""
    return Path(os.path.expanduser("~/.asv-machine.json"))


def ensure_machine(config: str) -> None:
    """Describe this machine to asv once; ``asv run`` would otherwise ask interactively."""
    if not asv_machine_file().exists():
        subprocess.run(
            [sys.executable, "-m", "asv", "machine", "--yes", "--config", config], check=True
        )


def failed_benchmarks(output: str) -> list[str]:
    """Names of the benchmarks whose status line says they failed, in run order."""
    failed = []
    for line in output.splitlines():
        match = _STATUS_LINE.match(line)
        if match and match["status"].endswith("failed"):
            failed.append(f"{match['name']} ({match['status']})")
    return failed


def ran_any(output: str) -> bool:
    return any(_STATUS_LINE.match(line) for line in output.splitlines())


def smoke_environment() -> dict[str, str]:
    """This process's environment, the reference's run-time build (``torch.compile`` of
    the rank count) forbidden unless the caller chose: a smoke run times nothing, and
    every benchmark process would otherwise wait for its own background build (its
    speed is for the timed runs; ``tests/reference`` tests the tier itself)."""
    from reference_speedups.hot_build import SWITCH

    return {SWITCH: "0", **os.environ, DRY_RUN_ENV_VAR: "1"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "asv.conf.json"))
    args, extra = parser.parse_known_args(argv)
    ensure_machine(args.config)
    command = [
        sys.executable, "-m", "asv", "run", "--config", args.config,
        "--python=same", "--quick", "--dry-run", "--show-stderr", *extra,
    ]  # fmt: skip
    print("+", " ".join(command), flush=True)
    start = time.monotonic()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        env=smoke_environment(),
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        sys.stdout.write(line)
        lines.append(line)
    returncode = process.wait()
    output = "".join(lines)
    elapsed = time.monotonic() - start

    failed = failed_benchmarks(output)
    problems = []
    if failed:
        problems.append(f"{len(failed)} benchmark(s) failed:\n  " + "\n  ".join(failed))
    if not ran_any(output):
        problems.append("no benchmark ran (is the suite importable?)")
    if returncode != 0:
        problems.append(f"asv run exited with status {returncode}")
    print(f"smoke run: {elapsed:.0f} s", flush=True)
    if problems:
        print("SMOKE RUN FAILED: " + "; ".join(problems), file=sys.stderr)
        return 1
    print("smoke run passed: every benchmark ran once (skips are not failures)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
