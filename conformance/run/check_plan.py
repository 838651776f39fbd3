"""The plan of a run: every check collected, as the record it has until it runs.

A check that never runs (the run stopped, its process died) keeps its planned record:
``skipped`` with the cause ``not-run`` and why, or the skip it has whatever happens
(a device not declared or not here).  Under xdist each worker collects and writes
the plan into the folder it shares with the controller, which reads it back to name
the records of checks whose worker died.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace

import pytest

from conformance.report.records import NOT_RUN, CheckIdentity, TestRecord
from conformance.run import nodeids


@dataclass
class CheckPlan:
    #: Report node id -> the check's record before it runs.
    records: dict[str, TestRecord] = field(default_factory=dict)
    #: pytest's node id -> the report's (they differ where the suite is installed).
    canonical: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_items(cls, items: Iterable[pytest.Item]) -> CheckPlan:
        plan = cls()
        for item in items:
            check = CheckIdentity.of_item(item) if nodeids.in_checks(item.path) else None
            if check is None:
                continue
            record = TestRecord.of_check(check, "skipped", "not run", NOT_RUN)
            skip = item.get_closest_marker("skip")
            if check.skip_cause and skip is not None:
                # Skipped whatever happens (a device not declared or not here): say so.
                reason = skip.kwargs.get("reason") or (skip.args[0] if skip.args else "")
                record = replace(record, message=str(reason), skip_cause=check.skip_cause)
            plan.records[record.nodeid] = record
            plan.canonical[item.nodeid] = record.nodeid
        return plan

    def report_id(self, nodeid: str) -> str:
        """The report's node id of pytest's ``nodeid``."""
        return self.canonical.get(nodeid, nodeid)

    def planned(self, nodeid: str) -> TestRecord:
        """The planned record of the check the report calls ``nodeid`` (one that ended
        its process before the plan was made gets one of its own)."""
        return self.records.get(nodeid) or TestRecord.unplanned(nodeid)

    def to_json(self) -> str:
        return json.dumps(
            {"plan": [asdict(r) for r in self.records.values()], "canonical": self.canonical}
        )

    @classmethod
    def from_json(cls, text: str) -> CheckPlan:
        data = json.loads(text)
        records = {r["nodeid"]: TestRecord(**r) for r in data["plan"]}
        return cls(records, dict(data["canonical"]))
