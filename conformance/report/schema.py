"""The conformance report's schema, owned by its writer (:mod:`conformance.report.writer`).

``reports`` (the reader) imports it from here; it imports nothing (no pytest, no
torch), so reading a report needs none of the suite (DESIGN section 3).
"""

from __future__ import annotations

SCHEMA = "conformance-report/1"

#: Outcomes of a test record.
OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed", "error")
#: Keys of the report's ``summary``, per outcome (the contract spells ``errors``).
SUMMARY_KEYS = {
    "passed": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "xfailed": "xfailed",
    "xpassed": "xpassed",
    "error": "errors",
}
#: Outcomes that fail a run (an xpassed record is a declared deviation that is gone).
FAILING_OUTCOMES = frozenset({"failed", "xpassed", "error"})
#: Outcomes that mean the backend does not conform.
BAD_OUTCOMES = frozenset({"failed", "error"})
#: Outcomes that count as conforming: passed, or a declared deviation that did fail.
GOOD_OUTCOMES = frozenset({"passed", "xfailed"})

#: ``tests[*].skip_cause`` values, and what each means to a reader.  A newer writer
#: may add causes; older reports have no ``skip_cause`` at all.
SKIP_CAUSES = {
    "device-not-declared": "device not declared by the backend",
    "device-not-present": "device declared, but absent on this machine",
    "producer-not-declared": "the backend gives no such producer",
    "not-run": "the run stopped before this check (a crash, a time limit, Ctrl-C)",
}

#: Keys of each ``tests[*]`` record.
RECORD_KEYS = (
    "nodeid",
    "spec_type",
    "check",
    "behaviour",
    "device",
    "outcome",
    "message",
    "skip_cause",
)
