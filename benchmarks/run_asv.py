"""``asv run --show-stderr`` with the skip messages folded (see ``asv_output.py``).

Not a benchmark (asv imports this module while discovering and finds none here).
Run from the repository root; every argument goes to ``asv run``::

    python benchmarks/run_asv.py --python=same --set-commit-hash=$(git rev-parse HEAD)

Failures, tracebacks and result tables print as asv prints them; each skip
reason prints once, with its count, at the end.  First it prints which path the
reference's hot loops take here (the C extension built at install, or the pure
Python one): the reference's numbers measure that path.  Exits with asv's status.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from asv_output import SkipFolder  # run as a script: asv_output.py is beside it


def reference_path() -> str:
    """``reference_speedups.path()``, asked in a child process: asv's forkserver
    imports the benchmarks afresh, and this process must not load torch for it."""
    asked = subprocess.run(
        [sys.executable, "-c", "import reference_speedups as r; print(r.path())"],
        capture_output=True, text=True,
    )  # fmt: skip
    lines = asked.stdout.strip().splitlines()
    return lines[-1] if asked.returncode == 0 and lines else "pure Python (no reference_speedups)"


#: Beside asv's results (not a ``.json``: asv reads every one there): one line per
#: recorded commit, ``COMMIT<TAB>PATH``, read by the report's header.
REFERENCE_PATHS = Path(".asv") / "results" / "reference-paths.txt"


def record_reference_path(args: Sequence[str], path: str, file: Path = REFERENCE_PATHS) -> None:
    """Note ``path`` against the commit ``--set-commit-hash=`` records, if any."""
    commit = next((a.split("=", 1)[1] for a in args if a.startswith("--set-commit-hash=")), "")
    if not commit:
        return
    lines = file.read_text(encoding="utf-8").splitlines() if file.is_file() else []
    kept = [line for line in lines if not line.startswith(f"{commit}\t")]
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("\n".join([*kept, f"{commit}\t{path}"]) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    path = reference_path()
    print(f"the reference's hot loops on CPU: {path}", flush=True)
    record_reference_path(args, path)
    command = [sys.executable, "-m", "asv", "run", "--show-stderr", *args]
    print("+", " ".join(command), flush=True)
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    assert process.stdout is not None
    folder = SkipFolder()
    for line in process.stdout:
        for out in folder.feed(line):
            sys.stdout.write(out)
        sys.stdout.flush()
    for out in folder.finish():
        sys.stdout.write(out)
    sys.stdout.write(folder.summary())
    return process.wait()


if __name__ == "__main__":
    sys.exit(main())
