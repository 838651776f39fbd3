"""Write the report folder all at once, or not at all.

Everything is written into a temporary folder beside ``--out`` (same file
system, so the final rename is atomic) and moved into place only when the
whole report succeeded.  An existing report folder is replaced; any other
existing non-empty folder is refused, so ``--out .`` can never wipe a checkout.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from reports.errors import ReportInputError

#: Written into every report folder; its presence is what allows replacing one.
MARKER = ".vllm-outputs-report"


@contextlib.contextmanager
def atomic_folder(out: Path) -> Iterator[Path]:
    """Yield a fresh temporary folder; on success it becomes ``out``."""
    out = Path(out)
    if out.exists() and not _replaceable(out):
        raise ReportInputError(
            "output folder exists and is not a report folder, refusing to replace it",
            path=out,
            fix="pass an empty or new --out folder (or one a previous report wrote)",
        )
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    except OSError as error:
        raise _unwritable(out, error) from None
    try:
        # mkdtemp makes the folder private (0700); a report is for sharing.
        staging.chmod(0o777 & ~_umask())
        (staging / MARKER).write_text("written by `python -m reports`\n", encoding="utf-8")
        yield staging
        try:
            _swap_into_place(staging, out)
        except OSError as error:
            raise _unwritable(out, error) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _unwritable(out: Path, error: OSError) -> ReportInputError:
    return ReportInputError(
        f"cannot write the report folder here ({error.strerror or error})",
        path=out,
        fix="pass an --out in a folder you can write",
    )


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _replaceable(out: Path) -> bool:
    return out.is_dir() and ((out / MARKER).is_file() or not any(out.iterdir()))


def _swap_into_place(staging: Path, out: Path) -> None:
    # Rename the old report aside first, so at every moment ``out`` is either
    # the old complete report or the new complete one.
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        old.rmdir()
        out.rename(old)
    try:
        staging.rename(out)
    except BaseException:
        if old is not None:
            old.rename(out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
