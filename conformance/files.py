"""Files written whole or not at all: a reader never sees half of one."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a file of this thread's own, then a rename.

    The file gets the mode the umask gives, as any file a user writes; threads of one
    process (the fetches run four at once) never share the temporary file, and it is
    made anew, never opened through a link left in its place (a shared folder).
    """
    if path.is_symlink():
        path = path.resolve()  # the link stays; what it points to is written
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.partial")
    partial.unlink(missing_ok=True)  # left by a process of this pid that died writing
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(partial, flags, 0o666), "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
