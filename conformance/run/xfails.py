"""``--xfails``: known deviations a backend declares, validated before any check runs.

Format (TOML)::

    [[xfail]]
    behaviour = "LogprobsLists.slice:cu-not-rebased"
    reason = "we rebase cu_num_generated_tokens as vLLM 0.11.1 does"

    [[xfail]]
    nodeid = "conformance/checks/test_logprobs_tensors_tolists.py::test_tolists_accepts_cu_by_keyword"
    match = "TypeError"              # optional: counts only when the failure message matches
    reason = "our tolists takes cu positionally only"

An entry names either a ``behaviour`` (every check of that rule; one deviation,
one entry) or a ``nodeid`` (a node id or a prefix that ends at a boundary:
``::``, ``[`` or ``/``), and may add ``match``, a regular expression searched in
the failure message.

* A check an entry names that fails (and matches) is ``xfailed``.
* A ``nodeid`` entry is strict: a check it names that passes is ``xpassed`` and
  fails the run.  A ``behaviour`` entry covers the rule as a whole: checks of it
  that pass stay passed, but if none of them fails the entry is stale, reported
  as one ``xpassed`` record, and fails the run.
"""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.report.schema import XFAIL_PLACEHOLDER
from conformance.run.failure_lines import NOT_A_RACE, representative

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: ``match`` of an entry for a race check's wrong values: the message's words, as a
#: regular expression a reader can still read (spaces need no escape).
_NOT_A_RACE_MATCH = re.escape(NOT_A_RACE).replace("\\ ", " ")


class XfailsFileError(Exception):
    """The file cannot be used; the message names the problem and the fix."""


@dataclass(frozen=True)
class XfailEntry:
    reason: str
    nodeid: str | None = None
    behaviour: str | None = None
    match: str | None = None
    number: int = 0
    _pattern: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        """How reports name the entry: ``behaviour=...`` or the node id."""
        return f"behaviour={self.behaviour}" if self.behaviour else str(self.nodeid)

    @property
    def strict(self) -> bool:
        return self.nodeid is not None

    def names(self, nodeid: str, behaviour: str | None) -> bool:
        """True when this entry covers the check ``nodeid`` of ``behaviour``."""
        if self.behaviour is not None:
            return behaviour == self.behaviour
        assert self.nodeid is not None
        return _prefix_match(self.nodeid, nodeid)

    def accepts(self, message: str) -> bool:
        """True when a failure with ``message`` is the deviation this entry declares."""
        return self._pattern is None or self._pattern.search(message) is not None


def canonical_entry_nodeid(nodeid: str) -> str:
    """A node id as the report writes it: the terminal's ``checks/...`` gains ``conformance/``.

    pytest prints the checks' ids relative to the folder it runs in, so an id pasted
    from the terminal may start at ``checks/`` (or carry the installed path).
    """
    nodeid = nodeid.strip()
    module, sep, rest = nodeid.partition("::")
    parts = module.replace("\\", "/").split("/")
    if "checks" in parts:
        i = len(parts) - 1 - parts[::-1].index("checks")
        module = "/".join(["conformance", *parts[i:]])
    return module + sep + rest


def _prefix_match(prefix: str, nodeid: str) -> bool:
    if nodeid == prefix:
        return True
    if not nodeid.startswith(prefix):
        return False
    return prefix[-1] in ":[/" or nodeid[len(prefix)] in ":[/"


