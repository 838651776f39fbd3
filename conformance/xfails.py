"""``--xfails-file``: known deviations a backend declares, as strict expected failures.

Format (TOML)::

    [[xfail]]
    nodeid = "conformance/checks/test_logprobs_lists.py::test_slice_with_cu"
    reason = "we rebase cu_num_generated_tokens as vLLM 0.11.1 does"

``nodeid`` is a node id or a prefix of one; a prefix matches at a boundary of the
id (before ``::``, ``[`` or ``/``, or anywhere when it ends in one of them), so
``...::test_slice`` does not match ``...::test_slice_with_cu``.  Node ids are
written as the report writes them (``conformance/checks/<module>::<test>``); the
id pytest prints is accepted too.  Every entry is strict: a check it names that
passes fails the run, and an entry that matches no collected check is an error.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


class XfailsFileError(Exception):
    """The file cannot be used; the message names the problem and the fix."""


@dataclass(frozen=True)
class XfailEntry:
    nodeid: str
    reason: str

    def matches(self, *nodeids: str) -> bool:
        return any(_prefix_match(self.nodeid, nodeid) for nodeid in nodeids)


def _prefix_match(prefix: str, nodeid: str) -> bool:
    if nodeid == prefix:
        return True
    if not nodeid.startswith(prefix):
        return False
    return prefix[-1] in ":[/" or nodeid[len(prefix)] in ":[/"


def load(path: str | Path) -> list[XfailEntry]:
    """Read and validate an xfails file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise XfailsFileError(
            f"xfails file {path}: no such file; fix the path given to --xfails-file"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise XfailsFileError(f"xfails file {path}: cannot be read ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise XfailsFileError(
            f"xfails file {path}: invalid TOML ({error}); fix the syntax"
        ) from None
    unknown = sorted(set(data) - {"xfail"})
    if unknown:
        raise XfailsFileError(
            f"xfails file {path}: unknown top-level key(s) {', '.join(unknown)}; "
            'write entries as [[xfail]] tables with nodeid = "..." and reason = "..."'
        )
    entries = data.get("xfail", [])
    if not isinstance(entries, list):
        raise XfailsFileError(
            f"xfails file {path}: 'xfail' must be an array of tables; write [[xfail]] entries"
        )
    return [_entry(path, i, raw) for i, raw in enumerate(entries, start=1)]


def _entry(path: Path, number: int, raw: object) -> XfailEntry:
    where = f"xfails file {path}: entry {number}"
    if not isinstance(raw, dict):
        raise XfailsFileError(f"{where} is not a table; write it as [[xfail]]")
    unknown = sorted(set(raw) - {"nodeid", "reason"})
    if unknown:
        raise XfailsFileError(
            f"{where} has unknown key(s) {', '.join(unknown)}; only nodeid and reason are read"
        )
    nodeid, reason = raw.get("nodeid"), raw.get("reason")
    if not isinstance(nodeid, str) or not nodeid.strip():
        raise XfailsFileError(f'{where} has no nodeid; add nodeid = "<node id or prefix>"')
    if not isinstance(reason, str) or not reason.strip():
        raise XfailsFileError(
            f'{where} ({nodeid}) has no reason; add reason = "<why this check fails>"'
        )
    return XfailEntry(nodeid.strip(), reason.strip())
