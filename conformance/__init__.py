"""Conformance suite for backends of ``vllm.v1.outputs`` (spec revision 2025.10 and every
vLLM release from 0.10.2 on).

Run it with ``python -m conformance --backend SPEC [--revision R]`` or
``pytest --pyargs conformance --conformance-backend SPEC``.  From code:

* :class:`Backend`, :func:`load_backend`, :class:`BackendResolutionError` describe and
  resolve the implementation under test;
* ``check_sampler_output``, ``check_model_runner_output``, ``check_logprobs_tensors``
  and ``check_logprobs_lists`` raise one :class:`ConformanceError` listing every
  violated invariant of an object, for a backend's own tests and debugging (each
  takes ``revision=``, default ``"2025.10"``);
* ``known_revisions()`` lists the revisions;
* :class:`Step` is what a backend's ``make_async_output(step)`` receives (what vLLM's
  runner hands its async output), and ``constructed_like_vllm(cls)`` plugs in a class
  whose constructor is vLLM's own; ``STEP_KINDS`` names the kinds of step a backend
  declares its runner builds (``Backend(steps=...)``).

Everything but :class:`Backend` is imported on first use, so loading the pytest
plugin (which happens in every pytest run of an environment that has this
package) imports neither torch nor the reference.
"""

from __future__ import annotations

import importlib
from typing import Any

from conformance.backends.backend import AsyncOutputProducer, Backend, BackendResolutionError

#: The distribution this package is part of (vllm_outputs_suite_guard reads this line).
__distribution__ = "vllm-outputs-suite"

_LAZY = {
    "ConformanceError": "conformance.oracle.invariants",
    "check_logprobs_lists": "conformance.oracle.invariants",
    "check_logprobs_tensors": "conformance.oracle.invariants",
    "check_model_runner_output": "conformance.oracle.invariants",
    "check_sampler_output": "conformance.oracle.invariants",
    "load_backend": "conformance.backends.resolve",
    "selected_spec": "conformance.backends.resolve",
    "known_revisions": "conformance.oracle.revisions",
    "Step": "conformance.backends.step",
    "StepSamplerOutput": "conformance.backends.step",
    "STEP_KINDS": "conformance.backends.step",
    "constructed_like_vllm": "conformance.backends.step",
}

__all__ = [
    "STEP_KINDS",
    "AsyncOutputProducer",
    "Backend",
    "BackendResolutionError",
    "ConformanceError",
    "Step",
    "StepSamplerOutput",
    "__version__",
    "check_logprobs_lists",
    "check_logprobs_tensors",
    "check_model_runner_output",
    "check_sampler_output",
    "constructed_like_vllm",
    "known_revisions",
    "load_backend",
    "selected_spec",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "__version__":
        from conformance.version import suite_version

        return suite_version()
    raise AttributeError(f"module 'conformance' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