def load(path: str | Path) -> list[XfailEntry]:
    """Read an xfails file and check its syntax (what it names is checked by :func:`validate`)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise XfailsFileError(
            f"xfails file {path}: no such file; fix the path given to --xfails"
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
            f"xfails file {path}: unknown top-level key(s) {', '.join(unknown)}; write entries "
            'as [[xfail]] tables with behaviour = "..." or nodeid = "...", and reason = "..."'
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
    unknown = sorted(set(raw) - {"nodeid", "behaviour", "match", "reason"})
    if unknown:
        raise XfailsFileError(
            f"{where} has unknown key(s) {', '.join(unknown)}; it takes behaviour or nodeid, "
            "match and reason"
        )
    nodeid, behaviour = raw.get("nodeid"), raw.get("behaviour")
    given = [k for k, v in (("nodeid", nodeid), ("behaviour", behaviour)) if v is not None]
    if len(given) != 1:
        raise XfailsFileError(
            f'{where} must name exactly one of behaviour = "..." or nodeid = "..." '
            f"(found {' and '.join(given) or 'neither'})"
        )
    value = nodeid if nodeid is not None else behaviour
    if not isinstance(value, str) or not value.strip():
        raise XfailsFileError(f"{where}: {given[0]} must be a non-empty string")
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise XfailsFileError(
            f'{where} ({value}) has no reason; add reason = "<why this check fails>"'
        )
    match = raw.get("match")
    pattern = None
    if match is not None:
        if not isinstance(match, str):
            raise XfailsFileError(f"{where}: match must be a string (a regular expression)")
        try:
            pattern = re.compile(match)
        except re.error as error:
            raise XfailsFileError(
                f"{where}: match {match!r} is not a regular expression ({error})"
            ) from None
    return XfailEntry(
        reason=reason.strip(),
        nodeid=canonical_entry_nodeid(nodeid) if nodeid is not None else None,
        behaviour=behaviour.strip() if behaviour is not None else None,
        match=match,
        number=number,
        _pattern=pattern,
    )


def validate(
    entries: list[XfailEntry],
    *,
    behaviours: frozenset[str],
    known_behaviours: frozenset[str],
    check_functions: dict[str, set[str]],
    revision: str,
    path: str,
) -> None:
    """Refuse entries that can name no check of this run (raises :class:`XfailsFileError`).

    ``behaviours`` are those of the revision judged, ``known_behaviours`` every
    behaviour of every revision, ``check_functions`` the test functions of each
    check module (``test_x.py`` -> names).
    """
    for entry in entries:
        where = f"xfails file {path}: entry {entry.number} ({entry.label})"
        if entry.behaviour is not None:
            if entry.behaviour not in known_behaviours:
                raise XfailsFileError(
                    f"{where} names no behaviour{_did_you_mean(entry.behaviour, known_behaviours)}; "
                    "use a name a failure shows in brackets ([producer.gather_logprobs]), as "
                    "the conformance guide lists them"
                )
            if entry.behaviour not in behaviours:
                raise XfailsFileError(
                    f"{where} names a behaviour that revision {revision} does not have, so no "
                    "check of it runs; remove the entry or judge another revision"
                )
            continue
        assert entry.nodeid is not None
        module, _, rest = entry.nodeid.replace("\\", "/").rpartition("/")[2].partition("::")
        if module not in check_functions:
            raise XfailsFileError(
                f"{where} names no check module{_did_you_mean(module, check_functions)}; node ids "
                "look like conformance/checks/test_<module>.py::test_<check>"
            )
        # A prefix ends at a boundary, so the function part is always a whole name.
        function = re.split(r"[\[:]", rest, maxsplit=1)[0] if rest else ""
        if function and function not in check_functions[module]:
            raise XfailsFileError(
                f"{where} names no check in {module}"
                f"{_did_you_mean(function, check_functions[module])}"
            )


def _did_you_mean(name: str, choices: object) -> str:
    close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.5)  # type: ignore[call-overload]
    return f"; did you mean {close[0]!r}?" if close else ""


def write_entries(path: Path, records: Any, header: str) -> int:
    """An xfails file with one entry per behaviour that failed; returns how many.

    Each reason quotes the first failure, to be replaced by why the backend differs.
    Written only when something failed; never over an existing file.
    """
    failed: dict[str, list[Any]] = {}
    for record in records:
        if record.outcome in ("failed", "error") and record.behaviour:
            failed.setdefault(record.behaviour, []).append(record)
    if not failed:
        return 0
    first = {b: (len(rs), representative(rs).message) for b, rs in failed.items()}
    lines = [
        f"# Known deviations of {header}, written by the conformance suite.",
        "# One entry per behaviour that failed: replace each reason with why, then run with",
        "# --xfails (pytest: --conformance-xfails) this file.  Until then each entry is",
        f"# reported as unexplained (its reason starts {XFAIL_PLACEHOLDER.strip()!r}).",
    ]
    for behaviour, (count, message) in sorted(first.items()):
        shown = message.removeprefix(f"[{behaviour}] ").splitlines()[0][:160]
        lines += [
            "",
            "[[xfail]]",
            f"behaviour = {_toml_string(behaviour)}",
            f"reason = {_toml_string(f'{XFAIL_PLACEHOLDER}{count} check(s) failed, first: {shown}')}",
        ]
        if all(NOT_A_RACE in record.message for record in failed[behaviour]):
            # A race check that found the backend's wrong values, not a race: the entry
            # covers those, and a read before the copy arrived still fails.
            lines.append(f"match = {_toml_string(_NOT_A_RACE_MATCH)}")
    path.parent.mkdir(parents=True, exist_ok=True)  # as the report's folders are made
    with path.open("x", encoding="utf-8") as stream:
        stream.write("\n".join(lines) + "\n")
    return len(first)


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
