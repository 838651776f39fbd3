"""Release trees laid out once and kept in the suite's cache, shared by every process.

vLLM's producers of a release are imported from a ``vllm`` tree laid out from its texts
(:mod:`conformance.releases.texts`).  The tree must outlive the import: a producer may
import lazily, and tracebacks and the simulated runtime read its lines.  A temporary
folder removed ``atexit`` is never removed by a process that leaves through
``os._exit`` (the supervised run's child, asv's forked benchmarks, a killed pytest-xdist
worker), so each such process left a tree behind in the temporary folder.

Here a tree is named by the digest of what it holds: it is written once, then shared by
every process that lays out the same texts; a tree unused for :data:`UNUSED_DAYS` days
is removed.  Where the cache cannot be written, a temporary folder removed at exit
serves, as before.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from conformance.releases.fetch import cache_home

#: A kept tree nobody laid out again for this long is removed.
UNUSED_DAYS = 30
#: Beyond this many trees, the least recently laid out of those unused for a day go (texts
#: in temporary folders, as tests write them, each make a tree of their own).
MOST_TREES = 64
#: A staging folder older than this was left by a process that died laying it out.
_STALE_STAGING_S = 3600.0


def trees_folder() -> Path:
    """``$XDG_CACHE_HOME/vllm-outputs-suite/trees``."""
    return cache_home() / "trees"


def kept_tree(name: str, lay_out: Callable[[Path], object]) -> Path:
    """The folder ``lay_out(folder)`` fills, kept as ``trees/<name>-<digest>``.

    ``name`` says what the tree is (``vllm-0.34.0-producers``); the digest of the files
    tells trees of different texts apart, so the same texts give the same folder in every
    process and the first one to finish keeps it.
    """
    root = trees_folder()
    name = re.sub(r"[^A-Za-z0-9._+-]", "_", name)  # a text's version may say anything
    try:
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    except OSError:
        return _temporary_tree(name, lay_out)
    try:
        lay_out(staging)
        kept = root / f"{name}-{_digest(staging)}"
        if not kept.is_dir():
            try:
                staging.rename(kept)
            except OSError:
                if not kept.is_dir():  # not another process's tree: the cache is failing
                    return _temporary_tree(name, lay_out)
        os.utime(kept)
        _remove_unused(root)
        return kept
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _temporary_tree(name: str, lay_out: Callable[[Path], object]) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    atexit.register(shutil.rmtree, folder, True)
    lay_out(folder)
    return folder


def _digest(folder: Path) -> str:
    """sha256 of every file's path and bytes under ``folder``, in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _remove_unused(root: Path) -> None:
    now = time.time()
    kept: list[tuple[float, Path]] = []
    for entry in root.iterdir():
        try:
            used = entry.stat().st_mtime
        except OSError:
            continue  # removed meanwhile by another process
        limit = _STALE_STAGING_S if entry.name.startswith(".") else UNUSED_DAYS * 86400.0
        if now - used > limit:
            shutil.rmtree(entry, ignore_errors=True)
        elif not entry.name.startswith("."):
            kept.append((used, entry))
    kept.sort(reverse=True)
    for used, entry in kept[MOST_TREES:]:
        if now - used > 86400.0:
            shutil.rmtree(entry, ignore_errors=True)
