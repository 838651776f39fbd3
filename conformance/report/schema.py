"""The conformance report's schema, owned by its writer (:mod:`conformance.report.writer`).

The names live in ``schema.json`` beside this module, one file for both sides: the
writer reads them here, and ``reports`` (which never imports the suite, DESIGN
section 2) reads the same file (``reports.conformance_schema``).
"""

from __future__ import annotations

import json
from pathlib import Path

SCHEMA_FILE = Path(__file__).with_name("schema.json")
_DATA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))

SCHEMA: str = _DATA["schema"]
#: Outcomes of a test record.
OUTCOMES: tuple[str, ...] = tuple(_DATA["outcomes"])
#: Keys of the report's ``summary``, per outcome (the contract spells ``errors``).
SUMMARY_KEYS: dict[str, str] = dict(_DATA["summary_keys"])
#: Outcomes that fail a run (an xpassed record is a declared deviation that is gone).
FAILING_OUTCOMES = frozenset(_DATA["failing_outcomes"])
#: Outcomes that mean the backend does not conform.
BAD_OUTCOMES = frozenset(_DATA["bad_outcomes"])
#: Outcomes that count as conforming: passed, or a declared deviation that did fail.
GOOD_OUTCOMES = frozenset(_DATA["good_outcomes"])
#: ``tests[*].skip_cause`` values, and what each means to a reader.  A newer writer
#: may add causes; older reports have no ``skip_cause`` at all.
SKIP_CAUSES: dict[str, str] = dict(_DATA["skip_causes"])
#: Keys of each ``tests[*]`` record.
RECORD_KEYS: tuple[str, ...] = tuple(_DATA["record_keys"])
#: Keys ``summary`` holds beside the counts: the declared deviations of the run.
SUMMARY_DEVIATION_KEYS: tuple[str, ...] = tuple(_DATA["summary_deviation_keys"])
#: How ``--write-xfails`` starts each reason it writes: an entry whose reason still
#: starts so is a deviation nobody has explained yet.
XFAIL_PLACEHOLDER: str = _DATA["xfail_placeholder"]
#: How an xfails entry's label starts in an xfailed record's message (``reason [label]``).
XFAIL_LABELS: tuple[str, ...] = tuple(_DATA["xfail_labels"])
#: Behaviours whose failure explains others of the same producer: listed first.
CAUSE_BEHAVIOURS: tuple[str, ...] = tuple(_DATA["cause_behaviours"])
