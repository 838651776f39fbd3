"""How a check fails: one precise line per deviation, and backend code called so that an
exception it raises becomes a failure naming the call (no traceback into the suite)."""

from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
from collections.abc import Callable, Sequence
from types import FrameType, TracebackType
from typing import Any, NoReturn, TypeVar

import numpy
import pytest
import torch

from conformance.oracle.skipping import skip_for
from conformance.oracle.stand_ins import OWN_RAISE
from conformance.source_paths import module_path

T = TypeVar("T")


def fail(*deviations: str) -> NoReturn:
    """Fail the check with one line per deviation (no traceback into the suite)."""
    pytest.fail("\n".join(name_copies_not_arrived(d) for d in deviations), pytrace=False)


#: The simulated runtime's placeholders of a copy read before it landed
#: (:func:`conformance.producers.simulated_device.sentinel_fill`): integers just above
#: int32's or int64's minimum, floats near a quarter of the float's lowest.
_NOT_ARRIVED = re.compile(
    r"-(?:21474836[0-4]\d|92233720368547757\d\d|92233720368547758\d\d)\b"
    r"|-[0-9.]+e\+(?:37|38|307|308)\b"
)


def name_copies_not_arrived(deviation: str) -> str:
    """``deviation``, saying what a placeholder value in it is: a copy not yet arrived."""
    if _NOT_ARRIVED.search(deviation) is None:
        return deviation
    return deviation + (
        " (that value is the simulated runtime's placeholder of a copy not yet arrived: "
        "read before the wait for it; its producer's waits-for-device check names the read)"
    )


def failure_of(check: Callable[[], object]) -> str | None:
    """What ``check`` failed with, or None where it passed: to weigh one failure against
    another (a wrong value, or a race; shared memory, or a value wrong alone)."""
    try:
        check()
    except pytest.fail.Exception as failure:
        return str(failure.msg)
    return None


def check(deviations: Sequence[str]) -> None:
    if deviations:
        fail(*deviations)


def attempt(where: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call backend code; an exception becomes a failure naming the call and, where the
    backend's own code raised it, its file, line and source line (:func:`raised_at`)."""
    try:
        return function(*args, **kwargs)
    except Exception as error:
        if refused_simulated_device(error):
            first_line = str(error).splitlines()[0] if str(error) else ""
            skip_for(
                "inconclusive",
                f"{where}: the simulated device cannot stand in here: torch's own argument "
                f"parser refused a simulated tensor's device{raised_at(error)} "
                f"({first_line}); torch names no device of that type on this machine, so "
                "a machine with the device judges this check",
            )
        reached = reached_from(error) or _line_of_frame(sys._getframe(1))
        fail(
            f"{where}: raised {type(error).__name__}{raised_at(error)}: {error}"
            + (f"\n  called by the suite at {reached}" if reached else "")
        )


def refused_simulated_device(error: BaseException) -> bool:
    """Whether torch refused a simulated tensor's device (``device=ids.device`` where torch
    names no such type: a :class:`~conformance.producers.simulated_device.SimulatedDevice`).
    Only torch's argument parser raises so, naming the object's type: the simulation's
    limit, not the backend's fault."""
    return isinstance(error, TypeError) and "SimulatedDevice" in str(error)


_SUITE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIBRARY_DIRS = tuple(
    os.path.abspath(path) + os.sep
    for path in {
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["platstdlib"],
        os.path.dirname(os.path.abspath(torch.__file__)),
        os.path.dirname(os.path.abspath(numpy.__file__)),
        os.path.dirname(os.path.abspath(pytest.__file__)),
    }
)


#: The class name of the values that stand in for a run's absent imports, where a run
#: has them (the crater's runs of plugin code): :func:`raised_at` then says where an
#: exception is the backend's own, raised by its own line with none of them at hand.
stand_in_type: str | None = None


def raised_at(error: BaseException) -> str:
    """`` at my_plugin/worker.py:57 (`copy_stream.wait_stream(main_stream)`)``: the
    innermost frame of ``error``'s traceback in the backend's own code (not the suite's,
    torch's, numpy's or the standard library's); empty where there is none."""
    frames = _traceback(error)
    found = next((tb for tb in reversed(frames) if _is_backend(tb)), None)
    if found is None:
        return ""
    own = ""
    if stand_in_type is not None and found is frames[-1]:
        backend = [tb for tb in frames if _is_backend(tb)]
        if not any(_holds_stand_in(tb.tb_frame) for tb in backend):
            own = f" {OWN_RAISE}"
    return f" at {_line_of(found)}{own}"


def _holds_stand_in(frame: FrameType) -> bool:
    """Whether a frame's names (its locals, the module globals its code names, ``self``'s
    attributes, and the items of their lists, tuples and dicts) hold a stand-in of
    :data:`stand_in_type`."""
    values = list(frame.f_locals.values())
    # Only the globals its code names: a stand-in elsewhere in the module is not at hand.
    named = frame.f_code.co_names
    values += [frame.f_globals[name] for name in named if name in frame.f_globals]
    owner = frame.f_locals.get("self")
    values += list(getattr(owner, "__dict__", {}).values())
    for value in list(values):
        if isinstance(value, (list, tuple)):
            values += list(value[:64])
        elif isinstance(value, dict):
            values += list(value.values())[:64]
    return any(type(value).__name__ == stand_in_type for value in values)


def reached_from(error: BaseException) -> str:
    """``conformance/backends/step.py:230 (`return cls(...)`)``: the suite's call that
    reached the backend's code that raised ``error`` (empty where none did)."""
    frames = _traceback(error)
    first = next((i for i, tb in enumerate(frames) if _is_backend(tb)), None)
    if first is None:
        return ""
    here = os.path.abspath(__file__)
    suite = [
        tb
        for tb in frames[:first]
        if _in_suite(tb) and os.path.abspath(tb.tb_frame.f_code.co_filename) != here
    ]
    return _line_of(suite[-1]) if suite else ""


def _traceback(error: BaseException) -> list[TracebackType]:
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    return frames


def _in_suite(tb: TracebackType) -> bool:
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_SUITE_DIR)


def _is_backend(tb: TracebackType) -> bool:
    name = tb.tb_frame.f_code.co_filename
    absolute = os.path.abspath(name)
    return not (name.startswith("<") or absolute.startswith((_SUITE_DIR, *_LIBRARY_DIRS)))


def _line_of(tb: TracebackType) -> str:
    return _source_line(tb.tb_frame.f_code.co_filename, tb.tb_lineno)


def _line_of_frame(frame: FrameType) -> str:
    return _source_line(frame.f_code.co_filename, frame.f_lineno)


def _source_line(path: str, line: int) -> str:
    source = linecache.getline(path, line).strip()
    shown = f" (`{source}`)" if source else ""
    return f"{module_path(path)}:{line}{shown}"
