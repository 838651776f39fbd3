"""Not broken: the reference's seven names held by a ``types.SimpleNamespace``, not a module."""

import types

import reference
from conformance import Backend
from conformance.spec_names import SPEC_NAMES

NAMES = types.SimpleNamespace(
    **{name: getattr(reference, name) for name in (*SPEC_NAMES, "PLACEHOLDER_TOKEN_ID")}
)
BACKEND = Backend(name="names-in-a-namespace", module=NAMES)
