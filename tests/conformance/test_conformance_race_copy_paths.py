"""The race check sees every copy: vLLM's own async output of each release, one copy path broken.

For each distinct ``AsyncGPUModelRunnerOutput`` of the release texts, every statement
of its constructor that queues a non-blocking device-to-host copy before the copy
event's ``record()`` is a *copy path*.  Each mutant is the release's own class with one
path moved after the ``record()`` (its copy is no longer covered by the wait), and one
more with the wait (``synchronize()``) taken out of ``get_output()``.  The mutants are
built from the release's text by its syntax tree, so they follow each release, and
judged in this process by the race check itself (no conformance run per mutant): each
must fail ``waits-for-device`` naming its copy; the unmodified class passes.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance import Backend
from conformance.checks import test_producer_async_output as race
from conformance.oracle import revisions
from conformance.producers.runtime import step_device
from conformance.releases.texts import (
    load_outputs_module,
    producer_sections,
    producer_text_beside,
    release_texts,
)

CLASS = "AsyncGPUModelRunnerOutput"
pytestmark = pytest.mark.skipif(not (RELEASES / "producers").is_dir(), reason=SKIP_REASON)


#: What the race check calls each step's tensor (a part of a tuple: its prefix).
_LABELS = {
    "sampled_token_ids": "sampled_token_ids",
    "logprobs": "logprobs.",
    "num_nans": "num_nans",
    "routed_experts": "routed_experts.",
}


@dataclass(frozen=True)
class CopyPath:
    """One statement of the constructor that queues a host copy: its lines and its target."""

    target: str  #: e.g. ``self._logprobs_tensors_cpu``
    first: int  #: its first and last line in the class text (1-based)
    last: int

    @property
    def label(self) -> str:
        """What the race check calls the copy: the step's tensor it copies."""
        for name, label in _LABELS.items():
            if name in self.target:
                return label
        return self.target


def _is_copy(statement: ast.stmt, source: str) -> bool:
    text = ast.get_source_segment(source, statement) or ""
    return "non_blocking" in text or "to_cpu_nonblocking" in text


def _record_statement(body: list[ast.stmt]) -> ast.stmt | None:
    for statement in body:
        if (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Attribute)
            and statement.value.func.attr == "record"
        ):
            return statement
    return None


def _copy_block(source: str) -> tuple[list[CopyPath], ast.stmt]:
    """The copy paths of the class's constructor and the ``record()`` after them."""
    cls = ast.parse(source).body[0]
    assert isinstance(cls, ast.ClassDef)
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    for node in ast.walk(init):
        if isinstance(node, ast.With):
            record = _record_statement(node.body)
            if record is None:
                continue
            paths = [
                CopyPath(ast.unparse(s.targets[0]), s.lineno, s.end_lineno or s.lineno)
                for s in node.body[: node.body.index(record)]
                if isinstance(s, ast.Assign) and _is_copy(s, source)
            ]
            return paths, record
    raise AssertionError("no copy block with record() in the class")


def copied_after_record(source: str, path: CopyPath) -> str:
    """The class text with ``path``'s statement moved after the event's ``record()``."""
    _, record = _copy_block(source)
    lines = source.splitlines(keepends=True)
    moved = lines[path.first - 1 : path.last]
    end = record.end_lineno or record.lineno
    kept = lines[: path.first - 1] + lines[path.last : end]
    return "".join([*kept, *moved, *lines[end:]])


def never_waited(source: str) -> str:
    """The class text whose get_output() no longer waits for the copy event."""
    tree = ast.parse(source)
    get_output = next(
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_output"
    )
    lines = source.splitlines(keepends=True)
    for node in ast.walk(get_output):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "synchronize"
        ):
            indent = lines[node.lineno - 1][: node.col_offset]
            lines[node.lineno - 1 : node.end_lineno] = [f"{indent}pass\n"]
            return "".join(lines)
    raise AssertionError("get_output() waits for nothing")


