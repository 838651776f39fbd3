"""The vLLM release texts the project's tests read, fetched into the user cache on first use.

Every release's ``outputs.py`` and producers come from its wheel on the package index
(:mod:`conformance.releases.fetch`), once per machine: the first test process to need
them fetches them under a lock, every later one (an xdist worker, a second run) finds
them in the cache.  ``$OUTPUTS_VLLM_RELEASES`` names a folder of texts to read instead.

Where they cannot be had (no index, nothing cached), :data:`MISSING` says why in one
line with the command that fetches them, and the tests that need them skip with it
(``.ci/run`` fetches first, and makes such a skip fail: ``tests/conftest.py``).
"""

from __future__ import annotations

from pathlib import Path

from conformance.releases.fetch import (
    FETCH_COMMAND,
    RELEASES_ENV_VAR,
    every_release,
    fetch_all,
    texts_folder,
)
from conformance.releases.texts import ReleaseTextError

#: The words every skip for want of the texts carries (``tests/conftest.py`` looks for them).
SKIP_MARK = "the vLLM release texts are not here"


def _fetch() -> tuple[Path, str | None]:
    import os

    folder = texts_folder()
    if os.environ.get(RELEASES_ENV_VAR):
        missing = None if folder.is_dir() else f"${RELEASES_ENV_VAR}={folder} is not a folder"
        return folder, missing
    try:
        fetch_all(every_release(), folder)
    except ReleaseTextError as error:
        return folder, f"{error} (fetch them with {FETCH_COMMAND})"
    return folder, None


_FOLDER, _PROBLEM = _fetch()
#: The folder of texts: ``outputs-X.py.txt``, ``producers/``, ``producers-mrv2/``; a
#: path that does not exist when they could not be had (so every test that needs them
#: skips, never one that reads half a folder).
RELEASES = _FOLDER if _PROBLEM is None else _FOLDER / "not-fetched"
#: Why the texts are not here (one line naming the fix), or None when they are.
MISSING = None if _PROBLEM is None else f"{SKIP_MARK}: {_PROBLEM}"
#: The reason of a skip for want of them (the same line; a fallback when they are here).
SKIP_REASON = MISSING or f"{SKIP_MARK} ({_FOLDER})"
