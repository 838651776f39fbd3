"""Unresolvable: a Backend that targets a spec revision this suite does not describe."""

import reference
from conformance import Backend

BACKEND = Backend(name="from-the-future", module=reference, spec_revision="2026.01")
