"""Building a small C source into a library at run time, with the machine's C compiler.

The reference's native loops (:mod:`reference.native_count`,
:mod:`reference.native_unpad`) are a few lines of C each, compiled where they run
and loaded with ctypes: no compiled code ships in the wheel, and a machine
without a C compiler keeps the reference's eager paths.  :func:`load` raises
``RuntimeError`` with one line saying why whenever a source does not build or
load; callers turn that into the state they report.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["compiler", "load"]

#: Flags every library needs: position-independent code in a shared object.
_SHARED = ("-shared", "-fPIC")
#: macOS links a shared object only when every symbol resolves, unless told that
#: the process loading it provides them (the Python C API, for the list builder).
_DYNAMIC_LOOKUP = ("-undefined", "dynamic_lookup") if sys.platform == "darwin" else ()


def load(
    source: str,
    what: str,
    flags: Sequence[str],
    loader: type[ctypes.CDLL] = ctypes.CDLL,
) -> ctypes.CDLL:
    """Compile ``source`` with ``flags`` and load it with ``loader``.

    ``what`` names the library in the error: ``"cc could not build the count: ..."``.
    ``loader`` is ``ctypes.PyDLL`` for code that calls the Python C API (the GIL
    stays held and a Python error it sets is raised).
    """
    command_start = compiler()
    with tempfile.TemporaryDirectory(prefix="reference-native-") as folder:
        source_file, library = Path(folder, "native.c"), Path(folder, "native.so")
        source_file.write_text(source)
        command = [
            *command_start, *flags, *_SHARED, *_DYNAMIC_LOOKUP,
            str(source_file), "-o", str(library),
        ]  # fmt: skip
        try:
            built = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise RuntimeError(f"{command_start[0]} could not build {what}: {error}") from None
        if built.returncode != 0:
            said = (built.stderr.strip().splitlines() or ["no message"])[0]
            raise RuntimeError(f"{command_start[0]} could not build {what}: {said}")
        try:
            # Loaded before the folder goes: the mapping outlives the file.
            return loader(str(library))
        except OSError as error:
            raise RuntimeError(f"{what} built but did not load: {error}") from None


def compiler() -> list[str]:
    """``$CC`` where set (a command, possibly with flags), else the first of cc,
    gcc, clang on the PATH."""
    named = shlex.split(os.environ.get("CC", ""))
    if named:
        return named
    for candidate in ("cc", "gcc", "clang"):
        found = shutil.which(candidate)
        if found:
            return [found]
    raise RuntimeError("no C compiler found (cc, gcc or clang on the PATH, or $CC)")
