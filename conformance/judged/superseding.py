"""A backend judged against a vLLM text that changed things: which rules still hold.

The text is judged by its nearest known release's revision, except where vLLM changed
what that revision's rules describe.  Which rules those are is asked of vLLM's own code:
the *self-run* judges the text itself (its outputs.py and, where present, its
producers) against the nearest revision, in a process of its own.  Every check the
text fails there is *superseded*: vLLM no longer does what the rule says, so a backend
is not judged by it, but against the text's own code instead (the ``vllm-change:``
behaviours, ``conformance/checks/test_vllm_changes.py``); each is attributed to the
changes that touch its type and member.  The self-run's verdicts are cached
(``$XDG_CACHE_HOME/vllm-outputs-suite/self-runs/``), keyed by the texts, the revision
and the suite's own code, so a weekly job pays for it once per vLLM text.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Set in the self-run's process: a run judging vLLM's own text starts no other run.
SELF_RUN_ENV = "OUTPUTS_SUITE_SELF_RUN"
#: The skip cause of a superseded check (``tests[*].skip_cause``).
SUPERSEDED = "superseded-by-vllm-change"


class SelfRunError(RuntimeError):
    """vLLM's own text could not be judged (the message says why, in one line)."""


@dataclass(frozen=True)
class Superseded:
    """A check of the nearest revision that vLLM's own text fails."""

    key: str  #: ``conformance/checks/<module>::<check>`` (no device)
    behaviour: str
    spec_type: str
    message: str  #: why vLLM's own text fails it (first line)
    by: tuple[str, ...]  #: the ``vllm-change:`` behaviours it is attributed to

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.key,
            "behaviour": self.behaviour,
            "spec_type": self.spec_type,
            "message": self.message,
            "by": list(self.by),
        }


def check_key(nodeid: str, check: str) -> str:
    """What identifies a check across devices: its module and its name with parameters."""
    return f"{nodeid.partition('::')[0]}::{check}"


def superseded_checks(judged: Any, check_timeout: float | None) -> dict[str, Superseded]:
    """``{check key: Superseded}`` for a :class:`~conformance.releases.text_revision.TextRevision`.

    A text without changes is its nearest release, which passes its own revision: no
    self-run.  Raises :class:`SelfRunError` when the self-run gives no report.
    """
    if not judged.changes:
        return {}
    failing = _self_run_failures(judged, check_timeout)
    return {key: attribute(judged, key, record) for key, record in failing.items()}


def attribute(judged: Any, key: str, record: dict[str, Any]) -> Superseded:
    """The judged changes a failing check of vLLM's own text comes from: those of its
    spec type whose member the check or its message names, else all of its spec type's,
    else every judged change (the text differs from its nearest release only in them)."""
    text = " ".join(str(record.get(k) or "") for k in ("behaviour", "check", "message"))
    words = set(re.findall(r"[A-Za-z_]\w*", text))
    of_type = [
        j for j in judged.judged if j.spec_type == record.get("spec_type") or j.type in words
    ]
    named = [j for j in of_type if j.member and j.member in words]
    chosen = named or of_type or list(judged.judged)
    message = (str(record.get("message") or "").splitlines() or [""])[0]
    return Superseded(
        key,
        str(record.get("behaviour") or ""),
        str(record.get("spec_type") or ""),
        message,
        tuple(j.behaviour for j in chosen),
    )


def _self_run_failures(judged: Any, check_timeout: float | None) -> dict[str, dict[str, Any]]:
    cache = _cache_file(judged, check_timeout)
    if cache.is_file():
        try:
            cached: dict[str, dict[str, Any]] = json.loads(cache.read_text(encoding="utf-8"))
            return cached
        except (OSError, ValueError):
            pass
    report = _run_self(judged, check_timeout)
    failing = {
        check_key(t["nodeid"], t["check"]): t
        for t in report["tests"]
        if t["outcome"] in ("failed", "error")
    }
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=cache.parent, prefix=".self-run-")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(failing, stream)
        os.replace(temporary, cache)
    except OSError:
        pass  # an unwritable cache costs the next run a self-run, nothing else
    return failing


def _run_self(judged: Any, check_timeout: float | None) -> dict[str, Any]:
    """Judge the text itself against its nearest revision in a process of its own."""
    from conformance.releases.texts import UNKNOWN_VERSION, write_tree

    source = judged.source
    with tempfile.TemporaryDirectory(prefix="vllm-self-run-") as folder:
        tree = Path(folder) / "tree"
        if not _is_the_installed_vllm(source.path):
            # The texts laid out as vllm; an installed vLLM is judged as it is, its own
            # producers imported for real.
            write_tree(source.outputs, source.version or UNKNOWN_VERSION, tree, source.producers)
        report = Path(folder) / "report.json"
        command = [
            sys.executable, "-m", "pytest", "--pyargs", "conformance", "-q",
            "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning",
            "--conformance-backend", "vllm", f"--conformance-revision={judged.base}",
            f"--conformance-report={report}",
        ]  # fmt: skip
        if check_timeout is not None:
            command.append(f"--conformance-check-timeout={check_timeout}")
        environment = {
            **os.environ,
            SELF_RUN_ENV: "1",
            "PYTHONPATH": os.pathsep.join(
                filter(
                    None,
                    [
                        str(tree) if tree.is_dir() else "",
                        _suite_path(),
                        os.environ.get("PYTHONPATH"),
                    ],
                )
            ),
        }
        for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "OUTPUTS_BACKEND"):
            environment.pop(name, None)
        done = subprocess.run(
            command, cwd=folder, env=environment, capture_output=True, text=True, check=False
        )
        if not report.is_file():
            lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
            raise SelfRunError(
                f"vLLM's own text {source.path} could not be judged against {judged.base} "
                f"(exit {done.returncode}: {lines[-1] if lines else 'no output'})"
            )
        data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return data


