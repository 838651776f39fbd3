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
    # Imported through a finder, not a folder on the path (an editable install of
    # setuptools maps each top-level package to its folder): from above its package.
    folder = os.path.dirname(absolute)
    top = None
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        top, folder = folder, os.path.dirname(folder)
    return os.path.relpath(absolute, folder) if top is not None else path
