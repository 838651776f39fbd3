"""The words that ran the reports, for the usage line and every message.

``python -m reports``, or the console command ``vllm-outputs-suite report``, which puts
its own words in ``sys.argv[0]`` (:mod:`vllm_outputs_suite_command`): a user told to run
``python -m reports --help`` after typing the console command looks for the wrong thing.
"""

from __future__ import annotations

import sys

MODULE_COMMAND = "python -m reports"


def command() -> str:
    try:
        from vllm_outputs_suite_guard import COMMAND
    except ImportError:  # an editable install made before it existed maps only older names
        return MODULE_COMMAND
    first = sys.argv[0] if sys.argv else ""
    return first if first.startswith(f"{COMMAND} ") else MODULE_COMMAND