def _is_the_installed_vllm(path: Path) -> bool:
    from conformance.backends.known import installed_package_dir

    installed = installed_package_dir()
    if installed is None or not path.is_dir():
        return False
    resolved = path.resolve()
    return installed in (resolved, resolved / "vllm")


def _suite_path() -> str:
    """Where this suite is imported from, so the self-run runs the same code."""
    import conformance

    return str(Path(conformance.__file__).resolve().parent.parent)


def _cache_file(judged: Any, check_timeout: float | None) -> Path:
    from conformance.releases.fetch import cache_home

    key = hashlib.sha256(
        f"{judged.source.digest}\0{judged.base}\0{check_timeout}\0{_suite_digest()}".encode()
    ).hexdigest()[:24]
    return cache_home() / "self-runs" / f"{key}.json"


@functools.cache
def _suite_digest() -> str:
    """Names this suite's code: a self-run of another suite version is not reused."""
    import conformance
    import reference

    hashed = hashlib.sha256()
    for package in (conformance, reference):
        root = Path(str(package.__file__)).resolve().parent
        for path in sorted(root.rglob("*.py")):
            hashed.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return hashed.hexdigest()


# --- the checks that judge the changes ------------------------------------------------


@dataclass(frozen=True)
class DifferentialCase:
    """One check of ``conformance/checks/test_vllm_changes.py``: what ``kind`` of check
    (``fields``, ``construction``, ``signature``, ``results``, ``producer``), of which
    member, under which ``vllm-change:`` behaviour."""

    kind: str
    behaviour: str
    spec_type: str
    type: str
    member: str = ""
    producer: str | None = None

    @property
    def id(self) -> str:
        if self.kind == "producer":
            return f"producer.{self.producer}"
        return f"{self.type}.{self.member}" if self.member else self.type


def differential_cases(judged: Any, superseded: dict[str, Superseded]) -> list[DifferentialCase]:
    """The checks of a judged text: its changes', then those that take over a superseded
    check's ground (a method whose rule vLLM's own code no longer keeps is compared with
    that code; a type whose shape it no longer has, with its shape)."""
    from conformance.oracle.text_surface import OUTPUTS_MODULE

    surface = judged.surface
    found: dict[tuple[str, str, str], DifferentialCase] = {}

    def add(kind: str, behaviour: str, spec_type: str, type_name: str, member: str = "",
            producer: str | None = None) -> None:  # fmt: skip
        found.setdefault(
            (kind, type_name, member or (producer or "")),
            DifferentialCase(kind, behaviour, spec_type, type_name, member, producer),
        )

    def is_record(type_name: str) -> bool:
        header = surface.get((OUTPUTS_MODULE, type_name, ""))
        return header is not None and ("NamedTuple" in header.shape or "dataclass" in header.shape)

    def methods(type_name: str) -> list[str]:
        return [
            m.name
            for m in surface.values()
            if m.module == OUTPUTS_MODULE
            and m.owner == type_name
            and m.kind == "method"
            and "@" not in m.name
        ]

    def add_method(behaviour: str, spec_type: str, type_name: str, name: str) -> None:
        member = surface.get((OUTPUTS_MODULE, type_name, name))
        if member is None:
            return
        add("signature", behaviour, spec_type, type_name, name)
        if "abstractmethod" not in member.shape:
            add("results", behaviour, spec_type, type_name, name)

    for j in judged.judged:
        if j.subject == "producer":
            add("producer", j.behaviour, j.spec_type, j.type, "", j.producer)
            continue
        if j.subject in ("type", "fields") and is_record(j.type):
            add("fields", j.behaviour, j.spec_type, j.type, j.member)
            add("construction", j.behaviour, j.spec_type, j.type, j.member)
        if j.subject == "type":
            for name in methods(j.type):
                add_method(j.behaviour, j.spec_type, j.type, name)
        elif j.subject == "method":
            add_method(j.behaviour, j.spec_type, j.type, j.member)
    judged_kinds = {(c.kind, c.type) for c in found.values()}
    for record in superseded.values():
        if not record.by:
            continue
        behaviour = record.by[0]
        type_name, _, rest = record.behaviour.partition(".")
        rule = rest.split(":", 1)[0]
        if type_name == "producer":
            producer = rule if rule != "async_output" else "make_async_output"
            add("producer", behaviour, record.spec_type, "", "", producer)
        elif (OUTPUTS_MODULE, type_name, "") not in surface:
            continue  # vLLM dropped the type: nothing to compare with
        elif rule == "surface":
            method = re.search(r"method\[(\w+)\]", record.key)
            if method:
                add_method(behaviour, record.spec_type, type_name, method[1])
            elif is_record(type_name) and ("fields", type_name) not in judged_kinds:
                add("fields", behaviour, record.spec_type, type_name)
        elif rule in methods(type_name):
            add_method(behaviour, record.spec_type, type_name, rule)
        elif is_record(type_name) and ("construction", type_name) not in judged_kinds:
            add("construction", behaviour, record.spec_type, type_name)
    return list(found.values())
