"""Any vLLM text is a revision: its nearest known release, and exactly what it changed.

In this process, no suite run: the surfaces (``conformance.oracle.text_surface``), the
differences (``conformance.oracle.vllm_changes``), the known releases' surfaces shipped
with the suite, the sources a path can name and the refusals of bad ones.  The texts
are the release texts (fetched into the user cache), changed in ``tmp_path``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import vllm_texts

from conformance.oracle.revisions import known_releases
from conformance.oracle.text_surface import surface_of_module
from conformance.oracle.vllm_changes import changes_between
from conformance.releases import known_surfaces
from conformance.releases.sources import read_source, version_in_name
from conformance.releases.text_revision import text_revision
from conformance.releases.texts import ReleaseTextError

SMALL = '''
from dataclasses import dataclass, field
from typing import NamedTuple, Optional


class LogprobsLists(NamedTuple):
    """Docstring."""

    logprob_token_ids: list[list[int]]
    cu: Optional[list[int]] = None

    def slice_request(self, req_idx: int, num_positions: int):
        return LogprobsLists(self.logprob_token_ids[req_idx:req_idx + num_positions], None)


@dataclass
class KVConnectorOutput:
    finished_sending: set[str] | None = None
    invalid_block_ids: set[int] = field(default_factory=set)

    def is_empty(self):
        return not (self.finished_sending or self.invalid_block_ids)
'''


def _changes(old: str, new: str) -> list[tuple[str, str, str]]:
    return [
        (c.type, c.member, c.change)
        for c in changes_between(surface_of_module(old), surface_of_module(new))
    ]


def test_comments_docstrings_formatting_and_spelling_never_count() -> None:
    reformatted = (
        SMALL.replace('"""Docstring."""', '"""Another docstring."""\n    # a comment')
        .replace("Optional[list[int]]", "list[int] | None")
        .replace("req_idx:req_idx + num_positions", "req_idx : (req_idx + num_positions)")
        .replace("return not (", "# why\n        return not (")
        .replace(
            "    def is_empty(self):\n", '    def is_empty(self):\n        """True when empty."""\n'
        )
    )
    assert reformatted != SMALL
    assert _changes(SMALL, reformatted) == []


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("    cu: Optional", "    extra: int = 0\n    cu: Optional"),
         [("LogprobsLists", "extra", "field added")]),
        (("    cu: Optional[list[int]] = None\n", ""), [("LogprobsLists", "cu", "field removed")]),
        (("cu: Optional[list[int]]", "cu: Optional[list[float]]"),
         [("LogprobsLists", "cu", "field retyped")]),
        (("field(default_factory=set)", "field(default_factory=frozenset)"),
         [("KVConnectorOutput", "invalid_block_ids", "field re-defaulted")]),
        (("num_positions: int)", "num_positions: int = 1)"),
         [("LogprobsLists", "slice_request", "signature changed")]),
        (("req_idx + num_positions]", "req_idx + num_positions + 1]"),
         [("LogprobsLists", "slice_request", "body changed")]),
        (("    def is_empty", "    def merge(self):\n        return self\n\n    def is_empty"),
         [("KVConnectorOutput", "merge", "method added")]),
        (("@dataclass\nclass", "@dataclass(frozen=True)\nclass"),
         [("KVConnectorOutput", "KVConnectorOutput", "kind changed")]),
        (("\n\n@dataclass\nclass KVConnectorOutput", "\n\nclass DraftTokenIds:\n    pass\n\n\n"
          "@dataclass\nclass KVConnectorOutput"), [("DraftTokenIds", "", "type added")]),
    ],
    ids=["field-added", "field-removed", "field-retyped", "field-re-defaulted",
         "signature-changed", "body-changed", "method-added", "kind-changed", "type-added"],
)  # fmt: skip
def test_each_change_is_listed_once_and_nothing_else(edit, expected) -> None:
    old, new = edit
    assert old in SMALL
    found = _changes(SMALL, SMALL.replace(old, new))
    if expected[0][2] == "kind changed":
        expected = [("KVConnectorOutput", "", "kind changed")]
    assert found == expected


def test_a_change_carries_the_known_and_the_new_form() -> None:
    new = SMALL.replace("cu: Optional[list[int]]", "cu: Optional[list[float]]")
    [change] = changes_between(surface_of_module(SMALL), surface_of_module(new))
    assert change.to_json() == {
        "type": "LogprobsLists",
        "member": "cu",
        "change": "field retyped",
        "known": "cu: list[int] | None = None",
        "new": "cu: list[float] | None = None",
        "module": "vllm.v1.outputs",
    }


def test_a_removed_type_is_one_change_not_one_per_member() -> None:
    without = SMALL[: SMALL.index("@dataclass\nclass KVConnectorOutput")]
    assert _changes(SMALL, without) == [("KVConnectorOutput", "", "type removed")]


def test_the_shipped_surfaces_are_those_of_the_shared_texts() -> None:
    vllm_texts.release_text()
    fresh = known_surfaces.surfaces_of_folder(vllm_texts.RELEASES, known_releases())
    # The file add-release rewrites; regenerate it with
    # python -m conformance.releases.known_surfaces ~/.cache/vllm-outputs-suite/vllm-releases
    assert known_surfaces.encode(fresh) == known_surfaces.encode(known_surfaces.known_surfaces())


@pytest.mark.parametrize("version", ["0.10.2", "0.12.0", "0.29.0", "0.33.0"])
def test_a_known_release_text_is_nearest_to_itself_with_no_change(version) -> None:
    judged = text_revision(vllm_texts.RELEASES / f"outputs-{version}.py.txt")
    vllm_texts.release_text(version)
    assert (judged.nearest, judged.changes) == (version, ())
    assert (
        judged.headline() == f"vLLM outputs-{version}.py.txt = nearest known {version} + 0 changes"
    )


def test_ties_go_to_the_newer_release(tmp_path) -> None:
    # 0.14.0's types are 0.14.1's, 0.15.0's and 0.15.1's; named nothing, it is the newest.
    path = tmp_path / "outputs.py"
    path.write_text(vllm_texts.release_text("0.14.0"), encoding="utf-8")
    judged = text_revision(path)
    assert (judged.nearest, judged.base, judged.changes) == ("0.15.1", "0.14.0", ())


def test_a_text_naming_a_release_among_the_tied_is_that_release() -> None:
    judged = text_revision(vllm_texts.RELEASES / "outputs-0.14.1.py.txt")
    vllm_texts.release_text("0.14.1")
    assert judged.nearest == "0.14.1"


@pytest.mark.parametrize("name", list(vllm_texts.VARIANTS))
def test_a_text_with_one_change_lists_exactly_that_change(tmp_path, name) -> None:
    path = vllm_texts.write_variant(tmp_path, name, "outputs.py")
    judged = text_revision(path)
    _, expected = vllm_texts.VARIANTS[name]
    assert judged.nearest == vllm_texts.BASE
    assert [(c.type, c.member, c.change) for c in judged.changes] == [expected]
    assert judged.headline() == "vLLM outputs.py = nearest known 0.33.0 + 1 change"
    [behaviour] = [j.behaviour for j in judged.judged]
    assert behaviour == f"vllm-change:{expected[0]}.{expected[1]}"
    assert behaviour in judged.spec_revision().behaviours


def test_the_nearest_of_a_changed_older_text_is_that_older_release(tmp_path) -> None:
    rows = "    draft_token_ids: list[list[int]]\n"
    text = vllm_texts.release_text("0.22.0").replace(
        rows, rows + "    npu_ids: list[int] | None = None\n"
    )
    path = tmp_path / "outputs-fork.py"
    path.write_text(text, encoding="utf-8")
    judged = text_revision(path)
    assert judged.nearest == "0.22.1" and len(judged.changes) == 1


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("outputs-0.34.0.dev3+g1a2b3c4.py.txt", "0.34.0.dev3+g1a2b3c4"),
        ("outputs-0.33.0+cpu.py", "0.33.0+cpu"),
        ("outputs-0.12.0.py.txt", "0.12.0"),
        ("outputs.py", None),
        ("my-fork.py", None),
        ("outputs-main.py.txt", None),
    ],
)
def test_the_version_is_read_from_any_name_that_has_one(name, version) -> None:
    assert version_in_name(Path(name)) == version


def test_a_dev_version_file_is_read_with_its_version(tmp_path) -> None:
    path = vllm_texts.write_variant(tmp_path, "field-added", "outputs-0.34.0.dev3+g1a2b3c4.py.txt")
    judged = text_revision(path)
    assert judged.source.version == "0.34.0.dev3+g1a2b3c4"
    assert judged.headline() == (
        "vLLM outputs-0.34.0.dev3+g1a2b3c4.py.txt = nearest known 0.33.0 + 1 change"
    )


def test_a_source_tree_is_read_with_its_producers(tmp_path) -> None:
    tree = vllm_texts.write_tree(tmp_path / "checkout")
    source = read_source(tree)
    assert (source.origin, source.version) == ("tree", "0.33.0")
    assert source.producers is not None and "Sampler.gather_logprobs" in source.producers
    judged = text_revision(tree)
    assert (judged.nearest, judged.changes) == ("0.33.0", ())
    # The vllm package folder itself names the same tree.
    assert text_revision(tree / "vllm").changes == ()


def test_a_tree_reads_the_callers_of_a_gathering_as_its_wheel_does(tmp_path) -> None:
    """Model Runner V2's sampler imports its gathering and names no output type: a
    plugin patching the name there is judged from a checkout as from the wheel."""
    import zipfile

    from vllm_release_texts import RELEASES

    from conformance.releases.texts import write_tree

    mrv2 = (RELEASES / "producers-mrv2" / "producers-mrv2-0.32.0.py.txt").read_text()
    caller = "vllm/v1/worker/gpu/sample/sampler.py: whole file (a caller, read only)"
    assert caller in mrv2
    tree = write_tree(vllm_texts.release_text("0.32.0"), "0.32.0", tmp_path / "checkout", mrv2)
    # The laid-out tree stands in for what nothing loads; a checkout has the file itself.
    sampler = mrv2.split(f"# ---- {caller}\n", 1)[1].split("\n# ---- ", 1)[0]
    assert "LogprobsTensors" not in sampler and "AsyncModelRunnerOutput" not in sampler
    (tree / "vllm/v1/worker/gpu/sample/sampler.py").write_text(sampler)
    wheel = tmp_path / "vllm-0.32.0-cp38-abi3-manylinux1_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in (tree / "vllm").rglob("*.py"):
            archive.write(path, path.relative_to(tree).as_posix())
    from_tree, from_wheel = read_source(tree).producers, read_source(wheel).producers
    assert from_tree is not None and caller in from_tree
    assert from_wheel is not None and caller in from_wheel


def test_a_type_moved_and_re_exported_by_outputs_py_is_no_change(tmp_path) -> None:
    """A head that moves LogprobsLists to a module of its own and imports it back into
    outputs.py: ``vllm.v1.outputs.LogprobsLists`` is the same class, judged as it is,
    not removed (its members unjudged)."""
    import ast
    import zipfile

    tree = vllm_texts.write_tree(tmp_path / "checkout")
    outputs = tree / "vllm" / "v1" / "outputs.py"
    text = outputs.read_text()
    [cls] = [n for n in ast.parse(text).body if getattr(n, "name", "") == "LogprobsLists"]
    first = min([cls.lineno, *(d.lineno for d in cls.decorator_list)])
    lines = text.splitlines()
    moved = "\n".join(lines[first - 1 : cls.end_lineno]) + "\n"
    (tree / "vllm" / "v1" / "logprobs_lists.py").write_text(
        "from typing import NamedTuple\n\nimport numpy as np\n\n\n" + moved
    )
    rest = [*lines[: first - 1], "from vllm.v1.logprobs_lists import LogprobsLists"]
    outputs.write_text("\n".join([*rest, *lines[cls.end_lineno :]]) + "\n")
    judged = text_revision(tree)
    assert (judged.nearest, judged.changes) == ("0.33.0", ())
    wheel = tmp_path / "vllm-0.33.0-cp38-abi3-manylinux1_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in (tree / "vllm").rglob("*.py"):
            archive.write(path, path.relative_to(tree).as_posix())
    assert text_revision(wheel).changes == ()
    # Its outputs.py alone shows no such module: the type is not there to judge.
    alone = text_revision(outputs)
    assert any((c.type, c.change) == ("LogprobsLists", "type removed") for c in alone.changes)


def test_a_producer_changed_in_a_tree_is_a_change_of_that_producer(tmp_path) -> None:
    producers = vllm_texts.producer_text()
    marker = "        return LogprobsTensors(indices, logprobs, token_ranks)"
    assert producers.count(marker) == 1
    changed = producers.replace(marker, "        token_ranks = token_ranks + 0\n" + marker)
    tree = vllm_texts.write_tree(tmp_path / "checkout", producers=changed)
    judged = text_revision(tree)
    assert [(c.type, c.member, c.change) for c in judged.changes] == [
        ("Sampler", "gather_logprobs", "body changed")
    ]
    assert [j.behaviour for j in judged.judged] == ["vllm-change:producer.gather_logprobs"]


def test_a_wheel_is_read_like_a_tree(tmp_path) -> None:
    import zipfile

    tree = vllm_texts.write_tree(tmp_path / "unpacked")
    wheel = tmp_path / "vllm-0.34.0.dev3+g1a2b3c4-cp38-abi3-manylinux1_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in (tree / "vllm").rglob("*.py"):
            archive.write(path, path.relative_to(tree).as_posix())
    judged = text_revision(wheel)
    assert judged.source.version == "0.34.0.dev3+g1a2b3c4"
    assert (judged.nearest, judged.changes) == ("0.33.0", ())


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: d / "missing.py", "no such file or folder"),
        (lambda d: d, "no vllm/v1/outputs.py in this folder"),
        (lambda d: _write(d / "outputs.py", "def broken(:\n"), "not a Python text"),
        (lambda d: _write(d / "outputs.py", "class Other:\n    pass\n"), "defines none of the spec's types"),
        (lambda d: _write(d / "outputs.py", "raise RuntimeError('boom')\nclass SamplerOutput:\n    pass\n"),
         "does not import (RuntimeError: boom)"),
        (lambda d: _write(d / "x.whl", "not a zip"), "not a wheel"),
    ],
    ids=["missing", "folder-without-outputs", "not-python", "no-spec-types", "does-not-import", "bad-wheel"],
)  # fmt: skip
def test_a_path_that_holds_no_vllm_text_is_one_line_naming_it(tmp_path, make, expected) -> None:
    path = make(tmp_path)
    with pytest.raises(ReleaseTextError) as error:
        text_revision(path)
    message = str(error.value)
    assert message.startswith(str(path)) and expected in message
    assert "\n" not in message


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_the_command_refuses_a_path_without_vllm_text_in_one_line(tmp_path) -> None:
    import subprocess
    import sys

    empty = tmp_path / "not-vllm"
    empty.mkdir()
    for option in ("--revision", "--vllm-outputs", "--bump-to"):
        done = subprocess.run(
            [sys.executable, "-m", "conformance", option, str(empty), "-p", "no:cacheprovider"],
            capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 4, (option, done.stdout, done.stderr)
        [line] = [line for line in done.stderr.splitlines() if line.strip()]
        assert line.startswith(f"ERROR: {empty}: no vllm/v1/outputs.py in this folder"), line
