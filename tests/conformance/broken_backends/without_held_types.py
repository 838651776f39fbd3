"""vLLM 0.34.0's types but the two its fields hold (ECConnectorOutput, SamplingMaskLists)."""

from conformance.backends.known import reference_backend as _reference_backend

_RELEASE = _reference_backend("0.34.0").module
_LEFT_OUT = ("ECConnectorOutput", "SamplingMaskLists")

globals().update(
    {
        name: getattr(_RELEASE, name)
        for name in dir(_RELEASE)
        if not name.startswith("_") and name not in _LEFT_OUT
    }
)
