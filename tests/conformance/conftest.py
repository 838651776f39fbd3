"""Helpers of the conformance self-tests.

This directory goes on ``sys.path`` so that ``broken_backends`` (the deliberately
wrong copies of the reference) and ``suite_runner`` import by name, in this
process and in the subprocesses the tests start.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
