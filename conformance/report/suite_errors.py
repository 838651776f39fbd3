"""A check that cannot run because of the suite's own code is the suite's error, never
the backend's failure.

A check fails the backend through :func:`conformance.oracle.failing.fail` (or an
assertion); backend code it calls raises through :func:`~conformance.oracle.failing.attempt`
as a failure naming the call.  Any other exception is the suite's error (outcome
``error``, naming the function) only when it cannot be the backend's doing:

* an ``AttributeError`` of one of the suite's own objects (a ``Backend`` asked for a
  producer it has no field for), where a missing member of the backend's own class is
  the backend's failure;
* a ``NameError``, an import error or a runaway recursion: the suite's code is broken.

And only when raised in the suite's package: walking the traceback from the innermost
frame, the first frame that is neither a library's (torch, numpy, hypothesis, pytest,
the standard library) nor this project's reference decides.  Anything else stays the
backend's failure, as before: a false error costs a backend author as much as a
missed failure.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path
from types import FunctionType, ModuleType, TracebackType

import pytest

#: ``report.user_properties`` key carrying the suite function that raised.
SUITE_ERROR = "conformance_suite_error"

_SUITE = Path(__file__).resolve().parents[1]
_REFERENCE = _SUITE.parent / "reference"
_LIBRARIES = ("torch", "numpy", "hypothesis", "_pytest", "pytest", "pluggy", "triton")
_STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()
#: Exceptions that only broken code of the suite raises in the suite's frames.
_SUITE_BUGS = (NameError, ImportError, RecursionError)


def suite_function(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """``module.function`` of the suite's code that raised, or None when the exception is a
    verdict or was raised by code outside the suite."""
    value = excinfo.value
    if isinstance(value, AttributeError):
        if not _is_suite_object(getattr(value, "obj", None)):
            return None
    elif not isinstance(value, _SUITE_BUGS):
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


def _is_suite_object(obj: object) -> bool:
    """Whether ``obj`` (a module, class, function or instance) is the suite's own through
    and through: a class the suite derives from a backend's class is the backend's too."""
    if obj is None:
        return False
    if isinstance(obj, ModuleType):
        return _in_suite(obj.__name__)
    if isinstance(obj, FunctionType):
        return _in_suite(obj.__module__)
    cls = obj if isinstance(obj, type) else type(obj)
    return all(_in_suite(c.__module__) for c in cls.__mro__ if c is not object)


def _in_suite(module: str) -> bool:
    return module == "conformance" or module.startswith("conformance.")


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
