"""Where the backend defines what a failing behaviour is about: its file and line.

A behaviour named ``Type.member[:variant]`` (``LogprobsLists.slice_request``) is about
one method of the backend's type; a wrong value it returns names no line of its own
(an exception does), so the behaviour's line names where the backend wrote the method.
Methods the suite or vLLM wrote (the reference, a vLLM text) name nothing.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

#: Modules whose code is not the backend's own.
_NOT_THE_BACKENDS = ("reference", "conformance", "vllm", "vllm_release_", "vllm_text_")


def where_defined(module: Any, behaviour: str) -> str | None:
    """``npu_plugin/outputs.py:12`` for the backend's own method a behaviour is about."""
    subject = behaviour.split(":", 1)[0]
    type_name, _, member = subject.partition(".")
    cls = getattr(module, type_name, None)
    if not member or not isinstance(cls, type):
        return None
    for owner in cls.__mro__:
        function = vars(owner).get(member)
        if function is None:
            continue
        function = getattr(function, "__func__", function)  # a static or class method
        if getattr(function, "__isabstractmethod__", False):
            return None  # a declaration: what fails is a producer's class implementing it
        return _location(function)
    return None


def _location(function: Any) -> str | None:
    home = getattr(function, "__module__", None) or ""
    if not inspect.isfunction(function) or home.startswith(_NOT_THE_BACKENDS):
        return None
    try:
        path = inspect.getsourcefile(function)
        _, line = inspect.getsourcelines(function)
    except (OSError, TypeError):
        return None
    if path is None:
        return None
    parts = Path(path).parts
    top = home.split(".", 1)[0]
    if top in parts:
        index = len(parts) - 1 - parts[::-1].index(top)
        path = "/".join(parts[index:])
    return f"{path}:{line}"
