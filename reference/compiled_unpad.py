"""The unpadding's compiled tier: numpy at once, the C list builder once it is ready.

:func:`reference.unpad_sampled_token_ids` runs on every decode step.  Its numpy
path pays several microseconds of fixed cost per call before any id is touched;
the C loop of :mod:`reference.native_unpad` builds the lists in one pass (32
requests with up to 8 drafts each: 6.8 us instead of 17.7 on a 2-core box).  As with the rank count (:mod:`reference.background_build`),
no caller waits for the C compiler: after :data:`HOT_CALLS` calls of at least
:data:`MIN_ELEMENTS` ids, a background thread builds the loop (a tenth of a
second) and each such call uses it from then on; where it does not build, the
numpy path stays and :func:`state` says why.  Smaller batches never use it: the
ctypes call costs more than converting a row or two in Python.

``$OUTPUTS_REFERENCE_COMPILE=0`` (read until the build starts) keeps the numpy path.
"""

from __future__ import annotations

import torch

from reference import native_unpad
from reference.background_build import HOT_CALLS, HotBuild, wait_all

__all__ = ["HOT_CALLS", "MIN_ELEMENTS", "build_here", "compiled_unpad", "settle", "state"]

#: Batches of at least this many ids use the list builder: below it the ctypes
#: call's ~1.5 us costs more than a small batch's ``tolist()`` and Python filter.
MIN_ELEMENTS = 16

_C_LIST_BUILDER = "C list builder"


def _built() -> tuple[str, native_unpad.Unpad]:
    return _C_LIST_BUILDER, native_unpad.build()


def _fresh_build() -> HotBuild[native_unpad.Unpad]:
    return HotBuild(_built, "reference-unpad-build")


_BUILD = _fresh_build()


def compiled_unpad(sampled: torch.Tensor, vocab_size: int | None) -> list[list[int]] | None:
    """The unpadded rows from the list builder, or None where this call runs eagerly.

    ``sampled`` is a plain 2-D integer tensor of at least :data:`MIN_ELEMENTS`
    entries and ``vocab_size`` None or >= 1 (the caller has checked both).  A None
    also counts the call towards the build while it has not started.
    """
    build = _BUILD
    run = build.run
    if run is not None:
        return run(sampled, vocab_size)
    build.note_hot_call()
    return None


def build_here() -> str:
    """Build the list builder now, on this thread (unless the switch is off or a build
    has started), and return :func:`state`.  For a process that forks workers, which
    then inherit it: the benchmarks' forkserver parent."""
    _BUILD.build_here()
    return state()


def settle(timeout: float | None = None) -> str:
    """Wait (up to ``timeout`` seconds) for the build if it started; :func:`state`."""
    wait_all([_BUILD], timeout)
    return state()


def state() -> str:
    """``eager (N of 16 hot calls)``, ``compiling``, ``compiled (C list builder)`` or
    ``eager: compile failed (WHY)``."""
    return _BUILD.state()
