"""Files written whole or not at all: a reader never sees half of one."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a file of this thread's own, then a rename.

    The file gets the mode the umask gives, as any file a user writes; threads of one
    process (the fetches run four at once) never share the temporary file.
    """
    if path.is_symlink():
        path = path.resolve()  # the link stays; what it points to is written
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
