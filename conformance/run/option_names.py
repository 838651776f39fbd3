"""How the user spelled the suite's options: ``python -m conformance`` or plain pytest.

The command line takes ``--revision``; pytest takes ``--conformance-revision``.  The
header and messages name the option the user can actually type.
"""

from __future__ import annotations

import os

#: Set by ``python -m conformance`` (and inherited by its xdist workers).
COMMAND_ENV = "CONFORMANCE_COMMAND_LINE"


def option(name: str) -> str:
    """``--name`` under ``python -m conformance``, ``--conformance-name`` under pytest."""
    return f"--{name}" if os.environ.get(COMMAND_ENV) else f"--conformance-{name}"
