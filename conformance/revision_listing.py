"""``python -m conformance --list-revisions``: one line per revision, its releases after it."""

from __future__ import annotations

from conformance.spec import DEFAULT_REVISION, all_revisions


def listing_lines() -> list[str]:
    revisions = all_revisions()
    width = max(len(r.name) for r in revisions)
    lines = []
    for r in revisions:
        covers = ", ".join(r.releases) if r.releases else "(no release)"
        default = " [default]" if r.name == DEFAULT_REVISION else ""
        lines.append(f"{r.name:<{width}}  {covers}{default}  -- {r.summary}")
    return lines
