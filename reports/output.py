"""Write the report folder all at once, or not at all.

Everything is written into a temporary folder beside ``--out`` (same file
system, so the final rename is atomic) and moved into place only when the
whole report succeeded.  An existing report folder is replaced; any other
existing non-empty folder is refused, so ``--out .`` can never wipe a checkout.
Files someone put into a report folder (notes, a screenshot) are not the report's:
they are kept, copied into the new one, unless the new report writes a file of the
same name, which is refused before anything is replaced.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from reports.errors import ReportInputError

#: Written into every report folder; its presence is what allows replacing one.  It
#: lists the files the report wrote, one per line after its first.
MARKER = ".vllm-outputs-report"
_MARKER_HEADER = "written by `python -m reports`"


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
        yield staging
        written = _files_in(staging)
        (staging / MARKER).write_text(
            "\n".join([_MARKER_HEADER, *written]) + "\n", encoding="utf-8"
        )
        try:
            _keep_what_others_put(out, staging, set(written))
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


def _files_in(folder: Path) -> list[str]:
    """Every file under ``folder``, as a path relative to it (``/``-separated)."""
    return sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.name != MARKER
    )


def _keep_what_others_put(out: Path, staging: Path, written: set[str]) -> None:
    """Copy the files of the report folder ``out`` that its report did not write into
    ``staging`` (the new report), at the same place; refuse, changing nothing, where the
    new report writes one of the same name.  A marker listing no files (a report of an
    earlier version) counts every file as the report's."""
    if not out.is_dir() or not (out / MARKER).is_file():
        return
    listed = (out / MARKER).read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    if not listed:
        return
    theirs = [f for f in _files_in(out) if f not in set(listed)]
    clashing = [f for f in theirs if f in written]
    if clashing:
        raise ReportInputError(
            f"the report folder holds {clashing[0]}, which no report wrote, and the new "
            "report writes a file of that name",
            path=out,
            fix=f"move {clashing[0]} out of the folder, or pass another --out",
        )
    for name in theirs:
        # Copied, not moved: until the swap, the old folder keeps them whatever fails.
        target = staging / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(out / name, target)


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
