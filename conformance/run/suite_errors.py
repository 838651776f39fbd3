"""A check that cannot run because of the suite's own code is the suite's error, never
the backend's failure.

A check fails the backend through :func:`conformance.oracle.failing.fail` (or an
assertion); backend code it calls raises through :func:`~conformance.oracle.failing.attempt`
as a failure naming the call.  Any other exception is judged by where it was raised:
walking the traceback from the innermost frame, the first frame that is neither a
library's (torch, numpy, hypothesis, pytest, the standard library) nor this project's
reference decides.  In the suite's own package it is the suite's error (outcome
``error``, naming the function); anywhere else (the backend, vLLM's code) the backend's
failure, as before.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path
from types import TracebackType

import pytest

#: ``report.user_properties`` key carrying the suite function that raised.
SUITE_ERROR = "conformance_suite_error"

_SUITE = Path(__file__).resolve().parents[1]
_REFERENCE = _SUITE.parent / "reference"
_LIBRARIES = ("torch", "numpy", "hypothesis", "_pytest", "pytest", "pluggy", "triton")
_STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()
_VERDICTS = (AssertionError, pytest.fail.Exception, pytest.skip.Exception)


def suite_function(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """``module.function`` of the suite's code that raised, or None when the exception is a
    verdict or was raised by code outside the suite."""
    if isinstance(excinfo.value, _VERDICTS):
        return None
    frames = _frames(excinfo.tb)
    for filename, module, function in reversed(frames):
        path = Path(filename).resolve()
        if _is_library(path) or _under(path, _REFERENCE):
            continue
        if _under(path, _SUITE):
            return f"{module}.{function}"
        return None
    return None


def _frames(tb: TracebackType | None) -> list[tuple[str, str, str]]:
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append((code.co_filename, tb.tb_frame.f_globals.get("__name__", "?"), code.co_name))
        tb = tb.tb_next
    return frames


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _is_library(path: Path) -> bool:
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return any(part in _LIBRARIES for part in path.parts)
    return _under(path, _STDLIB) or path.name.startswith("<")


def error_message(function: str, text: str) -> str:
    """The record's message: the suite's function first, so no reader blames the backend."""
    return (
        f"error of the suite (not of the backend) in {function}: {text}; please report it "
        "to vllm-outputs-suite"
    )
