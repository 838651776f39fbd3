"""A source file's path as a message names it: ``my_plugin/worker.py``."""

from __future__ import annotations

import os
import sys


def module_path(path: str) -> str:
    """``path`` relative to the import-path folder holding it (the longest such), else
    as it is."""
    absolute = os.path.abspath(path)
    roots = sorted(
        (os.path.abspath(p) + os.sep for p in sys.path if p and os.path.isdir(p)), key=len
    )
    for root in reversed(roots):
        if absolute.startswith(root):
            return absolute[len(root) :]
    return path
