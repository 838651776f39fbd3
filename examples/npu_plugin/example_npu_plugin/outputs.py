"""vLLM's own output types of the release this plugin pins.

A real plugin imports them from vLLM.  This example must also run where vLLM is not
installed (any CI machine), so it falls back to vllm-outputs-suite's reference of the
same release, which has the same classes (held types such as ECConnectorOutput too).
"""

from __future__ import annotations

PINNED_RELEASE = "0.12.0"

try:
    from vllm.v1.outputs import *  # type: ignore[import-not-found]  # noqa: F403
except ImportError:
    from reference.revisions import reference_module

    _types = reference_module(PINNED_RELEASE)
    globals().update({name: getattr(_types, name) for name in _types.__all__})
