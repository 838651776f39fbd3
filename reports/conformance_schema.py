"""The conformance report's schema as its reader needs it, read from the writer's file.

The writer owns the schema (``conformance/report/schema.json``, DESIGN section 3);
``reports`` reads that file where the suite is installed, found without importing the
suite (DESIGN section 2: reports reads files, never imports the other packages).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any


def suite_json(*parts: str) -> dict[str, Any]:
    """A JSON file of the installed ``conformance`` package (``report/schema.json``),
    found without importing it."""
    # find_spec of a top-level package locates it without running it.
    found = importlib.util.find_spec("conformance")
    if found is None or found.origin is None:
        raise ImportError("the conformance package of vllm-outputs-suite is not installed")
    path = Path(found.origin).parent.joinpath(*parts)
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


_DATA = suite_json("report", "schema.json")


SCHEMA: str = _DATA["schema"]
OUTCOMES: tuple[str, ...] = tuple(_DATA["outcomes"])
SUMMARY_KEYS: dict[str, str] = dict(_DATA["summary_keys"])
BAD_OUTCOMES = frozenset(_DATA["bad_outcomes"])
GOOD_OUTCOMES = frozenset(_DATA["good_outcomes"])
SKIP_CAUSES: dict[str, str] = dict(_DATA["skip_causes"])
RECORD_KEYS: tuple[str, ...] = tuple(_DATA["record_keys"])
SUMMARY_DEVIATION_KEYS: tuple[str, ...] = tuple(_DATA["summary_deviation_keys"])
#: How ``--write-xfails`` starts a reason: an xfailed check whose reason still starts
#: so is a deviation nobody has explained yet.
XFAIL_PLACEHOLDER: str = _DATA["xfail_placeholder"]
#: How an xfails entry's label starts in an xfailed record's message (``reason [label]``).
XFAIL_LABELS: tuple[str, ...] = tuple(_DATA["xfail_labels"])
#: Behaviours whose failure explains others of the same producer: listed first, as the
#: terminal lists them.
CAUSE_BEHAVIOURS: tuple[str, ...] = tuple(_DATA["cause_behaviours"])