def _distinct() -> dict[str, tuple[Path, str, str]]:
    """``{version: (outputs text, producers text, class text)}`` per distinct class and outputs."""
    found: dict[str, tuple[Path, str, str]] = {}
    if not (RELEASES / "producers").is_dir():
        return found
    seen = set()
    for version, outputs in release_texts(RELEASES).items():
        producers = producer_text_beside(outputs, version)
        if producers is None or version not in revisions.known_releases():
            continue
        text = producers.read_text(encoding="utf-8")
        section = next(s for s in producer_sections(text) if s.title == f"class {CLASS}")
        digest = hashlib.sha256(section.body.encode() + outputs.read_bytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            found[version] = (outputs, text, section.body)
    return found


DISTINCT = _distinct()


def _mutants() -> list[tuple[str, str, str]]:
    """``(version, mutant name, the label its failure must name)``."""
    cases = []
    for version, (_, _, source) in DISTINCT.items():
        paths, _ = _copy_block(source)
        cases += [(version, f"{p.target}-after-record", p.label) for p in paths]
        cases.append((version, "never-waited", "sampled_token_ids"))
    return cases


@cache
def _outputs_module(version: str) -> ModuleType:
    outputs, _, _ = DISTINCT[version]
    return load_outputs_module(outputs, f"race_copy_paths_outputs_{version.replace('.', '_')}")


def _backend(version: str, class_source: str) -> Backend:
    from conformance.backends.vllm_producers import producers_of_texts

    outputs, text, original = DISTINCT[version]
    found = producers_of_texts(
        outputs.read_text(encoding="utf-8"),
        text.replace(original, class_source),
        version,
        _outputs_module(version),
    ).found
    assert "make_async_output" in found, f"{version}: the class did not load"
    return Backend(
        name=f"vllm-{version}-mutant",
        module=_outputs_module(version),
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        spec_revision=version,
        make_async_output=found["make_async_output"],
    )


def _race_messages(backend: Backend, version: str) -> list[str | None]:
    """The race check's verdict per race step: None passed, else its failure message."""
    revision = revisions.revision(revisions.revision_for_vllm_version(version))
    verdicts: list[str | None] = []
    for case in race._race_cases(revision):
        with step_device("cuda-simulated") as device:
            try:
                judged = backend.async_output_producers("sampling")[0]
                race.test_get_output_waits_for_the_device(backend, judged, revision, device, case)
                verdicts.append(None)
            except pytest.fail.Exception as failure:
                verdicts.append(str(failure))
    return verdicts


@pytest.fixture(autouse=True)
def _short_delay(monkeypatch) -> None:
    # The copies arrive late by construction (the host sees them only after its wait),
    # so the device need stay busy only until make_async_output returned.
    monkeypatch.setattr(race, "SIMULATED_DELAY_S", 0.02)


@pytest.mark.parametrize("version", list(DISTINCT))
def test_the_release_own_class_passes_the_race_check(version: str) -> None:
    assert _race_messages(_backend(version, DISTINCT[version][2]), version) == [None] * len(
        race._race_cases(revisions.revision(revisions.revision_for_vllm_version(version)))
    )


@pytest.mark.parametrize(("version", "mutant", "label"), _mutants())
def test_a_copy_not_covered_by_the_wait_fails_naming_it(
    version: str, mutant: str, label: str
) -> None:
    source = DISTINCT[version][2]
    if mutant == "never-waited":
        changed = never_waited(source)
    else:
        paths, _ = _copy_block(source)
        [path] = [p for p in paths if f"{p.target}-after-record" == mutant]
        changed = copied_after_record(source, path)
    verdicts = _race_messages(_backend(version, changed), version)
    # Every race step carries the copy (the logprobs where the step has them): each fails.
    failed = [v for v in verdicts if v is not None]
    assert failed, f"{version} {mutant}: the race check passed"
    for message in failed:
        assert "waits-for-device" in message or "before its copy arrived" in message, message
        assert f"{label}" in message and "before its copy arrived" in message, message


def test_every_release_class_has_its_copy_paths() -> None:
    # The paths the texts hold: the ids always, the logprobs from 0.11.1, more later.
    labels = {v: [p.label for p in _copy_block(s)[0]] for v, (_, _, s) in DISTINCT.items()}
    assert labels["0.10.2"] == ["sampled_token_ids"]
    assert labels["0.32.0"][:2] == ["sampled_token_ids", "logprobs."]
    assert all(ls[0] == "sampled_token_ids" for ls in labels.values())
    assert len(DISTINCT) >= 10
